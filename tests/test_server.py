"""The HTTP service (``neardup.server``): every endpoint against the library's own results, every
client error with its status and message, shared passages against a brute-force oracle, and
random requests that must never get a 5xx."""

from __future__ import annotations

import json
import logging
import random
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

warnings.filterwarnings("ignore", message=".*httpx2.*")  # starlette's TestClient on httpx

from fastapi.testclient import TestClient  # noqa: E402

import neardup  # noqa: E402
from neardup import Index  # noqa: E402
from neardup.errors import SkipReason  # noqa: E402
from neardup.server import app as server_app  # noqa: E402
from neardup.server import create_app, shared_passages  # noqa: E402
from neardup.server.passages import passages_for_display  # noqa: E402

VOCAB = (
    "red blue green large small cotton wool shirt dress jacket with without pocket zip "
    "button collar sleeve long short summer winter soft warm light dark slim fit classic "
    "modern washable organic"
).split()


def make_text(rng: random.Random, n: int = 80) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(n))


def edit(rng: random.Random, text: str, changes: int = 2) -> str:
    """A near-duplicate: ``changes`` words replaced."""
    w = text.split()
    for _ in range(changes):
        w[rng.randrange(len(w))] = rng.choice(["zzz", "qqq", "Extra", "NEW"])
    return " ".join(w)


def local_client(app: Any) -> TestClient:
    """A client of ``app`` as a program on this machine reaches it (Host: localhost; the app
    refuses Host names it does not know, as DNS rebinding would send)."""
    return TestClient(app, base_url="http://localhost")


