"""Uploaded collections of the service (``neardup.server.collections``) and the bounded work of
``/check`` and the side-by-side view: similarities against brute-force Jaccard, the pairs that
exact-duplicate groups imply counted but never listed, the memory and disk budgets of the
collection store, uploads at once, passages against a brute-force oracle and within their time
budget. The real application through ``TestClient``, and ``benchmarks/service_memory.py`` at a
tiny size. The store's shared mode with real files and real processes: what one store (one
worker) puts, another gets; the budgets of the shared folder held by processes putting at once;
recency across stores; ids that would reach outside the folder."""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import stat
import subprocess
import sys
import threading
import time
import tracemalloc
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

warnings.filterwarnings("ignore", message=".*httpx2.*")  # starlette's TestClient on httpx

from fastapi.testclient import TestClient  # noqa: E402
from oracles import jaccard, normalize, shingle_hashes  # noqa: E402

import neardup  # noqa: E402
from neardup import Index  # noqa: E402
from neardup.server import create_app, shared_passages  # noqa: E402
from neardup.server.collection_store import (  # noqa: E402
    _ARRAYS,
    COLLECTION_SHINGLE,
    TOUCH_SECONDS,
    Collection,
    CollectionStore,
)
from neardup.server.passages import passages_within  # noqa: E402
from neardup.text.words import word_key  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
VOCAB = (
    "red blue green large small cotton wool shirt dress jacket with without pocket zip "
    "button collar sleeve long short summer winter soft warm light dark slim fit classic "
    "modern washable organic"
).split()


def make_text(rng: random.Random, n: int = 30) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(n))


def local_client(app: Any) -> TestClient:
    return TestClient(app, base_url="http://localhost")


def upload(c: TestClient, ids: list[str], texts: list[str], **form: str) -> Any:
    body = "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, texts))
    return c.post(
        "/collections", files={"file": ("c.jsonl", body.encode())}, data={"id_field": "id", **form}
    )


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
    full = neardup.dedup(
        texts, ids, threshold=0.8, cluster=method, pairs="all", pairs_max_group=10**9
    )
    known = {
        (int(a), int(b)): float(s)
        for a, b, s in zip(full.pairs.left, full.pairs.right, full.pairs.similarity)
    }
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
    app = create_app(
        Index(),
        collection_memory_bytes=1,
        collection_disk_bytes=30_000,
        max_collections=50,
        collection_folder=str(tmp_path),
    )
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
            p = c.get(
                f"/collections/{answer['collection_id']}/pair", params={"a": ids[0], "b": ids[-1]}
            ).json()
            assert p["similarity"] == 1.0 and p["b"]["text"] == texts[-1]
            assert p["passages"] == shared_passages(texts[0], texts[-1], 5, max_occurrences=8)
        assert sorted(x.name for x in folder.iterdir()) == sorted(
            a["collection_id"] for a in answers[6 - kept :]
        )
    assert not folder.exists()  # removed when the service stops


def test_memory_budget_keeps_recent_collections_in_memory() -> None:
    app = create_app(Index(), max_collections=3)
    c = local_client(app)
    cids = [upload(c, [f"x{i}"], [f"text number {i}"]).json()["collection_id"] for i in range(4)]
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


@pytest.mark.parametrize(
    "option",
    ["collection_memory_bytes", "concurrent_uploads", "max_collections", "check_text_bytes"],
)
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
    ga = [tuple(w[2] for w in wa[i : i + k]) for i in range(len(wa) - k + 1)]
    gb = [tuple(w[2] for w in wb[j : j + k]) for j in range(len(wb) - k + 1)]
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
                out.append(
                    {
                        "a": [wa[i][0], wa[i + last][1]],
                        "b": [wb[j][0], wb[j + last][1]],
                        "words": m + k - 1,
                    }
                )
    return out


word_st = st.sampled_from(["a", "A", "b", "b,", "(b)", "é", "É", "ﬁ", "fi", "..", "x"])
space_st = st.sampled_from([" ", "  ", "\n", "\t", "\u00a0", "\u3000", "\u2028", "\x1c"])


@st.composite
def text_st(draw: st.DrawFn) -> str:
    words = draw(st.lists(word_st, max_size=30))
    return draw(space_st) * draw(st.integers(0, 1)) + "".join(w + draw(space_st) for w in words)


@settings(max_examples=300, deadline=None)
@given(text_st(), text_st(), st.integers(1, 4), st.sampled_from([None, 1, 2, 3]))
def test_vectorised_passages_match_brute_force(
    a: str, b: str, k: int, max_occurrences: int | None
) -> None:
    assert shared_passages(a, b, k, max_occurrences=max_occurrences) == oracle(
        a, b, k, max_occurrences
    )


