"""A keyed client of ``neardup serve`` while others hold many half-open connections.

    python benchmarks/service_flood.py --half-open 200 --seconds 30

Starts ``neardup serve`` in a subprocess on a free loopback port with API keys, over a new
SQLite index holding a few documents, and measures a client with a read key first alone
(``--baseline`` seconds), then while ``--half-open`` connections are held open by a client
without a key: each sends the start of a request's headers and never finishes them, and is
closed and opened again every ``--reconnect`` seconds (9: inside the service's 10 s header
deadline, so the service never times them out), or as soon as the service closes it. The
keyed client opens a new connection for each request (``GET /documents``, ``POST /query``)
and waits ``--pause`` seconds between them. Reports how many of its requests were answered,
with which status, and their latency (p50, p95, p99, max), alone and under the flood, and
writes ``service_flood.json`` into ``--results`` (default ``benchmarks/data/results``, which
git ignores). ``--src`` runs the service from another source tree (an older version, to
compare). The machine's open-file limit must allow the connections (``ulimit -n``).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
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
RESULTS = HERE / "data" / "results"
TEXTS = [
    "Stainless steel electric kettle, 1.7 litres, rapid boil and a limescale filter",
    "Adjustable LED desk lamp with five brightness levels and a gooseneck arm",
    "Hand woven wool rug in deep blue with a geometric pattern, 160 by 230 cm",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(folder: Path, port: int, src: Path, extra: list[str]) -> tuple:
    keys = folder / "keys.txt"
    read, write = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    keys.write_text(f"read:{read}\nwrite:{write}\n")
    keys.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_API_KEY")}
    env["PYTHONPATH"] = str(src)
    log = open(folder / "serve.log", "wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "neardup.cli",
            "serve",
            "--index",
            str(folder / "shop.db"),
            "--create",
            "--port",
            str(port),
            "--api-keys-file",
            str(keys),
            *extra,
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {(folder / 'serve.log').read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url, read, write
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the server did not start")


class Flood:
    """``n`` half-open connections, each reopened every ``reconnect`` seconds or when the
    service closes it."""

    def __init__(self, port: int, n: int, reconnect: float):
        self.port, self.n, self.reconnect = port, n, reconnect
        self.stop = threading.Event()
        self.opened = self.closed_by_service = self.refused = 0
        self.answers: dict[str, int] = {}
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _open(self) -> tuple[socket.socket | None, float]:
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            s.sendall(b"GET /documents HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow: " % self.port)
            s.setblocking(False)
            self.opened += 1
            return s, time.monotonic()
        except OSError:
            self.refused += 1
            return None, time.monotonic()

    def _run(self) -> None:
        # staggered, as independent clients would be
        conns = []
        for _ in range(self.n):
            conns.append(self._open())
            if self.stop.wait(self.reconnect / self.n / 2):
                break
        while not self.stop.is_set():
            now = time.monotonic()
            for i, (s, since) in enumerate(conns):
                closed = s is None
                if s is not None:
                    try:
                        got = s.recv(4096)
                        if got:
                            status = (
                                got.split(b" ", 2)[1].decode() if got.startswith(b"HTTP/") else "?"
                            )
                            self.answers[status] = self.answers.get(status, 0) + 1
                        closed = True
                        self.closed_by_service += 1
                    except BlockingIOError:
                        pass
                    except OSError:
                        closed = True
                        self.closed_by_service += 1
                if closed or now - since >= self.reconnect:
                    if s is not None:
                        s.close()
                    conns[i] = self._open()
            self.stop.wait(0.2)
        for s, _ in conns:
            if s is not None:
                s.close()


def measure(url: str, key: str, seconds: float, pause: float) -> dict:
    statuses: dict[str, int] = {}
    ms: list[float] = []
    deadline = time.monotonic() + seconds
    i = 0
    # a new connection for each request, as a client that comes now and then
    c = httpx.Client(
        base_url=url, timeout=30, headers={"Authorization": f"Bearer {key}", "Connection": "close"}
    )
    while time.monotonic() < deadline:
        t = time.perf_counter()
        try:
            r = (
                c.get("/documents")
                if i % 2 == 0
                else c.post("/query", json={"text": TEXTS[i % len(TEXTS)]})
            )
            status = str(r.status_code)
        except httpx.HTTPError as e:
            status = type(e).__name__
        ms.append((time.perf_counter() - t) * 1000)
        statuses[status] = statuses.get(status, 0) + 1
        i += 1
        time.sleep(pause)
    c.close()
    a = np.array(ms)
    return {
        "requests": len(ms),
        "statuses": statuses,
        "all_answered_200": set(statuses) == {"200"},
        "latency_ms": {
            "p50": round(float(np.percentile(a, 50)), 1),
            "p95": round(float(np.percentile(a, 95)), 1),
            "p99": round(float(np.percentile(a, 99)), 1),
            "max": round(float(a.max()), 1),
        },
    }


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--half-open", type=int, default=200, help="connections held half-open")
    ap.add_argument(
        "--reconnect",
        type=float,
        default=9.0,
        help="seconds before a half-open connection is reopened (default: 9)",
    )
    ap.add_argument("--seconds", type=float, default=30.0, help="seconds under the flood")
    ap.add_argument("--baseline", type=float, default=5.0, help="seconds alone first")
    ap.add_argument(
        "--pause", type=float, default=0.05, help="seconds between the keyed client's requests"
    )
    ap.add_argument(
        "--src",
        default=str(ROOT / "src"),
        help="source tree to run the service from (default: this checkout's)",
    )
    ap.add_argument(
        "--results",
        default=str(RESULTS),
        help="folder for service_flood.json (default: benchmarks/data/results)",
    )
    ap.add_argument("serve_args", nargs="*", help="more options of neardup serve (after --)")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        port = free_port()
        proc, url, read, write = start_server(Path(d), port, Path(a.src), a.serve_args)
        try:
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {write}"}) as c:
                for i, text in enumerate(TEXTS):
                    c.post("/documents", json={"id": f"d{i}", "text": text}).raise_for_status()
            alone = measure(url, read, a.baseline, a.pause)
            flood = Flood(port, a.half_open, a.reconnect)
            flood.thread.start()
            deadline = time.monotonic() + a.reconnect + 5
            while flood.opened < a.half_open and time.monotonic() < deadline:
                time.sleep(0.1)  # every connection open before measuring
            under = measure(url, read, a.seconds, a.pause)
            flood.stop.set()
            flood.thread.join(30)
        finally:
            proc.terminate()
            proc.wait(30)
        log = (Path(d) / "serve.log").read_text(errors="replace")
    res = {
        "half_open": a.half_open,
        "reconnect_s": a.reconnect,
        "seconds": a.seconds,
        "serve_args": a.serve_args,
        "src": a.src,
        "alone": alone,
        "under_flood": under,
        "flood": {
            "connections_opened": flood.opened,
            "closed_by_service": flood.closed_by_service,
            "answers_to_half_open": flood.answers,
            "connect_failures": flood.refused,
        },
        "service_log_lines": len(log.splitlines()),
    }
    out = Path(a.results)
    out.mkdir(parents=True, exist_ok=True)
    (out / "service_flood.json").write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()
