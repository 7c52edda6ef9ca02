"""Who may use `neardup serve`, and from where, on real server processes over loopback: API keys
and their roles on every route, key rotation without a restart (file change and SIGHUP), the
binding rules without keys, the Host allow-list, Origin checks of state-changing requests
(uploads included) and CORS. The keys never show in an answer or in what the server prints."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from neardup.errors import ConfigError
from neardup.server.access import (
    ApiKeys,
    HostRules,
    is_loopback,
    normalise_origin,
    parse_key_file,
)

ROOT = Path(__file__).resolve().parents[1]
READ_KEY = "read-" + secrets.token_urlsafe(24)
WRITE_KEY = "write-" + secrets.token_urlsafe(24)
ENV_WRITE_KEY = "envwrite-" + secrets.token_urlsafe(24)
TEXT = (
    "Stainless steel electric kettle with a capacity of 1.7 litres, rapid boil in under four "
    "minutes and a removable washable limescale filter."
)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_API_KEY")}
    env["PYTHONPATH"] = str(ROOT / "src")
    env.update(extra or {})
    return env


@dataclass
class Server:
    proc: subprocess.Popen
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self, key: str | None = None, **kw) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, **kw)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.output()


def serve(
    tmp_path: Path,
    *args: str,
    env: dict[str, str] | None = None,
    index: str | None = None,
    host: str = "127.0.0.1",
) -> Server:
    """`neardup serve --create` on a free port; returns once /health answers (it needs no key)."""
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "neardup.cli",
        "serve",
        "--index",
        index or str(tmp_path / "shop.db"),
        "--create",
        "--host",
        host,
        "--port",
        str(port),
        *args,
    ]
    return start_server(cmd, tmp_path / f"serve-{port}.log", port, env)


def start_server(cmd: list[str], log: Path, port: int, env: dict[str, str] | None = None) -> Server:
    """The server process of ``cmd`` (its output in ``log``), once /health answers."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=_env(env), stdout=out, stderr=subprocess.STDOUT)
    srv = Server(proc, port, log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited: {srv.output()[-3000:]}")
        try:
            if httpx.get(f"{srv.url}/health", timeout=2).status_code == 200:
                return srv
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    srv.stop()
    raise AssertionError(f"the server did not start: {srv.output()[-3000:]}")


def write_keys(path: Path, *lines: str) -> Path:
    path.write_text("# keys of the test service\n\n" + "\n".join(lines) + "\n")
    path.chmod(0o600)
    return path


def no_key_shown(*texts: str) -> None:
    for t in texts:
        for key in (READ_KEY, WRITE_KEY, ENV_WRITE_KEY):
            assert key not in t


# ---------------------------------------------------------------------------------------------
# Keys and roles on every route


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A service with a key file (a read and a write key) and a write key in the environment,
    holding two documents."""
    d = tmp_path_factory.mktemp("keyed")
    keys = write_keys(d / "keys.txt", f"read:{READ_KEY}", f"write:{WRITE_KEY}")
    srv = serve(d, "--api-keys-file", str(keys), env={"NEARDUP_API_KEY_WRITE": ENV_WRITE_KEY})
    with srv.client(WRITE_KEY) as c:
        assert c.post("/documents", json={"id": "kettle", "text": TEXT}).status_code == 201
        assert (
            c.post(
                "/documents",
                json={
                    "id": "lamp",
                    "text": "A desk lamp with a gooseneck arm and five brightness levels.",
                },
            ).status_code
            == 201
        )
    yield srv
    no_key_shown(srv.stop())


UPLOAD = {
    "files": {
        "file": (
            "shop.jsonl",
            (
                json.dumps({"text": TEXT})
                + "\n"
                + json.dumps({"text": TEXT + " Free delivery."})
                + "\n"
            ).encode(),
        )
    }
}
#: Every request that changes something, as (method, path, keyword arguments of httpx).
WRITES = [
    ("POST", "/documents", {"json": {"id": "new", "text": "a new text about kettles"}}),
    (
        "POST",
        "/documents:batch",
        {
            "json": {
                "documents": [{"id": "n1", "text": "one text"}, {"id": "n2", "text": "two texts"}]
            }
        },
    ),
    ("DELETE", "/documents/kettle", {}),
    ("POST", "/check", {"json": {"id": "new", "text": "a new text about rugs", "add": True}}),
    ("POST", "/collections", UPLOAD),
]
#: Every request that reads, with the status a read key gets.
READS = [
    ("GET", "/documents", {}, 200),
    ("GET", "/documents/kettle", {}, 200),
    ("GET", "/stats", {}, 200),
    ("POST", "/query", {"json": {"text": TEXT}}, 200),
    ("POST", "/check", {"json": {"text": TEXT}}, 200),
    ("POST", "/check", {"json": {"text": TEXT, "add": False}}, 200),
    ("GET", "/collections/0123456789abcdef", {}, 404),
    ("GET", "/collections/0123456789abcdef/pair", {"params": {"a": "1", "b": "2"}}, 404),
]


def _state(srv: Server) -> tuple[list[str], int]:
    with srv.client(READ_KEY) as c:
        return c.get("/documents").json()["ids"], c.get("/stats").json()["collections"]


def test_without_a_key_or_with_a_read_key_no_write_route_changes_anything(keyed: Server) -> None:
    before = _state(keyed)
    assert before == (["kettle", "lamp"], 0)
    answers = []
    for key in (None, "not-a-key-" + secrets.token_urlsafe(16), READ_KEY):
        with keyed.client(key) as c:
            for method, path, kw in WRITES:
                r = c.request(method, path, **kw)
                answers.append(r.text)
                body = r.json()
                assert isinstance(body["detail"], str), (method, path, r.text)
                if key is None:
                    assert r.status_code == 401, (method, path, r.text)
                    assert r.headers["www-authenticate"] == 'Bearer realm="neardup"'
                    assert "needs an API key" in body["detail"]
                    assert "Authorization: Bearer KEY" in body["detail"]
                elif key != READ_KEY:
                    assert r.status_code == 401, (method, path, r.text)
                    assert 'error="invalid_token"' in r.headers["www-authenticate"]
                    assert "is not valid" in body["detail"]
                else:
                    assert r.status_code == 403, (method, path, r.text)
                    assert "write role" in body["detail"] and "read role" in body["detail"]
    assert _state(keyed) == before
    no_key_shown(*answers)


def test_every_read_route_needs_a_key_and_a_read_key_is_enough(keyed: Server) -> None:
    with keyed.client() as anonymous, keyed.client(READ_KEY) as reader:
        for method, path, kw, status in READS:
            r = anonymous.request(method, path, **kw)
            assert r.status_code == 401 and "needs an API key" in r.json()["detail"], path
            r = reader.request(method, path, **kw)
            assert r.status_code == status, (method, path, r.text)
        assert reader.get("/documents/kettle").json()["text"] == TEXT
        # unknown routes say nothing to a client without a key
        assert anonymous.get("/no/such/route").status_code == 401


def test_one_key_header_at_most(keyed: Server) -> None:
    """Two key headers are refused, whichever comes last (a proxy or a client library that
    adds its own must not decide which key is used); a proxy's own login is not a key."""
    h = [
        ("Authorization", f"Bearer {READ_KEY}"),
        ("Authorization", f"Bearer {WRITE_KEY}"),
        ("X-API-Key", READ_KEY),
        ("X-API-Key", WRITE_KEY),
    ]
    with httpx.Client(base_url=keyed.url, timeout=30) as c:
        for headers, said in [
            ([h[0], h[1]], "2 Authorization headers"),
            ([h[1], h[0]], "2 Authorization headers"),
            ([h[2], h[3]], "2 X-API-Key headers"),
            ([h[0], h[3]], "both an Authorization: Bearer header and an X-API-Key header"),
            ([h[3], h[0]], "both an Authorization: Bearer header and an X-API-Key header"),
        ]:
            for path in ("/stats", "/health"):
                r = c.get(path, headers=httpx.Headers(headers))
                assert r.status_code == 400, (headers, r.text)
                assert r.json()["detail"] == (
                    f"the request sends {said}: send one API key, in "
                    "one 'Authorization: Bearer KEY' or one "
                    "'X-API-Key: KEY' header"
                )
            no_key_shown(r.text)
        # one key: answered; a Basic login of a proxy beside an X-API-Key: the X-API-Key counts
        assert c.get("/stats", headers=httpx.Headers([h[2]])).status_code == 200
        basic = ("Authorization", "Basic dXNlcjpwYXNz")
        r = c.post(
            "/documents",
            json={"id": "via-proxy", "text": TEXT + " proxy"},
            headers=httpx.Headers([basic, ("X-API-Key", WRITE_KEY)]),
        )
        assert r.status_code == 201, r.text
        assert c.delete("/documents/via-proxy", headers={"X-API-Key": WRITE_KEY}).status_code == 204


def test_any_host_name_needs_keys(tmp_path: Path) -> None:
    """'--allowed-host *' without keys would open the service to DNS rebinding: refused before
    anything is created, unless every client is declared trusted."""
    db = tmp_path / "new.db"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "neardup.cli",
            "serve",
            "--index",
            str(db),
            "--create",
            "--allowed-host",
            "*",
            "--port",
            str(_free_port()),
        ],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    assert "--allowed-host '*' without API keys" in r.stderr and "DNS rebinding" in r.stderr
    assert not db.exists()
    srv = serve(tmp_path, "--allowed-host", "*", "--allow-unauthenticated")
    try:
        with srv.client() as c:
            assert c.get("/stats", headers={"Host": "rebound.example"}).status_code == 200
    finally:
        srv.stop()


