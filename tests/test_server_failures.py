"""Honest failures of the service, with real server processes: a busy SQLite index or an
unreachable Redis server give a JSON 503 with Retry-After and the service recovers by itself;
a backend that came back empty (or holds another index) is refused until the service is
restarted; any other error is a JSON 500 that shows nothing of the server."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from conftest import _ready, _start_redis  # noqa: E402
from test_server_access import serve  # noqa: E402

from neardup import Index  # noqa: E402
from neardup.index import IndexChangedError  # noqa: E402


def test_a_held_sqlite_write_lock_is_a_quick_503_and_the_service_recovers(tmp_path: Path):
    srv = serve(tmp_path)
    try:
        with srv.client() as c:
            assert (
                c.post("/documents", json={"id": "a", "text": "one two three"}).status_code == 201
            )
            other = sqlite3.connect(tmp_path / "shop.db", isolation_level=None)
            other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
            t = time.monotonic()
            r = c.post("/documents", json={"id": "b", "text": "four five six"})
            waited = time.monotonic() - t
            assert r.status_code == 503 and r.headers["retry-after"] == "1"
            assert "busy" in r.json()["detail"] and waited < 15
            assert c.get("/documents/a").status_code == 200  # reads go on meanwhile
            other.execute("ROLLBACK")
            other.close()
            assert (
                c.post("/documents", json={"id": "b", "text": "four five six"}).status_code == 201
            )
    finally:
        srv.stop()


def test_redis_stopped_then_back_empty(tmp_path: Path, tmp_path_factory):
    """Redis stopped: 503 with Retry-After, and answers again once it is back; Redis back
    without its data (no persistence): 503 saying the index is gone, until a restart."""
    proc, port = _start_redis(tmp_path_factory)
    url = f"redis://127.0.0.1:{port}/0"
    next(_ready(proc, url))
    srv = serve(tmp_path, index=f"{url}?prefix=fail")
    try:
        with srv.client() as c:
            assert (
                c.post("/documents", json={"id": "a", "text": "alpha beta gamma delta"}).status_code
                == 201
            )
            proc.terminate()
            proc.wait(10)
            r = c.post("/query", json={"text": "alpha beta gamma delta"})
            assert r.status_code == 503 and r.headers["retry-after"] == "5"
            assert "cannot be reached" in r.json()["detail"]
            proc, port2 = _start_redis(tmp_path_factory, "--port", str(port))
            next(_ready(proc, url))  # the same address, empty: its data was not kept
            r = c.post("/query", json={"text": "alpha beta gamma delta"})
            assert r.status_code == 503 and "the index is gone" in r.json()["detail"]
            assert "restart the service" in r.json()["detail"]
            assert c.post("/documents", json={"id": "b", "text": "x y z"}).status_code == 503
    finally:
        srv.stop()
        proc.terminate()
        proc.wait(10)
    assert "Traceback" not in srv.output()


def test_an_index_knows_its_identity(tmp_path: Path):
    path = tmp_path / "ix.db"
    ix = Index(path)
    ident = ix.identity
    assert isinstance(ident, str) and len(ident) == 32
    ix.add("a", "some text here")
    ix.close()
    ix = Index(path)
    assert ix.identity == ident
    ix.verify_identity()
    other = Index(tmp_path / "other.db")
    ix.storage.write_meta(
        {
            "format_version": other.storage.read_meta()["format_version"],
            "params": other.storage.read_meta()["params"],
        }
    )
    with pytest.raises(IndexChangedError, match="another index"):
        ix.verify_identity()
    assert Index().identity != Index().identity


def test_any_other_error_is_a_json_500_that_shows_nothing(monkeypatch):
    from fastapi.testclient import TestClient

    from neardup.server import create_app

    idx = Index()
    app = create_app(idx)

    def boom(*a, **k):
        raise RuntimeError("secret internals /etc/passwd")

    monkeypatch.setattr(idx, "query_within", boom)
    c = TestClient(app, base_url="http://localhost", raise_server_exceptions=False)
    r = c.post("/query", json={"text": "anything"})
    rid = r.headers["x-request-id"]
    assert r.status_code == 500 and r.json() == {
        "detail": f"internal error (reported in the service's log as request ID {rid})"
    }
    assert "secret" not in r.text


def test_a_client_that_stops_sending_its_body_gets_a_408(tmp_path: Path):
    """A request whose body does not arrive within --body-timeout is answered 408 and closed,
    and the service goes on answering others."""
    import socket

    srv = serve(tmp_path, "--body-timeout", "1")
    try:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=20) as sock:
            sock.sendall(
                b"POST /documents HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"id"' % srv.port
            )
            t = time.monotonic()
            got = b""
            while b"\r\n\r\n" not in got:
                part = sock.recv(4096)
                if not part:
                    break
                got += part
            assert got.startswith(b"HTTP/1.1 408") and time.monotonic() - t < 10
        with srv.client() as c:
            assert c.get("/health").status_code == 200
    finally:
        srv.stop()


def test_a_lock_left_by_a_killed_client_expires_promptly(redis_server: str):
    """The check-and-add lock has an owner token and a short lease: a lock left behind by a
    client that died holding it delays the next check-and-add by the lease (5 s) at most, not
    the 30 s it used to; a lock held longer than a write waits is a clear IndexBusyError."""
    import uuid

    import redis

    from neardup.index import IndexBusyError

    url = f"{redis_server}?prefix=lock{uuid.uuid4().hex[:8]}"
    ix = Index(url)
    lease = ix.storage._lock_timeout
    assert lease <= 5
    r = redis.Redis.from_url(redis_server)
    key = ix.storage._k("lock")
    r.set(key, "a-client-that-died", px=int(lease * 1000))  # as its lock would be left
    t = time.monotonic()
    assert ix.check_and_add("a", "one two three four five six") == []
    assert time.monotonic() - t <= lease + 1.5
    r.set(key, "a-client-that-holds-it", px=int(10 * lease * 1000))
    with pytest.raises(IndexBusyError, match="held by another client"):
        ix.check_and_add("b", "seven eight nine ten eleven twelve")
    r.delete(key)
    ix.storage.drop()


def test_headers_sent_too_slowly_get_a_408(tmp_path: Path):
    """A client that opens a connection and does not finish its request headers within
    --header-timeout gets 408 and the connection is closed (on a new connection and on a
    kept-alive one); headers that arrive in time, even in pieces, are served."""
    import socket

    srv = serve(tmp_path, "--header-timeout", "1")
    head = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % srv.port

    def answer(sock: socket.socket) -> bytes:
        """One whole response (headers and Content-Length bytes of body), or what came
        before the connection closed."""
        got = b""
        while b"\r\n\r\n" not in got:
            part = sock.recv(4096)
            if not part:
                return got
            got += part
        head_end = got.index(b"\r\n\r\n") + 4
        length = 0
        for line in got[:head_end].split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        while len(got) < head_end + length:
            part = sock.recv(4096)
            if not part:
                break
            got += part
        return got

    try:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=20) as sock:
            t = time.monotonic()
            sock.sendall(head)  # and never the blank line
            assert answer(sock).startswith(b"HTTP/1.1 408") and time.monotonic() - t < 8
        with socket.create_connection(("127.0.0.1", srv.port), timeout=20) as sock:
            for piece in (head[:10], head[10:], b"\r\n"):  # in time, in pieces
                sock.sendall(piece)
                time.sleep(0.2)
            assert answer(sock).startswith(b"HTTP/1.1 200")
            t = time.monotonic()
            sock.sendall(head)  # a second request on the kept-alive connection, unfinished
            got = answer(sock)
            assert got.startswith(b"HTTP/1.1 408") or got == b""  # closed either way
            assert time.monotonic() - t < 8
        with srv.client() as c:
            assert c.get("/health").status_code == 200
    finally:
        srv.stop()