# ---------------------------------------------------------------------------------------------
# The store shared by worker processes


def cid_of(k: int) -> str:
    """A collection id as the service makes them (16 hex digits)."""
    return f"{k:016x}"


def small_collection(seed: int, n: int = 12) -> tuple[list[str], list[str], Collection]:
    """``n`` documents, the last an exact copy of the first (in capitals), deduplicated as an
    upload is."""
    rng = random.Random(seed)
    texts = [make_text(rng, 30) for _ in range(n - 1)]
    texts.append(texts[0].upper())
    ids = [f"s{seed}-{i}" for i in range(n)]
    result = neardup.dedup(texts, ids, shingle=COLLECTION_SHINGLE, pairs="edges")
    summary = json.dumps({"seed": seed, "documents": n}).encode()
    return ids, texts, Collection.build(ids, texts, result, summary)


def similarities(col: Collection) -> list[list[float | None]]:
    return [[col.similarity(a, b) for b in range(len(col))] for a in range(len(col))]


def assert_same(got: Collection | None, ids: list[str], texts: list[str], want: Collection) -> None:
    assert got is not None
    assert [got.id(r) for r in range(len(got))] == ids
    assert [got.text(r) for r in range(len(got))] == texts
    assert got.summary == want.summary
    for name in _ARRAYS:
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert similarities(got) == similarities(want)
    assert got.similarity(0, len(got) - 1) == 1.0 and got.row_of(ids[-1]) == len(got) - 1


def shared_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o700)  # as the supervisor makes it
    return folder


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.iterdir())


def test_a_collection_put_in_one_shared_store_is_got_by_another(tmp_path: Path) -> None:
    shared = shared_folder(tmp_path)
    a, b = CollectionStore(shared=shared), CollectionStore(shared=shared)
    ids, texts, col = small_collection(1)
    cid = cid_of(1)
    assert b.get(cid) is None  # not yet
    assert a.put(cid, col) is True
    # written at once, whole, under its id: nothing else left in the folder
    assert sorted(os.listdir(shared)) == [".lock", cid]
    assert stat.S_IMODE((shared / cid).stat().st_mode) == 0o700
    assert a.get(cid) is col  # from a's memory
    got = b.get(cid)
    assert_same(got, ids, texts, col)
    assert isinstance(got.texts_buf, np.memmap)  # mapped from the shared folder
    assert b.get(cid) is got  # then from b's memory
    on_disk = folder_bytes(shared / cid)
    assert b.usage() == {
        "in_memory": 1,
        "memory_bytes": col.nbytes,
        "on_disk": 1,
        "disk_bytes": on_disk,
    }
    assert len(a) == len(b) == 1
    # beyond its memory budget a store forgets it from memory only
    c = CollectionStore(memory_bytes=1, shared=shared)
    ids2, texts2, col2 = small_collection(2)
    assert c.put(cid_of(2), col2) is True
    assert c.usage()["in_memory"] == 0 and c.usage()["on_disk"] == 2
    assert_same(c.get(cid_of(2)), ids2, texts2, col2)
    assert_same(a.get(cid_of(2)), ids2, texts2, col2)
    # close() forgets the memory, and leaves the folder and its collections
    for store in (a, b, c):
        store.close()
    assert sorted(os.listdir(shared)) == [".lock", cid, cid_of(2)]
    assert a.usage() == {
        "in_memory": 0,
        "memory_bytes": 0,
        "on_disk": 2,
        "disk_bytes": on_disk + folder_bytes(shared / cid_of(2)),
    }
    assert_same(CollectionStore(shared=shared).get(cid), ids, texts, col)


def test_shared_store_refuses_a_collection_over_the_disk_budget(tmp_path: Path) -> None:
    shared = shared_folder(tmp_path)
    ids, texts, col = small_collection(3)
    store = CollectionStore(disk_bytes=col.nbytes - 1, shared=shared)
    assert store.put(cid_of(3), col) is False
    # over it only with the .npy headers: written, measured, removed
    store = CollectionStore(disk_bytes=col.nbytes, shared=shared)
    assert store.put(cid_of(3), col) is False
    assert os.listdir(shared) == [] and store.get(cid_of(3)) is None
    store = CollectionStore(disk_bytes=col.nbytes + 4096, shared=shared)
    assert store.put(cid_of(3), col) is True
    assert_same(CollectionStore(shared=shared).get(cid_of(3)), ids, texts, col)


