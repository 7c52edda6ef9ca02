"""Recall of the pairs table at and above the threshold, candidates and time, for LSH settings
(``--min-recall``) and pairs outputs (``--pairs all|edges``): what a higher recall at the
threshold costs.

Every setting runs ``neardup dedup`` on the corpus in a fresh process (``--no-corpus``, row
numbers as ids) and its ``pairs`` table is scored against a reference: every pair of documents
with J >= t, from a run with far more bands (default 42 x 3: a pair at J = 0.8 is missed with
probability 0.49^42 < 1e-13) whose candidates are all verified exactly, expanded to every pair
of documents (``--pairs all``). With ``--truth`` (an ``.npz`` of ``groundtruth.py``: brute-force
word 5-gram Jaccard, feasible to 100k documents) the reference itself is checked against it
first. Recall is reported per bin of the reference's similarity: [t, t+0.05), [t+0.05, t+0.1),
>= t+0.1.

    python benchmarks/recall.py /work/main/benchmarks/data/corpus-100000.jsonl \\
        --truth benchmarks/data/truth-100000.npz --results benchmarks/results/recall
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
NEARDUP = [sys.executable, "-m", "neardup.cli"]

#: (label, extra options): the old defaults, the old banding with every pair, the new defaults
SETTINGS = [
    ("min-recall 0.9 (16x8), pairs edges", ["--min-recall", "0.9", "--pairs", "edges"]),
    ("min-recall 0.9 (16x8), pairs all", ["--min-recall", "0.9", "--pairs", "all"]),
    ("min-recall 0.95 (18x7), pairs all", ["--min-recall", "0.95", "--pairs", "all"]),
    ("min-recall 0.99 (21x6), pairs all", ["--min-recall", "0.99", "--pairs", "all"]),
]


def run(corpus: Path, out: Path, threshold: float, extra: list[str]) -> dict:
    """One ``neardup dedup`` process; its summary with the process's wall time and peak RSS."""
    cmd = [
        *NEARDUP,
        "dedup",
        str(corpus),
        "-o",
        str(out),
        "--no-corpus",
        "--quiet",
        "--id-field",
        "",
        "--threshold",
        str(threshold),
        *extra,
    ]
    t = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    summary = json.loads((out / "summary.json").read_text())
    summary["process_wall_s"] = wall
    summary["peak_rss_mb"] = int(proc.stderr.strip().splitlines()[-1]) / 1024
    summary["command"] = " ".join(["neardup", *cmd[len(NEARDUP) :]])
    return summary


