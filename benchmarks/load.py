"""Load test of ``neardup serve``: many parallel writers and readers on loopback.

    python benchmarks/load.py --writers 16 --readers 16 --docs 200

Starts ``neardup serve`` in a subprocess on a free loopback port over a new SQLite index, then
runs writer threads (each adds its own documents with ``POST /documents``, some through
``POST /documents:batch``) and reader threads (``POST /query`` with texts being written, and
``GET /stats``) at the same time. Afterwards it checks that every acknowledged document is in the
index exactly once (``GET /stats`` count and ``GET /documents/{id}`` for each), that nothing
else is, and that no request failed. Reports requests/s and p50/p99 latency per kind of request.
The test suite runs a small bounded version of this (``tests/test_server_load.py``). Writes
``load.json`` into ``--results`` (default ``benchmarks/data/results``, not tracked;
``--results benchmarks/results`` refreshes the tracked figures).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: Where the report goes unless --results says otherwise: a folder git ignores.
RESULTS = HERE / "data" / "results"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(index: Path, port: int, *extra: str) -> subprocess.Popen:
    """``neardup serve --index INDEX --create --port PORT EXTRA...`` in a subprocess, once it
    answers ``/health``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    # its log to a file: a pipe nobody reads fills after 64 KB of log lines (a few hundred
    # requests) and the server then waits on it forever
    err = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "neardup.cli",
            "serve",
            "--index",
            str(index),
            "--create",
            "--port",
            str(port),
            *extra,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=err,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        if proc.poll() is not None:
            err.seek(0)
            raise RuntimeError(f"server exited: {err.read().decode()[-2000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start in 30 s")


def _text(w: int, i: int) -> str:
    rng = np.random.default_rng(w * 100_003 + i)
    return " ".join(f"w{x}" for x in rng.integers(0, 50_000, 120))


def run_load(url: str, writers: int, readers: int, docs: int, batch_every: int = 5) -> dict:
    """Writers add ``docs`` documents each (every ``batch_every``-th request a batch of 5);
    readers query until the writers are done. Returns latencies, counts and errors."""
    lat: dict[str, list[float]] = {"add": [], "batch": [], "query": [], "stats": []}
    errors: list[str] = []
    acked: list[str] = []
    lock = threading.Lock()
    done = threading.Event()

    def record(kind: str, t0: float, r: httpx.Response, ok: tuple[int, ...]) -> bool:
        dt = time.perf_counter() - t0
        with lock:
            lat[kind].append(dt)
            if r.status_code not in ok:
                errors.append(f"{kind}: {r.status_code} {r.text[:200]}")
                return False
        return True

    def writer(w: int) -> None:
        with httpx.Client(base_url=url, timeout=60) as c:
            i = 0
            while i < docs:
                if (i // 5) % batch_every == batch_every - 1 and i + 5 <= docs:
                    part = [{"id": f"w{w}-{j}", "text": _text(w, j)} for j in range(i, i + 5)]
                    t0 = time.perf_counter()
                    r = c.post("/documents:batch", json={"documents": part})
                    if record("batch", t0, r, (200, 201)):
                        with lock:
                            acked.extend(d["id"] for d in part)
                    i += 5
                else:
                    t0 = time.perf_counter()
                    r = c.post("/documents", json={"id": f"w{w}-{i}", "text": _text(w, i)})
                    if record("add", t0, r, (200, 201)):
                        with lock:
                            acked.append(f"w{w}-{i}")
                    i += 1

    def reader(k: int) -> None:
        rng = np.random.default_rng(k)
        with httpx.Client(base_url=url, timeout=60) as c:
            while not done.is_set():
                w, i = int(rng.integers(0, writers)), int(rng.integers(0, docs))
                t0 = time.perf_counter()
                r = c.post("/query", json={"text": _text(w, i)})
                record("query", t0, r, (200,))
                if rng.random() < 0.1:
                    t0 = time.perf_counter()
                    record("stats", t0, c.get("/stats"), (200,))

    ws = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    rs = [threading.Thread(target=reader, args=(k,)) for k in range(readers)]
    t0 = time.perf_counter()
    for t in ws + rs:
        t.start()
    for t in ws:
        t.join()
    done.set()
    for t in rs:
        t.join()
    wall = time.perf_counter() - t0

    # every acknowledged document is there once, and nothing else
    with httpx.Client(base_url=url, timeout=60) as c:
        count = c.get("/stats").json()["documents"]
        missing = [d for d in acked if c.get(f"/documents/{d}").status_code != 200]
    total = sum(len(v) for v in lat.values())
    return {
        "writers": writers,
        "readers": readers,
        "documents_acknowledged": len(acked),
        "documents_in_index": count,
        "missing": missing[:10],
        "errors": errors[:10],
        "error_count": len(errors),
        "requests": total,
        "seconds": round(wall, 2),
        "requests_per_s": round(total / wall, 1),
        "latency_ms": {
            k: {
                "n": len(v),
                "p50": round(float(np.percentile(v, 50)) * 1e3, 2) if v else None,
                "p99": round(float(np.percentile(v, 99)) * 1e3, 2) if v else None,
            }
            for k, v in lat.items()
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--writers", type=int, default=16)
    ap.add_argument("--readers", type=int, default=16)
    ap.add_argument("--docs", type=int, default=200, help="documents per writer")
    ap.add_argument(
        "--results",
        default=str(RESULTS),
        help="folder for load.json (default: benchmarks/data/results, which git "
        "ignores; --results benchmarks/results refreshes the tracked figures)",
    )
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        proc = start_server(Path(d) / "load.db", free_port())
        try:
            port = proc.args[proc.args.index("--port") + 1]
            res = run_load(f"http://127.0.0.1:{port}", a.writers, a.readers, a.docs)
        finally:
            proc.terminate()
            proc.wait(30)
    out = Path(a.results)
    out.mkdir(parents=True, exist_ok=True)
    (out / "load.json").write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))
    ok = (
        not res["error_count"]
        and not res["missing"]
        and res["documents_in_index"] == res["documents_acknowledged"]
    )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