def test_a_get_in_one_shared_store_keeps_a_collection_the_other_evicts(tmp_path: Path) -> None:
    shared = shared_folder(tmp_path)
    cols = [small_collection(10 + k) for k in range(5)]
    a = CollectionStore(max_collections=3, shared=shared)
    b = CollectionStore(max_collections=3, shared=shared)
    for k in range(3):
        assert a.put(cid_of(k), cols[k][2])
        time.sleep(0.01)
    assert b.get(cid_of(0)) is not None  # now the most recently used of the folder
    time.sleep(0.01)
    assert a.put(cid_of(3), cols[3][2])  # the least recently used goes: 1, not 0
    assert sorted(x for x in os.listdir(shared) if x != ".lock") == [
        cid_of(0),
        cid_of(2),
        cid_of(3),
    ]
    assert b.get(cid_of(1)) is None  # gone from the folder, never in b's memory
    assert_same(b.get(cid_of(0)), *cols[0])
    # a has 1 in memory still: served until its next touch finds the folder gone
    time.sleep(TOUCH_SECONDS + 0.05)
    assert a.get(cid_of(1)) is None and a.usage()["in_memory"] == 2
    # the disk budget of the whole folder: room for two
    size = max(folder_bytes(shared / cid_of(k)) for k in (0, 2, 3))
    size = max(
        size,
        len(cols[4][2].summary) + sum(getattr(cols[4][2], name).nbytes + 256 for name in _ARRAYS),
    )
    assert 3 * min(folder_bytes(shared / cid_of(k)) for k in (0, 2, 3)) > 2 * size  # not 3
    c = CollectionStore(disk_bytes=2 * size, shared=shared)
    assert b.get(cid_of(2)) is not None  # touched: 2 more recent than 0
    time.sleep(0.01)
    assert c.put(cid_of(4), cols[4][2])
    assert sorted(x for x in os.listdir(shared) if x != ".lock") == [cid_of(2), cid_of(4)]
    assert c.usage()["disk_bytes"] <= 2 * size


def test_crafted_ids_reach_nothing_outside_the_shared_folder(tmp_path: Path) -> None:
    shared = shared_folder(tmp_path)
    ids, texts, col = small_collection(4)
    store = CollectionStore(shared=shared)
    good = cid_of(0xC0FFEE)
    assert store.put(good, col)
    col.save(tmp_path / "x")  # a collection outside the folder, where "../x" would point
    (tmp_path / "a").mkdir()
    crafted = [
        "../x",
        "a/b",
        ".lock",
        "",
        "0" * 100_000,
        good[:-1] + "\x00",
        good + "\x00",
        f"../shared/{good}",
        f"./{good}",
        "..",
        ".",
        "/" + good[1:],
        good.upper(),
        good[:-1],
        good + "0",
        good + "\n",
        "\u0660" * 16,
        str(tmp_path / "x"),
        "x",
    ]

    def tree() -> dict[str, tuple[int, int]]:
        return {
            str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(tmp_path.rglob("*"))
        }

    before = tree()
    other = CollectionStore(shared=shared)
    for cid in crafted:
        assert store.get(cid) is None and other.get(cid) is None, cid
        with pytest.raises(ValueError, match="not a collection id"):
            store.put(cid, col)
    assert tree() == before  # nothing read into a store, created, touched or removed
    assert other.usage()["in_memory"] == 0
    assert_same(other.get(good), ids, texts, col)


#: Puts the collections ``small_collection(seed)`` of the seeds given into a shared store once
#: the file ``go`` exists; prints what it put, and when, as JSON.
WORKER = """
import json, sys, time
from pathlib import Path
from neardup.server.collections import CollectionStore
from test_server_collections import cid_of, similarities, small_collection

shared, go, max_collections, disk_bytes, *seeds = sys.argv[1:]
store = CollectionStore(max_collections=int(max_collections), disk_bytes=int(disk_bytes),
                        shared=Path(shared))
cols = [(int(s), small_collection(int(s))) for s in seeds]
print("ready", flush=True)
while not Path(go).exists():
    time.sleep(0.001)
log = []
for seed, (ids, texts, col) in cols:
    t0 = time.time_ns()
    ok = store.put(cid_of(seed), col)
    log.append({"cid": cid_of(seed), "ok": ok, "t0": t0, "t1": time.time_ns(), "ids": ids,
                "texts": texts, "summary": col.summary.decode(), "sims": similarities(col)})
print(json.dumps(log))
"""


def put_at_once(
    shared: Path,
    seeds: list[list[int]],
    max_collections: int,
    disk_bytes: int,
    while_putting: Any = None,
) -> list[dict[str, Any]]:
    """Each list of seeds put by a process of its own, the processes starting together;
    ``while_putting()`` is called meanwhile, again and again. What they put."""
    go = shared.parent / "go"
    go.unlink(missing_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "src"), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]
        ),
    }
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                str(shared),
                str(go),
                str(max_collections),
                str(disk_bytes),
                *map(str, s),
            ],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for s in seeds
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        go.touch()
        while while_putting is not None and any(p.poll() is None for p in procs):
            while_putting()
        outs = [p.communicate(timeout=120)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0] * len(procs)
    return [entry for out in outs for entry in json.loads(out)]


