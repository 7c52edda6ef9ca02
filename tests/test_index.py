"""neardup.Index: one suite run against every backend (memory, SQLite, a real Redis server),
checked against brute-force Jaccard and against the batch engine."""

from __future__ import annotations

import threading
import time
import uuid

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracles import normalize as ref_normalize

import neardup
from neardup import ConfigError, DuplicateIdError, Index, InputError
from neardup.index import sqlite as sqlite_backend
from neardup.synth import make_corpus

BASE = (
    "the quick brown fox jumps over the lazy dog and then runs far away into the deep "
    "dark forest where nobody can ever find it again because the trees are so tall"
)


def word_shingles(text: str, k: int = 5) -> set[tuple[str, ...]]:
    words = ref_normalize(text).split(" ")
    words = [w for w in words if w]
    if len(words) < k:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + k]) for i in range(len(words) - k + 1)}


def jaccard(a: str, b: str) -> float:
    x, y = word_shingles(a), word_shingles(b)
    return len(x & y) / len(x | y) if x | y else 1.0


@pytest.fixture(params=["memory", "sqlite", "redis"])
def make_index(request, tmp_path):
    """A factory of indexes on one backend; the same target reopens the same index."""
    made: list[Index] = []
    if request.param == "memory":
        storage = neardup.index.MemoryStorage()
        target = storage
    elif request.param == "sqlite":
        target = tmp_path / "idx.db"
    else:
        url = request.getfixturevalue("redis_server")
        target = f"{url}?prefix=t{uuid.uuid4().hex[:12]}"

    def factory(**params):
        idx = Index(target, **params)
        made.append(idx)
        return idx

    factory.kind = request.param
    yield factory
    for idx in made:
        if request.param == "redis":
            idx.storage.drop()
        idx.close()


def test_add_query_remove_get(make_index):
    idx = make_index(threshold=0.5)
    near = BASE.replace("lazy", "sleepy")  # one word of 32: 5 of 28 shingles change
    idx.add("a", BASE)
    idx.add_many([("b", near), ("c", "a text about something else entirely, nothing shared")])
    assert len(idx) == 3 and "a" in idx and "z" not in idx and 5 not in idx
    assert idx.get("b") == near
    got = idx.query(BASE, threshold=0.5)
    assert [m.id for m in got] == ["a", "b"]
    assert got[0].similarity == 1.0
    assert got[1].similarity == pytest.approx(jaccard(BASE, near), abs=1e-6)
    assert list(got[1]) == ["b", got[1].similarity]  # unpacks as (id, similarity)
    assert idx.query(BASE, threshold=0.5, top_k=1) == got[:1]
    assert idx.query(BASE, threshold=0.8) == got[:1]  # 0.70 is not a near-duplicate at 0.8
    assert [m.id for m in idx.query_id("a", threshold=0.5)] == ["b"]
    assert idx.remove("a") is True and idx.remove("a") is False
    assert len(idx) == 2 and "a" not in idx
    assert [m.id for m in idx.query(BASE, threshold=0.5)] == ["b"]
    with pytest.raises(KeyError):
        idx.get("a")
    assert sorted(idx.ids()) == ["b", "c"]


def test_duplicate_ids_and_atomic_batches(make_index):
    idx = make_index()
    idx.add("a", BASE)
    with pytest.raises(DuplicateIdError, match="'a'"):
        idx.add("a", "other")
    # a batch naming a present id is stored not at all
    with pytest.raises(DuplicateIdError):
        idx.add_many([("x", "new one"), ("a", "again")])
    with pytest.raises(DuplicateIdError, match="repeats within one batch"):
        idx.add_many([("y", "new"), ("y", "twice in one batch")])
    with pytest.raises(DuplicateIdError, match="already in the index"):
        idx.check_and_add("a", "an unrelated text that matches nothing at all here")
    with pytest.raises(InputError, match="not valid Unicode"):
        idx.add("s", "lone \ud800 surrogate")
    assert len(idx) == 1 and "x" not in idx and "y" not in idx
    for bad in ("", None, 3.0, True):
        with pytest.raises(InputError):
            idx.add(bad, "text")
    with pytest.raises(InputError, match="not str"):
        idx.add("q", b"bytes")
    for bad in (0, 1.5, -1, "high", True):
        with pytest.raises(ConfigError, match="threshold"):
            idx.query(BASE, threshold=bad)
    with pytest.raises(ConfigError, match="top_k"):
        idx.query(BASE, top_k=0)


