"""A smoke test of benchmarks/service_scale.py on a tiny generated corpus: it builds an SQLite
index with passages, serves it with API keys, drives it with reader and writer processes for a
few seconds, reports every endpoint without errors, removes what the writer added, and reuses
the index on a second run. (The archive of ../shared is not needed.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson

from neardup import Index
from neardup.synth import make_corpus

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "service_scale.py"


def _run(tmp_path: Path, corpus: Path, index: Path, *args: str) -> dict:
    r = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--size",
            "300",
            "--corpus",
            str(corpus),
            "--index",
            str(index),
            "--results",
            str(tmp_path / "results"),
            "--seconds",
            "2",
            "--warmup",
            "0.5",
            "--readers",
            "2",
            "--writer-batch",
            "20",
            "--writer-docs",
            "20000",
            *args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:] + r.stdout[-3000:]
    return json.loads((tmp_path / "results" / "service-scale-sqlite-300.json").read_text())


def test_service_scale_smoke(tmp_path):
    texts, _ = make_corpus(300, seed=3, words=(80, 200))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(
        b"".join(orjson.dumps({"id": f"d{i:07d}", "text": t}) + b"\n" for i, t in enumerate(texts))
    )
    index = tmp_path / "scale.db"

    res = _run(tmp_path, corpus, index)
    assert res["build"]["reused"] is False
    e = res["endpoints"]
    for route in ("/query", "/check", "/documents:batch"):
        assert e[route]["requests"] > 0, route
        assert e[route]["errors"] == 0, res["error_examples"]
        assert e[route]["p50_ms"] <= e[route]["p99_ms"] <= e[route]["max_ms"]
    assert res["errors"] == 0 and res["adds_per_s"] > 0
    assert res["writer_documents_removed"] >= res["documents_added"] > 0
    assert res["server_peak_rss_mb"] > 0 and res["cpu_s"]["server"] > 0
    assert res["index_bytes_before"]["db"] > 0
    with Index(index) as idx:  # the writer's documents are gone again
        assert len(idx) == 300 and idx.passages is not None

    # again, reusing the index, served by two worker processes (their CPU summed)
    again = _run(tmp_path, corpus, index, "--workers", "2")
    assert again["build"]["reused"] is True and again["errors"] == 0
    assert again["cpu_s"]["server"] > 0 and again["server_peak_rss_mb"] > 0