def test_the_page_its_files_health_and_docs_need_no_key(keyed: Server) -> None:
    with keyed.client() as c:
        for path in ("/", "/static/app.js", "/static/style.css", "/docs", "/openapi.json"):
            assert c.get(path).status_code == 200, path
        # liveness without a key; the number of documents only with one
        assert c.get("/health").json() == {"status": "ok", "documents": None}
    with keyed.client(READ_KEY) as c:
        assert c.get("/health").json() == {"status": "ok", "documents": 2}
    spec = httpx.get(keyed.url + "/openapi.json").json()
    assert set(spec["components"]["securitySchemes"]) == {"bearer", "apiKey"}
    assert spec["paths"]["/query"]["post"]["security"] == [{"bearer": []}, {"apiKey": []}]
    assert "security" not in spec["paths"]["/health"]["get"]


def test_a_write_key_does_everything_from_the_file_or_the_environment(keyed: Server) -> None:
    for key in (WRITE_KEY, ENV_WRITE_KEY):
        with keyed.client(key) as c:
            r = c.post(
                "/check",
                json={
                    "id": f"rug-{key[:3]}",
                    "add": True,
                    "text": f"a hand woven wool rug {key[:3]} in blue",
                },
            )
            assert r.status_code == 200 and r.json()["added"] is True, r.text
            assert c.delete(f"/documents/rug-{key[:3]}").status_code == 204
            r = c.post("/collections", **UPLOAD)
            assert r.status_code == 201 and r.json()["pairs"] == 1
    # X-API-Key works as well as the Bearer header
    r = httpx.get(keyed.url + "/stats", headers={"X-API-Key": READ_KEY})
    assert r.status_code == 200
    r = httpx.post(
        keyed.url + "/documents",
        headers={"X-API-Key": READ_KEY},
        json={"id": "x", "text": "some words"},
    )
    assert r.status_code == 403
    r = httpx.get(keyed.url + "/stats", headers={"Authorization": f"Basic {READ_KEY}"})
    assert r.status_code == 401 and "is not 'Bearer KEY'" in r.json()["detail"]


