"""A benchmark run with its default options writes nowhere git tracks: the default results
folder of every script in benchmarks/ is git-ignored, and only an explicit
``--results benchmarks/results/...`` refreshes the tables the README and benchmarks/README quote.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"

#: Runs a script as ``__main__`` up to its argument parsing and prints the default of --results
#: as the parser holds it (nothing is measured or written).
PROBE = """
import argparse, runpy, sys
def parse_args(self, *args, **kwargs):
    print(self.get_default("results"))
    raise SystemExit(0)
argparse.ArgumentParser.parse_args = parse_args
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
raise SystemExit("the script parsed no arguments")
"""

SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if '"--results"' in p.read_text())


def default_results(script: str) -> Path:
    r = subprocess.run(
        [sys.executable, "-c", PROBE, str(BENCH / script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    path = Path(r.stdout.strip().splitlines()[-1])
    return (path if path.is_absolute() else ROOT / path).resolve()


def in_git_checkout() -> bool:
    if shutil.which("git") is None:
        return False
    r = subprocess.run(
        ["git", "rev-parse", "--is-inside-work-tree"], cwd=ROOT, capture_output=True, text=True
    )
    return r.returncode == 0 and r.stdout.strip() == "true"


def test_every_script_that_writes_results_is_checked():
    assert {
        "compare.py",
        "core.py",
        "dask_scale.py",
        "fca.py",
        "index.py",
        "load.py",
        "startup.py",
    } <= set(SCRIPTS)


@pytest.mark.skipif(not in_git_checkout(), reason="not a git checkout (or no git)")
@pytest.mark.parametrize("script", SCRIPTS)
def test_default_results_folder_is_git_ignored(script):
    path = default_results(script)
    rel = path.relative_to(ROOT)
    assert not path.is_relative_to(BENCH / "results"), f"{script} writes {rel} by default"
    r = subprocess.run(["git", "check-ignore", "-q", str(rel)], cwd=ROOT)
    assert r.returncode == 0, f"{script} writes {rel} by default, which git does not ignore"
