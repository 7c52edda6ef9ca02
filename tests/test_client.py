"""neardup.Client against real `neardup serve` processes over loopback: every method's round
trip (matches compared with an in-process Index on the same texts), batches cut to the service's
--max-batch, the errors a program acts on (a read key that writes, an id taken, unknown ids),
503s retried after Retry-After (and raised with their request ID when retries are off), and the
API key never shown."""

from __future__ import annotations

import json
import re
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from test_server_access import (  # noqa: E402
    READ_KEY,
    WRITE_KEY,
    Server,
    _free_port,
    serve,
    write_keys,
)

import neardup  # noqa: E402
from neardup.client import (  # noqa: E402
    AuthError,
    CheckAnswer,
    Common,
    IdTakenError,
    InvalidRequestError,
    QueryAnswer,
    ServiceUnavailableError,
    ServiceUnreachableError,
)

ROOT = Path(__file__).resolve().parents[1]
NEWS = [json.loads(line) for line in (ROOT / "examples" / "news.jsonl").read_text().splitlines()]
README = ROOT / "README.md"
UNRELATED = (
    "The lifeboat station on the north quay will open in spring, and volunteers are "
    "wanted for the crews and the shop."
)

#: every text an error or a client showed in these tests, to look for the keys in
SHOWN: list[str] = []