def test_start_up_says_which_keys_without_showing_them(keyed: Server) -> None:
    out = keyed.output()
    assert "API keys needed: 1 read key, 2 write keys" in out
    no_key_shown(out)


# ---------------------------------------------------------------------------------------------
# Rotation


def _status(srv: Server, key: str) -> int:
    with srv.client(key) as c:
        return c.get("/documents").status_code


def _wait_for(condition, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def test_keys_are_rotated_without_a_restart_and_without_touching_the_index(tmp_path: Path) -> None:
    old = "old-" + secrets.token_urlsafe(24)
    new = "new-" + secrets.token_urlsafe(24)
    newer = "nwr-" + secrets.token_urlsafe(24)  # as long as `new`: the file keeps its size
    assert len(new) == len(newer)
    keys = write_keys(tmp_path / "keys.txt", f"write:{old}")
    srv = serve(tmp_path, "--api-keys-file", str(keys))
    try:
        with srv.client(old) as c:
            assert c.post("/documents", json={"id": "a", "text": TEXT}).status_code == 201
        # 1. the file is replaced (as an editor or a deployment tool does): read again
        tmp = tmp_path / "keys.tmp"
        write_keys(tmp, f"write:{new}")
        tmp.replace(keys)
        assert _wait_for(lambda: _status(srv, old) == 401)
        assert _status(srv, new) == 200
        # 2. the file is rewritten with its size and time kept: only SIGHUP reloads it
        st = keys.stat()
        keys.write_text(keys.read_text().replace(new, newer))
        os.utime(keys, ns=(st.st_atime_ns, st.st_mtime_ns))
        time.sleep(1.5)
        assert (_status(srv, new), _status(srv, newer)) == (200, 401)
        srv.proc.send_signal(signal.SIGHUP)
        assert _wait_for(lambda: _status(srv, newer) == 200)
        assert _status(srv, new) == 401
        # 3. a broken file keeps the keys in use, and the server says why, once
        keys.write_text("write:short\n")
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            assert _status(srv, newer) == 200
            time.sleep(0.1)
        assert srv.output().count("not reloaded") == 1
        srv.proc.send_signal(signal.SIGHUP)
        assert _wait_for(lambda: srv.output().count("not reloaded") == 2)
        assert _status(srv, newer) == 200
        with srv.client(newer) as c:
            assert c.get("/documents/a").json()["text"] == TEXT  # the index is untouched
    finally:
        out = srv.stop()
    assert "API keys reloaded" in out and "line 1: the key has 5 characters" in out
    for key in (old, new, newer):
        assert key not in out


# ---------------------------------------------------------------------------------------------
# Binding without keys


def test_without_keys_the_service_stays_on_this_machine_and_says_so(tmp_path: Path) -> None:
    srv = serve(tmp_path)
    try:
        with srv.client() as c:  # everyone on this machine may do everything
            assert c.post("/documents", json={"id": "a", "text": TEXT}).status_code == 201
            assert c.get("/health").json()["documents"] == 1
    finally:
        out = srv.stop()
    assert (
        "no API key configured: anyone who can reach this address can read, add and "
        "delete documents (it is reachable from this machine only)" in out
    )


def test_a_public_address_without_keys_is_refused_unless_asked_for(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "neardup.cli",
            "serve",
            "--index",
            str(db),
            "--create",
            "--host",
            "0.0.0.0",
            "--port",
            str(_free_port()),
        ],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    assert "no API key is configured" in r.stderr and "--api-keys-file" in r.stderr
    assert "--allow-unauthenticated" in r.stderr
    assert not db.exists()  # refused before anything was created
    srv = serve(tmp_path, "--allow-unauthenticated", host="0.0.0.0")
    try:
        with srv.client() as c:
            assert c.get("/stats").status_code == 200
    finally:
        out = srv.stop()
    assert "no API key configured" in out and "--allowed-host" in out


def test_keys_are_taken_from_a_file_or_the_environment_never_the_command_line(
    tmp_path: Path,
) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "neardup.cli", "serve", "--help"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "--api-keys-file" in r.stdout and "NEARDUP_API_KEY_READ" in r.stdout
    assert "--api-key " not in r.stdout and "--api-key=" not in r.stdout
    bad = write_keys(tmp_path / "bad.txt", f"admin:{WRITE_KEY}")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "neardup.cli",
            "serve",
            "--index",
            str(tmp_path / "x.db"),
            "--create",
            "--api-keys-file",
            str(bad),
        ],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "line 3: expected ROLE:KEY" in r.stderr
    no_key_shown(r.stdout, r.stderr)


