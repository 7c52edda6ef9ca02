"""The service and the command line when the index's backend goes wrong, with real server
processes, real SQLite files and real Redis servers: an SQLite file deleted, moved away or
replaced while served is a 503 and no write into it is acknowledged; a full database is a 507;
a restart never makes a new, empty index unless asked to (SQLite or Redis); and a Redis
password can be given without putting it on the command line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

import httpx  # noqa: E402
from conftest import REDIS_PASSWORD, _ready, _start_redis  # noqa: E402
from test_server_access import Server, _env, _free_port, serve, start_server  # noqa: E402

from neardup import Index  # noqa: E402
from neardup.cli import main  # noqa: E402
from neardup.index import IndexNotFoundError  # noqa: E402


def _text(i: int) -> str:
    return f"document number {i} about " + " ".join(f"w{i}x{k}" for k in range(12))


def _start(cmd: list[str], tmp_path: Path, port: int, env: dict[str, str] | None = None) -> Server:
    """A server process from ``cmd``; returns once /health answers."""
    return start_server(cmd, tmp_path / f"server-{port}.log", port, env)


def _serve_cmd(index: str, port: int, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "neardup.cli",
        "serve",
        "--index",
        index,
        "--port",
        str(port),
        *args,
    ]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "neardup.cli", *args],
        env=_env(env),
        capture_output=True,
        text=True,
        timeout=120,
    )


# ---------------------------------------------------------------------------------------------
# An SQLite file deleted, moved away or replaced while it is served


def _writes(srv: Server, ids: list[str], workers: int = 8) -> dict[str, int]:
    """POST /documents for each id from ``workers`` clients at once: status by id."""

    def one(doc_id: str) -> tuple[str, int]:
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            return doc_id, c.post(
                "/documents", json={"id": doc_id, "text": _text(hash(doc_id) % 10**6)}
            ).status_code

    with ThreadPoolExecutor(workers) as pool:
        return dict(pool.map(one, ids))


def test_a_deleted_index_file_is_a_503_on_every_thread_and_a_restart_refuses(tmp_path: Path):
    srv = serve(tmp_path)
    db = tmp_path / "shop.db"
    try:
        # many threads of the service open a connection (each its own)
        got = _writes(srv, [f"before-{i}" for i in range(40)])
        assert set(got.values()) == {201}
        os.unlink(db)
        got = _writes(srv, [f"after-{i}" for i in range(60)], workers=16)
        assert set(got.values()) == {503}, got  # old threads and new ones alike
        assert not db.exists()  # no thread made a new, empty file
        with srv.client() as c:
            for r in (
                c.post("/documents", json={"id": "x", "text": "one two three"}),
                c.post("/query", json={"text": _text(1)}),
                c.get("/stats"),
                c.get("/documents/before-1"),
                c.delete("/documents/before-2"),
            ):
                assert r.status_code == 503, (r.request.url, r.text)
                detail = r.json()["detail"]
                assert "shop.db was deleted or moved away" in detail
                assert "restart the service" in detail and str(tmp_path) not in detail
                assert "retry-after" not in r.headers  # waiting alone does not bring it back
        assert not db.exists()
    finally:
        out = srv.stop()
    assert "Traceback" not in out
    # a restart does not serve a new, empty file in its place
    port = _free_port()
    r = subprocess.run(
        _serve_cmd(str(db), port), env=_env(), capture_output=True, text=True, timeout=120
    )
    assert r.returncode != 0 and "no such index" in r.stderr and "--create" in r.stderr
    assert not db.exists()


def test_writes_racing_a_move_are_kept_or_refused_never_lost(tmp_path: Path):
    """Clients write while the file is moved away: every write answered 201 is in the file
    (read once the service has stopped), the others were answered 503."""
    srv = serve(tmp_path)
    db, moved = tmp_path / "shop.db", tmp_path / "moved.db"
    ids = [f"doc-{i}" for i in range(400)]

    def move_soon() -> None:  # once some writes are in (a fixed delay misses on a busy machine)
        import sqlite3

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                n = conn.execute("SELECT value FROM counts WHERE name = 'documents'").fetchone()[0]
            finally:
                conn.close()
            if n >= 20:
                break
            time.sleep(0.005)
        os.rename(db, moved)

    try:
        with ThreadPoolExecutor(1) as pool:
            pool.submit(move_soon)
            got = _writes(srv, ids, workers=12)
        acked = {i for i, s in got.items() if s == 201}
        assert set(got.values()) <= {201, 503}
        assert acked and len(acked) < len(ids), "the move fell outside the writes"
        assert not db.exists()
        # the commits still in the write-ahead log (NAME-wal, found by name) were moved into
        # the file that went away, and the log left under the old name is empty
        assert os.path.getsize(f"{db}-wal") == 0
        with Index(moved, create=False) as ix:
            held = set(ix.ids())
            assert ix.storage.check()["integrity"] == "ok"
        assert acked <= held, sorted(acked - held)[:5]
        os.rename(moved, db)  # back under its name: served again
        with srv.client() as c:
            assert (
                c.post("/documents", json={"id": "back", "text": "one two three"}).status_code
                == 201
            )
    finally:
        srv.stop()
    with Index(db, create=False) as ix:
        assert set(ix.ids()) == held | {"back"}


def test_a_replaced_index_file_is_a_503_and_the_new_file_is_not_written(tmp_path: Path):
    srv = serve(tmp_path)
    db = tmp_path / "shop.db"
    try:
        assert set(_writes(srv, [f"a{i}" for i in range(20)]).values()) == {201}
        other = tmp_path / "other.db"
        with Index(other) as ix:
            ix.add("theirs", "a text of another index")
        os.replace(other, db)  # another index put in its place (a restore, a copy)
        got = _writes(srv, [f"b{i}" for i in range(20)])
        assert set(got.values()) == {503}
        with srv.client() as c:
            r = c.get("/stats")
            assert r.status_code == 503 and "replaced by another file" in r.json()["detail"]
    finally:
        srv.stop()
    with Index(db, create=False) as ix:
        assert list(ix.ids()) == ["theirs"]


def test_run_opens_an_existing_index_only(tmp_path: Path):
    from neardup.server import run

    with pytest.raises(IndexNotFoundError, match="no such index file"):
        run(str(tmp_path / "missing.db"), port=_free_port())
    assert not (tmp_path / "missing.db").exists()


# ---------------------------------------------------------------------------------------------
# A full database, a failing disk

_FULL_SERVER = """
import sys
from neardup.server import run
run(sys.argv[1], port=int(sys.argv[2]), storage_options={"max_bytes": int(sys.argv[3])})
"""


def test_a_full_database_is_a_507_and_the_service_goes_on(tmp_path: Path):
    """SQLite's "database or disk is full", for real (the file at its page limit): 507 with a
    JSON detail, nothing of the refused write kept, reads go on, and room made by a delete is
    used again."""
    db = tmp_path / "full.db"
    Index(db).close()
    port = _free_port()
    srv = _start(
        [sys.executable, "-c", _FULL_SERVER, str(db), str(port), str(300 * 1024)], tmp_path, port
    )
    big = " ".join(f"w{k}" for k in range(4000))  # about 24 KB of shingles a document
    try:
        with srv.client() as c:
            acked, status, r = [], 201, None
            for i in range(200):
                r = c.post("/documents", json={"id": f"d{i}", "text": f"{i} {big}"})
                status = r.status_code
                if status != 201:
                    break
                acked.append(f"d{i}")
            assert status == 507 and acked, r.text
            assert r.headers["content-type"] == "application/json"
            detail = r.json()["detail"]
            assert "no room" in detail and "disk is full" in detail and "free disk" in detail
            refused = f"d{len(acked)}"
            assert c.get(f"/documents/{refused}").status_code == 404  # nothing of it kept
            assert c.get(f"/documents/{acked[0]}").status_code == 200
            assert c.post("/query", json={"text": f"0 {big}"}).json()["matches"][0]["id"] == "d0"
            for doc_id in acked[:4]:
                assert c.delete(f"/documents/{doc_id}").status_code == 204
            assert (
                c.post("/documents", json={"id": "after", "text": "a short text"}).status_code
                == 201
            )
    finally:
        out = srv.stop()
    assert "Traceback" not in out
    with Index(db, create=False) as ix:
        assert set(ix.ids()) == set(acked[4:]) | {"after"}
        assert ix.storage.check()["integrity"] == "ok"


def test_a_failing_disk_is_a_503(tmp_path: Path):
    """Writes that the operating system refuses (the file size limit of the process, EFBIG:
    SQLite's "disk I/O error") are a 503, and reads go on."""
    import resource

    db = tmp_path / "io.db"
    with Index(db) as ix:
        ix.add("a", "one two three four")
    port = _free_port()
    limit = os.path.getsize(db) + 200 * 1024

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    log = tmp_path / "io.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            _serve_cmd(str(db), port),
            env=_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=limited,
        )
    srv = Server(proc, port, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{srv.url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                assert time.monotonic() < deadline and proc.poll() is None, srv.output()
                time.sleep(0.1)
        big = " ".join(f"w{k}" for k in range(4000))
        with srv.client() as c:
            status, r = 201, None
            for i in range(100):
                r = c.post("/documents", json={"id": f"d{i}", "text": f"{i} {big}"})
                status = r.status_code
                if status != 201:
                    break
            assert status == 503 and r.headers["retry-after"] == "5", r.text
            assert "cannot be used right now" in r.json()["detail"]
            assert c.get("/documents/a").status_code == 200
    finally:
        out = srv.stop()
    assert "Traceback" not in out


# ---------------------------------------------------------------------------------------------
# Redis: a server that came back empty is not a new index unless asked for


@pytest.fixture
def empty_redis(tmp_path_factory):
    proc, port = _start_redis(tmp_path_factory)
    yield from _ready(proc, f"redis://127.0.0.1:{port}/0")


def _keys(url: str, prefix: str) -> list[bytes]:
    import redis

    return redis.Redis.from_url(url).keys(f"{prefix}:*")


def test_a_redis_prefix_without_an_index_is_refused_unless_asked_to_create(
    empty_redis: str, tmp_path: Path
):
    url = f"{empty_redis}?prefix=lost"
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "a", "text": "one two three four"}\n')
    for args in (
        ["index", "add", url, str(docs)],
        ["index", "query", url, "one two"],
        ["index", "stats", url],
        ["index", "remove", url, "a"],
    ):
        r = _cli(*args)
        assert r.returncode == 4, (args, r.stderr)
        assert "holds no neardup index" in r.stderr and "lost its data" in r.stderr
        assert "appendonly yes" in r.stderr and "neardup index create" in r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "neardup.cli", "stream", url],
        env=_env(),
        input='{"id": "a", "text": "one two three"}\n',
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 4 and "lost its data" in r.stderr
    port = _free_port()
    r = subprocess.run(
        _serve_cmd(url, port), env=_env(), capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 4 and "lost its data" in r.stderr
    assert _keys(empty_redis, "lost") == []  # nothing was made
    # asked for: --create makes one (and says so), `index create` too
    srv = _start(_serve_cmd(url, port, "--create"), tmp_path, port)
    try:
        with srv.client() as c:
            assert (
                c.post("/documents", json={"id": "a", "text": "one two three"}).status_code == 201
            )
    finally:
        out = srv.stop()
    assert "created a new, empty index: redis://127.0.0.1:" in out
    assert _cli("index", "stats", url).returncode == 0
    assert _cli("index", "create", f"{empty_redis}?prefix=new").returncode == 0
    assert _cli("index", "stats", f"{empty_redis}?prefix=new").returncode == 0


def test_a_service_restarted_on_an_emptied_redis_refuses_to_start(tmp_path: Path, tmp_path_factory):
    proc, port = _start_redis(tmp_path_factory)
    url = f"redis://127.0.0.1:{port}/0"
    next(_ready(proc, url))
    index = f"{url}?prefix=shop"
    try:
        sport = _free_port()
        srv = _start(_serve_cmd(index, sport, "--create"), tmp_path, sport)
        with srv.client() as c:
            assert (
                c.post("/documents", json={"id": "a", "text": "alpha beta gamma"}).status_code
                == 201
            )
        srv.stop()
        proc.terminate()
        proc.wait(10)
        proc, _ = _start_redis(tmp_path_factory, "--port", str(port))  # back, empty
        next(_ready(proc, url))
        sport = _free_port()
        r = subprocess.run(
            _serve_cmd(index, sport), env=_env(), capture_output=True, text=True, timeout=120
        )
        assert r.returncode == 4, r.stderr
        assert "the Redis server has lost its data" in r.stderr
        assert _keys(url, "shop") == []
    finally:
        proc.terminate()
        proc.wait(10)


# ---------------------------------------------------------------------------------------------
# The Redis password, kept off the command line


def _plain(url: str) -> str:
    """The password-protected server's URL without its password."""
    return url.replace(f":{REDIS_PASSWORD}@", "")


def test_the_redis_password_from_a_file_or_the_environment(
    redis_with_password: str, tmp_path: Path, capsys, monkeypatch
):
    prefix = f"pw{uuid.uuid4().hex[:8]}"
    url = f"{_plain(redis_with_password)}?prefix={prefix}"
    pw_file = tmp_path / "redis-password"
    pw_file.write_text(REDIS_PASSWORD + "\n")
    pw_file.chmod(0o600)
    monkeypatch.delenv("NEARDUP_REDIS_PASSWORD", raising=False)

    def cli(*args: str) -> tuple[int, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        assert REDIS_PASSWORD not in out + err
        return code, out + err

    code, out = cli("index", "stats", url)  # no password: refused, saying why
    assert code == 4 and "cannot reach Redis" in out
    code, out = cli("index", "create", url, "--redis-password-file", str(pw_file))
    assert code == 0 and "warning" not in out
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "a", "text": "one two three four five"}\n')
    monkeypatch.setenv("NEARDUP_REDIS_PASSWORD", REDIS_PASSWORD)
    code, out = cli("index", "add", url, str(docs))
    assert code == 0 and "warning" not in out
    code, out = cli("index", "query", url, "one two three four five")
    assert code == 0 and "\ta\t1.0000" in out
    # the password twice: refused, whichever two
    code, out = cli("index", "stats", url, "--redis-password-file", str(pw_file))
    assert code == 2 and "given more than once" in out
    monkeypatch.delenv("NEARDUP_REDIS_PASSWORD")
    # in the URL: works, with a warning that others can see it
    in_url = f"{redis_with_password}?prefix={prefix}"
    code, out = cli("index", "stats", in_url)
    assert code == 0 and "other users of this machine can see it" in out
    code, out = cli("index", "stats", in_url, "--redis-password-file", str(pw_file))
    assert code == 2 and "given more than once" in out
    # a wrong one is refused without showing it
    bad = tmp_path / "bad"
    bad.write_text("not-the-password\n")
    code, out = cli("index", "stats", url, "--redis-password-file", str(bad))
    assert code == 4 and "not-the-password" not in out
    code, out = cli("index", "stats", str(tmp_path / "x.db"), "--redis-password-file", str(pw_file))
    assert code == 2 and "is for an index in Redis" in out
    with Index(url, storage_options={"password": REDIS_PASSWORD}) as ix:
        ix.storage.drop()


def test_serve_takes_the_redis_password_from_a_file_and_never_shows_it(
    redis_with_password: str, tmp_path: Path
):
    url = f"{_plain(redis_with_password)}?prefix=pw{uuid.uuid4().hex[:8]}"
    pw_file = tmp_path / "redis-password"
    pw_file.write_text(REDIS_PASSWORD + "\n")
    port = _free_port()
    srv = _start(
        _serve_cmd(url, port, "--create", "--redis-password-file", str(pw_file)), tmp_path, port
    )
    try:
        cmdline = Path(f"/proc/{srv.proc.pid}/cmdline").read_bytes()
        assert REDIS_PASSWORD.encode() not in cmdline  # what `ps` shows other users
        with srv.client() as c:
            assert (
                c.post("/documents", json={"id": "a", "text": "one two three four"}).status_code
                == 201
            )
            r = c.get("/stats")
            assert r.status_code == 200 and r.json()["documents"] == 1
            assert REDIS_PASSWORD not in r.text
    finally:
        out = srv.stop()
    assert REDIS_PASSWORD not in out and "warning" not in out
    # the environment variable, and the URL (with its warning)
    port = _free_port()
    srv = _start(
        _serve_cmd(url, port), tmp_path, port, env={"NEARDUP_REDIS_PASSWORD": REDIS_PASSWORD}
    )
    try:
        assert httpx.get(f"{srv.url}/stats").json()["documents"] == 1
    finally:
        out = srv.stop()
    assert REDIS_PASSWORD not in out and "warning" not in out
    port = _free_port()
    srv = _start(
        _serve_cmd(url.replace("redis://", f"redis://:{REDIS_PASSWORD}@"), port), tmp_path, port
    )
    try:
        assert httpx.get(f"{srv.url}/stats").json()["documents"] == 1
    finally:
        out = srv.stop()
    assert "the Redis password is in the URL on the command line" in out
    assert out.count(REDIS_PASSWORD) == 0
    with Index(url, storage_options={"password": REDIS_PASSWORD}) as ix:
        ix.storage.drop()
