"""What ``neardup serve`` does under a flood of idle connections and what it logs, on real
server processes over loopback: half-open connections hold no request slot and are closed to
make room when connections run out, so a client with a key is still answered; requests beyond
the limit get a JSON 503 with Retry-After; the log (``--log-file``) holds the start and stop,
each request and each error with the request ID its client saw, and never a key or a text;
every response carries the page's security headers."""

from __future__ import annotations

import json
import re
import socket
import sqlite3
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from test_server_access import (  # noqa: E402
    READ_KEY,
    WRITE_KEY,
    _wait_for,
    serve,
    write_keys,
)

from neardup import Index  # noqa: E402
from neardup.server.front import SECURITY_HEADERS, request_id  # noqa: E402
from neardup.server.logs import _MaskPasswords  # noqa: E402

STATIC = Path(__file__).resolve().parents[1] / "src" / "neardup" / "server" / "static"


def _half_open(port: int) -> socket.socket:
    """A connection that has sent part of a request's headers, and no more."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow: " % port)
    return s


def _response(sock: socket.socket) -> bytes:
    """What the server sent on ``sock`` until it closed it (b"" if it just closed)."""
    got = b""
    sock.settimeout(10)
    try:
        while part := sock.recv(4096):
            got += part
    except (ConnectionResetError, TimeoutError, OSError):
        pass
    return got


def test_half_open_connections_neither_hold_request_slots_nor_connections(tmp_path: Path):
    """50 half-open connections, reconnecting as they are closed, against a service that keeps
    30 connections and handles 2 requests at once: a client with a key is answered every
    time; the connections waiting longest are closed with a JSON 503 to make room; requests
    over the limit get a JSON 503 with Retry-After and the service recovers."""
    keys = write_keys(tmp_path / "keys.txt", f"read:{READ_KEY}", f"write:{WRITE_KEY}")
    srv = serve(
        tmp_path,
        "--api-keys-file",
        str(keys),
        "--max-requests",
        "2",
        "--max-connections",
        "30",
        "--header-timeout",
        "3",
    )
    stop = threading.Event()
    first = [_half_open(srv.port) for _ in range(10)]
    time.sleep(0.5)  # their partial headers read by the server before the others come
    socks = first + [_half_open(srv.port) for _ in range(40)]
    lock = threading.Lock()

    def reconnect() -> None:  # as the attacker does: a new half-open one for each closed
        while not stop.is_set():
            with lock:
                for i, s in enumerate(socks):
                    if i >= 10 and s.fileno() != -1:
                        s.setblocking(False)
                        try:
                            closed = s.recv(4096) == b""
                        except BlockingIOError:
                            closed = False
                        except OSError:
                            closed = True
                        if closed:
                            s.close()
                            socks[i] = _half_open(srv.port)
            stop.wait(0.5)

    worker = threading.Thread(target=reconnect, daemon=True)
    worker.start()
    try:
        statuses, slowest = [], 0.0
        deadline = time.monotonic() + 8  # past two header deadlines of the half-open ones
        while time.monotonic() < deadline:
            with srv.client(READ_KEY) as c:  # a new connection each time
                t = time.monotonic()
                statuses.append(c.get("/documents").status_code)
                slowest = max(slowest, time.monotonic() - t)
            time.sleep(0.2)
        assert statuses and set(statuses) == {200}, statuses
        assert slowest < 5
        # the oldest half-open connections were closed to make room, told why, as JSON
        for s in first:
            got = _response(s)
            head, _, body = got.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in head.lower()
            assert "limit of open connections" in json.loads(body)["detail"]
        # requests over the limit: two that hold their slot (their bodies never finish)
        holders = []
        for _ in range(2):
            h = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            h.sendall(
                b"POST /documents HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: "
                b"Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100"
                b"\r\n\r\n{" % (srv.port, WRITE_KEY.encode())
            )
            holders.append(h)
        with srv.client(READ_KEY) as c:
            r = None
            for _ in range(50):
                r = c.get("/documents")
                if r.status_code == 503:
                    break
                time.sleep(0.1)
            assert r is not None and r.status_code == 503, r
            assert r.headers["retry-after"] == "1" and r.headers["x-request-id"]
            assert r.headers["content-type"] == "application/json"
            assert "limit of 2 requests at once" in r.json()["detail"]
            # liveness is answered all the same: a busy service is not a dead one
            assert c.get("/health").status_code == 200
            for h in holders:
                h.close()
            assert _wait_for(lambda: c.get("/documents").status_code == 200)
    finally:
        stop.set()
        worker.join(10)
        for s in socks:
            s.close()
        srv.stop()


def test_the_log_holds_errors_with_their_request_id_and_never_a_key_or_a_text(tmp_path: Path):
    keys = write_keys(tmp_path / "keys.txt", f"read:{READ_KEY}", f"write:{WRITE_KEY}")
    log = tmp_path / "neardup.log"
    srv = serve(tmp_path, "--api-keys-file", str(keys), "--log-file", str(log))
    text = "Handmade walnut salad bowl oiled with linseed zq7xk3 and polished by hand"
    try:
        with srv.client(WRITE_KEY) as c:
            assert c.post("/documents", json={"id": "bowl", "text": text}).status_code == 201
            assert c.post("/query", json={"text": text}).status_code == 200
            r = c.get(
                "/documents",
                headers={"X-Request-ID": "order-1234.a"},
                params={"api_key": READ_KEY, "after": "a"},
            )
            assert r.status_code == 200 and r.headers["x-request-id"] == "order-1234.a"
            # a key sent as the request ID, or an ID that is not sane, is replaced
            for bad in (READ_KEY, "a b INFO forged <x>", "x" * 200):
                rid = c.get("/health", headers={"X-Request-ID": bad}).headers["x-request-id"]
                assert re.fullmatch(r"[0-9a-f]{16}", rid), rid
            # a server error: the index's texts table is gone
            db = sqlite3.connect(tmp_path / "shop.db")
            db.execute("DROP TABLE texts")
            db.commit()
            db.close()
            r = c.get("/documents/bowl")
            assert r.status_code == 500
            rid = r.headers["x-request-id"]
            assert r.json()["detail"] == (
                f"internal error (reported in the service's log as request ID {rid})"
            )
            # logrotate moves the file away: the service writes a new one
            log.rename(tmp_path / "neardup.log.1")
            assert c.get("/health").status_code == 200
            assert _wait_for(lambda: log.exists() and "GET /health" in log.read_text())
    finally:
        printed = srv.stop()
    old = (tmp_path / "neardup.log.1").read_text()
    both = old + log.read_text()
    assert (
        "serving the index shop.db" in old
        and "API keys needed: 1 read key, 1 write key" in old
        and "at most 64 requests handled at once and 1000 connections" in old
    )
    assert "stopped, the index closed" in log.read_text()
    # the access line may come just after the move: it is in one of the two files
    errors = [line for line in both.splitlines() if f"request ID {rid}" in line]
    assert any(
        "ERROR" in line and "internal error on GET /documents/bowl" in line for line in errors
    ), old
    assert any('"GET /documents/bowl" 500' in line for line in errors), old
    assert "Traceback" in old and "no such table: texts" in old
    assert '"GET /documents" 200' in old and "request ID order-1234.a" in old
    assert "api_key" not in both and "after=" not in both  # no query string
    for secret in (READ_KEY, WRITE_KEY, text, "zq7xk3", "forged"):
        assert secret not in both
        assert secret not in printed
    assert "neardup.access" not in printed  # all of it went to the file


def test_every_response_carries_the_security_headers_and_the_page_needs_no_inline_code():
    from fastapi.testclient import TestClient

    from neardup.server import create_app

    c = TestClient(create_app(Index()), base_url="http://localhost")
    for path in ("/", "/static/app.js", "/static/style.css", "/docs", "/health", "/nope"):
        r = c.get(path)
        for name, value in SECURITY_HEADERS:
            assert r.headers[name.decode()] == value.decode(), (path, name)
        assert r.headers["x-request-id"]
    csp = c.get("/").headers["content-security-policy"]
    for part in (
        "default-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "object-src 'none'",
    ):
        assert part in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    html = (STATIC / "index.html").read_text()
    assert not re.search(r"<script(?![^>]*\bsrc=)", html)  # every script is a file
    assert not re.search(r"<style|\sstyle=|\son[a-z]+=", html)  # no inline style or handler


def test_request_ids_and_masked_passwords():
    assert request_id({"headers": [(b"x-request-id", b"abc-1:2.3")]}) == "abc-1:2.3"
    scope = {"headers": [(b"x-request-id", b"k" * 20)]}
    assert request_id(scope, refused=lambda v: v == "k" * 20) != "k" * 20
    assert request_id(scope) == scope["neardup.request_id"]  # chosen once
    import logging

    record = logging.LogRecord(
        "neardup",
        logging.ERROR,
        __file__,
        1,
        "cannot reach %s",
        ("redis://:s3cret@cache:6379/0",),
        None,
    )
    out = _MaskPasswords("%(message)s").format(record)
    assert out == "cannot reach redis://:***@cache:6379/0"


def _partial_post(port: int, path: str, length: int, sent: bytes = b"{") -> socket.socket:
    """A POST whose headers announce ``length`` bytes of body, of which only ``sent`` came."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(
        b"POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % (path.encode(), port, length) + sent
    )
    return s