# ---------------------------------------------------------------------------------------------
# Host names, origins and CORS


def test_host_header_must_name_the_service(keyed: Server) -> None:
    port = keyed.port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST.:{port}"):
        r = httpx.get(keyed.url + "/health", headers={"Host": host})
        assert r.status_code == 200, host
    for host in (
        "evil.example",
        f"evil.example:{port}",
        f"localhost:{port + 1}",
        f"127.0.0.1.evil.example:{port}",
    ):
        r = httpx.get(keyed.url + "/health", headers={"Host": host})
        assert r.status_code == 400, host
        assert "is not a name this service answers to" in r.json()["detail"]
        assert "--allowed-host" in r.json()["detail"]
    # refused before the key is looked at: a rebinding page gets nothing with a stolen key
    r = httpx.get(
        keyed.url + "/documents",
        headers={"Host": "evil.example", "Authorization": f"Bearer {READ_KEY}"},
    )
    assert r.status_code == 400


def test_allowed_hosts_and_origins_are_configurable(tmp_path: Path) -> None:
    srv = serve(
        tmp_path,
        "--allowed-host",
        "search.example.com",
        "--allowed-origin",
        "https://admin.example.com",
    )
    try:
        r = httpx.get(srv.url + "/health", headers={"Host": "search.example.com"})
        assert r.status_code == 200
        r = httpx.post(
            srv.url + "/documents",
            json={"id": "a", "text": TEXT},
            headers={"Origin": "https://admin.example.com"},
        )
        assert r.status_code == 201
        r = httpx.post(
            srv.url + "/documents",
            json={"id": "b", "text": TEXT},
            headers={"Origin": "https://other.example.com"},
        )
        assert r.status_code == 403
        # behind a TLS proxy on this machine that passes the Host on, the page's origin is
        # https://NAME: its own
        page = {"Host": "search.example.com", "X-Forwarded-Proto": "https"}
        r = httpx.post(
            srv.url + "/documents",
            json={"id": "c", "text": TEXT},
            headers={**page, "Origin": "https://search.example.com"},
        )
        assert r.status_code == 201, r.text
        r = httpx.post(
            srv.url + "/documents",
            json={"id": "d", "text": TEXT},
            headers={**page, "Origin": "http://search.example.com"},
        )
        assert r.status_code == 403
    finally:
        srv.stop()