def test_check_and_add_stream(make_index):
    idx = make_index(threshold=0.6)
    assert idx.check_and_add("a", BASE) == []
    dup = idx.check_and_add("b", BASE.replace("lazy", "sleepy"))
    assert [m.id for m in dup] == ["a"] and "b" not in idx
    assert idx.check_and_add("c", "something else entirely with other words") == []
    assert len(idx) == 2
    empty = idx.check_and_add("e", "")
    assert empty == [] and "e" in idx and idx.query("") == []  # empty texts match nothing


def test_parameters_are_stored_and_checked(make_index):
    idx = make_index(threshold=0.7, shingle="char:4", num_perm=64)
    idx.add("a", BASE)
    b, r = idx.bands, idx.rows
    again = make_index()  # opened without parameters: the stored ones
    assert (again.bands, again.rows, again.threshold) == (b, r, 0.7)
    assert str(again.config.shingle) == "char:4" and again.config.sketch.num_perm == 64
    assert [m.id for m in again.query(BASE)] == ["a"]
    with pytest.raises(ConfigError, match=r"shingle.*word:5.*open it without parameters"):
        make_index(threshold=0.7, shingle="word:5", num_perm=64)
    with pytest.raises(ConfigError, match=r"lsh.threshold: index has 0.7, asked for 0.9"):
        make_index(threshold=0.9, shingle="char:4", num_perm=64)
    same = make_index(threshold=0.7, shingle="char:4", num_perm=64)
    assert len(same) == 1


def test_queries_agree_with_brute_force(make_index):
    texts, _ = make_corpus(
        120, dup_fraction=0.5, seed=3, words=(40, 80), kinds=("edit", "paragraph", "header_footer")
    )
    ids = [f"d{i}" for i in range(len(texts))]
    # 32 bands of 2 rows: recall at Jaccard 0.5 is 1 - (1 - 0.25)**32 > 0.9999
    idx = make_index(threshold=0.5, bands=32, rows=2, num_perm=64)
    idx.add_many(zip(ids, texts), batch_size=37)
    assert len(idx) == len(texts)
    for i in range(0, len(texts), 7):
        got = {m.id: m.similarity for m in idx.query(texts[i])}
        want = {ids[j]: jaccard(texts[i], texts[j]) for j in range(len(texts))}
        want = {k: v for k, v in want.items() if v >= 0.5}
        assert set(got) == set(want)
        for k, v in got.items():
            assert v == pytest.approx(want[k], abs=1e-6)
        sims = list(got.values())
        assert sims == sorted(sims, reverse=True)


def test_concurrent_check_and_add_admits_one_of_each_group(make_index):
    idx = make_index(threshold=0.8)
    groups = [
        f"{BASE} group number {g} " + " ".join(f"w{g}x{j}" for j in range(20)) for g in range(6)
    ]
    results: dict[str, list] = {}
    lock = threading.Lock()

    def worker(t: int):
        for g in range(6):
            doc_id = f"t{t}g{g}"
            got = idx.check_and_add(doc_id, groups[g] + f" copy {t}")
            with lock:
                results[doc_id] = got

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(idx) == 6  # exactly one copy of each group got in
    for g in range(6):
        admitted = [f"t{t}g{g}" for t in range(4) if not results[f"t{t}g{g}"]]
        assert len(admitted) == 1 and admitted[0] in idx


