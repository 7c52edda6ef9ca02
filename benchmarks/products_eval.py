"""Product matching on the shared catalogues: the bootstrap study and the label-free run.

For each catalogue this runs, as a user would, ``neardup products eval`` (the bootstrap study,
trained matcher, 5 bootstraps) and ``neardup products dedup --link --truth`` (no labels used
to match; the truth only scores), each as a whole process, and reports F1 with its spread,
pair completeness, the wall time and the peak memory of the process.

    .venv/bin/python benchmarks/products_eval.py [--data ../shared/data] [--only camera ...]

Catalogues (skipped, with a message, when a file is missing):
- ``tv``: ``TVs-all-merged.json`` (truth: each offer's modelID; for ``dedup`` written as a
  file of entity ids);
- ``monitor``: ``alaska-monitor/monitor_specs.tar.gz`` with its entity ids;
- ``camera``: ``alaska-camera/camera_specs.tar.gz`` with its labelled pairs;
- ``feed``: a feed of 2,500 camera pages from the 22 smaller shops (drawn with seed 0) linked
  against the 22,246 eBay and Alibaba pages as a second source: the shape of a small catalogue
  matched against a large one.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

NEARDUP = [sys.executable, "-m", "neardup.cli"]


def _run(args: list[str]) -> tuple[dict, float, float]:
    """Run a neardup command with ``--json``; return its summary, wall seconds and the peak
    resident memory of that process in GB."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen([*NEARDUP, *args, "--json"], stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            raise SystemExit(f"neardup {' '.join(args)} failed ({p.returncode}):\n{err.read()}")
        return json.loads(out.read()), wall, usage.ru_maxrss / 1e6


def _catalogues(data: Path, tmp: Path) -> dict[str, tuple[list[str], list[str], list[str]]]:
    """name -> (offer arguments, eval truth arguments, dedup truth arguments)."""
    from neardup.products.loaders import load_offers

    out = {}
    tv = data / "TVs-all-merged.json"
    if tv.exists():
        offers, labels = load_offers(tv)
        truth = tmp / "tv-entities.csv"
        with open(truth, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["entity_id", "id"])
            w.writerows(zip(labels, offers.ids))
        out["tv"] = ([str(tv)], [], ["--truth", str(truth)])
    else:
        print(f"skipped tv: {tv} is missing", file=sys.stderr)
    pages = ["--format", "pages", "--on-error", "skip"]
    mon = data / "alaska-monitor" / "monitor_specs.tar.gz"
    mon_t = data / "alaska-monitor" / "monitor_entity_resolution_gt.csv"
    if mon.exists() and mon_t.exists():
        out["monitor"] = ([str(mon), *pages], ["--truth", str(mon_t)], ["--truth", str(mon_t)])
    else:
        print(f"skipped monitor: {mon} or {mon_t} is missing", file=sys.stderr)
    cam = data / "alaska-camera" / "camera_specs.tar.gz"
    cam_t = data / "alaska-camera" / "sigmod_medium_labelled_dataset.csv"
    if cam.exists() and cam_t.exists():
        out["camera"] = ([str(cam), *pages], ["--truth", str(cam_t)], ["--truth", str(cam_t)])
        offers, _ = load_offers(cam, format="pages", on_error="skip")
        big = {"www.ebay.com", "www.alibaba.com"}
        small = [i for i, s in enumerate(offers.shops) if s not in big]
        feed = sorted(np.random.default_rng(0).choice(small, 2500, replace=False).tolist())
        master = [i for i, s in enumerate(offers.shops) if s in big]
        files = []
        for name, rows in (("feed", feed), ("master", master)):
            path = tmp / f"camera-{name}.jsonl"
            with open(path, "w") as f:
                for i in rows:
                    f.write(
                        json.dumps(
                            {
                                "id": offers.ids[i],
                                "title": offers.titles[i],
                                "shop": name,
                                "attributes": offers.attributes[i],
                            }
                        )
                        + "\n"
                    )
            files.append(str(path))
        out["feed"] = (
            [*files, "--on-error", "skip"],
            ["--truth", str(cam_t)],
            ["--truth", str(cam_t)],
        )
    else:
        print(f"skipped camera and feed: {cam} or {cam_t} is missing", file=sys.stderr)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--only", nargs="+", choices=["tv", "monitor", "camera", "feed"])
    ap.add_argument("--bootstraps", type=int, default=5)
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, (offers, eval_truth, dedup_truth) in _catalogues(Path(a.data), tmp).items():
            if a.only and name not in a.only:
                continue
            link = [] if name == "tv" else ["--link"]
            s, wall, peak = _run(
                [
                    "products",
                    "eval",
                    *offers,
                    *eval_truth,
                    *link,
                    "--bootstraps",
                    str(a.bootstraps),
                    "-o",
                    str(tmp / "e"),
                ]
            )
            nd = next(r for r in s["summary"] if r["method"] == "neardup")
            d, dwall, dpeak = _run(
                ["products", "dedup", *offers, *dedup_truth, "--link", "-o", str(tmp / "d")]
            )
            q = d["quality"]
            rows.append(
                {
                    "catalogue": name,
                    "offers": s["offers"],
                    "eval F1": f"{nd['f1']:.3f} ± {nd['f1_sd']:.3f}",
                    "eval PC": f"{nd['pc']:.3f}",
                    "eval s": f"{wall:.1f}",
                    "eval GB": f"{peak:.2f}",
                    "no-label F1 (pairs)": f"{q['pairs']['f1']:.3f}",
                    "no-label F1 (clusters)": f"{q['clusters'].get('f1') or 0:.3f}",
                    "dedup PC": f"{q['blocking']['pc']:.3f}",
                    "largest cluster": d["largest_cluster"],
                    "dedup s": f"{dwall:.1f}",
                    "dedup GB": f"{dpeak:.2f}",
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    if rows:
        cols = list(rows[0])
        print("\n| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
        for r in rows:
            print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    raise SystemExit(main())