@pytest.fixture(params=["memory", "sqlite", "redis"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Index:
    if request.param == "redis":  # a real redis-server (conftest), one key prefix per test
        url = request.getfixturevalue("redis_server")
        idx = Index(f"{url}?prefix=srv{tmp_path.name[-20:].replace('_', '')}")
        idx.storage.drop()
        idx = Index(f"{url}?prefix=srv{tmp_path.name[-20:].replace('_', '')}", passages=True)
    else:
        idx = (
            Index(passages=True)
            if request.param == "memory"
            else Index(str(tmp_path / "shop.db"), passages=True)
        )
    yield idx
    if request.param == "redis":
        idx.storage.drop()
    idx.close()


@pytest.fixture
def client(index: Index) -> TestClient:
    return local_client(create_app(index))


@pytest.fixture
def corpus() -> dict[str, str]:
    rng = random.Random(5)
    docs = {}
    for i in range(12):
        base = make_text(rng, 80)
        docs[f"doc-{i}"] = base
        if i % 3 == 0:
            docs[f"doc-{i}-copy"] = edit(rng, base, 1)
    return docs


def detail(r: Any) -> str:
    body = r.json()
    assert isinstance(body["detail"], str) and body["detail"]
    return body["detail"]


# ---------------------------------------------------------------------------------------------
# Shared passages


def oracle_passages(a: str, b: str, k: int) -> list[dict[str, Any]]:
    """Brute force: every pair of word positions, runs along the diagonals."""
    import re
    import unicodedata

    def toks(s: str) -> list[tuple[int, int, str]]:
        return [
            (m.start(), m.end(), unicodedata.normalize("NFKC", m.group()).casefold())
            for m in re.finditer(r"\S+", s)
        ]

    wa, wb = toks(a), toks(b)
    na, nb = len(wa) - k + 1, len(wb) - k + 1

    def same(i: int, j: int) -> bool:
        return 0 <= i < na and 0 <= j < nb and all(wa[i + t][2] == wb[j + t][2] for t in range(k))

    out = []
    for i in range(max(na, 0)):
        for j in range(max(nb, 0)):
            if same(i, j) and not same(i - 1, j - 1):
                m = 1
                while same(i + m, j + m):
                    m += 1
                last = m + k - 2
                out.append(
                    {
                        "a": [wa[i][0], wa[i + last][1]],
                        "b": [wb[j][0], wb[j + last][1]],
                        "words": m + k - 1,
                    }
                )
    return out


def test_passages_hand_checked() -> None:
    a = "The quick brown fox jumps over the lazy dog"
    b = "A QUICK brown  fox jumps over the lazy cat"
    # "quick brown fox jumps over the lazy": 7 words, shared 5-grams at i=1..3.
    got = shared_passages(a, b, 5)
    assert got == [{"a": [4, 39], "b": [2, 38], "words": 7}]
    assert a[4:39] == "quick brown fox jumps over the lazy"
    assert b[2:38] == "QUICK brown  fox jumps over the lazy"
    assert shared_passages(a, b, 8) == []
    assert shared_passages("", b) == [] and shared_passages(a, "") == []
    # Two separate passages, in the other order in b.
    a2 = "one two three four alpha beta gamma delta"
    b2 = "alpha beta gamma delta xx one two three four"
    assert shared_passages(a2, b2, 4) == [
        {"a": [0, 18], "b": [26, 44], "words": 4},
        {"a": [19, 41], "b": [0, 22], "words": 4},
    ]
    # A repeated phrase matches each of its occurrences.
    assert len(shared_passages("x y x y", "x y", 2)) == 2
    # Offsets are code points of the original text, whatever the case folding does.
    a3 = "Straße ﬁne día one two"
    b3 = "STRASSE fine DÍA one two"
    (p,) = shared_passages(a3, b3, 5)
    assert a3[p["a"][0] : p["a"][1]] == a3 and b3[p["b"][0] : p["b"][1]] == b3
    with pytest.raises(ValueError, match="k=0"):
        shared_passages(a, b, 0)


words_st = st.lists(st.sampled_from(["a", "B", "b", "c", "é", "É", "dd"]), max_size=25)
space_st = st.sampled_from([" ", "  ", "\n", "\t ", " \u00a0"])


@st.composite
def texts_st(draw: st.DrawFn) -> str:
    w = draw(words_st)
    return draw(st.sampled_from(["", " ", "\n"])) + "".join(x + draw(space_st) for x in w).rstrip(
        draw(st.sampled_from(["", " "]))
    )


@settings(max_examples=150)
@given(texts_st(), texts_st(), st.integers(1, 4))
def test_passages_match_oracle(a: str, b: str, k: int) -> None:
    got = shared_passages(a, b, k)
    assert got == oracle_passages(a, b, k)
    for p in got:  # each passage is the same words in both texts
        sa, sb = a[p["a"][0] : p["a"][1]], b[p["b"][0] : p["b"][1]]
        assert [w.casefold() for w in sa.split()] == [w.casefold() for w in sb.split()]
        assert len(sa.split()) == p["words"] >= k


def test_passages_for_display_bounds() -> None:
    short_a, short_b = "blue shirt", "Blue Shirt"
    assert passages_for_display(short_a, short_b, 5) == [{"a": [0, 10], "b": [0, 10], "words": 2}]
    rep = " ".join(["x"] * 3000)
    got = passages_for_display(rep, rep, 5, limit=50)
    assert 0 < len(got) <= 50


# ---------------------------------------------------------------------------------------------
# Documents


def test_add_get_delete(client: TestClient, index: Index) -> None:
    r = client.post("/documents", json={"id": "a/1", "text": "a red cotton shirt"})
    assert r.status_code == 201 and r.json() == {"id": "a/1"}
    assert index.get("a/1") == "a red cotton shirt"
    r = client.get("/documents/a/1")
    assert r.status_code == 200 and r.json() == {"id": "a/1", "text": "a red cotton shirt"}
    r = client.post("/documents", json={"id": "a/1", "text": "other"})
    assert r.status_code == 409 and detail(r) == "id 'a/1' is already in the index"
    assert index.get("a/1") == "a red cotton shirt"
    r = client.get("/documents/nope")
    assert r.status_code == 404 and detail(r) == "no document with id 'nope'"
    assert client.delete("/documents/a/1").status_code == 204
    assert "a/1" not in index
    r = client.delete("/documents/a/1")
    assert r.status_code == 404 and "a/1" in detail(r)


def test_dot_ids_are_reached_percent_encoded(client: TestClient) -> None:
    # "." and ".." are dot segments that clients remove from a path; %2E reaches them
    for doc_id in (".", ".."):
        assert (
            client.post("/documents", json={"id": doc_id, "text": f"text of {doc_id}"}).status_code
            == 201
        )
    assert client.get("/documents/%2E").json() == {"id": ".", "text": "text of ."}
    assert client.get("/documents/%2E%2E").json() == {"id": "..", "text": "text of .."}
    assert client.delete("/documents/%2E%2E").status_code == 204
    assert client.get("/documents/%2E%2E").status_code == 404


def test_list_documents_pages(client: TestClient, index: Index) -> None:
    ids = [f"sku-{i:03d}" for i in range(25)] + ["Ä-1", "a"]
    index.add_many((i, f"text number {i}") for i in ids)
    seen, after = [], None
    while True:
        r = client.get("/documents", params={"limit": 10, **({"after": after} if after else {})})
        assert r.status_code == 200
        page = r.json()
        seen += page["ids"]
        after = page["next"]
        if after is None:
            break
    assert seen == sorted(ids)
    assert client.get("/documents", params={"limit": 0}).status_code == 422
    assert client.get("/documents", params={"limit": 5000}).status_code == 422


def test_sqlite_documents_persist(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    with Index(db) as idx:
        c = local_client(create_app(idx))
        assert c.post("/documents", json={"id": "x", "text": "kept on disk"}).status_code == 201
    with Index(db) as idx:
        c = local_client(create_app(idx))
        assert c.get("/documents/x").json()["text"] == "kept on disk"
        assert c.get("/health").json() == {"status": "ok", "documents": 1}


def test_batch(client: TestClient, index: Index, corpus: dict[str, str]) -> None:
    docs = [{"id": k, "text": v} for k, v in corpus.items()]
    r = client.post("/documents:batch", json={"documents": docs})
    assert r.status_code == 201 and r.json() == {"added": len(docs)}
    assert len(index) == len(docs)
    assert index.get_texts(list(corpus)) == corpus
    # All or nothing: one id already present, nothing of the batch is added.
    r = client.post(
        "/documents:batch",
        json={
            "documents": [
                {"id": "fresh-1", "text": "x"},
                {"id": "doc-3", "text": "y"},
                {"id": "fresh-2", "text": "z"},
            ]
        },
    )
    assert r.status_code == 409 and detail(r) == "id 'doc-3' is already in the index"
    assert "fresh-1" not in index and len(index) == len(docs)
    r = client.post(
        "/documents:batch",
        json={"documents": [{"id": "n1", "text": "x"}, {"id": "n1", "text": "y"}]},
    )
    assert r.status_code == 422
    assert detail(r) == "id 'n1' appears twice in the batch (documents[0] and documents[1])"
    assert client.post("/documents:batch", json={"documents": []}).json() == {"added": 0}
    r = client.post("/documents:batch", json={"documents": [{"id": "q", "txt": "x"}]})
    assert r.status_code == 422 and "documents[0].text: Field required" in detail(r)


def test_batch_limit(index: Index) -> None:
    c = local_client(create_app(index, max_batch=3))
    docs = [{"id": str(i), "text": "t"} for i in range(4)]
    r = c.post("/documents:batch", json={"documents": docs})
    assert r.status_code == 413
    assert detail(r) == "a batch holds at most 3 documents; got 4: split it"
    assert len(index) == 0
    assert c.post("/documents:batch", json={"documents": docs[:3]}).status_code == 201


# ---------------------------------------------------------------------------------------------
# Query and check


def test_query_equals_index(client: TestClient, index: Index, corpus: dict[str, str]) -> None:
    index.add_many(corpus.items())
    rng = random.Random(1)
    probes = [edit(rng, t, 1) for t in list(corpus.values())[:6]] + [make_text(rng)]
    for text in probes:
        for params in ({}, {"threshold": 0.85}, {"threshold": 0.9, "top_k": 1}, {"top_k": 2}):
            r = client.post("/query", json={"text": text, **params})
            assert r.status_code == 200
            want = index.query(text, **params)
            got = r.json()
            assert got["matches"] == [{"id": m.id, "similarity": m.similarity} for m in want]
            assert got["unique"] is (not want)
            assert got["threshold"] == params.get("threshold", index.threshold)
    # A threshold below the index's own is refused, for /check too: the index cannot find
    # every near-duplicate under it, and "nothing reaches 50%" would not be true.
    for path in ("/query", "/check"):
        r = client.post(path, json={"text": probes[0], "threshold": 0.5})
        assert r.status_code == 422
        assert "below this index's threshold (0.8)" in r.json()["detail"]
        assert "--" not in r.json()["detail"]  # the service's words, not a command's flags
    # An exact copy is found with similarity 1.
    r = client.post("/query", json={"text": corpus["doc-1"]}).json()
    assert r["matches"][0] == {"id": "doc-1", "similarity": 1.0} and not r["unique"]


def test_check_matches_and_passages(
    client: TestClient, index: Index, corpus: dict[str, str]
) -> None:
    index.add_many(corpus.items())
    text = edit(random.Random(2), corpus["doc-0"], 1)
    r = client.post("/check", json={"text": text})
    assert r.status_code == 200
    got = r.json()
    want = index.query(text)
    assert [(m["id"], m["similarity"]) for m in got["matches"]] == [tuple(m) for m in want]
    assert {m["id"] for m in got["matches"]} >= {"doc-0"}
    assert got["unique"] is False and got["added"] is False
    for m in got["matches"]:
        assert m["text"] == corpus[m["id"]]
        assert m["passages"] == shared_passages(text, corpus[m["id"]], 5, max_occurrences=8)
        assert m["passages"], "a near-duplicate shares passages"
    # The document's own id is left out of its matches.
    r = client.post("/check", json={"text": corpus["doc-5"], "id": "doc-5"}).json()
    assert "doc-5" not in [m["id"] for m in r["matches"]]
    # A new text is unique.
    r = client.post("/check", json={"text": make_text(random.Random(99))}).json()
    assert r == {
        "unique": True,
        "threshold": index.threshold,
        "matches": [],
        "added": False,
        "reused": [],
        "common": [],
        "reused_capped": False,
        "reuse_incomplete": False,
        "matches_capped": False,
        "passages_incomplete": False,
        "texts_capped": False,
        "passages_indexed": True,
        "min_passage_words": 16,
    }


def test_check_shows_the_texts_it_compared_without_reading_them_again(
    index: Index, corpus: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The texts a check compared are those shown: the answer is the one given when every
    shown text is read from the index again, and no text is read twice."""
    index.add_many(corpus.items())
    copied = " ".join(corpus["doc-3"].split()[10:50])
    texts = [
        edit(random.Random(2), corpus["doc-0"], 1),
        make_text(random.Random(7)) + " " + copied + " " + make_text(random.Random(8)),
    ]
    reads: list[list[str]] = []
    real = index.get_texts
    monkeypatch.setattr(index, "get_texts", lambda ids: reads.append(list(ids)) or real(ids))
    with local_client(create_app(index)) as c:
        now = [c.post("/check", json={"text": t}).json() for t in texts]
    assert reads == [] and now[0]["matches"] and now[1]["reused"]
    check = Index.check

    def forgetful(self, *args, **kwargs):  # as before: no texts at hand, all read again
        got = check(self, *args, **kwargs)
        got.texts = {}
        return got

    monkeypatch.setattr(Index, "check", forgetful)
    with local_client(create_app(index)) as c:
        before = [c.post("/check", json={"text": t}).json() for t in texts]
    assert now == before and reads


def test_check_reports_a_copied_passage_and_does_not_call_it_unique(
    client: TestClient, index: Index, corpus: dict[str, str]
) -> None:
    """A new text that copies 40 words of an indexed one inside otherwise new writing: no
    whole-text match, but the passage is reported with its offsets in both texts, the text is
    not unique and add=true does not add it."""
    index.add_many(corpus.items())
    source = corpus["doc-3"]
    copied = " ".join(source.split()[10:50])
    text = make_text(random.Random(7)) + " " + copied + " " + make_text(random.Random(8))
    r = client.post("/check", json={"text": text, "id": "new-9", "add": True}).json()
    assert r["matches"] == [] and r["unique"] is False and r["added"] is False
    assert "new-9" not in index
    (m,) = [x for x in r["reused"] if x["id"] == "doc-3"]
    (p,) = m["passages"]
    assert text[p["a"][0] : p["a"][1]] == copied
    assert source[p["b"][0] : p["b"][1]] == copied and p["words"] == 40
    assert m["text"] == source and 0 < m["share"] < 0.5 and m["share_source"] > 0


def test_a_template_passage_many_texts_hold_is_shown_once_as_common(
    client: TestClient, index: Index
) -> None:
    """A sentence that 20 indexed texts hold (a shipping note in every product text) is one
    entry of `common`, with its holders counted and one example; those texts are not listed
    one by one in `reused`, while a text that also shares words of its own is."""
    template = (
        "Free delivery within three working days to every address in the country, "
        "returns accepted for thirty days after purchase without any questions asked"
    )
    for i in range(20):
        index.add(f"p-{i:02d}", make_text(random.Random(60 + i), 60) + " " + template)
    own = make_text(random.Random(99), 60)
    index.add("copied", own + " " + template)
    text = make_text(random.Random(100), 50) + " " + template
    r = client.post("/check", json={"text": text}).json()
    assert r["matches"] == [] and r["reused"] == [] and r["unique"] is False
    (c,) = r["common"]
    # (its edges may take in a word or two around it that happen to agree)
    assert template in text[c["a"][0] : c["a"][1]] and c["words"] <= len(template.split()) + 4
    assert c["texts"] == 21 and c["example"].startswith("p-")
    # a text that copies more of one of them: that one is a source, the template still common
    r = client.post(
        "/check", json={"text": own[:200] + " " + template, "id": "x", "add": True}
    ).json()
    assert [m["id"] for m in r["reused"]] == ["copied"] and r["added"] is False
    (c,) = r["common"]
    assert c["texts"] == 21
    assert "x" not in index


def test_a_check_that_could_not_compare_every_candidate_is_not_unique(
    index: Index, corpus: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bounded work: when more indexed texts share the checked text's phrases than one check
    compares, the answer says so, is not "unique" and does not add the text."""
    import neardup.server.search as search_routes

    source = corpus["doc-3"].split()
    for i in range(4):  # four more texts hold the same 40 words
        index.add(f"copy-{i}", make_text(random.Random(40 + i)) + " " + " ".join(source[10:50]))
    monkeypatch.setattr(search_routes, "CHECK_CANDIDATES", 2)
    with local_client(create_app(index)) as c:
        text = make_text(random.Random(7)) + " " + " ".join(source[10:50])
        r = c.post("/check", json={"text": text, "id": "new-5", "add": True}).json()
        assert r["reuse_incomplete"] is True and r["unique"] is False and r["added"] is False
        assert len(r["reused"]) <= 2 and "new-5" not in index
        r = c.post("/check", json={"text": make_text(random.Random(9))}).json()
        assert r["reuse_incomplete"] is False and r["unique"] is True


def test_an_index_without_passages_says_so_in_its_answers(corpus: dict[str, str]) -> None:
    idx = Index()
    idx.add_many(corpus.items())
    with local_client(create_app(idx)) as c:
        copied = " ".join(corpus["doc-3"].split()[10:50])
        r = c.post("/check", json={"text": make_text(random.Random(7)) + " " + copied}).json()
    assert r["unique"] is True and r["passages_indexed"] is False and r["reused"] == []
    assert r["min_passage_words"] is None


def test_check_and_add(client: TestClient, index: Index) -> None:
    rng = random.Random(3)
    text = make_text(rng)
    r = client.post("/check", json={"text": text, "id": "new-1", "add": True})
    assert r.status_code == 200 and r.json()["added"] is True and r.json()["unique"] is True
    assert index.get("new-1") == text
    near = edit(rng, text, 1)
    r = client.post("/check", json={"text": near, "id": "new-2", "add": True}).json()
    assert r["added"] is False and r["matches"][0]["id"] == "new-1"
    assert "new-2" not in index
    r = client.post("/check", json={"text": "x", "add": True})
    assert r.status_code == 422 and detail(r).startswith("id: required with add=true")
    r = client.post("/check", json={"text": make_text(rng), "id": "new-1", "add": True})
    assert r.status_code == 409 and detail(r) == "id 'new-1' is already in the index"


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_concurrent_check_and_add_adds_one(kind: str, tmp_path: Path) -> None:
    """Near-duplicates checked at once by many clients: exactly one is added."""
    idx = Index() if kind == "memory" else Index(str(tmp_path / "c.db"))
    app = create_app(idx)
    base = make_text(random.Random(4), 60)
    results: list[bool] = []
    barrier = threading.Barrier(6)

    def worker(i: int) -> None:
        c = local_client(app)
        barrier.wait()
        r = c.post("/check", json={"text": base + f" v{i}", "id": f"w{i}", "add": True})
        assert r.status_code == 200
        results.append(r.json()["added"])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 5 + [True] and len(idx) == 1
    idx.close()


@pytest.mark.parametrize("slots", [1, 2])
def test_checks_search_for_passages_at_most_check_slots_at_once(
    slots: int, tmp_path: Path, corpus: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six clients check at once: at most ``check_slots`` searches for passages run at the same
    time, every check is answered (the others wait for their turn), and one that waits its
    whole time budget is told to try again (503 with Retry-After), its work not done."""
    import neardup.server.search as search_routes

    idx = Index(str(tmp_path / "s.db"), passages=True)
    idx.add_many(corpus)
    running, most, lock = [0], [0], threading.Lock()
    search = idx.check

    def counted(*args: Any, **kwargs: Any) -> Any:  # the index's own search, counted
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            time.sleep(0.05)  # long enough for the others to arrive meanwhile
            return search(*args, **kwargs)
        finally:
            with lock:
                running[0] -= 1

    idx.check = counted  # type: ignore[method-assign]
    app = create_app(idx, check_slots=slots)
    barrier = threading.Barrier(6)
    got: list[int] = []

    def client(i: int) -> None:
        c = local_client(app)
        barrier.wait()
        got.append(c.post("/check", json={"text": corpus[f"doc-{i}"]}).status_code)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [200] * 6 and most[0] == slots
    # a check that finds no slot within its budget: 503, Retry-After, nothing searched
    monkeypatch.setattr(search_routes, "CHECK_SECONDS", 0.2)
    app = create_app(idx, check_slots=1)
    gate = threading.Event()
    release = threading.Event()

    def held(*args: Any, **kwargs: Any) -> Any:
        gate.set()
        release.wait(10)
        return search(*args, **kwargs)

    idx.check = held  # type: ignore[method-assign]
    first = threading.Thread(
        target=lambda: local_client(app).post("/check", json={"text": corpus["doc-1"]})
    )
    first.start()
    assert gate.wait(10)
    idx.check = counted  # type: ignore[method-assign]
    before = most[0], running[0]
    r = local_client(app).post("/check", json={"text": corpus["doc-2"]})
    release.set()
    first.join()
    assert r.status_code == 503 and r.headers["retry-after"] == "1"
    assert "try again" in r.json()["detail"]
    assert (most[0], running[0]) == before  # the second never searched
    idx.close()


# ---------------------------------------------------------------------------------------------
# Stats, health, OpenAPI, the page


def test_stats_and_health(client: TestClient, index: Index) -> None:
    client.post("/documents", json={"id": "a", "text": "one text"})
    client.get("/documents/missing")
    assert client.get("/health").json() == {"status": "ok", "documents": 1}
    s = client.get("/stats").json()
    for k, v in index.stats().items():
        if k == "path":  # where the server keeps its files is not shown: the name only
            assert s[k] == Path(v).name
        elif k != "file_bytes":  # the SQLite file grows as it is used
            assert s[k] == v
    req = s["requests"]
    assert req["by_endpoint"]["add_document"] == 1 and req["by_endpoint"]["get_document"] == 1
    assert req["by_status"]["201"] == 1 and req["by_status"]["404"] == 1
    assert req["total"] == 3  # this /stats request is counted once it is answered
    assert s["collections"] == 0 and s["limits"]["max_batch"] == 10_000


def test_stats_show_no_secret_and_no_server_path(redis_with_password: str, tmp_path: Path) -> None:
    from conftest import REDIS_PASSWORD

    url = redis_with_password + "?prefix=statsredact&password=" + REDIS_PASSWORD
    idx = Index(url)
    try:
        s = local_client(create_app(idx)).get("/stats")
        assert s.status_code == 200
        assert REDIS_PASSWORD not in s.text
        assert s.json()["url"].startswith("redis://:***@127.0.0.1:")
        assert s.json()["url"].endswith("/0?password=***")
    finally:
        idx.storage.drop()
        idx.close()
    (tmp_path / "private").mkdir()
    with Index(str(tmp_path / "private" / "shop.db")) as idx:
        s = local_client(create_app(idx)).get("/stats").json()
    assert s["path"] == "shop.db" and "private" not in json.dumps(s)


def test_openapi_describes_fields(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    for path in (
        "/documents",
        "/documents:batch",
        "/query",
        "/check",
        "/collections",
        "/collections/{cid}/pair",
        "/stats",
        "/health",
    ):
        assert path in spec["paths"]
    props = spec["components"]["schemas"]["QueryIn"]["properties"]
    assert "description" in props["text"] and "(0, 1]" in json.dumps(props["threshold"])
    assert client.get("/docs").status_code == 200


def test_openapi_documents_every_status_the_service_answers(client: TestClient) -> None:
    """A client generated from the OpenAPI document knows every status it can get: the
    middleware's refusals (400 Host, 408 slow body, 503 busy with Retry-After) on every
    operation, and 507 (index full) where something is added."""
    spec = client.get("/openapi.json").json()
    adding = {("post", "/documents"), ("post", "/documents:batch"), ("post", "/check")}
    seen = 0
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            codes = set(op["responses"])
            want = {"400", "408", "422", "500", "503"} | (
                {"507"} if (method, path) in adding else set()
            )
            if path == "/health":
                continue  # answers without the API's errors (a liveness probe)
            assert want <= codes, (method, path, sorted(codes))
            assert "Retry-After" in op["responses"]["503"]["headers"], (method, path)
            assert all(op["responses"][c]["description"] for c in codes)
            seen += 1
    assert seen >= 10
    # and the service does answer 507 where the document says so
    full = local_client(create_app(Index(), max_documents=0))
    r = full.post("/documents", json={"id": "a", "text": "one two three"})
    assert r.status_code == 507 and "507" in spec["paths"]["/documents"]["post"]["responses"]


def test_page_and_static_files(client: TestClient) -> None:
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    html = r.text
    assert 'data-testid="check-text"' in html and "/static/app.js" in html
    for name in ("app.js", "style.css"):
        assert client.get(f"/static/{name}").status_code == 200
    static = Path(server_app.STATIC)
    for f in static.iterdir():  # no CDN, no external fonts
        assert "http://" not in f.read_text() and "https://" not in f.read_text()
    assert ".innerHTML" not in (static / "app.js").read_text()  # user data stays text
    assert client.get("/static/nope.js").status_code == 404


# ---------------------------------------------------------------------------------------------
# Client errors


def test_errors_json_endpoints(client: TestClient) -> None:
    cases = [
        (
            {"content": b'{"text": "x"}', "headers": {"content-type": "text/plain"}},
            415,
            "/query takes a JSON body: send Content-Type: application/json (got 'text/plain')",
        ),
        (
            {
                "content": b'{"text": "x"}',
                "headers": {"content-type": "application/json; charset=latin-1"},
            },
            415,
            "/query takes UTF-8 JSON (got 'application/json; charset=latin-1')",
        ),
        (
            {"content": b'{"text": "\xff"}', "headers": {"content-type": "application/json"}},
            400,
            "the request body is not valid UTF-8 (byte 11)",
        ),
        (
            {"content": b'{"text": ', "headers": {"content-type": "application/json"}},
            422,
            "the request body is not valid JSON: Expecting value at character 9",
        ),
        (
            {"content": b'{"text": "\\ud800"}', "headers": {"content-type": "application/json"}},
            422,
            "text: contains a lone surrogate (U+D800) at character 0; send valid Unicode text",
        ),
        ({}, 422, "the request body is missing: send a JSON object"),
        ({"json": [1, 2]}, 422, "the request body must be a JSON object"),
        ({"json": {"text": 5}}, 422, "text: Input should be a valid string (a JSON string)"),
        ({"json": {"text": "x", "threshold": 0}}, 422, "threshold: Input should be greater than 0"),
        (
            {"json": {"text": "x", "threshold": 1.5}},
            422,
            "threshold: Input should be less than or equal to 1",
        ),
        (
            {"json": {"text": "x", "threshold": "high"}},
            422,
            "threshold: Input should be a "
            "valid number (a JSON number; not "
            "true or false or a string)",
        ),
        (
            {"json": {"text": "x", "top_k": 0}},
            422,
            "top_k: Input should be greater than or equal to 1",
        ),
        ({"json": {"text": "x", "colour": "red"}}, 422, "colour: Extra inputs are not permitted"),
    ]
    for kwargs, status, message in cases:
        r = client.post("/query", **kwargs)
        assert (r.status_code, detail(r)) == (status, message), kwargs
    r = client.post("/documents", json={"id": "", "text": "x"})
    assert r.status_code == 422 and detail(r).startswith("id: String should have at least 1")
    r = client.get("/nowhere")
    assert r.status_code == 404
    assert detail(r) == "no such endpoint: GET /nowhere (see /docs for the API)"
    r = client.put("/query", json={})
    assert r.status_code == 405 and detail(r) == "PUT is not allowed on /query"


# Strict input: JSON types as sent, ids without control or bidi characters, no empty texts

BOOL = " (JSON true or false; not a string or a number)"
INT = " (a JSON integer; not true or false, a string or a fraction)"
NUMBER = " (a JSON number; not true or false or a string)"


def test_request_fields_are_not_coerced(client: TestClient, index: Index) -> None:
    cases = [
        (
            "/check",
            {"text": "x y", "id": "a", "add": "yes"},
            "add: Input should be a valid boolean" + BOOL,
        ),
        (
            "/check",
            {"text": "x y", "id": "a", "add": 1},
            "add: Input should be a valid boolean" + BOOL,
        ),
        (
            "/check",
            {"text": "x y", "id": "a", "add": "true"},
            "add: Input should be a valid boolean" + BOOL,
        ),
        ("/query", {"text": "x", "top_k": True}, "top_k: Input should be a valid integer" + INT),
        ("/query", {"text": "x", "top_k": "5"}, "top_k: Input should be a valid integer" + INT),
        ("/query", {"text": "x", "top_k": 2.0}, "top_k: Input should be a valid integer" + INT),
        (
            "/query",
            {"text": "x", "threshold": True},
            "threshold: Input should be a valid number" + NUMBER,
        ),
        (
            "/check",
            {"text": "x", "threshold": "0.9"},
            "threshold: Input should be a valid number" + NUMBER,
        ),
        (
            "/documents",
            {"id": 5, "text": "x"},
            "id: Input should be a valid string (a JSON string)",
        ),
        (
            "/documents:batch",
            {"documents": [{"id": "a", "text": "x"}, {"id": "b", "text": True}]},
            "documents[1].text: Input should be a valid string (a JSON string)",
        ),
    ]
    for path, body, message in cases:
        r = client.post(path, json=body)
        assert (r.status_code, detail(r)) == (422, message), body
    assert len(index) == 0
    # what JSON means as it is written still works: an integer is a number
    r = client.post("/query", json={"text": "x", "threshold": 1, "top_k": 1})
    assert r.status_code == 200 and r.json()["threshold"] == 1.0
    r = client.post("/check", json={"text": "some new words here", "id": "a", "add": True})
    assert r.status_code == 200 and r.json()["added"] is True


BAD_IDS = [
    ("a\x00b", "U+0000"),
    ("tab\tid", "U+0009"),
    ("esc\x1b[31m", "U+001B"),
    ("del\x7f", "U+007F"),
    ("nel\x85", "U+0085"),
    ("sku-\u202e4321", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
    ("x\u2066y\u2069", "U+2066 (LEFT-TO-RIGHT ISOLATE)"),
    ("line\u2028sep", "U+2028 (LINE SEPARATOR)"),
    # characters that do not print: an id holding one prints as another id
    ("sku\u200b1", "U+200B (ZERO WIDTH SPACE)"),
    ("Ω-\u200d-zwj", "U+200D (ZERO WIDTH JOINER)"),
    ("\ufeffsku", "U+FEFF (ZERO WIDTH NO-BREAK SPACE)"),
    ("mark\u200e", "U+200E (LEFT-TO-RIGHT MARK)"),
    ("ar\u061cb", "U+061C (ARABIC LETTER MARK)"),
    ("soft\u00adhyphen", "U+00AD (SOFT HYPHEN)"),
    ("w\u2060j", "U+2060 (WORD JOINER)"),
]


@pytest.mark.parametrize("bad,char", BAD_IDS)
def test_ids_with_control_or_bidi_characters_are_refused(
    client: TestClient, index: Index, bad: str, char: str
) -> None:
    at = next(i for i, c in enumerate(bad) if f"U+{ord(c):04X}" == char.split()[0])
    why = (
        f"contains {char} at character {at}; an id may not hold characters that do not "
        "print: control characters, line separators, zero-width and other format "
        "characters, bidirectional marks, overrides and isolates"
    )
    text = "a perfectly ordinary text about kettles"
    for path, body, field in [
        ("/documents", {"id": bad, "text": text}, "id"),
        (
            "/documents:batch",
            {"documents": [{"id": "ok", "text": text}, {"id": bad, "text": text}]},
            "documents[1].id",
        ),
        ("/check", {"id": bad, "text": text, "add": True}, "id"),
        ("/check", {"id": bad, "text": text}, "id"),
    ]:
        r = client.post(path, json=body)
        assert (r.status_code, detail(r)) == (422, f"{field}: {why}"), (path, body)
    assert len(index) == 0
    # an upload skips the record and says why, as for every other bad id
    lines = [json.dumps({"sku": bad, "text": text}), json.dumps({"sku": "fine", "text": text})]
    r = client.post(
        "/collections",
        files={"file": ("x.jsonl", "\n".join(lines).encode())},
        data={"id_field": "sku"},
    )
    assert r.status_code == 201, r.text
    got = r.json()
    assert got["documents"] == 1 and got["skipped"] == {"bad_id": 1}
    assert got["skipped_examples"] == [
        {"line": 1, "reason": "bad_id", "message": f"field 'sku' {why}"}
    ]


def test_ids_that_are_plain_unicode_are_kept(client: TestClient, index: Index) -> None:
    for doc_id in ["sku/1 ü 東京 😀", "a b", "Ω-ω", "x" * 1024]:
        r = client.post("/documents", json={"id": doc_id, "text": "some words " + doc_id})
        assert r.status_code == 201, (doc_id, r.text)
        assert client.get(f"/documents/{doc_id}").json()["id"] == doc_id


def test_ids_are_one_id_whatever_their_unicode_form(client: TestClient, index: Index) -> None:
    """An id is kept in Unicode NFC form: "café" with a combining accent (NFD, as macOS file
    names have it) and with a precomposed é name one document on every path."""
    import unicodedata

    nfc, nfd = "café-ø", unicodedata.normalize("NFD", "café-ø")
    assert nfc != nfd
    text = "an espresso machine with a steam wand and a milk jug"
    assert client.post("/documents", json={"id": nfd, "text": text}).json() == {"id": nfc}
    assert index.get(nfc) == text and nfd not in index
    for doc_id in (nfc, nfd):
        assert client.get(f"/documents/{doc_id}").json() == {"id": nfc, "text": text}
    r = client.post("/documents", json={"id": nfc, "text": text + " again"})
    assert r.status_code == 409
    r = client.post(
        "/documents:batch",
        json={"documents": [{"id": "new", "text": "a grinder"}, {"id": nfc, "text": "b"}]},
    )
    assert r.status_code == 409 and "new" not in index
    r = client.post(
        "/documents:batch",
        json={
            "documents": [{"id": nfc + "2", "text": "a grinder"}, {"id": nfd + "2", "text": "b"}]
        },
    )
    assert r.status_code == 422 and "appears twice in the batch" in detail(r)
    assert client.post("/check", json={"id": nfd, "text": text}).json()["matches"] == []
    assert client.get("/documents", params={"after": "caf"}).json()["ids"] == [nfc]
    assert client.delete(f"/documents/{nfd}").status_code == 204 and len(index) == 0
    # an upload: the two forms are one id, the second a repeat, in whichever order they come
    for first, second in ((nfd, nfc), (nfc, nfd)):
        lines = [
            json.dumps({"sku": first, "text": text}),
            json.dumps({"sku": "x", "text": "y"}),
            json.dumps({"sku": second, "text": text}),
        ]
        r = client.post(
            "/collections",
            files={"file": ("x.jsonl", "\n".join(lines).encode())},
            data={"id_field": "sku"},
        )
        got = r.json()
        assert got["documents"] == 2 and got["skipped"] == {"duplicate_id": 1}, got
        assert got["skipped_examples"][0]["line"] == 3
        assert nfc in r.text and nfd not in r.text


EMPTY = "text: is empty or only white space; a document needs at least one word"


@pytest.mark.parametrize("blank", ["", "   ", "\n\t ", "\u3000\u00a0"])
def test_empty_texts_are_refused_on_every_path_that_adds(
    client: TestClient, index: Index, blank: str
) -> None:
    r = client.post("/documents", json={"id": "a", "text": blank})
    assert (r.status_code, detail(r)) == (422, EMPTY)
    r = client.post(
        "/documents:batch",
        json={"documents": [{"id": "a", "text": "fine words"}, {"id": "b", "text": blank}]},
    )
    assert (r.status_code, detail(r)) == (422, "documents[1]." + EMPTY)
    r = client.post("/check", json={"id": "a", "text": blank, "add": True})
    assert (r.status_code, detail(r)) == (422, EMPTY + " (it cannot be added)")
    assert len(index) == 0
    # checked without adding it, it is answered (it repeats nothing)
    r = client.post("/check", json={"text": blank})
    assert r.status_code == 200 and r.json()["added"] is False and r.json()["matches"] == []
    # an upload leaves it out and counts it, as every other record it cannot use
    lines = [json.dumps({"text": blank}), json.dumps({"text": "fine words"})]
    r = client.post("/collections", files={"file": ("x.jsonl", "\n".join(lines).encode())})
    assert r.status_code == 201 and r.json()["skipped"] == {"empty_text": 1}


def test_errors_sizes(index: Index) -> None:
    c = local_client(create_app(index, max_upload_bytes=1000, max_text_bytes=100))
    r = c.post("/documents", json={"id": "a", "text": "x" * 2000})
    assert r.status_code == 413
    assert detail(r) == "the request body is 2020 bytes; the limit is 1000 bytes"

    def chunks():  # no Content-Length: the bytes actually read are counted
        for _ in range(20):
            yield b" " * 100

    r = c.post("/query", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert detail(r) == "the request body is over the limit of 1000 bytes"
    r = c.post("/documents", json={"id": "a", "text": "é" * 60})
    assert r.status_code == 413 and detail(r) == "the text is 120 bytes; the limit is 100 bytes"
    r = c.post(
        "/documents:batch",
        json={"documents": [{"id": "a", "text": "x"}, {"id": "b", "text": "y" * 101}]},
    )
    assert r.status_code == 413 and detail(r).startswith("documents[1].text is 101 bytes")
    assert len(index) == 0
    r = c.post(
        "/query",
        content=b"{}",
        headers={"content-type": "application/json", "content-length": "abc"},
    )
    assert r.status_code == 400 and "Content-Length" in detail(r)
    with pytest.raises(neardup.ConfigError, match="max_batch=0"):
        create_app(index, max_batch=0)


# ---------------------------------------------------------------------------------------------
# Collections


def collection_lines(rng: random.Random, n: int = 30) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    for i in range(n):
        if i % 4 == 3:
            texts.append(edit(rng, texts[i - 1], 1))
        elif i % 7 == 6:
            texts.append(edit(rng, texts[i - 5], 3))
        else:
            texts.append(make_text(rng, 60))
        ids.append(f"p{i}")
    return ids, texts


def to_members(
    clusters: list[dict[str, Any]], titles: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """The clusters as an upload's answer gives them; ``titles``: each id's text, whose first
    line (at most 80 characters) the answer shows beside it."""

    def title(doc_id: str) -> dict[str, str]:
        if titles is None:
            return {}
        line = titles[doc_id].strip().split("\n")[0].strip()
        return {"title": line if len(line) <= 80 else line[:77].rstrip() + "..."}

    return [
        {
            "cluster": c["cluster"],
            "size": c["size"],
            "representative": c["representative"],
            "members": [
                {
                    "id": m["id"],
                    "similarity_to_representative": round(m["similarity"], 6),
                    **title(m["id"]),
                }
                for m in c["members"]
            ],
        }
        for c in clusters
    ]


@pytest.mark.parametrize("method", ["components", "strict"])
def test_collection_jsonl_equals_dedup(client: TestClient, method: str) -> None:
    ids, texts = collection_lines(random.Random(7))
    body = "\n".join(json.dumps({"sku": i, "desc": t}) for i, t in zip(ids, texts)) + "\n"
    r = client.post(
        "/collections",
        files={"file": ("shop.jsonl", body.encode())},
        data={"text_field": "desc", "id_field": "sku", "threshold": "0.7", "cluster": method},
    )
    assert r.status_code == 201, r.text
    got = r.json()
    want = neardup.dedup(texts, ids, threshold=0.7, cluster=method)
    assert got["clusters"] == to_members(want.clusters(), dict(zip(ids, texts)))
    assert got["clusters"]
    assert got["pairs"] == len(want.pairs)
    assert got["duplicates"] == len(want.duplicate_rows)
    assert got["documents"] == len(ids) and got["skipped"] == {}
    assert got["format"] == "jsonl" and got["id_field"] == "sku"
    assert got["cluster_method"] == method and got["threshold"] == 0.7
    again = client.get(f"/collections/{got['collection_id']}")
    assert again.status_code == 200 and again.json() == got
    # The side-by-side view of a member and its representative.
    c = got["clusters"][0]
    rep, other = c["representative"], c["members"][1]
    r = client.get(f"/collections/{got['collection_id']}/pair", params={"a": rep, "b": other["id"]})
    assert r.status_code == 200
    p = r.json()
    ta, tb = texts[ids.index(rep)], texts[ids.index(other["id"])]
    assert p["a"] == {"id": rep, "text": ta} and p["b"] == {"id": other["id"], "text": tb}
    assert p["similarity"] == other["similarity_to_representative"] and p["same_cluster"]
    assert p["passages"] == shared_passages(ta, tb, 5, max_occurrences=8) and p["passages"]


def test_parquet_upload_with_two_text_fields_and_its_exports(client: TestClient) -> None:
    """A Parquet file whose text is a title and a description (joined with a newline): the
    groups show each member's title; the deduplicated list and the groups download as CSV and
    JSON Lines, equal to what dedup gives for the joined texts."""
    import csv
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    ids, descs = collection_lines(random.Random(11))
    titles = [f"Offer {i}" for i in ids]
    texts = [f"{t}\n{d}" for t, d in zip(titles, descs)]
    buf = io.BytesIO()
    pq.write_table(pa.table({"sku": ids, "title": titles, "description": descs}), buf)
    r = client.post(
        "/collections",
        files={"file": ("shop.parquet", buf.getvalue())},
        data={"text_field": "title, description", "id_field": "sku", "threshold": "0.5"},
    )
    assert r.status_code == 201, r.text
    got = r.json()
    want = neardup.dedup(texts, ids, threshold=0.5)
    assert got["format"] == "parquet" and got["documents"] == len(ids)
    assert got["clusters"] == to_members(want.clusters(), dict(zip(ids, texts)))
    assert got["clusters"] and got["clusters"][0]["members"][0]["title"].startswith("Offer ")
    cid = got["collection_id"]
    kept = [i for i, k in zip(ids, want.keep.tolist()) if k]
    e = client.get(f"/collections/{cid}/export", params={"what": "kept", "format": "csv"})
    assert e.status_code == 200 and e.headers["content-type"].startswith("text/csv")
    assert e.headers["content-disposition"] == f'attachment; filename="{cid}-kept.csv"'
    rows = list(csv.reader(io.StringIO(e.text)))
    assert rows[0] == ["id", "text"] and rows[1:] == [[i, texts[ids.index(i)]] for i in kept]
    e = client.get(f"/collections/{cid}/export", params={"what": "groups", "format": "jsonl"})
    lines = [json.loads(x) for x in e.text.splitlines()]
    rep = want.representative.tolist()
    assert lines == [
        {
            "id": i,
            "cluster": int(want.labels[r]),
            "representative": ids[rep[r]],
            "similarity": round(float(want.similarity[r]), 6),
            "kept": rep[r] == r,
        }
        for r, i in enumerate(ids)
    ]
    e = client.get(f"/collections/{cid}/export", params={"what": "groups", "format": "csv"})
    assert list(csv.reader(io.StringIO(e.text)))[1][4] in ("true", "false")
    assert client.get(
        f"/collections/{cid}/export", params={"what": "kept", "format": "jsonl"}
    ).text.count("\n") == len(kept)
    assert client.get(f"/collections/{cid}/export", params={"what": "pairs"}).status_code == 422
    assert client.get("/collections/0123456789abcdef/export").status_code == 404
    r = client.post(
        "/collections",
        files={"file": ("shop.parquet", buf.getvalue())},
        data={"text_field": "title,,description"},
    )
    assert r.status_code == 422 and "separated by commas" in r.json()["detail"]


def test_an_upload_takes_its_ids_from_the_field_id_as_dedup_does(client: TestClient) -> None:
    """Without id_field: the field id where every record has one and they are distinct (as
    neardup dedup takes them), else the line numbers; a CSV column id too."""
    rng = random.Random(3)
    a = make_text(rng, 60)
    texts = [a, edit(rng, a, 1), make_text(rng, 60)]

    def upload(records: list[dict], name: str = "x.jsonl", data: bytes | None = None) -> dict:
        body = data or "".join(json.dumps(r) + "\n" for r in records).encode()
        r = client.post("/collections", files={"file": (name, body)})
        assert r.status_code == 201, r.text
        return r.json()

    got = upload([{"id": f"sku-{i}", "text": t} for i, t in enumerate(texts)])
    assert got["id_field"] == "id"
    assert [m["id"] for m in got["clusters"][0]["members"]] == ["sku-0", "sku-1"]
    # one record without it, or ids that repeat: line numbers for all
    lacking = [{"id": "sku-0", "text": texts[0]}, {"text": texts[1]}, {"id": "x", "text": texts[2]}]
    repeat = [{"id": "same", "text": t} for t in texts]
    for records in (lacking, repeat):
        got = upload(records)
        assert got["id_field"] is None
        assert [m["id"] for m in got["clusters"][0]["members"]] == ["1", "2"]
    csv_body = ("id,text\n" + "".join(f"c{i},{t}\n" for i, t in enumerate(texts))).encode()
    got = upload([], "x.csv", csv_body)
    assert got["id_field"] == "id" and got["clusters"][0]["representative"] == "c0"


def test_collection_csv_with_line_ids(client: TestClient) -> None:
    rng = random.Random(8)
    a = make_text(rng, 80)
    rows = [
        ["title", "price"],
        [a, "10"],
        ['a, "quoted"\nmultiline title', "3"],
        [edit(rng, a, 1), "11"],
        [make_text(rng, 80), "4"],
    ]
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    data = buf.getvalue().encode()
    r = client.post(
        "/collections",
        files={"file": ("offers.csv", data, "text/csv")},
        data={"text_field": "title"},
    )
    assert r.status_code == 201, r.text
    got = r.json()
    assert got["format"] == "csv" and got["id_field"] is None
    # Ids are the line numbers where the records start (the header is line 1).
    texts = [a, rows[2][0], rows[3][0], rows[4][0]]
    want = neardup.dedup(texts, ["2", "3", "5", "6"], threshold=0.8)
    assert got["clusters"] == to_members(want.clusters(), dict(zip(["2", "3", "5", "6"], texts)))
    assert [m["id"] for m in got["clusters"][0]["members"]] == ["2", "5"]


def test_collection_skipped_records(client: TestClient) -> None:
    rng = random.Random(9)
    good = [make_text(rng, 20) for _ in range(3)]
    lines = [
        json.dumps({"id": "a", "text": good[0]}).encode(),  # 1 ok
        b'{"id": "b", "text": ',  # 2 malformed JSON
        json.dumps({"id": "c"}).encode(),  # 3 no text
        json.dumps({"id": "d", "text": 7}).encode(),  # 4 non-string text
        b"",  # 5 blank: ignored
        b'{"id": "e", "text": "caf\xe9"}',  # 6 invalid UTF-8
        b"[1, 2]",  # 7 not an object
        json.dumps({"id": "a", "text": good[1]}).encode(),  # 8 repeated id
        json.dumps({"text": good[1]}).encode(),  # 9 no id
        json.dumps({"id": "f", "text": "  "}).encode(),  # 10 empty text
        json.dumps({"id": 12, "text": good[2]}).encode(),  # 11 ok, integer id
        json.dumps({"id": None, "text": good[2]}).encode(),  # 12 bad id
    ]
    r = client.post(
        "/collections", files={"file": ("x.jsonl", b"\n".join(lines))}, data={"id_field": "id"}
    )
    assert r.status_code == 201, r.text
    got = r.json()
    assert got["documents"] == 2
    assert got["skipped"] == {
        "bad_id": 1,
        "duplicate_id": 1,
        "empty_text": 1,
        "undecodable": 1,
        "malformed_json": 1,
        "missing_field": 2,
        "non_string_field": 1,
        "not_object": 1,
    }
    assert [(e["line"], e["reason"]) for e in got["skipped_examples"]] == [
        (2, "malformed_json"),
        (3, "missing_field"),
        (4, "non_string_field"),
        (6, "undecodable"),
        (7, "not_object"),
    ]
    assert got["skipped_examples"][1]["message"] == "no field 'text'"
    assert got["skipped_examples"][2]["message"] == "field 'text' is a number, not a string"
    assert set(got["skipped"]) <= set(SkipReason)


def test_collection_csv_skipped_rows(index: Index) -> None:
    c = local_client(create_app(index, max_text_bytes=50))
    data = (
        b"sku,title\na,red wool jacket with zip\nb,caf\xe9 au lait\nc,only,three\n"
        b"d," + b"x" * 51 + b"\ne,  \n,blue cotton shirt\ng,red wool jacket with zip\n"
        b"a,green hat\n"
    )
    r = c.post(
        "/collections",
        files={"file": ("x.csv", data, "text/csv")},
        data={"text_field": "title", "id_field": "sku"},
    )
    assert r.status_code == 201, r.text
    got = r.json()
    assert got["documents"] == 2 and got["duplicates"] == 1
    assert got["skipped"] == {
        "bad_id": 1,
        "bad_row": 1,
        "duplicate_id": 1,
        "empty_text": 1,
        "text_too_large": 1,
        "undecodable": 1,
    }
    assert [(e["line"], e["reason"], e["message"]) for e in got["skipped_examples"]] == [
        (
            3,
            "undecodable",
            "not valid UTF-8 (byte 6 of the line: b'\\xe9', invalid continuation byte)",
        ),
        (4, "bad_row", "expected 2 fields, found 3"),
        (5, "text_too_large", "field 'title' is 51 bytes; the limit is 50"),
        (6, "empty_text", "field 'title' is empty"),
        (7, "bad_id", "field 'sku' is an empty string; an id must not be empty"),
    ]
    # problems with the whole file
    for name, body, status, message in [
        (
            "x.csv",
            b"\xffsku,title\na,b\n",
            422,
            "the CSV header is not valid UTF-8 (byte 1 of the line: b'\\xff', invalid start byte)",
        ),
        ("x.csv", b"title\n", 422, "no usable record in 'x.csv' (text field 'title'): it is empty"),
        (
            "x.jsonl.gz",
            b"{}",
            415,
            "upload a CSV (.csv), JSON Lines (.jsonl) or Parquet "
            "(.parquet) file; got 'x.jsonl.gz' "
            "(application/octet-stream)",
        ),
        (
            "x.tsv",
            b"title\na\n",
            415,
            "upload a CSV (.csv), JSON Lines (.jsonl) or Parquet "
            "(.parquet) file; got 'x.tsv' "
            "(application/octet-stream)",
        ),
    ]:
        r = c.post(
            "/collections",
            files={"file": (name, body, "application/octet-stream")},
            data={"text_field": "title"},
        )
        assert (r.status_code, detail(r)) == (status, message)


def test_collection_errors(client: TestClient) -> None:
    ok = b'{"text": "one two three"}\n'
    cases = [
        (
            {"files": {"file": ("x.pdf", b"%PDF-1.4", "application/pdf")}},
            415,
            "upload a CSV (.csv), JSON Lines (.jsonl) or Parquet (.parquet) file; got 'x.pdf' "
            "(application/pdf)",
        ),
        (
            {"files": {"file": ("x.jsonl", b"\n\n")}},
            422,
            "no usable record in 'x.jsonl' (text field 'text'): it is empty",
        ),
        (
            {"files": {"file": ("x.jsonl", b'{"title": "a"}\n[1]\n')}},
            422,
            "no usable record in 'x.jsonl' (text field 'text'): line 1: no field 'text'; "
            "line 2: a JSON line must be an object, not an array",
        ),
        (
            {"files": {"file": ("x.csv", b"name,price\na,1\n")}},
            422,
            "text_field 'text' is not a column of the CSV header (columns: name, price)",
        ),
        (
            {"files": {"file": ("x.csv", b"text\nabc\n")}, "data": {"id_field": "sku"}},
            422,
            "id_field 'sku' is not a column of the CSV header (columns: text)",
        ),
        (
            {"files": {"file": ("x.csv", b"")}},
            422,
            "the CSV file is empty: it needs a header "
            "row naming the text column ('text') and "
            "at least one row",
        ),
        (
            {"files": {"file": ("x.jsonl", ok)}, "data": {"threshold": "0"}},
            422,
            "threshold: Input should be greater than 0",
        ),
        (
            {"files": {"file": ("x.jsonl", ok)}, "data": {"threshold": "abc"}},
            422,
            "threshold: Input should be a valid number, unable to parse string as a number",
        ),
        (
            {"files": {"file": ("x.jsonl", ok)}, "data": {"cluster": "big"}},
            422,
            "cluster: Input should be 'components' or 'strict'",
        ),
        (
            {"data": {"text_field": "text"}},
            415,
            "/collections takes a multipart/form-data upload with a 'file' field (got "
            "'application/x-www-form-urlencoded')",
        ),
        (
            {"json": {"file": "x"}},
            415,
            "/collections takes a multipart/form-data upload with "
            "a 'file' field (got 'application/json')",
        ),
        ({"files": {"other": ("x.jsonl", ok)}}, 422, "file: Field required"),
    ]
    for kwargs, status, message in cases:
        r = client.post("/collections", **kwargs)
        assert (r.status_code, detail(r)) == (status, message), kwargs
    # A file without a known suffix is read as JSONL if it looks like it.
    r = client.post("/collections", files={"file": ("upload", ok, "application/octet-stream")})
    assert r.status_code == 201 and r.json()["format"] == "jsonl"
    cid = r.json()["collection_id"]
    r = client.get(f"/collections/{cid}/pair", params={"a": "1", "b": "9"})
    assert r.status_code == 404 and detail(r) == f"b: no document '9' in collection '{cid}'"
    r = client.get(f"/collections/{cid}/pair", params={"a": "1"})
    assert r.status_code == 422 and detail(r) == "query parameter b: Field required"
    r = client.get("/collections/nope")
    assert r.status_code == 404 and detail(r).startswith("no collection 'nope'")


def test_collection_upload_limit_and_lru(index: Index) -> None:
    c = local_client(create_app(index, max_upload_bytes=5000))
    r = c.post("/collections", files={"file": ("x.jsonl", b'{"text": "a"}\n' * 500)})
    assert (
        r.status_code == 413
        and "limit of 5000 bytes" in detail(r)
        or "the limit is 5000 bytes" in detail(r)
    )
    cids = []
    for i in range(server_app.MAX_COLLECTIONS + 1):
        r = c.post("/collections", files={"file": ("x.jsonl", b'{"text": "t%d"}\n' % i)})
        cids.append(r.json()["collection_id"])
    assert c.get(f"/collections/{cids[0]}").status_code == 404
    assert all(c.get(f"/collections/{x}").status_code == 200 for x in cids[1:])
    assert c.get("/stats").json()["collections"] == server_app.MAX_COLLECTIONS


def test_upload_is_not_written_under_its_name(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    name = "../../evil-name.jsonl"
    r = client.post("/collections", files={"file": (name, b'{"text": "abc def"}\n')})
    assert r.status_code == 201 and r.json()["filename"] == name
    assert list(work.iterdir()) == [] and not (tmp_path / "evil-name.jsonl").exists()


def test_run_opens_serves_and_closes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    from neardup.server import serve

    seen: dict[str, Any] = {}

    def fake_run(app: Any, host: str, port: int, **options: Any) -> None:
        seen.update(host=host, port=port)
        # requests are limited in the service, connections by the protocol: not by uvicorn,
        # whose limit counts connections (half-open ones too)
        assert options["limit_concurrency"] is None
        assert app.max_requests == serve.CONCURRENCY
        assert options["http"].max_connections == 1000
        assert options["timeout_keep_alive"] == serve.KEEP_ALIVE_SECONDS
        assert options["access_log"] is False  # its lines hold query strings
        c = TestClient(app, base_url=f"http://localhost:{port}")
        c.post("/documents", json={"id": "a", "text": "served"})
        seen["health"] = c.get("/health").json()

    monkeypatch.setattr(uvicorn, "run", fake_run)
    db = tmp_path / "run.db"
    Index(str(db)).close()  # run() serves an existing index only
    neardup_logger = logging.getLogger("neardup")
    before = (neardup_logger.level, neardup_logger.propagate, list(neardup_logger.handlers))
    serve.run(str(db), port=8123, max_batch=5)
    assert seen == {"host": "127.0.0.1", "port": 8123, "health": {"status": "ok", "documents": 1}}
    # the log it set up is undone when it returns
    after = (neardup_logger.level, neardup_logger.propagate, list(neardup_logger.handlers))
    assert after == before
    with Index(str(db)) as idx:
        assert idx.get("a") == "served"


# ---------------------------------------------------------------------------------------------
# Random requests: never a server error


_FUZZ_APP: dict[str, TestClient] = {}


def fuzz_client() -> TestClient:
    if "c" not in _FUZZ_APP:
        idx = Index()
        idx.add_many([("a", "red wool winter jacket with zip"), ("b", "blue cotton shirt")])
        _FUZZ_APP["c"] = local_client(create_app(idx, max_upload_bytes=20_000))
    return _FUZZ_APP["c"]


def check_response(r: Any) -> None:
    assert r.status_code < 500, (r.status_code, r.text)
    if r.status_code >= 400:
        assert isinstance(r.json()["detail"], str)


json_st = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["id", "text", "threshold", "top_k", "add", "documents", "x"])
            | st.text(max_size=5),
            children,
            max_size=5,
        )
    ),
    max_leaves=12,
)
POSTS = ["/documents", "/documents:batch", "/query", "/check", "/collections"]
fuzz = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@fuzz
@given(st.sampled_from(POSTS), json_st)
def test_fuzz_random_json(path: str, body: Any) -> None:
    # json.dumps writes NaN and Infinity as the bare words Python's parser accepts.
    data = json.dumps(body).encode("utf-8", "surrogatepass")
    check_response(
        fuzz_client().post(path, content=data, headers={"content-type": "application/json"})
    )


doc_st = st.fixed_dictionaries(
    {"text": st.text(max_size=60)},
    optional={
        "id": st.text(max_size=6) | json_st,
        "threshold": st.floats() | json_st,
        "top_k": st.integers(-3, 5) | json_st,
        "add": st.booleans() | json_st,
    },
)


@fuzz
@given(st.sampled_from(["/documents", "/query", "/check"]), doc_st)
def test_fuzz_near_valid_requests(path: str, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    check_response(
        fuzz_client().post(path, content=data, headers={"content-type": "application/json"})
    )
    batch = json.dumps({"documents": [body, body]}).encode()
    check_response(
        fuzz_client().post(
            "/documents:batch", content=batch, headers={"content-type": "application/json"}
        )
    )


@fuzz
@given(
    st.sampled_from(POSTS),
    st.binary(max_size=200),
    st.sampled_from(
        [
            "application/json",
            "text/plain",
            "multipart/form-data; boundary=x",
            "multipart/form-data",
            "application/x-www-form-urlencoded",
            "",
            "application/json; charset=utf-16",
        ]
    ),
)
def test_fuzz_random_bytes(path: str, body: bytes, ctype: str) -> None:
    headers = {"content-type": ctype} if ctype else {}
    check_response(fuzz_client().post(path, content=body, headers=headers))


@fuzz
@given(
    st.binary(max_size=300),
    st.text(max_size=12),
    st.sampled_from(["text", "id", "", "é"]),
    st.one_of(st.none(), st.text(max_size=6)),
    st.text(max_size=6),
)
def test_fuzz_random_uploads(
    data: bytes, filename: str, text_field: str, id_field: str | None, threshold: str
) -> None:
    form = {"text_field": text_field, "threshold": threshold or "0.8"}
    if id_field is not None:
        form["id_field"] = id_field
    for name in (filename, filename + ".csv", filename + ".jsonl"):
        check_response(fuzz_client().post("/collections", files={"file": (name, data)}, data=form))


@fuzz
@given(
    st.lists(st.text(max_size=8), max_size=4),
    st.sampled_from(["GET", "DELETE", "POST"]),
    st.dictionaries(st.text(max_size=5), st.text(max_size=8), max_size=3),
)
def test_fuzz_random_paths(parts: list[str], method: str, params: dict[str, str]) -> None:
    c = fuzz_client()
    from urllib.parse import quote

    for prefix in ("/documents/", "/collections/", "/", "/static/"):
        path = prefix + "/".join(quote(p, safe="") for p in parts)
        # absolute, so that a path starting with '//' is sent as it is
        check_response(c.request(method, "http://localhost" + path, params=params))
    r = c.get("/collections/x/pair", params=params)
    check_response(r)


def test_the_api_documentation_works_offline(index: Index) -> None:
    """/docs is rendered on the server from the OpenAPI schema: every endpoint and model is
    there, and the page loads nothing from another site (no script, no CDN)."""
    import re

    with local_client(create_app(index)) as c:
        spec = c.get("/openapi.json").json()
        r = c.get("/docs")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    page = r.text
    assert "<script" not in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    for path, item in spec["paths"].items():
        for method in item:
            assert f"{method.upper()} {path}" in page
    for model in spec["components"]["schemas"]:
        assert f'id="model-{model}"' in page
    assert "CheckIn" in page and "<code>text</code>" in page


def test_answers_carry_at_most_max_matches_and_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    import neardup.server.search as search_routes

    idx = Index()
    text = make_text(random.Random(11))
    idx.add_many([(f"copy-{i}", text) for i in range(5)])
    monkeypatch.setattr(search_routes, "MAX_MATCHES", 2)
    with local_client(create_app(idx)) as c:
        q = c.post("/query", json={"text": text}).json()
        assert len(q["matches"]) == 2 and q["matches_capped"] is True
        r = c.post("/check", json={"text": text}).json()
        assert len(r["matches"]) == 2 and r["matches_capped"] is True and not r["unique"]
        q = c.post("/query", json={"text": text, "top_k": 1}).json()
        assert len(q["matches"]) == 1 and q["matches_capped"] is False
        r = c.post("/query", json={"text": text, "top_k": 100_000})
        assert r.status_code == 422


def test_a_full_index_refuses_to_grow_with_507() -> None:
    idx = Index()
    with local_client(create_app(idx, max_documents=3)) as c:
        for i in range(3):
            assert (
                c.post("/documents", json={"id": f"d{i}", "text": f"text number {i}"}).status_code
                == 201
            )
        r = c.post("/documents", json={"id": "d3", "text": "one more text"})
        assert r.status_code == 507 and "the index is full" in r.json()["detail"]
        r = c.post("/documents:batch", json={"documents": [{"id": "x", "text": "a b c"}]})
        assert r.status_code == 507
        r = c.post("/check", json={"id": "y", "text": "something new entirely", "add": True})
        assert r.status_code == 507
        assert c.post("/query", json={"text": "text number 1"}).status_code == 200
        assert c.delete("/documents/d0").status_code in (200, 204)
        assert c.post("/documents", json={"id": "d3", "text": "one more text"}).status_code == 201
    assert len(idx) == 3


def test_large_texts_are_searched_a_few_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """With max_large_requests=1, a second request with a large text while one is being
    handled gets 503 with Retry-After; small texts are not held up."""
    import threading

    idx = Index()
    idx.add("a", "some indexed words for the test")
    gate, entered = threading.Event(), threading.Event()
    real = idx.query_within

    def slow(text: str, *args: Any, **kwargs: Any) -> Any:
        if len(text) >= 40:
            entered.set()
            gate.wait(20)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(idx, "query_within", slow)
    app = create_app(idx, large_text_bytes=40, max_large_requests=1)
    got: list = []
    with local_client(app) as c:
        t = threading.Thread(
            target=lambda: got.append(c.post("/query", json={"text": "a large text " * 5}))
        )
        t.start()
        assert entered.wait(20)
        r = c.post("/query", json={"text": "another large text " * 5})
        assert r.status_code == 503 and r.headers["retry-after"] == "2"
        assert c.post("/query", json={"text": "small"}).status_code == 200
        gate.set()
        t.join(20)
    assert got[0].status_code == 200


def test_a_query_with_a_spent_time_budget_says_it_is_incomplete(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bounded work: a query reads and verifies its candidates a part at a time and stops
    when its time budget is spent; the answer then says it is incomplete, never unique."""
    import neardup.index.core as core
    import neardup.server.search as search_routes

    idx = Index()
    base = make_text(random.Random(12))
    idx.add_many([(f"near-{i}", base + f" extra{i}") for i in range(40)])
    monkeypatch.setattr(core, "_VERIFY_PART", 4)  # ten parts
    got, complete = idx.query_within(base, 1e-9)
    assert not complete and 0 < len(got) <= 4  # the first part is always verified
    got, complete = idx.query_within(base, 60)
    assert complete and len(got) == 40
    monkeypatch.setattr(search_routes, "QUERY_SECONDS", 1e-9)
    with local_client(create_app(idx)) as c:
        r = c.post("/query", json={"text": base}).json()
    assert r["incomplete"] is True and r["unique"] is False and 0 < len(r["matches"]) <= 4
    with local_client(create_app(idx)) as c:
        r = c.post("/query", json={"text": make_text(random.Random(99))}).json()
    assert r["incomplete"] is False and r["unique"] is True  # no candidate at all: complete


def test_requests_run_on_the_threads_given() -> None:
    """``threads``: the endpoints' work runs on at most that many threads (each keeps its own
    SQLite connection), instead of Starlette's default 40."""
    import anyio.to_thread

    with TestClient(create_app(Index(), threads=3), base_url="http://localhost") as c:
        assert (
            c.portal.call(lambda: anyio.to_thread.current_default_thread_limiter().total_tokens)
            == 3
        )
        assert c.post("/query", json={"text": "some words"}).status_code == 200
    with pytest.raises(neardup.ConfigError, match="threads"):
        create_app(Index(), threads=0)
