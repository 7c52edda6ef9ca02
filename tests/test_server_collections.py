"""Uploaded collections of the service (``neardup.server.collections``) and the bounded work of
``/check`` and the side-by-side view: similarities against brute-force Jaccard, the pairs that
exact-duplicate groups imply counted but never listed, the memory and disk budgets of the
collection store, uploads at once, passages against a brute-force oracle and within their time
budget. The real application through ``TestClient``, and ``benchmarks/service_memory.py`` at a
tiny size."""

from __future__ import annotations

import itertools
import json
import random
import re
import stat
import sys
import time
import tracemalloc
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

warnings.filterwarnings("ignore", message=".*httpx2.*")  # starlette's TestClient on httpx

from fastapi.testclient import TestClient  # noqa: E402
from oracles import jaccard, normalize, shingle_hashes  # noqa: E402

import neardup  # noqa: E402
from neardup import Index  # noqa: E402
from neardup.server import create_app, shared_passages  # noqa: E402
from neardup.server.passages import passages_within  # noqa: E402
from neardup.text.words import word_key  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
VOCAB = ("red blue green large small cotton wool shirt dress jacket with without pocket zip "
         "button collar sleeve long short summer winter soft warm light dark slim fit classic "
         "modern washable organic").split()


def make_text(rng: random.Random, n: int = 30) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(n))


def local_client(app: Any) -> TestClient:
    return TestClient(app, base_url="http://localhost")


def upload(c: TestClient, ids: list[str], texts: list[str], **form: str) -> Any:
    body = "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, texts))
    return c.post("/collections", files={"file": ("c.jsonl", body.encode())},
                  data={"id_field": "id", **form})


def grouped_collection(rng: random.Random) -> tuple[list[str], list[str]]:
    """Texts with exact copies (differing in case and spaces only), near-duplicates of them
    (and their copies), and others, shuffled."""
    texts = []
    for _ in range(4):
        base = make_text(rng)
        variants = [base]
        w = base.split()
        w[rng.randrange(len(w))] = "zzz"
        variants.append(" ".join(w))
        for v in variants:
            for _ in range(rng.randint(1, 4)):  # copies: same normalised text
                texts.append(v.upper() if rng.random() < 0.5 else v.replace(" ", "  "))
    texts += [make_text(rng) for _ in range(4)]
    rng.shuffle(texts)
    return [f"d{i}" for i in range(len(texts))], texts


def shingles(text: str) -> set[int]:
    return set(shingle_hashes(normalize(text), "word", 5))


@pytest.mark.parametrize("method", ["components", "strict"])
def test_pair_similarity_is_exact_against_brute_force(method: str) -> None:
    ids, texts = grouped_collection(random.Random(3))
    c = local_client(create_app(Index()))
    r = upload(c, ids, texts, threshold="0.8", cluster=method)
    assert r.status_code == 201, r.text
    got = r.json()
    cid = got["collection_id"]
    # what the run knows: every pair the engine expands (pairs="all", no group left out) ...
    full = neardup.dedup(texts, ids, threshold=0.8, cluster=method, pairs="all",
                         pairs_max_group=10**9)
    known = {(int(a), int(b)): float(s) for a, b, s in
             zip(full.pairs.left, full.pairs.right, full.pairs.similarity)}
    # ... and each member with its representative and the representative's copies
    norm = [normalize(t) for t in texts]
    for x, rep in enumerate(full.representative.tolist()):
        for y in range(len(texts)):
            if x != y and norm[y] == norm[rep]:
                known.setdefault((min(x, y), max(x, y)), float(full.similarity[x]))
    assert got["pairs"] == len(full.pairs)  # counted from the groups, never listed
    sets = [shingles(t) for t in texts]
    n = len(texts)
    for a, b in itertools.combinations(range(n), 2):
        r = c.get(f"/collections/{cid}/pair", params={"a": ids[a], "b": ids[b]})
        assert r.status_code == 200, r.text
        p = r.json()
        want = known.get((a, b))
        if norm[a] == norm[b]:
            assert p["similarity"] == 1.0
        if want is None:
            assert p["similarity"] is None, (a, b)
        else:
            assert p["similarity"] == pytest.approx(jaccard(sets[a], sets[b]), abs=1e-6)
            assert p["similarity"] == pytest.approx(want, abs=1e-6)
        assert p["same_cluster"] == (full.labels[a] == full.labels[b])
        assert p["incomplete"] is False
    same = c.get(f"/collections/{cid}/pair", params={"a": ids[0], "b": ids[0]}).json()
    assert same["similarity"] == 1.0 and same["same_cluster"]


