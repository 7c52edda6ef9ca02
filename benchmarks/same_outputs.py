"""Do two builds of neardup give the same outputs? The guard of a change that must not change
behaviour (a restructuring): the same jobs run with the code of two source trees, their
outputs compared file by file, and each job's whole-process time shown beside.

    # a checkout of the code before (its compiled kernels copied beside its sources)
    git worktree add /tmp/before HEAD~5 && cp src/neardup/_kernels/*.so /tmp/before/src/neardup/_kernels/
    .venv/bin/python benchmarks/same_outputs.py /tmp/before . --corpus benchmarks/data/corpus-100000.jsonl

Jobs: ``neardup dedup`` of ``--corpus`` (default: ``examples/news.jsonl``), the Dask engine on
``examples/news.jsonl`` (``--skip dask`` to leave it out), ``neardup reuse`` of
``examples/news.jsonl``, ``neardup products dedup`` of ``examples/offers/*.jsonl`` and, when
``../shared/data/TVs-all-merged.json`` is there, ``neardup products eval`` of it (the TV study;
said when missing). Parquet files are compared as tables, other files byte for byte; a
``summary.json`` (timings), plots and Markdown reports (dates) are left out. The jobs of the two
trees alternate, ``--repeat`` times; the outputs of the first round are compared. Exit status 1
when an output differs or is missing.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TV = ROOT.parent / "shared" / "data" / "TVs-all-merged.json"
SKIPPED_SUFFIXES = {".png", ".md"}


def jobs(corpus: Path, skip: set[str]) -> list[tuple[str, list[str]]]:
    """``(name, arguments of neardup)``; ``OUT`` stands for the job's output folder."""
    news = str(ROOT / "examples" / "news.jsonl")
    offers = sorted(str(p) for p in (ROOT / "examples" / "offers").glob("*.jsonl"))
    out = [
        ("dedup", ["dedup", str(corpus), "--id-field", "id", "-o", "OUT", "--quiet"]),
        ("dask", ["dedup", news, "--id-field", "id", "-o", "OUT", "--engine", "dask", "--quiet"]),
        ("reuse", ["reuse", news, "--id-field", "id", "-o", "OUT", "--quiet"]),
        ("offers", ["products", "dedup", *offers, "-o", "OUT", "--quiet"]),
    ]
    if TV.exists():
        out.append(("tv", ["products", "eval", str(TV), "-o", "OUT", "--quiet"]))
    elif "tv" not in skip:
        print(f"same_outputs.py: {TV} is missing: the TV study is left out", file=sys.stderr)
    return [j for j in out if j[0] not in skip]


def run(tree: Path, args: list[str], out: Path) -> float:
    """Run ``neardup`` with the code of ``tree``; its whole-process seconds."""
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    cmd = [sys.executable, "-m", "neardup.cli", *(str(out) if a == "OUT" else a for a in args)]
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    took = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"same_outputs.py: {' '.join(cmd)} (code of {tree}) failed:\n{proc.stderr}")
    return took


def differences(a: Path, b: Path) -> list[str]:
    """The outputs of ``a`` that ``b`` lacks or holds otherwise (and those only ``b`` has)."""
    import pyarrow.parquet as pq

    out = []
    names_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    names_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    for rel in sorted(names_a | names_b):
        if rel.name == "summary.json" or rel.suffix in SKIPPED_SUFFIXES:
            continue
        if rel not in names_a or rel not in names_b:
            out.append(f"{rel}: only in {'the first' if rel in names_a else 'the second'}")
        elif rel.suffix == ".parquet":
            if not pq.read_table(a / rel).equals(pq.read_table(b / rel)):
                out.append(f"{rel}: the tables differ")
        elif not filecmp.cmp(a / rel, b / rel, shallow=False):
            out.append(f"{rel}: the bytes differ")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("first", type=Path, help="a source tree (holding src/neardup), e.g. before")
    ap.add_argument("second", type=Path, help="another source tree, e.g. after")
    ap.add_argument("--corpus", type=Path, default=ROOT / "examples" / "news.jsonl")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of every job (alternating)")
    ap.add_argument("--skip", action="append", default=[], help="a job to leave out")
    a = ap.parse_args()
    if not a.corpus.exists():
        sys.exit(f"same_outputs.py: {a.corpus} is missing (see benchmarks/README.md)")
    trees = [a.first.resolve(), a.second.resolve()]
    bad = 0
    with tempfile.TemporaryDirectory(prefix="same-outputs-") as tmp:
        print("| job | first: seconds | second: seconds | outputs |")
        print("|---|---|---|---|")
        for name, args in jobs(a.corpus, set(a.skip)):
            times: list[list[float]] = [[], []]
            for r in range(a.repeat):
                for k, tree in enumerate(trees):
                    times[k].append(run(tree, args, Path(tmp) / f"{name}-{k}-{r}"))
            diff = differences(Path(tmp) / f"{name}-0-0", Path(tmp) / f"{name}-1-0")
            bad += bool(diff)
            shown = ", ".join(f"{t:.2f}" for t in times[0]), ", ".join(f"{t:.2f}" for t in times[1])
            print(f"| {name} | {shown[0]} | {shown[1]} | {'same' if not diff else 'DIFFER'} |")
            for d in diff:
                print(f"  {name}: {d}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
