"""Latency of ``neardup serve`` under concurrent clients, with and without one client that
sends 1 MB texts.

    python benchmarks/service_latency.py --size 100000 --clients 8 --seconds 20

Builds (or reuses, ``--index``) an SQLite index with passages of the first ``--size``
documents of ``benchmarks/data/corpus-<N>.jsonl`` (``benchmarks/corpus.py`` makes it from
``../shared/data/20news-bydate.tar.gz``), starts ``neardup serve`` on it in a subprocess, and
runs ``--clients`` client threads that alternate ``POST /query`` and ``POST /check`` (texts of
the corpus with 10% of their words edited), first alone for ``--seconds``, then as long again
beside one more client that sends ``POST /check`` with a 1 MB text (indexed documents copied
one after another, with edits: many candidates and passages). Reports p50/p99 latency of the
ordinary clients in both phases and the ratio of the p99s (the service's goal: at most 3x),
and what the big client got. Writes ``service-latency.json`` into ``--results`` (default
``benchmarks/data/results``, not tracked).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "data" / "results"
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

from index import find_corpus, read_docs  # noqa: E402
from load import free_port, start_server  # noqa: E402

from neardup import Index  # noqa: E402
from neardup.synth import edit_words  # noqa: E402

VOCAB = ["lorem", "ipsum", "dolor", "amet", "consectetur", "adipiscing", "elit", "sed"]


def build(path: Path, corpus: Path, size: int) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    t = time.perf_counter()
    with Index(path, passages=True) as idx:
        batch = []
        for doc_id, text in read_docs(corpus, size):
            batch.append((doc_id, text))
            if len(batch) == 1000:
                idx.add_many(batch)
                batch = []
        if batch:
            idx.add_many(batch)
    print(
        f"built {path} ({size:,} documents, passages) in {time.perf_counter() - t:.0f} s",
        file=sys.stderr,
    )


def run_clients(
    url: str, texts: list[str], clients: int, seconds: float, big: str | None
) -> tuple[list[float], dict]:
    """Latencies (s) of the ordinary clients' requests; what the big client got."""
    stop = time.monotonic() + seconds
    lat: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    big_stats = {"requests": 0, "latency_s": [], "statuses": {}, "incomplete": 0}

    def client(k: int) -> None:
        mine = []
        with httpx.Client(base_url=url, timeout=120) as c:
            i = k
            while time.monotonic() < stop:
                text = texts[i % len(texts)]
                route = "/query" if i % 2 == 0 else "/check"
                t = time.perf_counter()
                r = c.post(route, json={"text": text})
                mine.append(time.perf_counter() - t)
                if r.status_code != 200:
                    with lock:
                        errors.append(f"{route} {r.status_code} {r.text[:200]}")
                i += clients
        with lock:
            lat.extend(mine)

    def big_client() -> None:
        with httpx.Client(base_url=url, timeout=300) as c:
            while time.monotonic() < stop:
                t = time.perf_counter()
                r = c.post("/check", json={"text": big})
                big_stats["latency_s"].append(round(time.perf_counter() - t, 3))
                big_stats["requests"] += 1
                s = str(r.status_code)
                big_stats["statuses"][s] = big_stats["statuses"].get(s, 0) + 1
                if r.status_code == 200 and r.json().get("reuse_incomplete"):
                    big_stats["incomplete"] += 1

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    if big is not None:
        threads.append(threading.Thread(target=big_client))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"{len(errors)} requests failed, e.g. {errors[:3]}")
    return lat, big_stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--big-bytes", type=int, default=1_000_000)
    ap.add_argument(
        "--index",
        type=Path,
        default=None,
        help="an index with passages of the same corpus to reuse (default: built "
        "in benchmarks/data/service-<size>.db)",
    )
    ap.add_argument("--results", type=Path, default=RESULTS)
    a = ap.parse_args()

    corpus = find_corpus(a.size)
    path = a.index or HERE / "data" / f"service-{a.size}.db"
    if a.index is None or not path.exists():
        build(path, corpus, a.size)
    rng = np.random.default_rng(0)
    picks = set(rng.choice(a.size, 400, replace=False).tolist())
    docs = [t for i, (_, t) in enumerate(read_docs(corpus, a.size)) if i in picks]
    texts = [edit_words(t, 0.1, rng, VOCAB) for t in docs]
    parts, size = [], 0
    for t in docs:  # a 1 MB text of indexed documents, edited
        piece = edit_words(t, 0.05, rng, VOCAB)
        parts.append(piece)
        size += len(piece.encode()) + 1
        if size >= a.big_bytes:
            break
    while size < a.big_bytes:
        parts.extend(parts[: max(1, len(parts) // 2)])
        size = len(" ".join(parts).encode())
    big = " ".join(parts).encode()[: a.big_bytes].decode("utf-8", "ignore")
    port = free_port()
    proc = start_server(path, port, "--max-text-bytes", "2000000", "--max-upload-bytes", "4000000")
    url = f"http://127.0.0.1:{port}"
    try:
        run_clients(url, texts[:20], a.clients, 2.0, None)  # warm up
        alone, _ = run_clients(url, texts, a.clients, a.seconds, None)
        beside, big_stats = run_clients(url, texts, a.clients, a.seconds, big)
    finally:
        proc.terminate()
        proc.wait(30)

    def pct(x: list[float], q: float) -> float:
        return round(float(np.percentile(x, q)) * 1e3, 2)

    res = {
        "documents": a.size,
        "clients": a.clients,
        "seconds": a.seconds,
        "alone": {"requests": len(alone), "p50_ms": pct(alone, 50), "p99_ms": pct(alone, 99)},
        "beside_big_client": {
            "requests": len(beside),
            "p50_ms": pct(beside, 50),
            "p99_ms": pct(beside, 99),
        },
        "big_client": {
            "bytes": len(big.encode()),
            "requests": big_stats["requests"],
            "statuses": big_stats["statuses"],
            "reuse_incomplete": big_stats["incomplete"],
            "latency_s": big_stats["latency_s"][:20],
        },
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
    }
    res["p99_ratio"] = round(res["beside_big_client"]["p99_ms"] / res["alone"]["p99_ms"], 2)
    a.results.mkdir(parents=True, exist_ok=True)
    (a.results / "service-latency.json").write_bytes(orjson.dumps(res, option=orjson.OPT_INDENT_2))
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
