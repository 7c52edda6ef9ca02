"""A bounded load test of `neardup serve` (a real server process on loopback): parallel writers
and readers, then every acknowledged document is in the index exactly once and no request
failed. benchmarks/load.py runs the same with more clients and reports the latencies."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from load import free_port, run_load, start_server  # noqa: E402


def test_parallel_writers_and_readers_lose_nothing(tmp_path):
    port = free_port()
    proc = start_server(tmp_path / "load.db", port)
    try:
        res = run_load(f"http://127.0.0.1:{port}", writers=8, readers=4, docs=20, batch_every=2)
    finally:
        proc.terminate()
        proc.wait(30)
    assert res["error_count"] == 0, res["errors"]
    assert res["documents_acknowledged"] == 8 * 20 == res["documents_in_index"]
    assert res["missing"] == []
    assert res["latency_ms"]["query"]["n"] > 0 and res["latency_ms"]["batch"]["n"] > 0