def _shown(*things: object) -> None:
    for t in things:
        SHOWN.extend([str(t), repr(t)])
        if isinstance(t, neardup.ServiceError):
            SHOWN.append(str(t.detail))


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A service with a read and a write key, taking batches of 7 documents at most."""
    d = tmp_path_factory.mktemp("client")
    keys = write_keys(d / "keys.txt", f"read:{READ_KEY}", f"write:{WRITE_KEY}")
    server = serve(d, "--api-keys-file", str(keys), "--max-batch", "7")
    try:
        yield server
    finally:
        server.stop()


def _pairs(matches: list) -> list[tuple[str, float]]:
    return [(m.id, round(m.similarity, 6)) for m in matches]


def test_round_trip_matches_the_library(srv: Server):
    docs = [(d["id"], d["text"]) for d in NEWS[:40]]
    oracle = neardup.Index(passages=True)
    oracle.add_many(docs)
    with neardup.Client(srv.url, WRITE_KEY) as c:
        _shown(c)
        assert c.add_many(docs[:-1]) == 39  # 6 batches of at most 7
        c.add(*docs[-1])
        assert c.get(docs[0][0]) == docs[0][1]
        # an exact copy; an edited one; the copies news.jsonl holds; a text the index lacks
        edited = docs[5][1].replace(" the ", " a ", 1)
        for text in [docs[3][1], edited, *(t for _, t in docs[:12]), UNRELATED]:
            got = c.query(text)
            want = oracle.query(text)
            assert isinstance(got, QueryAnswer) and _pairs(got) == _pairs(want), text[:60]
            assert got.unique is (not want) and got.incomplete is False
            assert got.threshold == oracle.threshold
        exact = c.query(docs[3][1])
        assert exact[0] == neardup.Match(docs[3][0], 1.0)
        assert c.query(UNRELATED) == [] and c.query(UNRELATED).unique
        assert _pairs(c.query(edited, threshold=0.95, top_k=1)) == _pairs(
            oracle.query(edited, threshold=0.95, top_k=1)
        )

        checked = c.check(edited)
        assert isinstance(checked, CheckAnswer) and not checked.unique and not checked.added
        assert _pairs(checked.matches) == _pairs(oracle.query(edited))
        best = checked.matches[0]
        assert isinstance(best, neardup.Match) and best.text == docs[5][1]
        assert best.passages and all(edited[p.a[0] : p.a[1]] and p.words > 0 for p in best.passages)
        assert checked.passages_indexed and checked.min_passage_words == 16
        # its own id is left out of its matches
        assert docs[5][0] not in [m.id for m in c.check(docs[5][1], id=docs[5][0]).matches]
        added = c.check(UNRELATED, id="lifeboat", add=True)
        assert added.added and added.unique and c.get("lifeboat") == UNRELATED
        copy = c.check(UNRELATED, id="lifeboat-2", add=True)
        assert not copy.added and [m.id for m in copy.matches] == ["lifeboat"]
        assert c.get("lifeboat-2") is None

        assert c.delete("lifeboat") is True and c.get("lifeboat") is None
        assert c.delete("lifeboat") is False
        assert c.get("no-such-id") is None and c.delete("no-such-id") is False
        # ids that need encoding in a path
        for odd in ("..", ".", "a/b c?d#e%f", "café"):
            c.add(odd, f"a text filed under an odd id {odd}")
            assert c.get(odd) == f"a text filed under an odd id {odd}"
            assert c.delete(odd) and c.get(odd) is None

        stats = c.stats()
        assert stats["limits"]["max_batch"] == 7 and stats["documents"] == len(c.ids(limit=1000))
        assert c.health() == {"status": "ok", "documents": stats["documents"]}
        first = c.ids(limit=5)
        assert first == sorted(first) and c.ids(after=first[-1], limit=1)[0] > first[-1]
        every = list(c.iter_ids(page=7))
        assert every == sorted(every) and len(every) == len(set(every)) == stats["documents"]
        assert {i for i, _ in docs} <= set(every)


def test_a_passage_many_texts_hold_comes_back_once_as_common(srv: Server):
    template = (
        "Orders placed before noon leave our warehouse the same day, and every parcel "
        "can be returned free of charge within thirty days of its delivery."
    )
    docs = [(f"shop-{i}", f"{NEWS[100 + 3 * i]['text'][:400]} {template}") for i in range(17)]
    with neardup.Client(srv.url, WRITE_KEY) as c:
        c.add_many(docs)
        try:
            got = c.check(UNRELATED + " " + template)
            assert got.reused == [] and got.matches == [] and not got.unique
            (common,) = got.common
            assert isinstance(common, Common) and common.texts == 17
            assert template in (UNRELATED + " " + template)[common.a[0] : common.a[1]]
            example = dict(docs)[common.example]
            assert template in example[common.b[0] : common.b[1]]
        finally:
            for d, _ in docs:
                c.delete(d)


def test_add_many_is_cut_to_the_services_batch_limit(srv: Server):
    docs = {
        f"batch-{i:02d}": f"document number {i} of a batch, with words of its own {i * 7}"
        for i in range(30)
    }
    with neardup.Client(srv.url, WRITE_KEY) as c:
        assert c.add_many(docs) == 30
        assert [i for i in c.iter_ids(after="batch-", page=7) if i.startswith("batch-")] == sorted(
            docs
        )
        assert all(c.get(i) == t for i, t in docs.items())
        assert c.add_many([]) == 0
        # a batch holding a taken id is refused whole; the batches before it stay added
        more = [(f"more-{i:02d}", f"one more document, number {i}") for i in range(10)]
        with pytest.raises(IdTakenError) as e:
            c.add_many([*more, ("batch-03", "taken"), ("more-99", "never added")])
        _shown(e.value)
        assert e.value.added == 7 and e.value.doc_id == "batch-03" and e.value.status == 409
        assert c.get("more-06") is not None and c.get("more-07") is None
        assert c.get("batch-03") == docs["batch-03"]


def test_errors_a_program_acts_on(srv: Server, tmp_path: Path):
    with neardup.Client(srv.url, READ_KEY) as reader:
        _shown(reader)
        assert reader.get("nothing") is None  # a read key reads
        with pytest.raises(AuthError) as e:
            reader.add("by-reader", "a read key may not add this text")
        _shown(e.value)
        assert e.value.status == 403 and "write role" in e.value.detail
        assert re.fullmatch(r"[0-9a-f]{16}", e.value.request_id)
        with pytest.raises(AuthError):
            reader.check(UNRELATED, id="by-reader", add=True)
        with pytest.raises(AuthError):
            reader.delete("anything")
    with (
        neardup.Client(srv.url, "not-a-key-the-service-knows-0123") as stranger,
        pytest.raises(AuthError) as e,
    ):
        stranger.query(UNRELATED)
    _shown(e.value)
    assert e.value.status == 401
    with neardup.Client(srv.url, WRITE_KEY) as c:
        c.add("taken", "a text under an id that is then taken")
        with pytest.raises(neardup.DuplicateIdError) as e:  # the library's own error
            c.add("taken", "another text")
        _shown(e.value)
        assert isinstance(e.value, neardup.ServiceError) and e.value.doc_id == "taken"
        assert c.get("taken") == "a text under an id that is then taken"
        with pytest.raises(IdTakenError):
            c.check(UNRELATED + " Again.", id="taken", add=True)
        with pytest.raises(InvalidRequestError) as e:
            c.query(UNRELATED, threshold=0.5)
        _shown(e.value)
        assert e.value.status == 422 and "below this index's threshold" in e.value.detail
        with pytest.raises(InvalidRequestError):
            c.add("empty", "   ")
    # a key that cannot be a header value is refused here, without being shown
    with pytest.raises(neardup.ConfigError) as e:
        neardup.Client(srv.url, f"{WRITE_KEY} \n{WRITE_KEY}")
    _shown(e.value)
    # no service there: no answer, after the retries
    port = _free_port()
    with (
        neardup.Client(f"http://127.0.0.1:{port}", WRITE_KEY, retries=1, max_wait=0.05) as c,
        pytest.raises(ServiceUnreachableError) as e,
    ):
        c.add("x", "nobody is listening on this port")
    _shown(e.value)
    assert e.value.status is None and e.value.request_id


def _hold_slot(port: int, key: str) -> socket.socket:
    """A request to add a document whose body stops half way: the service counts it as being
    handled (it waits for the rest of the body) until the connection closes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(
        b"POST /documents HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
        b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{" % (port, key.encode())
    )
    return s


def test_a_busy_service_is_retried_after_retry_after(tmp_path: Path):
    keys = write_keys(tmp_path / "keys.txt", f"read:{READ_KEY}", f"write:{WRITE_KEY}")
    srv = serve(tmp_path, "--api-keys-file", str(keys), "--max-requests", "1")
    try:
        with neardup.Client(srv.url, WRITE_KEY) as c:
            c.add("kettle", NEWS[0]["text"])
        held = _hold_slot(srv.port, WRITE_KEY)
        time.sleep(0.3)
        with neardup.Client(srv.url, WRITE_KEY, retries=0) as once:
            for call in (
                lambda: once.query(NEWS[0]["text"]),
                lambda: once.add("lamp", NEWS[1]["text"]),
            ):
                with pytest.raises(ServiceUnavailableError) as e:
                    call()
                _shown(e.value)
                assert e.value.status == 503 and e.value.retry_after == 1
                assert "limit of 1 requests at once" in e.value.detail
                assert re.fullmatch(r"[0-9a-f]{16}", e.value.request_id)
        got: dict[str, object] = {}

        def work() -> None:
            with neardup.Client(srv.url, WRITE_KEY, retries=5, max_wait=2) as c:
                try:
                    got["added"] = c.add("lamp", NEWS[1]["text"])  # a write: retried on 503
                    got["query"] = c.query(NEWS[0]["text"])
                except Exception as exc:  # pragma: no cover - shown by the assertion below
                    got["error"] = exc
                got["at"] = time.monotonic()

        t0 = time.monotonic()
        thread = threading.Thread(target=work)
        thread.start()
        time.sleep(1.5)
        assert thread.is_alive()  # waiting for the slot, not failed
        released = time.monotonic()
        held.close()  # the service answers the half-sent request 400 and frees its slot
        thread.join(20)
        assert "error" not in got, got.get("error")
        assert got["query"] == [neardup.Match("kettle", 1.0)]
        assert released <= got["at"] and got["at"] - t0 < 10
        with neardup.Client(srv.url, READ_KEY) as c:
            assert c.get("lamp") == NEWS[1]["text"]
    finally:
        srv.stop()
    # the service logged each 503 it answered: the two above, and one try of the thread's
    # at least
    assert len(re.findall(r'"(?:POST|GET) /\S*" 503 ', srv.output())) >= 3


def test_the_key_is_never_shown(srv: Server):
    with neardup.Client(srv.url, WRITE_KEY) as c:
        assert repr(c) == f"Client('{srv.url}', key=***)"
        _shown(c)
    with neardup.Client(f"http://user:secret@127.0.0.1:{srv.port}") as c:
        assert "secret" not in repr(c)
    assert SHOWN  # the other tests ran first and left what they showed
    for text in SHOWN:
        assert READ_KEY not in text and WRITE_KEY not in text, text


def test_readme_client_example_runs(srv: Server, monkeypatch: pytest.MonkeyPatch):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    (block,) = [b for b in blocks if "neardup.Client(" in b]
    assert "http://127.0.0.1:8000" in block
    monkeypatch.setenv("NEARDUP_KEY", WRITE_KEY)
    ns: dict = {}
    exec(block.replace("http://127.0.0.1:8000", srv.url), ns)
    assert [tuple(m) for m in ns["found"]] == [("sku-1", 1.0)]
    answer = ns["answer"]
    assert not answer.added and [tuple(m) for m in answer.matches] == [("sku-2", 0.888889)]
    with neardup.Client(srv.url, READ_KEY) as c:
        assert c.get("sku-3") is None and c.get("sku-1") is not None


def test_without_httpx_the_client_names_its_extra(tmp_path: Path):
    from test_extras import _run_hidden

    proc = _run_hidden(
        ["httpx"],
        """
        import neardup
        try:
            neardup.Client("http://127.0.0.1:8000")
        except neardup.ConfigError as e:
            print(e)
    """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        "the neardup client needs httpx, which is not installed: pip install 'neardup[client]'"
    )


def test_import_neardup_loads_no_client():
    import subprocess

    code = (
        "import sys, neardup\n"
        "print([m for m in ('neardup.client', 'httpx') if m in sys.modules])\n"
        "print(neardup.Client.__module__, neardup.ServiceError.__module__)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src")},
        timeout=60,
    )
    assert proc.stdout.split("\n")[:2] == ["[]", "neardup.client neardup.client"], proc.stderr
