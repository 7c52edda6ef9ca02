"""Candidate pairs of product offers: pair completeness against candidates per offer.

For each catalogue, in link mode (pairs across shops only), four candidate sources are scored
against the catalogue's truth: the share of the true cross-shop pairs among the candidates
(pair completeness), over labelled offers only where the truth labels a part of the catalogue:

- ``tokens``: token blocking (``neardup products dedup``'s default), ``--per-offer`` pairs per
  offer;
- ``lsh tokens BxR``: MinHash LSH over each offer's title and description tokens alone
  (:func:`neardup.products.blocking.lsh_pairs`, ``--lsh`` bands x rows), unpruned;
- ``tokens+lsh BxR``: the two combined, their pairs pruned together to the same budget
  (``token_blocking(..., lsh=(B, R))``);
- ``lsh 60x4``: model-word LSH (``--blocking lsh``), unpruned.

    .venv/bin/python benchmarks/products_blocking.py [--data ../shared/data] [--per-offer 10]
        [--lsh 20x3] [--only tv monitor camera]

Catalogues (skipped, with a message, when a file is missing):
- ``TVs-all-merged.json`` (truth: the modelID of each offer);
- ``alaska-monitor/monitor_specs.tar.gz`` with ``monitor_entity_resolution_gt.csv``
  (``entity_id,spec_id``: pages of one entity match, pages without an entity are unlabelled);
- ``alaska-camera/camera_specs.tar.gz`` with ``sigmod_medium_labelled_dataset.csv``
  (``left_spec_id,right_spec_id,label``: the listed pairs with label 1 match).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np

from neardup.products.blocking import lsh_pairs, offer_tokens, token_blocking
from neardup.products.candidates import across_sources, lsh_candidates, model_word_sets
from neardup.products.loaders import load_offers
from neardup.products.matcher import describe


def _pairs_of_groups(groups: dict) -> set[tuple[int, int]]:
    out = set()
    for members in groups.values():
        out.update(combinations(sorted(set(members)), 2))
    return out


def tv_truth(data: Path):
    offers, labels = load_offers(data / "TVs-all-merged.json")
    groups: dict[str, list[int]] = {}
    for i, lab in enumerate(labels):
        groups.setdefault(lab, []).append(i)
    return offers, _pairs_of_groups(groups)


def entity_truth(pages: Path, truth: Path):
    offers, _ = load_offers(pages, format="pages", on_error="skip")
    row = {x: i for i, x in enumerate(offers.ids)}
    groups: dict[str, list[int]] = {}
    with open(truth, newline="") as f:
        for r in csv.DictReader(f):
            if r["spec_id"] in row:
                groups.setdefault(r["entity_id"], []).append(row[r["spec_id"]])
    return offers, _pairs_of_groups(groups)


def labelled_pair_truth(pages: Path, truth: Path):
    offers, _ = load_offers(pages, format="pages", on_error="skip")
    row = {x: i for i, x in enumerate(offers.ids)}
    pos = set()
    with open(truth, newline="") as f:
        for r in csv.DictReader(f):
            a, b = row.get(r["left_spec_id"]), row.get(r["right_spec_id"])
            if a is not None and b is not None and a != b and r["label"] == "1":
                pos.add((min(a, b), max(a, b)))
    return offers, pos


def completeness(left, right, positives, shops) -> tuple[float, int]:
    cross = {p for p in positives if shops[p[0]] != shops[p[1]]}
    found = len(cross & set(zip(np.asarray(left).tolist(), np.asarray(right).tolist())))
    return found / len(cross), len(cross)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--per-offer", type=float, default=10.0)
    ap.add_argument(
        "--lsh",
        default="20x3",
        metavar="BxR",
        help="bands x rows of the MinHash LSH over tokens (default 20x3)",
    )
    ap.add_argument(
        "--only",
        nargs="+",
        default=None,
        metavar="NAME",
        help="only these catalogues (tv, monitor, camera)",
    )
    ap.add_argument("--json", default=None, metavar="FILE", help="also write the rows here")
    a = ap.parse_args()
    lsh_b, lsh_r = (int(x) for x in a.lsh.lower().split("x"))
    data = Path(a.data)
    sets = {
        "tv": (lambda: tv_truth(data), [data / "TVs-all-merged.json"]),
        "monitor": (
            lambda: entity_truth(
                data / "alaska-monitor/monitor_specs.tar.gz",
                data / "alaska-monitor/monitor_entity_resolution_gt.csv",
            ),
            [
                data / "alaska-monitor/monitor_specs.tar.gz",
                data / "alaska-monitor/monitor_entity_resolution_gt.csv",
            ],
        ),
        "camera": (
            lambda: labelled_pair_truth(
                data / "alaska-camera/camera_specs.tar.gz",
                data / "alaska-camera/sigmod_medium_labelled_dataset.csv",
            ),
            [
                data / "alaska-camera/camera_specs.tar.gz",
                data / "alaska-camera/sigmod_medium_labelled_dataset.csv",
            ],
        ),
    }
    rows = []
    print(
        "| catalogue | offers | true cross-shop pairs | method | candidates per offer | "
        "pair completeness | seconds |"
    )
    print("|---|---:|---:|---|---:|---:|---:|")
    for name, (load, files) in sets.items():
        if a.only and name not in a.only:
            continue
        missing = [str(f) for f in files if not f.exists()]
        if missing:
            print(f"{name}: skipped, missing {', '.join(missing)}", file=sys.stderr)
            continue
        offers, positives = load()
        n = len(offers)
        t = time.perf_counter()
        left, right, _, _ = token_blocking(offers, per_offer=a.per_offer, link=True)
        t_tok = time.perf_counter() - t
        t = time.perf_counter()
        # the bucket cap token_blocking takes by default (comparisons=100)
        ol, orr = lsh_pairs(
            offer_tokens(offers, descriptions=True),
            lsh_b,
            lsh_r,
            sources=offers.shops,
            bucket_cap=max(2, 200 // lsh_b),
        )
        t_only = time.perf_counter() - t
        t = time.perf_counter()
        cl, cr, _, _ = token_blocking(offers, per_offer=a.per_offer, link=True, lsh=(lsh_b, lsh_r))
        t_comb = time.perf_counter() - t
        t = time.perf_counter()
        d = describe(offers)
        sets_ = model_word_sets(offers, brands=d.brands, max_df=0.2)
        ll, lr = lsh_candidates(sets_, 60, 4, num_perm=240)
        keep = across_sources(ll, lr, offers.shops)
        ll, lr = ll[keep], lr[keep]
        t_lsh = time.perf_counter() - t
        for method, (x, y, sec) in {
            "tokens": (left, right, t_tok),
            f"lsh tokens {lsh_b}x{lsh_r}": (ol, orr, t_only),
            f"tokens+lsh {lsh_b}x{lsh_r}": (cl, cr, t_comb),
            "lsh 60x4": (ll, lr, t_lsh),
        }.items():
            pc, total = completeness(x, y, positives, offers.shops)
            row = {
                "catalogue": name,
                "offers": n,
                "true_pairs": total,
                "method": method,
                "per_offer": len(x) / n,
                "pc": pc,
                "seconds": sec,
            }
            rows.append(row)
            print(
                f"| {name} | {n:,} | {total:,} | {method} | {len(x) / n:.1f} | {pc:.3f} | "
                f"{sec:.1f} |",
                flush=True,
            )
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