def test_upload_of_many_copies_keeps_groups_not_pairs() -> None:
    """30,000 records of 100 texts: 4.5 million implied pairs, counted and never made."""
    rng = random.Random(5)
    distinct = [f"offer {i} " + make_text(rng, 6) for i in range(100)]
    rows = [rng.randrange(100) for _ in range(30_000)]
    texts = [distinct[r] for r in rows]
    app = create_app(Index())
    c = local_client(app)
    body = "".join(json.dumps({"text": t}) + "\n" for t in texts).encode()
    tracemalloc.start()
    try:
        r = c.post("/collections", files={"file": ("big.jsonl", body)})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert r.status_code == 201, r.text
    got = r.json()
    sizes = [rows.count(i) for i in range(100)]
    assert got["pairs"] == sum(g * (g - 1) // 2 for g in sizes) > 4_000_000
    assert got["duplicates"] == 30_000 - 100 and len(got["clusters"]) == 100
    assert sorted(cl["size"] for cl in got["clusters"]) == sorted(sizes)
    # what the upload allocated at most, and what the service keeps: a few MB, not GB
    assert peak < 150_000_000, peak
    kept = app.state.collections.usage()
    assert kept["in_memory"] == 1 and kept["memory_bytes"] < 8_000_000, kept
    # two copies of one text, found by their line numbers
    a, b = [str(i + 1) for i, x in enumerate(rows) if x == rows[0]][:2]
    p = c.get(f"/collections/{got['collection_id']}/pair", params={"a": a, "b": b}).json()
    assert p["similarity"] == 1.0 and p["same_cluster"] and p["a"]["text"] == distinct[rows[0]]


def test_store_moves_collections_to_disk_then_drops_them(tmp_path: Path) -> None:
    rng = random.Random(7)
    app = create_app(Index(), collection_memory_bytes=1, collection_disk_bytes=30_000,
                     max_collections=50, collection_folder=str(tmp_path))
    store = app.state.collections
    answers, docs = [], []
    with local_client(app) as c:
        for k in range(6):
            ids = [f"u{k}-{i}" for i in range(40)]
            texts = [make_text(rng, 40) for _ in range(39)]
            texts.append(texts[0].upper())
            r = upload(c, ids, texts)
            assert r.status_code == 201, r.text
            answers.append(r.json())
            docs.append((ids, texts))
            folder = store.folder
            assert folder is not None and folder.parent == tmp_path
            assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        usage = store.usage()
        assert usage["in_memory"] == 0 and usage["disk_bytes"] <= 30_000
        kept = usage["on_disk"]
        assert 1 <= kept < 6
        for k, answer in enumerate(answers):
            r = c.get(f"/collections/{answer['collection_id']}")
            if k < 6 - kept:  # the least recently used were dropped
                assert r.status_code == 404
                assert "upload the file again" in r.json()["detail"]
                continue
            assert r.status_code == 200 and r.json() == answer  # read back from disk
            ids, texts = docs[k]
            p = c.get(f"/collections/{answer['collection_id']}/pair",
                      params={"a": ids[0], "b": ids[-1]}).json()
            assert p["similarity"] == 1.0 and p["b"]["text"] == texts[-1]
            assert p["passages"] == shared_passages(texts[0], texts[-1], 5, max_occurrences=8)
        assert sorted(x.name for x in folder.iterdir()) == sorted(
            a["collection_id"] for a in answers[6 - kept:])
    assert not folder.exists()  # removed when the service stops


def test_memory_budget_keeps_recent_collections_in_memory() -> None:
    app = create_app(Index(), max_collections=3)
    c = local_client(app)
    cids = [upload(c, [f"x{i}"], [f"text number {i}"]).json()["collection_id"]
            for i in range(4)]
    assert c.get(f"/collections/{cids[0]}").status_code == 404
    assert app.state.collections.usage()["in_memory"] == 3
    assert app.state.collections.folder is None  # nothing written to disk
    assert c.get("/stats").json()["collections_kept"]["in_memory"] == 3


def test_uploads_beyond_the_concurrent_ones_get_503() -> None:
    app = create_app(Index(), concurrent_uploads=1)
    c = local_client(app)
    with app.state.uploads.take():  # an upload being deduplicated
        r = upload(c, ["a"], ["some text"])
    assert r.status_code == 503 and r.headers["retry-after"] == "5"
    assert "being deduplicated" in r.json()["detail"]
    assert upload(c, ["a"], ["some text"]).status_code == 201


@pytest.mark.parametrize("option", ["collection_memory_bytes", "concurrent_uploads",
                                    "max_collections", "check_text_bytes"])
def test_limits_are_checked(option: str) -> None:
    with pytest.raises(ValueError, match=option):
        create_app(Index(), **{option: -1})


# ---------------------------------------------------------------------------------------------
# Bounded /check and side-by-side view


def test_check_of_a_large_text_stays_within_its_budgets() -> None:
    """A 0.97 MB text against 10 near-copies: the answer within about its 2 s budget, at most
    check_text_bytes of texts, the cut said."""
    rng = random.Random(11)
    vocab = [f"w{i}" for i in range(20000)]
    base = " ".join(rng.choice(vocab) for _ in range(140_000))
    assert 900_000 < len(base) < 1_000_000
    index = Index(passages=True)
    for i in range(10):
        w = base.split()
        for _ in range(50):
            w[rng.randrange(len(w))] = "zzz"
        index.add(f"copy-{i}", " ".join(w))
    c = local_client(create_app(index, check_text_bytes=3_000_000))
    t0 = time.perf_counter()
    r = c.post("/check", json={"text": base})
    seconds = time.perf_counter() - t0
    assert r.status_code == 200, r.text
    got = r.json()
    assert len(got["matches"]) == 10 and got["texts_capped"] is True
    carried = [m for m in got["matches"] if m["text"] is not None]
    assert len(carried) == 3 and len(r.content) < 3_500_000
    for m in carried:
        if m["passages"]:
            assert m["passages"] == shared_passages(base, m["text"], 5, max_occurrences=8)
        else:
            assert got["passages_incomplete"] is True
    assert seconds < 6, seconds  # 2 s of budget, on a loaded test machine


def test_pair_view_of_two_large_texts() -> None:
    rng = random.Random(12)
    vocab = [f"w{i}" for i in range(20000)]
    a = " ".join(rng.choice(vocab) for _ in range(150_000))
    b = a.replace(" w1 ", " zzz ")
    c = local_client(create_app(Index()))
    cid = upload(c, ["a", "b"], [a, b]).json()["collection_id"]
    t0 = time.perf_counter()
    p = c.get(f"/collections/{cid}/pair", params={"a": "a", "b": "b"}).json()
    seconds = time.perf_counter() - t0
    if not p["incomplete"]:  # else cut by its 0.8 s budget on a loaded machine
        assert p["passages"] == shared_passages(a, b, 5, max_occurrences=8) and p["passages"]
    assert seconds < 3, seconds


def test_passages_stop_at_the_deadline() -> None:
    a = " ".join(["x y z"] * 2000)
    assert passages_within(a, a, 5, deadline=time.monotonic() - 1) == ([], False)
    got, complete = passages_within(a, a, 5, deadline=time.monotonic() + 60)
    assert complete and got


# ---------------------------------------------------------------------------------------------
# Shared passages against brute force, bounded occurrences and punctuation included


def oracle(a: str, b: str, k: int, max_occurrences: int | None) -> list[dict[str, Any]]:
    """Every pair of k-gram positions; position j of b counts only among the first
    ``max_occurrences`` of its k-gram; runs along the diagonals."""
    wa = [(m.start(), m.end(), word_key(m.group())) for m in re.finditer(r"\S+", a)]
    wb = [(m.start(), m.end(), word_key(m.group())) for m in re.finditer(r"\S+", b)]
    ga = [tuple(w[2] for w in wa[i:i + k]) for i in range(len(wa) - k + 1)]
    gb = [tuple(w[2] for w in wb[j:j + k]) for j in range(len(wb) - k + 1)]
    allowed = set()
    seen: dict[tuple, int] = {}
    for j, g in enumerate(gb):
        seen[g] = seen.get(g, 0) + 1
        if max_occurrences is None or seen[g] <= max_occurrences:
            allowed.add(j)

    def same(i: int, j: int) -> bool:
        return 0 <= i < len(ga) and j in allowed and ga[i] == gb[j]

    out = []
    for i in range(len(ga)):
        for j in range(len(gb)):
            if same(i, j) and not same(i - 1, j - 1):
                m = 1
                while same(i + m, j + m):
                    m += 1
                last = m + k - 2
                out.append({"a": [wa[i][0], wa[i + last][1]],
                            "b": [wb[j][0], wb[j + last][1]], "words": m + k - 1})
    return out


word_st = st.sampled_from(["a", "A", "b", "b,", "(b)", "é", "É", "ﬁ", "fi", "..", "x"])
space_st = st.sampled_from([" ", "  ", "\n", "\t", "\u00a0", "\u3000", "\u2028", "\x1c"])


@st.composite
def text_st(draw: st.DrawFn) -> str:
    words = draw(st.lists(word_st, max_size=30))
    return draw(space_st) * draw(st.integers(0, 1)) + "".join(w + draw(space_st) for w in words)


@settings(max_examples=300, deadline=None)
@given(text_st(), text_st(), st.integers(1, 4), st.sampled_from([None, 1, 2, 3]))
def test_vectorised_passages_match_brute_force(a: str, b: str, k: int,
                                               max_occurrences: int | None) -> None:
    assert shared_passages(a, b, k, max_occurrences=max_occurrences) == oracle(
        a, b, k, max_occurrences)


# ---------------------------------------------------------------------------------------------
# The benchmark, tiny


def test_service_memory_benchmark_runs_tiny(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import service_memory
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    code = service_memory.main(["--records", "600", "--distinct", "10", "--uploads", "3",
                                "--results", str(tmp_path)])
    report = json.loads((tmp_path / "service_memory.json").read_text())
    assert code == 0 and report["failed"] == 0
    assert [u["shape"] for u in report["uploads"]] == ["copies", "distinct", "copies"]
    first = report["uploads"][0]
    assert first["documents"] == 600 and first["clusters"] == 10
    assert first["duplicates"] == 590 and first["pair_status"] == 200
    assert 0 < report["peak_rss_mb"] < 1000
    assert report["store"]["collections"] == 3