def test_index_finds_the_batch_engines_pairs(make_index):
    texts, _ = make_corpus(
        300, dup_fraction=0.6, seed=11, words=(50, 120), kinds=("edit",), max_edit_rate=0.08
    )
    # the batch engine pairs exact copies by fingerprint and only their first one by Jaccard
    texts = list(dict.fromkeys(texts))
    ids = [f"n{i}" for i in range(len(texts))]
    result = neardup.dedup(texts, ids, threshold=0.7)
    batch = {
        (ids[a], ids[b]) for a, b in zip(result.pairs.left.tolist(), result.pairs.right.tolist())
    }
    idx = make_index(threshold=0.7)
    idx.add_many(zip(ids, texts))
    online = set()
    for doc_id in ids:
        for m in idx.query_id(doc_id):
            online.add(tuple(sorted((doc_id, m.id), key=ids.index)))
    assert online == batch and len(batch) > 50


@given(st.lists(st.text(alphabet="ab cd", min_size=0, max_size=40), min_size=1, max_size=12))
def test_memory_index_matches_brute_force_on_random_texts(texts):
    idx = Index(threshold=0.5, bands=32, rows=2, num_perm=64)
    idx.add_many((str(i), t) for i, t in enumerate(texts))
    for t in texts:
        got = {m.id for m in idx.query(t)}
        sets = [word_shingles(x) for x in texts]
        q = word_shingles(t)
        want = {str(j) for j, s in enumerate(sets) if q and s and len(q & s) / len(q | s) >= 0.5}
        assert got == want


def test_sqlite_file_is_wal_and_checks(tmp_path):
    import sqlite3

    path = tmp_path / "x.db"
    with Index(path) as idx:
        idx.add_many((f"{i}", f"{BASE} {i}") for i in range(50))
        idx.remove("7")
        assert idx.storage.check() == {
            "integrity": "ok",
            "documents": 49,
            "counted": 49,
            "orphan_keys": 0,
            "missing_keys": 0,
        }
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    notdb = tmp_path / "not.db"
    notdb.write_text("hello, this is not a database" * 100)
    with pytest.raises(neardup.OutputError, match="not.db"):
        Index(notdb)
    with pytest.raises(neardup.OutputError, match="does not exist"):
        Index(tmp_path / "missing" / "x.db")


def test_sqlite_log_is_started_again_while_readers_never_pause(tmp_path, monkeypatch):
    """Readers that follow each other without a pause (a service under load) keep SQLite's
    own checkpoints from starting the write-ahead log again: it grew by every write. The
    writer now empties it once it holds WAL_RESET_BYTES, and every write stays readable."""
    import os

    monkeypatch.setattr(sqlite_backend, "WAL_RESET_BYTES", 64 << 10)
    path = tmp_path / "busy.db"
    texts = [" ".join(f"w{(i * 7919 + j * 31) % 5000}" for j in range(120)) for i in range(1200)]
    with Index(path, passages=True) as idx:
        stop = threading.Event()
        reads = [0]

        def reader() -> None:
            while not stop.is_set():
                idx.query(texts[reads[0] % len(texts)])
                reads[0] += 1

        threads = [threading.Thread(target=reader) for _ in range(3)]
        for t in threads:
            t.start()
        largest = 0
        try:
            for b in range(0, len(texts), 20):
                idx.add_many((str(i), texts[i]) for i in range(b, b + 20))
                largest = max(largest, os.stat(f"{path}-wal").st_size)
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert reads[0] > 10  # the readers did overlap the writes
        # the writes went well past the reset size (without the reset, the log grew to 13 MB
        # beside this 2 MB file) ...
        assert os.stat(path).st_size > 16 * (64 << 10)
        # ... and the log never held more than a few writes (a start missed while a reader
        # stayed over the writer's short wait is made up by the next write)
        assert largest < 16 * (64 << 10)
        assert len(idx) == len(texts)
        for i in (0, 599, 1199):
            assert tuple(idx.query(texts[i])[0]) == (str(i), 1.0)
        assert idx.storage.check()["integrity"] == "ok"