def test_state_changing_requests_from_other_origins_are_refused(keyed: Server) -> None:
    own = keyed.url
    evil = {"Origin": "http://evil.example"}
    with keyed.client(WRITE_KEY) as c:
        before = _state(keyed)
        for method, path, kw in WRITES:
            r = c.request(method, path, headers=evil, **kw)
            assert r.status_code == 403, (method, path, r.text)
            assert "cross-origin request refused" in r.json()["detail"]
        # without an Origin, a browser's Sec-Fetch-Site says where the request comes from
        r = c.post(
            "/documents", json={"id": "z", "text": TEXT}, headers={"Sec-Fetch-Site": "cross-site"}
        )
        assert r.status_code == 403 and "Sec-Fetch-Site" in r.json()["detail"]
        for origin in (
            "null",
            "http://127.0.0.1",
            f"https://127.0.0.1:{keyed.port}",
            f"http://127.0.0.1:{keyed.port + 1}",
        ):
            r = c.post("/documents", json={"id": "z", "text": TEXT}, headers={"Origin": origin})
            assert r.status_code == 403, origin
        assert _state(keyed) == before
        # the page of the service itself, and reads from anywhere (CORS keeps their answers
        # from other pages)
        r = c.post(
            "/documents",
            json={"id": "z", "text": TEXT},
            headers={"Origin": own, "Sec-Fetch-Site": "same-origin"},
        )
        assert r.status_code == 201
        assert c.delete("/documents/z", headers={"Origin": own}).status_code == 204
        r = c.get("/documents", headers=evil)
        assert r.status_code == 200 and "access-control-allow-origin" not in r.headers


