"""``benchmarks/same_outputs.py``, the guard of a change that must not change behaviour: it
finds a planted difference in a table, in bytes and in the files present, and says "same"
for the code of one tree run twice."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "same_outputs.py"


def _module():
    spec = importlib.util.spec_from_file_location("same_outputs", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_differences_are_found_in_tables_bytes_and_files(tmp_path):
    same_outputs = _module()
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        (d / "deduplicated").mkdir(parents=True)
        pq.write_table(pa.table({"id": ["x", "y"], "cluster": [0, 0]}), d / "clusters.parquet")
        (d / "deduplicated" / "news.jsonl").write_text('{"id": "x"}\n')
        (d / "summary.json").write_text('{"seconds": 1}')
    (b / "summary.json").write_text('{"seconds": 2}')  # timings are left out
    assert same_outputs.differences(a, b) == []
    pq.write_table(pa.table({"id": ["x", "y"], "cluster": [0, 1]}), b / "clusters.parquet")
    (b / "deduplicated" / "news.jsonl").write_text('{"id": "y"}\n')
    (a / "pairs.parquet").write_bytes(b"")
    assert same_outputs.differences(a, b) == [
        "clusters.parquet: the tables differ",
        "deduplicated/news.jsonl: the bytes differ",
        "pairs.parquet: only in the first",
    ]


def test_one_tree_against_itself_gives_the_same_outputs():
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(ROOT), str(ROOT), "--skip", "dask", "--skip", "tv"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    rows = [
        line for line in proc.stdout.splitlines() if line.startswith("| ") and "job" not in line
    ]
    assert [r.split(" | ")[0][2:] for r in rows] == ["dedup", "reuse", "offers"]
    assert all(r.endswith("| same |") for r in rows)
