"""Core speed and memory benchmark of ``neardup dedup`` on 20 Newsgroups with planted variants.

    python benchmarks/core.py --sizes 10000 100000 1000000

For each size: builds (or reuses) ``benchmarks/data/corpus-<size>.jsonl`` with
``benchmarks/corpus.py`` from ``../shared/data/20news-bydate.tar.gz``, runs
``neardup dedup --json --quiet`` on it in a fresh process, and records wall time, time per stage,
documents/s, MB/s of text, peak resident memory (the child's ru_maxrss) and the recall of the
planted near-duplicates. Writes ``core.md`` and ``core.json`` into ``--results`` (default
``benchmarks/data/results``, not tracked; ``--results benchmarks/results`` refreshes the tracked
table).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: Where the report goes unless --results says otherwise: a folder git ignores.
RESULTS = HERE / "data" / "results"
sys.path.insert(0, str(HERE))

import corpus as corpus_mod  # noqa: E402

# Processes are timed as a user runs them: with Python keeping compiled bytecode. With
# PYTHONDONTWRITEBYTECODE set (some shells and CI images set it) every start recompiles every
# module of the package, 2-3x its import time.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def ensure_corpus(size: int, archive: Path) -> Path:
    path = HERE / "data" / f"corpus-{size}.jsonl"
    if not path.exists() or not Path(str(path) + ".truth.jsonl").exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        corpus_mod.write_corpus(size, path, archive=archive)
        print(f"built {path.name} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return path


def run_once(path: Path, outdir: Path, extra: list[str]) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "neardup.cli",
        "dedup",
        str(path),
        "--id-field",
        "id",
        "-o",
        str(outdir),
        "--json",
        "--quiet",
        *extra,
    ]
    t = time.perf_counter()
    with open(outdir.parent / f"{outdir.name}.stderr", "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        out = proc.stdout.read()
        # wait4 gives this child's own resource usage: its peak resident memory
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        msg = (outdir.parent / f"{outdir.name}.stderr").read_text()[-2000:]
        raise SystemExit(f"neardup failed ({proc.returncode}): {msg}")
    summary = json.loads(out)
    summary["process_wall_s"] = round(wall, 3)
    summary["peak_rss_mb"] = round(usage.ru_maxrss / 1024, 1)
    return summary


def planted_recall(path: Path, outdir: Path) -> dict:
    import pyarrow.parquet as pq

    t = pq.read_table(outdir / "clusters.parquet", columns=["id", "cluster"]).to_pydict()
    label = dict(zip(t["id"], t["cluster"]))
    found: dict[str, list[int]] = {}
    with open(str(path) + ".truth.jsonl") as f:
        for line in f:
            rec = json.loads(line)
            hit = label[rec["id"]] == label[rec["source"]]
            found.setdefault(rec["kind"], [0, 0])
            found[rec["kind"]][0] += hit
            found[rec["kind"]][1] += 1
    return {k: round(a / b, 4) for k, (a, b) in sorted(found.items())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--archive", type=Path, default=corpus_mod.DEFAULT_ARCHIVE)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument(
        "--results",
        type=Path,
        default=RESULTS,
        help="folder for core.md and core.json (default: benchmarks/data/results, "
        "which git ignores; --results benchmarks/results refreshes the "
        "tracked table)",
    )
    ap.add_argument(
        "--extra", nargs=argparse.REMAINDER, default=[], help="further neardup dedup options"
    )
    a = ap.parse_args()
    if not Path(a.archive).exists():
        print(
            f"error: {a.archive} is missing: the 20 Newsgroups archive (20news-bydate.tar.gz) "
            "is needed to build the benchmark corpus; see ../shared/data/README.md",
            file=sys.stderr,
        )
        return 2
    results = []
    for size in a.sizes:
        path = ensure_corpus(size, a.archive)
        outdir = HERE / "data" / f"out-{size}"
        extra = list(a.extra) + (["--workers", str(a.workers)] if a.workers else [])
        s = run_once(path, outdir, extra)
        s["planted_recall"] = planted_recall(path, outdir)
        s["size"] = size
        s["file_mb"] = round(path.stat().st_size / 1e6, 1)
        results.append(s)
        print(
            json.dumps(
                {
                    k: s[k]
                    for k in (
                        "size",
                        "process_wall_s",
                        "documents_per_s",
                        "mb_per_s",
                        "peak_rss_mb",
                    )
                }
            ),
            file=sys.stderr,
        )
    write_report(results, a.results)
    return 0


def write_report(results: list[dict], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    lines = [
        f"# neardup dedup: core benchmark ({machine})",
        "",
        "| documents | text MB | wall s | docs/s | MB/s | peak RSS MB | distinct | "
        "exact dups | near dups | candidates | verified |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in results:
        lines.append(
            f"| {s['documents']:,} | {s['text_bytes'] / 1e6:,.1f} | {s['process_wall_s']:.1f} | "
            f"{s['documents'] / s['process_wall_s']:,.0f} | "
            f"{s['text_bytes'] / 1e6 / s['process_wall_s']:.1f} | {s['peak_rss_mb']} | "
            f"{s['distinct_texts']:,} | {s['exact_duplicates']:,} | {s['near_duplicates']:,} | "
            f"{s['lsh']['candidates']:,} | {s['verified_pairs']:,} |"
        )
    lines += [
        "",
        "Time per stage (seconds):",
        "",
        "| documents | " + " | ".join(results[0]["timings_s"]) + " |",
        "|---:|" + "---:|" * len(results[0]["timings_s"]),
    ]
    for s in results:
        lines.append(
            f"| {s['documents']:,} | "
            + " | ".join(f"{v:.2f}" for v in s["timings_s"].values())
            + " |"
        )
    lines += [
        "",
        "Planted variants found in the same cluster as their source, by kind:",
        "",
        "| documents | " + " | ".join(results[0]["planted_recall"]) + " |",
        "|---:|" + "---:|" * len(results[0]["planted_recall"]),
    ]
    for s in results:
        lines.append(
            f"| {s['documents']:,} | "
            + " | ".join(f"{v:.3f}" for v in s["planted_recall"].values())
            + " |"
        )
    (out / "core.md").write_text("\n".join(lines) + "\n")
    (out / "core.json").write_text(json.dumps(results, indent=2) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