def check_shared_folder(
    shared: Path, log: list[dict[str, Any]], max_collections: int, disk_bytes: int
) -> list[str]:
    """The folder within its budgets, no temporary or half-removed folder left, each collection
    whole and as put; the ids kept."""
    names = sorted(os.listdir(shared))
    assert ".lock" in names
    kept = [x for x in names if x != ".lock"]
    assert 1 <= len(kept) <= max_collections
    assert sum(folder_bytes(shared / x) for x in kept) <= disk_bytes
    put = {e["cid"]: e for e in log}
    reader = CollectionStore(shared=shared)
    for cid in kept:  # every one whole (not only named as a collection)
        got = reader.get(cid)
        want = put[cid]
        assert got is not None and got.summary == want["summary"].encode()
        assert [got.id(r) for r in range(len(got))] == want["ids"]
        assert [got.text(r) for r in range(len(got))] == want["texts"]
        assert similarities(got) == want["sims"]
    return kept


def test_processes_putting_at_once_keep_the_shared_folder_within_its_budgets(
    tmp_path: Path,
) -> None:
    shared = shared_folder(tmp_path)
    seeds = [list(range(100, 112)), list(range(200, 212))]
    sizes = []
    (tmp_path / "sizes").mkdir()
    for seed in seeds[0] + seeds[1]:  # on disk
        small_collection(seed)[2].save(tmp_path / "sizes" / str(seed))
        sizes.append(folder_bytes(tmp_path / "sizes" / str(seed)))
    max_collections, disk_bytes = 4, 3 * max(sizes)  # room for 3 on disk, never 4
    assert 4 * min(sizes) > disk_bytes
    log = put_at_once(shared, seeds, max_collections, disk_bytes)
    assert len(log) == 24 and all(e["ok"] for e in log)  # each kept when put
    kept = set(check_shared_folder(shared, log, max_collections, disk_bytes))
    assert len(kept) == 3
    # the most recently used survive: none dropped was put after one kept had been
    for gone in (e for e in log if e["cid"] not in kept):
        for survivor in (e for e in log if e["cid"] in kept):
            assert not survivor["t1"] < gone["t0"], (survivor["cid"], gone["cid"])
    # and with the budget of collections binding: the 2 most recent
    log = put_at_once(shared, [[500, 501, 502], [600, 601, 602]], 2, 10**9)
    kept = set(check_shared_folder(shared, log + log, 2, 10**9))
    assert len(kept) == 2 and kept <= {e["cid"] for e in log}
    for gone in (e for e in log if e["cid"] not in kept):
        for survivor in (e for e in log if e["cid"] in kept):
            assert not survivor["t1"] < gone["t0"], (survivor["cid"], gone["cid"])


def test_gets_while_other_processes_put_and_remove_never_fail(tmp_path: Path) -> None:
    shared = shared_folder(tmp_path)
    max_collections, disk_bytes = 2, 10**9
    reader = CollectionStore(memory_bytes=0, shared=shared)  # loads from the folder each time
    got: list[int] = []
    errors: list[BaseException] = []

    def read_all() -> None:
        for name in os.listdir(shared):
            try:
                col = reader.get(name)
                if col is not None:  # whole: every text readable
                    assert all(col.text(r) for r in range(len(col))) and len(col) == 12
                    got.append(len(col))
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

    threads_read = threading.Thread(target=lambda: [read_all() for _ in range(20)])
    threads_read.start()
    log = put_at_once(
        shared,
        [list(range(300, 315)), list(range(400, 415))],
        max_collections,
        disk_bytes,
        while_putting=read_all,
    )
    threads_read.join()
    assert errors == [] and got
    check_shared_folder(shared, log, max_collections, disk_bytes)


# ---------------------------------------------------------------------------------------------
# The benchmark, tiny


def test_service_memory_benchmark_runs_tiny(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import service_memory
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    code = service_memory.main(
        ["--records", "600", "--distinct", "10", "--uploads", "3", "--results", str(tmp_path)]
    )
    report = json.loads((tmp_path / "service_memory.json").read_text())
    assert code == 0 and report["failed"] == 0
    assert [u["shape"] for u in report["uploads"]] == ["copies", "distinct", "copies"]
    first = report["uploads"][0]
    assert first["documents"] == 600 and first["clusters"] == 10
    assert first["duplicates"] == 590 and first["pair_status"] == 200
    assert 0 < report["peak_rss_mb"] < 1000
    assert report["store"]["collections"] == 3