def test_request_bodies_held_at_once_stay_within_their_budget(tmp_path: Path):
    """Bodies are read whole before they are handled: the bytes announced by the bodies being
    received count against --body-memory-mb, a body beyond gets a JSON 503 with Retry-After at
    once, and room comes back when a body is done. A slow body sent where no endpoint reads one
    is not waited for; a body that stops half way gets a 408 with Retry-After."""
    srv = serve(
        tmp_path, "--body-memory-mb", "10", "--max-upload-bytes", "8000000", "--body-timeout", "3"
    )
    try:
        held = _partial_post(srv.port, "/documents:batch", 7_000_000)
        time.sleep(0.5)
        with srv.client() as c:
            t = time.monotonic()
            r = c.post(
                "/query",
                content=b'{"text": "' + b"word " * 700_000 + b'"}',
                headers={"Content-Type": "application/json"},
            )
            assert r.status_code == 503 and r.headers["retry-after"] == "2", r.text
            assert "limit of 10 MB of request bodies at once" in r.json()["detail"]
            assert time.monotonic() - t < 3
            # small bodies still fit beside the held one
            assert c.post("/query", json={"text": "a small query"}).status_code == 200
            # the held body never arrives: 408 with Retry-After, and its room is given back
            got = _response(held)
            assert b" 408 " in got.split(b"\r\n")[0] and b"retry-after: 1" in got.lower()
            held.close()
            r = c.post(
                "/query",
                content=b'{"text": "' + b"word " * 700_000 + b'"}',
                headers={"Content-Type": "application/json"},
            )
            # read whole this time, and judged by the endpoint (a text over --max-text-bytes)
            assert r.status_code == 413 and "the text is 3500000 bytes" in r.text, r.text
            # a body sent to the page is not waited for: answered at once
            slow = _partial_post(srv.port, "/health", 1000)
            t = time.monotonic()
            slow.settimeout(10)
            first = slow.recv(4096).split(b"\r\n")[0]
            assert b" 405 " in first and time.monotonic() - t < 2, first
            slow.close()
    finally:
        srv.stop()


def test_over_its_memory_limit_the_service_takes_no_new_work_and_says_so(tmp_path: Path):
    """--max-memory-mb below what the process needs: requests that bring work get a JSON 503
    with Retry-After, reads without a body go on, and the log says why."""
    log = tmp_path / "serve.log"
    srv = serve(tmp_path, "--max-memory-mb", "1", "--log-file", str(log))
    try:
        with srv.client() as c:
            r = c.post("/documents", json={"id": "a", "text": "one two three four five"})
            assert r.status_code == 503 and r.headers["retry-after"] == "5", r.text
            assert "memory limit (--max-memory-mb)" in r.json()["detail"]
            assert c.get("/health").json() == {"status": "ok", "documents": 0}
            assert c.get("/documents").status_code == 200
    finally:
        srv.stop()
    assert "over its limit of 1 MB (--max-memory-mb)" in log.read_text()
