"""``neardup serve --workers N`` on real processes over loopback: several worker processes
answer on one port; what one adds the others find; an uploaded collection is answered by every
worker; a worker that dies is replaced; SIGTERM stops them all and removes the collections'
folder; an index in memory is refused; connections get Nagle's algorithm off."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

from test_server_access import (  # noqa: E402
    READ_KEY,
    WRITE_KEY,
    _env,
    _free_port,
    _wait_for,
    serve,
    write_keys,
)

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads the workers from /proc"
)

TEXTS = {
    "kettle": "Stainless steel electric kettle with a capacity of 1.7 litres, rapid boil in "
    "under four minutes and a removable washable limescale filter for clean water.",
    "lamp": "A desk lamp with a flexible arm, warm white light, three brightness levels and a "
    "weighted base that keeps it steady on any desk or bedside table at night.",
}


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


def _process_of_each_answer(srv, key: str, n: int) -> set[int]:
    """The worker (``process`` of /stats) of ``n`` requests, each on a new connection."""
    seen = set()
    for _ in range(n):
        with srv.client(key) as c:  # a new connection each time: the system picks a worker
            seen.add(c.get("/stats").json()["process"])
    return seen


def test_workers_answer_on_one_port_and_share_the_index_and_the_collections(tmp_path: Path):
    keys = write_keys(tmp_path / "keys.txt", f"read:{READ_KEY}", f"write:{WRITE_KEY}")
    folder = tmp_path / "collections"
    folder.mkdir()
    srv = serve(
        tmp_path, "--api-keys-file", str(keys), "--workers", "2", "--collection-folder", str(folder)
    )
    try:
        assert _wait_for(lambda: len(_children(srv.proc.pid)) == 2)
        workers = set(_children(srv.proc.pid))
        seen = _process_of_each_answer(srv, READ_KEY, 40)
        assert seen == workers  # both answer, and nothing else does
        # what one worker adds, every worker finds (the index is one)
        with srv.client(WRITE_KEY) as c:
            for doc_id, text in TEXTS.items():
                assert c.post("/documents", json={"id": doc_id, "text": text}).status_code == 201
        near = TEXTS["kettle"].upper()  # the same words: similarity 1
        answered = set()
        for _ in range(30):
            with srv.client(READ_KEY) as c:
                r = c.post("/query", json={"text": near})
                assert r.status_code == 200
                assert [m["id"] for m in r.json()["matches"]] == ["kettle"]
                answered.add(c.get("/stats").json()["process"])
        assert answered == workers
        # an uploaded collection is answered by every worker, on new connections
        lines = [f'{{"id": "a{i}", "text": "{TEXTS["kettle"]} {i % 3}"}}' for i in range(9)]
        lines += [f'{{"id": "b{i}", "text": "{TEXTS["lamp"]}"}}' for i in range(3)]
        with srv.client(WRITE_KEY) as c:
            up = c.post(
                "/collections",
                files={"file": ("c.jsonl", "\n".join(lines).encode())},
                data={"id_field": "id"},
            )
        assert up.status_code == 201, up.text
        cid = up.json()["collection_id"]
        shared = [p for p in folder.iterdir() if p.name.startswith("neardup-collections-")]
        assert len(shared) == 1 and (shared[0] / cid).is_dir()
        assert oct(shared[0].stat().st_mode & 0o777) == "0o700"
        for _ in range(20):
            with srv.client(READ_KEY) as c:
                got = c.get(f"/collections/{cid}")
                assert got.status_code == 200
                assert got.json() == up.json()
                pair = c.get(f"/collections/{cid}/pair", params={"a": "b0", "b": "b2"})
                assert pair.status_code == 200 and pair.json()["similarity"] == 1.0
        # a worker that dies is replaced; the others go on answering
        victim = sorted(workers)[0]
        os.kill(victim, signal.SIGKILL)
        assert _wait_for(
            lambda: len(_children(srv.proc.pid)) == 2 and victim not in _children(srv.proc.pid), 20
        )
        assert _process_of_each_answer(srv, READ_KEY, 40) == set(_children(srv.proc.pid))
        with srv.client(READ_KEY) as c:
            assert c.get("/documents/kettle").status_code == 200
    finally:
        out = srv.stop()
    # SIGTERM: the workers stop with the service, the collections' folder goes with them
    assert srv.proc.returncode == 0, out[-3000:]
    assert not any(folder.iterdir())
    assert "with 2 worker processes" in out
    assert "[worker 0]" in out and "[worker 1]" in out
    assert "exited (exit code -9); starting another" in out
    for pid in workers:
        assert (
            not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
        )


def test_few_long_lived_clients_end_up_spread_over_the_workers(tmp_path: Path):
    """Six clients that keep their connection: a worker holding more than half of them
    closes one after a response (``Connection: close``), its client reconnects, and the
    connections end up three and three, whatever the system's first spread."""
    srv = serve(tmp_path, "--workers", "2")
    clients = [srv.client() for _ in range(6)]
    try:
        closed = 0
        for _ in range(12):
            where = []
            for c in clients:
                r = c.get("/stats")
                assert r.status_code == 200
                closed += r.headers.get("connection") == "close"
                where.append(r.json()["process"])
        # the last round: every client answered by the worker of its current connection
        assert sorted(where.count(p) for p in set(where)) == [3, 3], where
        out = srv.output()
    finally:
        for c in clients:
            c.close()
        srv.stop()
    assert "Traceback" not in out


