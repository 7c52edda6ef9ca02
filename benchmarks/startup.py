"""What a user waits for: whole processes, from spawn to exit, of the commands started often.

    python benchmarks/startup.py                       # this checkout, median of 5 runs each
    python benchmarks/startup.py --tree /path/to/other/checkout --label before

Each command runs in a fresh process (``<venv>/bin/neardup``; with ``--tree``, that checkout's
``src`` first on ``PYTHONPATH``, so two builds can be compared with one virtual environment);
the wall time is taken around the whole process, output discarded. Commands:

* ``--help`` and ``dedup --help`` (start-up alone);
* ``dedup`` of the generated news corpora of 9,000 documents (18 MB) and 21,000 documents
  (43 MB), writing clusters, pairs and the deduplicated corpus;
* ``index query`` with one text, ``stream --no-add`` of 20 records, against an SQLite index
  of the 9,000 documents (built once, not timed);
* ``serve``: from spawn to the first ``200`` of ``GET /health``;
* ``products dedup`` of the 1,624 TV offers (``../shared/data/TVs-all-merged.json``, skipped
  with a note when missing);
* the first run after installing: with ``--fresh-install``, a wheel of this checkout is built
  (``python -m build --wheel``), installed into a new virtual environment, and the first
  ``dedup`` of the bundled example there is timed against the next ones (the kernels are
  compiled when the wheel is built: nothing is compiled or cached at run time).

The corpora are built with ``corpus.py`` into ``benchmarks/data`` if missing (the 20 Newsgroups
archive is read from ``../shared/data``). Writes ``startup-<label>.json`` and ``.md`` into
``--results`` (default ``benchmarks/data/results``, not tracked; the tracked tables are in
``benchmarks/results/whole-process``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: Where the report goes unless --results says otherwise: a folder git ignores.
RESULTS = HERE / "data" / "results"
sys.path.insert(0, str(HERE))

import corpus as corpus_mod  # noqa: E402

TVS = ROOT.parent / "shared" / "data" / "TVs-all-merged.json"


# Processes are timed as a user runs them: with Python keeping compiled bytecode. With
# PYTHONDONTWRITEBYTECODE set (some shells and CI images set it) every start recompiles every
# module of the package, 2-3x its import time.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def ensure_corpus(size: int, data: Path, archive: Path) -> Path:
    path = data / f"corpus-{size}.jsonl"
    if not path.exists():
        data.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        corpus_mod.write_corpus(size, path, archive=archive)
        print(f"built {path.name} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return path


class Runner:
    def __init__(self, exe: Path, tree: Path | None):
        self.exe = exe
        self.env = dict(os.environ)
        if tree is not None:
            self.env["PYTHONPATH"] = str(tree / "src")

    def once(self, args: list[str], stdin: bytes | None = None, env: dict | None = None) -> float:
        t = time.perf_counter()
        r = subprocess.run(
            [str(self.exe), *args],
            input=stdin,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env or self.env,
        )
        wall = time.perf_counter() - t
        if r.returncode != 0:
            raise SystemExit(
                f"neardup {' '.join(args)} failed ({r.returncode}):\n"
                f"{r.stderr.decode(errors='replace')[-2000:]}"
            )
        return wall

    def serve_once(self, index: Path) -> float:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        t = time.perf_counter()
        proc = subprocess.Popen(
            [str(self.exe), "serve", "--index", str(index), "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=self.env,
        )
        try:
            while True:
                try:
                    with urllib.request.urlopen(
                        f"http://127.0.0.1:{port}/health", timeout=1
                    ) as resp:
                        if resp.status == 200:
                            return time.perf_counter() - t
                except OSError:
                    if proc.poll() is not None:
                        raise SystemExit("neardup serve exited before answering") from None
                    if time.perf_counter() - t > 60:
                        raise SystemExit("neardup serve did not answer in 60 s") from None
                    time.sleep(0.01)
        finally:
            proc.terminate()
            proc.wait()


def fresh_install(work: Path, example: Path, rows: list[dict]) -> None:
    """Build a wheel of this checkout, install it into a new virtual environment (its
    dependencies from the package index, pip's cache allowed) and time the first ``neardup
    dedup`` there, then the next three."""
    wheels = work / "wheels"
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(wheels), str(ROOT)],
        check=True,
        capture_output=True,
    )
    built = time.perf_counter() - t
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    wheel = next(wheels.glob("neardup-*.whl"))
    t = time.perf_counter()
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", str(wheel)],
        check=True,
        capture_output=True,
    )
    installed = time.perf_counter() - t
    exe = venv / "bin" / "neardup"
    walls = []
    for i in range(4):
        out = work / f"fresh-out-{i}"
        t = time.perf_counter()
        subprocess.run(
            [str(exe), "dedup", str(example), "--id-field", "id", "-o", str(out), "--quiet"],
            check=True,
            cwd=work,
        )
        walls.append(time.perf_counter() - t)
    print(f"wheel built in {built:.1f} s, installed in {installed:.1f} s", file=sys.stderr)
    for name, w in (
        ("first run after installing the wheel: dedup example", [walls[0]]),
        ("later runs in that installation: dedup example", walls[1:]),
    ):
        rows.append(
            {
                "command": name,
                "median_s": round(statistics.median(w), 3),
                "min_s": round(min(w), 3),
                "runs": [round(x, 3) for x in w],
            }
        )
        print(f"{name:<58} {statistics.median(w):7.3f} s", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, help="checkout whose src/ to run (default: this one)")
    ap.add_argument("--label", default="current")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--venv", type=Path, default=ROOT / ".venv")
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--archive", type=Path, default=corpus_mod.DEFAULT_ARCHIVE)
    ap.add_argument(
        "--results",
        type=Path,
        default=RESULTS,
        help="folder for startup-<label>.json and .md (default: "
        "benchmarks/data/results, which git ignores; --results "
        "benchmarks/results/whole-process refreshes the tracked tables)",
    )
    ap.add_argument(
        "--fresh-install",
        action="store_true",
        help="also build a wheel, install it into a new venv and time its first run",
    )
    a = ap.parse_args()

    exe = a.venv / "bin" / "neardup"
    if not exe.exists():
        raise SystemExit(f"{exe}: missing; run `make test` or `make demo` first")
    tree = a.tree.resolve() if a.tree else None
    run = Runner(exe, tree)
    example = (tree or ROOT) / "examples" / "news.jsonl"
    small = ensure_corpus(9000, a.data, a.archive)
    large = ensure_corpus(21000, a.data, a.archive)
    work = Path(tempfile.mkdtemp(prefix="neardup-startup-"))
    rows: list[dict] = []

    def timed(name: str, fn, repeat: int = a.repeat) -> None:
        fn()  # a warm-up run: caches, page cache
        walls = [fn() for _ in range(repeat)]
        rows.append(
            {
                "command": name,
                "median_s": round(statistics.median(walls), 3),
                "min_s": round(min(walls), 3),
                "runs": [round(w, 3) for w in walls],
            }
        )
        print(f"{name:<58} {statistics.median(walls):7.3f} s", file=sys.stderr)

    try:
        index = work / "index.db"
        run.once(["index", "create", str(index)])
        run.once(["index", "add", str(index), str(small), "--id-field", "id"])
        query = "the graphics card drivers for this monitor were updated last week"
        records = b"".join(
            json.dumps({"id": f"q{i}", "text": f"{query} number {i}"}).encode() + b"\n"
            for i in range(20)
        )
        out = work / "out"

        def dedup(path: Path, extra: tuple[str, ...] = ()) -> float:
            shutil.rmtree(out, ignore_errors=True)
            return run.once(["dedup", str(path), "-o", str(out), "--quiet", *extra])

        timed("neardup --help", lambda: run.once(["--help"]))
        timed("neardup dedup --help", lambda: run.once(["dedup", "--help"]))
        timed(f"neardup dedup ({small.name}, 9,000 docs, 18 MB)", lambda: dedup(small))
        timed(f"neardup dedup ({large.name}, 21,000 docs, 43 MB)", lambda: dedup(large))
        timed(
            "neardup index query (1 text, 9,000-document index)",
            lambda: run.once(["index", "query", str(index), query]),
        )
        timed(
            "neardup stream --no-add (20 records)",
            lambda: run.once(["stream", str(index), "--no-add", "--quiet"], stdin=records),
        )
        timed("neardup serve (spawn to first /health)", lambda: run.serve_once(index))
        if TVS.exists():

            def products() -> float:
                shutil.rmtree(out, ignore_errors=True)
                return run.once(["products", "dedup", str(TVS), "-o", str(out), "--quiet"])

            timed("neardup products dedup (1,624 TV offers)", products)
        else:
            print(f"{TVS}: missing; products dedup not measured", file=sys.stderr)
        if a.fresh_install:
            fresh_install(work, example, rows)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    a.results.mkdir(parents=True, exist_ok=True)
    meta = {
        "label": a.label,
        "tree": str(tree or ROOT),
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "repeat": a.repeat,
    }
    (a.results / f"startup-{a.label}.json").write_text(
        json.dumps({**meta, "rows": rows}, indent=1) + "\n"
    )
    lines = [
        f"# Whole-process times: {a.label} ({meta['when']}, {meta['machine']})",
        "",
        f"Median of {a.repeat} runs after one warm-up run (the first run after installing:"
        " one run).",
        "",
        "| command | median s | min s |",
        "|---|---:|---:|",
    ]
    lines += [f"| {r['command']} | {r['median_s']:.3f} | {r['min_s']:.3f} |" for r in rows]
    (a.results / f"startup-{a.label}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
