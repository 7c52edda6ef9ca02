"""FCA clusters at scale: 100k documents with images of 256 hashes.

    python benchmarks/fca.py --size 100000 --min-common 200 150 100 50 25
    python benchmarks/fca.py --rus          # the FCA paper's Table 1 on a generated collection

Takes the first ``size`` documents of the benchmark corpus (20 Newsgroups text with planted
near-duplicates, ``benchmarks/data/corpus-<N>.jsonl``, built by ``benchmarks/corpus.py`` when
missing) and its planted variants as the reference (all pairs of one source's copies). Reports
the time to build the images and the inverted table, FPmax's time per threshold, precision,
recall and F1 of the cluster pairs, and the peak memory. Writes ``fca-<size>.json`` (``--rus``:
``fca-rus.md``) into ``--results`` (default ``benchmarks/data/results``, not tracked;
``--results benchmarks/results`` refreshes the tracked tables), with ``fca-<size>.md``.

The maximal sets are mined by neardup's compiled kernel; where pyfim is installed (the test
extra), its FPmax mines the same table too, for comparison: its time per threshold and whether
it found the same clusters (``--no-pyfim`` skips it).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np
import orjson

HERE = Path(__file__).resolve().parent
#: Where the report goes unless --results says otherwise: a folder git ignores.
RESULTS = HERE / "data" / "results"
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from index import find_corpus  # noqa: E402

from neardup.evaluate.clusters import (  # noqa: E402
    pair_scores,
    pairs_of_groups,  # noqa: E402
    read_reference,
)
from neardup.fca import document_images, fca, fca_clusters, inverted_table  # noqa: E402
from neardup.synth import edit_words, near_duplicate_collection, vocabulary  # noqa: E402


def rus_table(results_dir: Path) -> None:
    """The RUS experiment of the FCA paper (Ignatov, Konstantinov and Chubis): 9 original texts
    and 10 near-duplicates made from them (edit rates 1% to 10%), images of n = 1000, thresholds
    900 to 400 (its Table 1)."""
    texts, groups = near_duplicate_collection(9, 0, seed=1, words=(1400, 1800))
    # ten variants, spread over the originals, with growing edits
    rng = np.random.default_rng(1)
    vocab = vocabulary(5000, 1)
    for v in range(10):
        g = v % 9
        texts.append(edit_words(texts[g], 0.01 * (v + 1), rng, vocab))
        groups.append(g)
    reference = pairs_of_groups(groups)
    rows = []
    for r in fca(texts, [900, 800, 700, 500, 400], length=5, image_size=1000):
        rows.append(
            {
                "threshold": r.min_common,
                "clusters": len(r.clusters),
                "seconds": round(r.seconds, 3),
                **pair_scores(r.pairs(), reference),
            }
        )
    lines = ["| precision | recall | threshold | F1 |", "|---:|---:|---:|---:|"]
    lines += [
        f"| {x['precision']:.2f} | {x['recall']:.2f} | {x['threshold']} | {x['f1']:.2f} |"
        for x in rows
    ]
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "fca-rus.md").write_text(
        f"# The FCA paper's Table 1 on a generated RUS-like collection ({len(texts)} texts, "
        f"{len(reference)} reference pairs, images of 1000)\n\n" + "\n".join(lines) + "\n"
    )
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--min-common", type=int, nargs="+", default=[200, 150, 100, 50])
    ap.add_argument("--image-size", type=int, default=256)
    ap.add_argument("--shingle-length", type=int, default=5)
    ap.add_argument("--offset", type=int, default=1)
    ap.add_argument(
        "--results",
        default=str(RESULTS),
        help="folder for fca-<size>.json and fca-rus.md (default: "
        "benchmarks/data/results, which git ignores; --results "
        "benchmarks/results refreshes the tracked tables)",
    )
    ap.add_argument(
        "--rus",
        action="store_true",
        help="the FCA paper's Table 1 (RUS collection) on generated texts",
    )
    ap.add_argument(
        "--no-pyfim", action="store_true", help="do not time pyfim's FPmax on the same table"
    )
    a = ap.parse_args()
    if a.rus:
        return rus_table(Path(a.results))

    corpus = find_corpus(a.size)
    ids, texts = [], []
    with open(corpus, "rb") as f:
        for line in f:
            if len(ids) >= a.size:
                break
            rec = orjson.loads(line)
            ids.append(rec["id"])
            texts.append(rec["text"])
    reference, counts = read_reference(Path(f"{corpus}.truth.jsonl"), ids)
    t0 = time.perf_counter()
    images = document_images(texts, a.shingle_length, a.offset, a.image_size)
    t_images = time.perf_counter() - t0
    tracts, stats = inverted_table(images)
    t_table = time.perf_counter() - t0 - t_images
    print(
        f"{len(texts):,} documents: images {t_images:.1f} s, inverted table {t_table:.1f} s "
        f"({stats['transactions']:,} transactions)",
        file=sys.stderr,
    )
    fim = None
    if not a.no_pyfim:
        try:
            import fim
        except ImportError:
            print("pyfim is not installed: no comparison", file=sys.stderr)
    rows = []
    for k in a.min_common:
        r = fca_clusters(images, k, tracts=tracts)
        row = {
            "threshold": k,
            "clusters": len(r.clusters),
            "mining_seconds": round(r.seconds, 2),
            **pair_scores(r.pairs(), reference),
        }
        if fim is not None:
            t0 = time.perf_counter()
            found = fim.fpgrowth({**tracts, (-1,): 1}, target="m", supp=-k, zmin=2, report="a")
            row["pyfim_seconds"] = round(time.perf_counter() - t0, 2)
            row["pyfim_same_clusters"] = sorted((tuple(sorted(s)), n) for s, n in found) == sorted(
                (c.members, c.common) for c in r.clusters
            )
        rows.append(row)
        print(f"  K={k}: {row}", file=sys.stderr)
    res = {
        "documents": len(texts),
        "image_size": a.image_size,
        "shingle": f"word:{a.shingle_length}:{a.offset}",
        "images_seconds": round(t_images, 2),
        "table_seconds": round(t_table, 2),
        "inverted_table": stats,
        "reference_pairs": len(reference),
        "reference_unknown_ids": counts["unknown_id"],
        "results": rows,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    out = Path(a.results)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"fca-{a.size}.json").write_text(json.dumps(res, indent=2) + "\n")
    lines = [
        "| K | clusters | kernel | pyfim | same clusters | precision | recall | F1 |",
        "|---:|---:|---:|---:|:---:|---:|---:|---:|",
    ]
    for x in rows:
        py = f"{x['pyfim_seconds']:.2f} s" if "pyfim_seconds" in x else "-"
        same = {True: "yes", False: "**no**"}.get(x.get("pyfim_same_clusters"), "-")
        lines.append(
            f"| {x['threshold']} | {x['clusters']:,} | {x['mining_seconds']:.2f} s | "
            f"{py} | {same} | {x['precision']:.3f} | {x['recall']:.3f} | "
            f"{x['f1']:.3f} |"
        )
    (out / f"fca-{a.size}.md").write_text(
        f"# FCA clusters: {len(texts):,} documents, images of {a.image_size}, "
        f"word {a.shingle_length}-shingles\n\nImages {t_images:.1f} s, inverted table "
        f"{t_table:.1f} s ({stats['transactions']:,} transactions); maximal sets by the compiled "
        "kernel, and by pyfim's FPmax for comparison.\n\n" + "\n".join(lines) + "\n"
    )
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