def test_sqlite_key_segments_answer_as_memory_does(tmp_path):
    """Keys written out as segments every 17 texts, merged four of a size at a time, removed
    texts left out and their segments rewritten: the answers are those of an index in
    memory, every key of every text is in its segment, and reopening reads them again."""
    texts, _ = make_corpus(150, dup_fraction=0.5, seed=8, words=(40, 80), kinds=("edit",))
    ids = [f"d{i}" for i in range(len(texts))]
    small = Index(
        tmp_path / "small.db",
        storage_options={"flush_docs": 17, "merges": "inline"},
        threshold=0.6,
        passages=True,
    )
    one = Index(threshold=0.6, passages=True)
    for idx in (small, one):
        idx.add_many(zip(ids, texts), batch_size=40)
        idx.remove_many(ids[::9])
    st = small.storage
    view = st._keys()
    # written out at 40, 80, 120 and 150 texts, the four then merged into one
    assert view.covered == 150 and not view.tail
    assert [(s.lo, s.hi) for s in view.segments] == [(1, 150)]
    for t in texts[::5]:
        assert small.query(t) == one.query(t)
        assert small.check(t).reused == one.check(t).reused
    assert st.check() == {
        "integrity": "ok",
        "documents": len(one),
        "counted": len(one),
        "orphan_keys": 0,
        "missing_keys": 0,
    }
    files = sorted(p.name for p in (tmp_path / "small.db-keys").iterdir())
    assert files == sorted(f"{s.name}{x}" for s in view.segments for x in (".k", ".h", ".f"))
    small.close()
    again = Index(tmp_path / "small.db")
    assert again.query(texts[1]) == one.query(texts[1])
    again.close()