def pairs_of(out: Path, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs table (row-number ids) as sorted keys ``a * n + b`` and their similarities."""
    t = pq.read_table(out / "pairs.parquet", columns=["id_a", "id_b", "similarity"])
    a = np.asarray(t.column("id_a").to_numpy(zero_copy_only=False), dtype=np.int64)
    b = np.asarray(t.column("id_b").to_numpy(zero_copy_only=False), dtype=np.int64)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    key = lo * n + hi
    order = np.argsort(key)
    return key[order], t.column("similarity").to_numpy()[order]


def bins(threshold: float) -> list[tuple[str, float, float]]:
    t = threshold
    return [
        (f"[{t:g}, {t + 0.05:g})", t, t + 0.05),
        (f"[{t + 0.05:g}, {t + 0.1:g})", t + 0.05, t + 0.1),
        (f">= {t + 0.1:g}", t + 0.1, 2.0),
    ]


def recall_by_bin(ref_key, ref_sim, found_key, threshold) -> dict[str, list[int]]:
    hit = np.isin(ref_key, found_key, assume_unique=True)
    out = {}
    for name, lo, hi in bins(threshold):
        m = (ref_sim >= np.float32(lo)) & (ref_sim < np.float32(hi))
        out[name] = [int(np.count_nonzero(hit & m)), int(np.count_nonzero(m))]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument(
        "--reference",
        default="42x3",
        metavar="BxR",
        help="bands x rows of the reference run (default: 42x3)",
    )
    ap.add_argument(
        "--truth",
        type=Path,
        default=None,
        help="groundtruth.py's .npz of the corpus, to check the reference against",
    )
    ap.add_argument("--results", type=Path, default=HERE / "data" / "results" / "recall")
    ap.add_argument("--work", type=Path, default=HERE / "data" / "recall-work")
    a = ap.parse_args(argv)
    t = a.threshold
    name = a.corpus.stem
    work = a.work / name
    work.mkdir(parents=True, exist_ok=True)
    b, r = (int(x) for x in a.reference.split("x"))
    ref = run(
        a.corpus, work / "reference", t, ["--bands", str(b), "--rows", str(r), "--pairs", "all"]
    )
    n = ref["documents"]
    ref_key, ref_sim = pairs_of(work / "reference", n)
    report: dict = {
        "corpus": str(a.corpus),
        "documents": n,
        "threshold": t,
        "reference": {
            "bands": b,
            "rows": r,
            "pairs": len(ref_key),
            "candidates": ref["lsh"]["candidates"],
            "seconds": ref["seconds"],
            "command": ref["command"],
        },
        "settings": [],
    }
    print(
        f"reference {b}x{r}: {len(ref_key):,} pairs with J >= {t} "
        f"({ref['lsh']['candidates']:,} candidates, {ref['seconds']:.1f} s)",
        flush=True,
    )
    if a.truth is not None:
        with np.load(a.truth) as z:
            ta, tb, tj = z["a"], z["b"], z["jaccard"]
        tk = np.minimum(ta, tb).astype(np.int64) * n + np.maximum(ta, tb)
        order = np.argsort(tk)
        tkey, tj = tk[order], tj[order]
        # pairs within 0.002 of the threshold may fall on either side (normalisation, 32-bit
        # shingle fingerprints): counted apart
        firm_t = tkey[np.abs(tj - t) >= 0.002]
        firm_r = ref_key[np.abs(ref_sim - t) >= 0.002]
        check = {
            "truth_pairs": len(tkey),
            "truth_missing_from_reference": int(np.count_nonzero(~np.isin(firm_t, ref_key))),
            "reference_missing_from_truth": int(np.count_nonzero(~np.isin(firm_r, tkey))),
            "near_threshold_either_side": int(len(tkey) - len(firm_t) + len(ref_key) - len(firm_r)),
        }
        report["reference"]["check_against_brute_force"] = check
        print(f"reference against brute force: {check}", flush=True)
    for label, extra in SETTINGS:
        s = run(a.corpus, work / "run", t, extra)
        key, _ = pairs_of(work / "run", n)
        rec = recall_by_bin(ref_key, ref_sim, key, t)
        lsh = s["lsh"]
        row = {
            "setting": label,
            "bands": lsh["bands"],
            "rows": lsh["rows"],
            "expected_recall_at_t": lsh["expected_recall_at_threshold"],
            "candidates": lsh["candidates"],
            "verified_pairs": s["verified_pairs"],
            "pairs_rows": s["pairs"]["rows"],
            "implied": s["pairs"]["implied"],
            "recall": rec,
            "seconds": s["seconds"],
            "process_wall_s": s["process_wall_s"],
            "timings_s": s["timings_s"],
            "peak_rss_mb": s["peak_rss_mb"],
            "command": s["command"],
        }
        report["settings"].append(row)
        print(
            json.dumps(
                {
                    k: row[k]
                    for k in (
                        "setting",
                        "candidates",
                        "pairs_rows",
                        "recall",
                        "seconds",
                        "peak_rss_mb",
                    )
                }
            ),
            flush=True,
        )
    a.results.mkdir(parents=True, exist_ok=True)
    (a.results / f"recall-{name}.json").write_text(json.dumps(report, indent=1))
    lines = [
        f"# Recall of the pairs table at t = {t:g}: {name} ({n:,} documents)",
        "",
        f"Reference: {b} x {r} bands, every candidate verified, every pair: "
        f"{len(ref_key):,} pairs with J >= {t:g}.",
        "",
        "| setting | bands x rows | expected recall at t | candidates | pairs written | "
        + " | ".join(f"recall {x[0]}" for x in bins(t))
        + " | time s | peak MB |",
        "|---|---|---:|---:|---:|" + "---:|" * 3 + "---:|---:|",
    ]
    for row in report["settings"]:
        rec = " | ".join(
            f"{f / m:.4f} ({f:,}/{m:,})" if m else "-" for f, m in row["recall"].values()
        )
        lines.append(
            f"| {row['setting']} | {row['bands']}x{row['rows']} | "
            f"{row['expected_recall_at_t']:.4f} | {row['candidates']:,} | "
            f"{row['pairs_rows']:,} | {rec} | {row['seconds']:.2f} | "
            f"{row['peak_rss_mb']:.0f} |"
        )
    (a.results / f"recall-{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