def test_sighup_reaches_the_workers_and_harms_none(tmp_path: Path):
    """SIGHUP is passed on to the workers: with a key file each reads it again; without one
    it changes nothing (no worker dies of it)."""
    srv = serve(tmp_path, "--workers", "2")
    try:
        assert _wait_for(lambda: len(_children(srv.proc.pid)) == 2)
        workers = set(_children(srv.proc.pid))
        for _ in range(3):
            os.kill(srv.proc.pid, signal.SIGHUP)
            time.sleep(0.3)
        assert set(_children(srv.proc.pid)) == workers
        assert _process_of_each_answer(srv, "", 20) == workers
    finally:
        out = srv.stop()
    assert srv.proc.returncode == 0 and "exited" not in out and "Traceback" not in out


def test_worker_connections_send_responses_at_once(tmp_path: Path):
    """Each response on a kept-alive connection comes at once: with Nagle's algorithm on, the
    second part of a response waited for the client's delayed acknowledgement (~40 ms)."""
    srv = serve(tmp_path, "--workers", "2")
    try:
        with srv.client() as c:
            c.post("/documents", json={"id": "kettle", "text": TEXTS["kettle"]})
            times = []
            for _ in range(30):
                t = time.perf_counter()
                assert c.post("/query", json={"text": TEXTS["kettle"]}).status_code == 200
                times.append(time.perf_counter() - t)
        assert sorted(times)[len(times) // 2] < 0.03, times
    finally:
        srv.stop()


def test_workers_need_an_index_they_can_share(tmp_path: Path):
    port = _free_port()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "neardup.cli",
            "serve",
            "--index",
            ":memory:",
            "--create",
            "--port",
            str(port),
            "--workers",
            "2",
        ],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert "an index in memory cannot be shared by several processes" in r.stderr


def test_workers_report_a_port_in_use_before_starting(tmp_path: Path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "neardup.cli",
                "serve",
                "--index",
                str(tmp_path / "shop.db"),
                "--create",
                "--port",
                str(port),
                "--workers",
                "2",
            ],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert r.returncode == 2, r.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in r.stderr


def test_one_worker_on_several_processors_says_how_to_use_them(tmp_path: Path):
    from neardup._threads import available_cpus

    srv = serve(tmp_path)
    out = srv.stop()
    cpus = available_cpus()
    hint = f"--workers {cpus} answers more requests at once"
    assert (hint in out) == (cpus > 1), out[-2000:]