def test_cors_is_off_by_default_and_on_for_the_origins_given(keyed: Server, tmp_path: Path) -> None:
    preflight = {
        "Origin": "https://app.example.com",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    r = httpx.options(keyed.url + "/query", headers=preflight)
    assert "access-control-allow-origin" not in r.headers and r.status_code >= 400
    keys = write_keys(tmp_path / "keys.txt", f"read:{READ_KEY}")
    srv = serve(tmp_path, "--api-keys-file", str(keys), "--cors-origin", "https://app.example.com")
    try:
        r = httpx.options(srv.url + "/query", headers=preflight)
        assert r.status_code == 200
        assert r.headers["access-control-allow-origin"] == "https://app.example.com"
        assert "authorization" in r.headers["access-control-allow-headers"].lower()
        r = httpx.post(
            srv.url + "/query",
            json={"text": TEXT},
            headers={"Origin": "https://app.example.com", "Authorization": f"Bearer {READ_KEY}"},
        )
        assert r.status_code == 200
        assert r.headers["access-control-allow-origin"] == "https://app.example.com"
        # another origin: no CORS headers, its preflight refused with a JSON answer
        r = httpx.options(
            srv.url + "/query", headers={**preflight, "Origin": "https://evil.example"}
        )
        assert r.status_code == 400 and "access-control-allow-origin" not in r.headers
        assert "cross-origin request refused" in r.json()["detail"]
        r = httpx.post(
            srv.url + "/query",
            json={"text": TEXT},
            headers={"Origin": "https://evil.example", "Authorization": f"Bearer {READ_KEY}"},
        )
        assert "access-control-allow-origin" not in r.headers
    finally:
        srv.stop()


# ---------------------------------------------------------------------------------------------
# Redis: the password stays out of /stats and of what the server prints


def test_stats_of_a_redis_index_hide_its_password(redis_with_password: str, tmp_path: Path) -> None:
    from conftest import REDIS_PASSWORD

    from neardup import Index

    url = redis_with_password + "?prefix=servedredact"
    Index(url, passages=True).close()
    srv = serve(tmp_path, index=url)
    try:
        r = httpx.get(srv.url + "/stats")
        assert r.status_code == 200 and r.json()["url"].startswith("redis://:***@127.0.0.1:")
        assert REDIS_PASSWORD not in r.text
        assert REDIS_PASSWORD not in httpx.get(srv.url + "/").text
    finally:
        out = srv.stop()
        with Index(url) as idx:
            idx.storage.drop()
    assert REDIS_PASSWORD not in out


# ---------------------------------------------------------------------------------------------
# The README's commands


def _readme_commands() -> list[tuple[str, list[str]]]:
    """The `$ ` lines of the README's "Running the service for others", each with the lines
    shown under it."""
    import re

    text = (ROOT / "README.md").read_text()
    section = text.split("### Running the service for others", 1)[1].split("\n## ", 1)[0]
    found: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", section, flags=re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                found.append((line[2:].strip(), []))
            elif line.strip():
                found[-1][1].append(line)
    return found


def test_readme_service_commands_run_as_written(tmp_path: Path) -> None:
    """Each command runs as written (a started service on a free port instead of 8000) and
    prints what the README shows under it, word for word."""
    commands = _readme_commands()
    assert len(commands) == 7
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    port = _free_port()
    srv = None
    try:
        for cmd, shown in commands:
            if " serve " in cmd and not shown:  # started; the others talk to it
                log = tmp_path / "serve.log"
                with open(log, "wb") as out:
                    proc = subprocess.Popen(
                        cmd + f" --port {port}",
                        shell=True,
                        cwd=tmp_path,
                        env=_env(),
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                srv = Server(proc, port, log)
                assert _wait_for(lambda s=srv: _answers(s), 60), srv.output()
                continue
            r = subprocess.run(
                cmd.replace(":8000/", f":{port}/"),
                shell=True,
                cwd=tmp_path,
                env=_env(),
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert r.returncode == (2 if " serve " in cmd else 0), (cmd, r.stderr)
            if shown:
                assert (r.stdout + r.stderr).split() == " ".join(shown).split(), cmd
        keys = (tmp_path / "keys.txt").read_text()
        assert oct((tmp_path / "keys.txt").stat().st_mode & 0o777) == "0o600"
        assert len(parse_key_file(keys)) == 2
    finally:
        if srv is not None:
            os.killpg(srv.proc.pid, signal.SIGTERM)
            srv.proc.wait(20)
    out = srv.output()
    assert "API keys needed: 1 read key, 1 write key" in out
    for _, key in parse_key_file(keys):
        assert key not in out


def _answers(srv: Server) -> bool:
    try:
        return httpx.get(srv.url + "/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


# ---------------------------------------------------------------------------------------------
# The pieces, without a server


def test_key_file_format_and_its_errors() -> None:
    pairs = parse_key_file(f"# comment\n\n  read : {READ_KEY}  \nWRITE:{WRITE_KEY}\n")
    assert pairs == [("read", READ_KEY), ("write", WRITE_KEY)]
    for text, message in [
        (f"{READ_KEY}\n", "line 1: expected ROLE:KEY"),
        (f"admin:{READ_KEY}\n", "line 1: expected ROLE:KEY"),
        ("# c\nread:short\n", "line 2: the key has 5 characters; a key needs at least 16"),
        ("read:" + "k" * 20 + " x\n", "line 1: a key may hold only letters"),
        ("read:" + "é" * 20 + "\n", "line 1: a key may hold only letters"),
    ]:
        with pytest.raises(ConfigError, match=message) as e:
            parse_key_file(text, "keys.txt")
        assert "keys.txt" in str(e.value) and "short" not in str(e.value).split("line")[0]
        assert READ_KEY not in str(e.value)


def test_api_keys_roles_and_environment() -> None:
    keys = ApiKeys(
        environ={
            "NEARDUP_API_KEY_READ": f"{READ_KEY}, {WRITE_KEY[::-1]}",
            "NEARDUP_API_KEY_WRITE": WRITE_KEY,
        }
    )
    assert keys.counts() == {"read": 2, "write": 1}
    assert keys.role(READ_KEY) == "read" and keys.role(WRITE_KEY[::-1]) == "read"
    assert keys.role(WRITE_KEY) == "write"
    assert keys.role(WRITE_KEY + "x") is None and keys.role("") is None
    assert ApiKeys.configured(None, {}) is None
    assert ApiKeys.configured(None, {"NEARDUP_API_KEY_READ": "  "}) is None
    with pytest.raises(ConfigError, match="NEARDUP_API_KEY_WRITE: the key has 5"):
        ApiKeys(environ={"NEARDUP_API_KEY_WRITE": "short"})
    with pytest.raises(ConfigError, match="no API key given"):
        ApiKeys()
    assert READ_KEY not in repr(vars(keys)) and WRITE_KEY not in json.dumps(
        keys.describe()
    )  # only digests are kept


def test_host_rules_origins_and_loopback() -> None:
    rules = HostRules.for_binding("127.0.0.1", 8000, ["search.example.com", "10.0.0.5:9000"])
    for ok in (
        "127.0.0.1:8000",
        "localhost:8000",
        "[::1]:8000",
        "search.example.com",
        "search.example.com:443",
        "SEARCH.example.com.",
        "10.0.0.5:9000",
    ):
        assert rules.allows(ok), ok
    for bad in (
        None,
        "",
        "localhost",
        "localhost:8001",
        "10.0.0.5:8000",
        "evil.example",
        "search.example.com.evil.example",
        "[::1",
        "a:b:c",
    ):
        assert not rules.allows(bad), bad
    assert HostRules(["*"]).allows("anything:1")
    assert HostRules.for_binding("::", 8000).entries == [
        "localhost:8000",
        "127.0.0.1:8000",
        "[::1]:8000",
    ]
    with pytest.raises(ConfigError, match="allowed host 'http://x' is invalid"):
        HostRules(["http://x"])
    assert normalise_origin("HTTPS://App.Example.com:443") == "https://app.example.com"
    assert normalise_origin("http://localhost:8000") == "http://localhost:8000"
    for bad in ("null", "file://", "https://a.example/path", "ftp://a.example", "a.example"):
        assert normalise_origin(bad) is None, bad
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert is_loopback("127.1.2.3")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("")
    assert not is_loopback("10.0.0.5")