def test_sqlite_segments_merge_and_forget_removed_texts(tmp_path):
    """Added 10 at a time, written out every 8 texts: four segments of a size become one,
    and so on up (the segments stay few), removals are rewritten out of their segment once a
    quarter of it is gone, and the answers are those of an index in memory at every step."""
    texts, _ = make_corpus(260, dup_fraction=0.5, seed=3, words=(40, 80), kinds=("edit",))
    ids = [f"d{i}" for i in range(len(texts))]
    disk = Index(
        tmp_path / "r.db",
        storage_options={"flush_docs": 8, "merges": "inline"},
        threshold=0.6,
        passages=True,
    )
    mem = Index(threshold=0.6, passages=True)
    st = disk.storage
    most = 0
    for b in range(0, len(texts), 10):
        part = list(zip(ids[b : b + 10], texts[b : b + 10]))
        for idx in (disk, mem):
            idx.add_many(part)
            idx.remove_many(ids[b : b + 10 : 7])
        view = st._keys()
        most = max(most, len(view.segments))
        spans = [(s.lo, s.hi) for s in view.segments]
        assert all(a[1] + 1 == b[0] for a, b in zip(spans, spans[1:]))  # adjacent, in order
        assert spans[0][0] == 1 and spans[-1][1] == view.covered
        for t in texts[max(0, b - 40) : b + 10 : 6]:
            assert disk.query(t) == mem.query(t)
            assert disk.check(t).reused == mem.check(t).reused
    levels = [s.level(8) for s in st._keys().segments]
    assert max(levels) == 2 and most <= 9, levels  # 260 texts: 8 * 4 * 4 = 128 a level 2
    # a quarter of the first segment gone: it is written again without them
    first = st._keys().segments[0]
    held = [i for i in ids[: first.hi] if i in disk]
    for idx in (disk, mem):
        idx.remove_many(held[: len(held) // 3])
    disk.add_many(zip(["n0"], ["a new text of its own " * 3]))
    mem.add_many(zip(["n0"], ["a new text of its own " * 3]))
    for idx in (disk, mem):  # the tail written out now, and the segments looked at
        idx.add_many((f"x{i}", f"filler text number {i} " * 4) for i in range(8))
    view = st._keys()
    assert view.segments[0].name != first.name and view.segments[0].lo == first.lo
    assert not np.isin(view.gone, np.arange(first.lo, first.hi + 1)).any()
    assert st.check()["orphan_keys"] == 0 and st.check()["missing_keys"] == 0
    for t in texts[:60:4]:
        assert disk.query(t) == mem.query(t)
    disk.close()


def test_list_ids_pages_in_code_point_order(make_index):
    idx = make_index()
    ids = ["b", "a", "é", "a2", "Z", "日本", "a10", "z"]
    idx.add_many((i, f"text of {i}") for i in ids)
    pages, after = [], None
    while True:
        page = idx.list_ids(after, limit=3)
        pages.append(page)
        if len(page) < 3:
            break
        after = page[-1]
    assert [x for p in pages for x in p] == sorted(ids)
    idx.remove("a2")
    assert idx.list_ids("a", limit=2) == ["a10", "b"]
    with pytest.raises(ConfigError, match="limit"):
        idx.list_ids(limit=0)


def test_texts_are_stored_compressed(tmp_path):
    import sqlite3

    import zstandard

    text = " ".join(f"word{i % 50}" for i in range(2000))
    with Index(tmp_path / "z.db") as idx:
        idx.add("a", text)
        assert idx.get("a") == text and idx.get_texts(["a", "zz"]) == {"a": text}
        assert idx.stats()["store_text"] is True
    blob = sqlite3.connect(tmp_path / "z.db").execute("SELECT text FROM texts").fetchone()[0]
    assert isinstance(blob, bytes) and len(blob) < len(text) / 5
    assert zstandard.ZstdDecompressor().decompress(blob).decode() == text
    # an index whose parameters name no codec keeps its texts as they are
    legacy = Index()
    legacy.text_codec = None
    legacy.add("p", "plain text here")
    assert (
        legacy.storage.get("p")["text"] == "plain text here"
        and legacy.get("p") == "plain text here"
    )


# -- opening an existing index only; a file that goes away; a full database -------------------


def test_create_false_opens_an_existing_index_only(tmp_path, redis_server):
    import sqlite3

    from neardup.index import IndexNotFoundError

    missing = tmp_path / "missing.db"
    with pytest.raises(IndexNotFoundError, match="no such index file"):
        Index(missing, create=False)
    assert not missing.exists()
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(IndexNotFoundError, match="holds no neardup index"):
        Index(other, create=False)
    assert [r[0] for r in sqlite3.connect(other).execute("SELECT name FROM sqlite_master")] == [
        "t"
    ]  # left as it was
    Index(tmp_path / "ix.db").close()
    Index(tmp_path / "ix.db", create=False).close()
    url = f"{redis_server}?prefix=none{uuid.uuid4().hex[:8]}"
    with pytest.raises(IndexNotFoundError, match="lost its data.*appendonly yes"):
        Index(url, create=False)
    import redis

    assert redis.Redis.from_url(redis_server).keys(url.rsplit("=", 1)[1] + ":*") == []


def test_a_deleted_file_is_never_recreated_nor_written(tmp_path):
    from neardup.index import IndexChangedError

    path = tmp_path / "ix.db"
    ix = Index(path)
    ix.add("a", "one two three four")
    path.unlink()
    errors = []

    def use() -> None:  # a thread that had no connection yet
        try:
            ix.add("b", "five six seven eight")
        except IndexChangedError as e:
            errors.append(str(e))

    t = threading.Thread(target=use)
    t.start()
    t.join()
    assert errors and "was deleted or moved away" in errors[0]
    with pytest.raises(IndexChangedError):
        ix.add("c", "nine ten eleven twelve")  # a thread with a connection
    with pytest.raises(IndexChangedError):
        ix.query("one two three four")
    assert not path.exists()
    ix.close()


def test_a_full_database_is_an_index_full_error_and_nothing_of_the_batch_is_kept(tmp_path):
    from neardup.index import IndexFullError

    ix = Index(tmp_path / "ix.db", storage_options={"max_bytes": 100 * 1024})
    big = " ".join(f"w{k}" for k in range(3000))
    added = 0
    with pytest.raises(IndexFullError, match="no room for this write"):
        for i in range(100):
            ix.add_many([(f"{i}-{j}", f"{i} {j} {big}") for j in range(3)])
            added += 3
    assert added and len(ix) == added and ix.storage.check()["orphan_keys"] == 0
    assert not ix.storage._conn().in_transaction  # the write lock is free again
    ix.remove("0-0")
    ix.add("small", "a short text")
    ix.close()


def test_a_redis_password_apart_from_the_url(redis_with_password):
    from conftest import REDIS_PASSWORD

    from neardup.errors import ConfigError, OutputError

    plain = redis_with_password.replace(f":{REDIS_PASSWORD}@", "") + "?prefix=pwlib"
    with pytest.raises(OutputError) as e:
        Index(plain)
    assert REDIS_PASSWORD not in str(e.value)
    with Index(plain, storage_options={"password": REDIS_PASSWORD}) as ix:
        ix.add("a", "one two three")
        assert len(ix) == 1
        ix.storage.drop()
    with pytest.raises(ConfigError, match="given twice"):
        Index(redis_with_password, storage_options={"password": REDIS_PASSWORD})


def test_a_redis_batch_answered_late_is_reported_done(redis_server):
    """A batch script runs to its end once Redis starts it, so its client must wait for the
    answer: with the driver's default 5 s socket timeout, a batch Redis answered after 7 s
    (its writes paused by another client, as a busy or loaded server delays them) was
    reported as failed although it was in the index."""
    import redis as redis_client

    prefix = f"late{uuid.uuid4().hex[:8]}"
    idx = Index(f"{redis_server}?prefix={prefix}")
    other = redis_client.Redis.from_url(redis_server)
    try:
        other.execute_command("CLIENT", "PAUSE", 7000, "WRITE")
        t = time.monotonic()
        assert idx.add_many([("a", BASE), ("b", BASE + " and more words here")]) == 2
        assert time.monotonic() - t > 5  # it was answered late, and waited for
        assert len(idx) == 2 and idx.get("a") == BASE
    finally:
        other.execute_command("CLIENT", "UNPAUSE")
        other.close()
        idx.storage.drop()
        idx.close()


def test_a_redis_batch_raced_by_another_client_leaves_nothing(redis_server):
    """A batch's documents and band keys are staged a few documents per script, invisible to
    readers, and its ids named at once: another client that adds one of its ids in between
    makes the batch a DuplicateIdError, with its staged documents and band keys taken back
    and nothing of it stored."""
    import redis as redis_client

    prefix = f"race{uuid.uuid4().hex[:8]}"
    target = f"{redis_server}?prefix={prefix}"
    a, b = Index(target), Index(target)
    texts = [f"{BASE} number {i} " + " ".join(f"w{i}x{k}" for k in range(20)) for i in range(80)]
    real_commit = a.storage._commit
    seen = []

    def race_then_commit(args):  # the other client adds "d40" when the batch is staged
        # staged (stored under its handle), not yet visible: not found, not present, not
        # counted
        seen.append((b.storage.r.exists(f"{prefix}:d:1"), b.query(texts[0]), "d0" in b, len(b)))
        b.add("d40", "the other client's own text about something else entirely")
        return real_commit(args=args)

    a.storage._commit = lambda args: race_then_commit(args)
    try:
        with pytest.raises(DuplicateIdError, match="d40"):
            a.add_many([(f"d{i}", t) for i, t in enumerate(texts)], batch_size=80)
        assert seen == [(1, [], False, 0)]
        assert len(a) == 1 and a.get("d40").startswith("the other client's")
        r = redis_client.Redis.from_url(redis_server)
        mine = {str(h).encode() for h in range(1, 81)}  # the batch's handles (the other: 81)
        assert r.hget(f"{prefix}:ids", "d40") == b"81"
        for key in r.scan_iter(match=f"{prefix}:b:*", count=1000):
            assert not (r.smembers(key) & mine), key  # every band key taken back
        staged = {k.rsplit(b":", 1)[1] for k in r.scan_iter(match=f"{prefix}:d:*")}
        assert staged == {b"81"}  # every staged document taken back
        assert a.query(texts[3]) == [] and a.query(texts[40]) == []
        r.close()
    finally:
        a.storage.drop()
        a.close()
        b.close()


def test_a_redis_removal_takes_every_band_key_back(redis_server):
    """Removed documents are gone at once; their band keys are taken back a few documents a
    script: none is left pointing at a removed document, and answers are those of an index
    in memory."""
    import redis as redis_client

    prefix = f"rm{uuid.uuid4().hex[:8]}"
    idx, mem = Index(f"{redis_server}?prefix={prefix}", passages=True), Index(passages=True)
    texts = [
        f"{BASE} number {i} " + " ".join(f"w{i % 7}x{k}" for k in range(30)) for i in range(100)
    ]
    r = redis_client.Redis.from_url(redis_server)
    try:
        for ix in (idx, mem):
            ix.add_many([(f"d{i}", t) for i, t in enumerate(texts)])
        handles = {r.hget(f"{prefix}:ids", f"d{i}") for i in range(0, 100, 3)}
        gone = [f"d{i}" for i in range(0, 100, 3)] + ["never-there"]
        assert idx.remove_many(gone) == mem.remove_many(gone) == 34
        assert len(idx) == len(mem) == 66
        left = set()
        for key in r.scan_iter(match=f"{prefix}:b:*", count=1000):
            left |= r.smembers(key) & handles
        assert not left
        for t in texts[::9]:
            assert idx.query(t) == mem.query(t)
            assert idx.check(t).reused == mem.check(t).reused
    finally:
        r.close()
        idx.storage.drop()
        idx.close()


@pytest.mark.parametrize("n_keys", [0, 1, 7, 8, 9, 255, 256, 257, 700])
def test_sqlite_probes_of_any_size_answer_as_the_memory_backend(tmp_path, n_keys):
    """The SQLite backend probes keys and reads handles in statements of a few padded sizes
    (padding that matches nothing): for any number of keys and handles, across the padding
    and chunk boundaries, it answers as the in-memory backend does."""
    from neardup.index.storage import StoredDoc

    rng = np.random.default_rng(n_keys)
    pool = rng.integers(1, 2**63, 900, dtype=np.int64).astype(np.uint64)
    docs = [
        StoredDoc(
            id=f"d{i:04d}",
            text=f"text {i}",
            shingles=np.arange(3, dtype=np.uint32),
            keys=np.unique(rng.choice(pool, int(rng.integers(1, 6)))),
        )
        for i in range(600)
    ]
    mem, lite = neardup.index.MemoryStorage(), sqlite_backend.SQLiteStorage(tmp_path / "p.db")
    for s in (mem, lite):
        s.insert(docs)
    keys = np.unique(rng.choice(pool, n_keys, replace=False)) if n_keys else pool[:0]

    def ids(storage, handles):  # handles are each backend's own: compare the ids
        return [i for i, _ in storage.shingles(list(handles))]

    for cap in (1, 3, 500):
        pm, hm = mem.holders(keys, cap)
        pl, hl = lite.holders(keys, cap)
        assert sorted(zip(pm.tolist(), ids(mem, hm))) == sorted(zip(pl.tolist(), ids(lite, hl)))
        assert sorted(ids(mem, mem.candidates(keys, cap))) == sorted(
            ids(lite, lite.candidates(keys, cap))
        )
        # counted without reading the holders: as many as hold the key, up to cap
        want = [min(sum(int(k) in d.keys.tolist() for d in docs), cap) for k in keys]
        assert mem.holder_counts(keys, cap).tolist() == want
        assert lite.holder_counts(keys, cap).tolist() == want
    # every handle, many of them (across the chunks of a read), in a given order; an unknown
    # one left out
    order = rng.permutation(600)
    wanted = [f"d{i:04d}" for i in order]
    by_id = {i: h for h, i in zip(range(1, 10**6), ids(lite, range(1, 601)))}
    handles = [by_id[i] for i in wanted] + [10**9]
    assert [i for i, _ in lite.texts_of(handles)] == wanted
    assert ids(lite, handles) == wanted
    assert dict(lite.texts_of(handles)) == {f"d{i:04d}": f"text {i}" for i in range(600)}
    lite.close()
