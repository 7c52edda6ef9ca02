"""Sorted key segments (neardup.index.keystore) against plain-Python oracles, and the SQLite
index's segments across processes, lost files, rolled-back writes and files of earlier
versions."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.index import Index, keystore
from neardup.index import segments as segments_backend
from neardup.index import sqlite as sqlite_backend
from neardup.synth import make_corpus

ROOT = Path(__file__).resolve().parents[1]


def oracle(
    pairs: list[tuple[int, int]], q: list[int], cap: int, gone: set[int]
) -> list[tuple[int, int]]:
    """(position in q, handle) of the cap lowest live handles of each key."""
    out = []
    for j, k in enumerate(q):
        hs = sorted({h for kk, h in pairs if kk == k and h not in gone})
        out += [(j, h) for h in hs[:cap]]
    return out


pair_lists = st.lists(st.tuples(st.integers(0, 12), st.integers(100, 160)), max_size=120)


@settings(max_examples=150, deadline=None)
@given(
    pairs=pair_lists,
    q=st.lists(st.integers(0, 14), unique=True, max_size=10),
    cap=st.integers(1, 6),
    gone=st.sets(st.integers(100, 160), max_size=40),
)
def test_probe_equals_the_oracle(pairs, q, cap, gone):
    keys = np.array([k for k, _ in pairs], np.uint64)
    handles = np.array([h for _, h in pairs], np.int64)
    keys, handles = keystore.sort_pairs(keys, handles)
    run = keystore.Run(keys, (handles - 100).astype(np.uint32), 100)
    pos, got = keystore.probe(run, np.array(q, np.uint64), cap, np.array(sorted(gone), np.int64))
    assert sorted(zip(pos.tolist(), got.tolist())) == oracle(pairs, q, cap, gone)


@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(pair_lists, min_size=1, max_size=5),
    gone=st.sets(st.integers(0, 900)),
    block=st.integers(1, 7),
)
def test_merge_equals_sorting_everything(tmp_path_factory, parts, gone, block):
    """Adjacent segments merged in blocks of any size give every pair of theirs but the gone
    ones, sorted by (key, handle), once."""
    folder = tmp_path_factory.mktemp("seg")
    was, keystore.MERGE_BLOCK = keystore.MERGE_BLOCK, block
    fence, keystore.FENCE = keystore.FENCE, 3
    try:
        _merge_check(folder, parts, gone)
    finally:
        keystore.MERGE_BLOCK, keystore.FENCE = was, fence


def _merge_check(folder, parts, gone):
    segs, every = [], set()
    for i, pairs in enumerate(parts):
        lo = 200 * i  # handles 100..160 of each part shifted into its own range
        keys = np.array([k for k, _ in pairs], np.uint64)
        handles = np.array([lo + h - 100 for _, h in pairs], np.int64)
        every |= {(int(k), int(h)) for k, h in zip(keys, handles)}
        keys, handles = keystore.sort_pairs(keys, handles)
        name = keystore.write_segment(folder, lo, lo + 199, keys, handles)
        segs.append(keystore.open_segment(folder, name, lo, lo + 199, 1, len(keys)))
    g = np.array(sorted(gone), np.int64)
    out = keystore.merge_segments(folder, segs, g)
    got = list(
        zip(
            np.asarray(out.run.keys).tolist(),
            (np.asarray(out.run.handles, np.int64) + out.lo).tolist(),
        )
    )
    assert got == sorted((k, h) for k, h in every if h not in gone)
    if len(got) > 3:  # its fence, written block by block: every third key
        assert np.asarray(out.run.fence).tolist() == [k for k, _ in got][::3]
    assert (out.lo, out.hi) == (0, 200 * len(parts) - 1)


def test_open_segment_refuses_a_file_cut_short(tmp_path):
    keys, handles = keystore.sort_pairs(np.arange(10, dtype=np.uint64), np.arange(10) + 5)
    name = keystore.write_segment(tmp_path, 5, 14, keys, handles)
    assert len(keystore.open_segment(tmp_path, name, 5, 14, 10, 10).run) == 10
    with open(tmp_path / f"{name}.k", "r+b") as f:
        f.truncate(40)
    with pytest.raises(FileNotFoundError):
        keystore.open_segment(tmp_path, name, 5, 14, 10, 10)


def _corpus(n: int = 120):
    texts, _ = make_corpus(n, dup_fraction=0.5, seed=11, words=(40, 80), kinds=("edit",))
    return [f"d{i}" for i in range(len(texts))], texts


def test_lost_segments_are_built_again_from_the_file(tmp_path, caplog):
    ids, texts = _corpus()
    path = tmp_path / "ix.db"
    mem = Index(threshold=0.6, passages=True)
    mem.add_many(zip(ids, texts))
    with Index(path, threshold=0.6, passages=True, storage_options={"flush_docs": 30}) as ix:
        ix.add_many(zip(ids, texts), batch_size=25)
        names = [s.name for s in ix.storage._keys().segments]
    assert names
    for p in (tmp_path / "ix.db-keys").iterdir():  # the folder lost (copied without it)
        p.unlink()
    (tmp_path / "ix.db-keys").rmdir()
    with caplog.at_level("WARNING"), Index(path) as ix:
        assert "building it again" in caplog.text
        for t in texts[::7]:
            assert ix.query(t) == mem.query(t)
            assert ix.check(t).reused == mem.check(t).reused
        assert ix.storage.check()["missing_keys"] == 0


def test_a_write_rolled_back_leaves_no_segment_behind(tmp_path):
    ids, texts = _corpus(60)
    with Index(tmp_path / "ix.db", threshold=0.6, storage_options={"flush_docs": 10}) as ix:
        ix.add_many(zip(ids[:5], texts[:5]))
        before = (
            sorted(p.name for p in (tmp_path / "ix.db-keys").glob("*"))
            if (tmp_path / "ix.db-keys").exists()
            else []
        )
        with pytest.raises(Exception, match="already in the index"):
            # 54 new texts (a segment written out) and then an id that is there
            ix.add_many(zip(ids[5:59] + ids[:1], texts[5:59] + texts[:1]), batch_size=100)
        after = sorted(p.name for p in (tmp_path / "ix.db-keys").glob("*"))
        assert after == before and len(ix) == 5
        assert ix.storage.check()["missing_keys"] == 0
        assert ix.query(texts[3])[0].id == "d3"


def test_a_file_of_an_earlier_version_gets_its_segments_once(tmp_path, caplog):
    """An index whose band keys are in bands_* tables (as earlier versions wrote them) is
    opened: the tables are dropped, segments built from the texts, answers unchanged."""
    ids, texts = _corpus()
    path = tmp_path / "old.db"
    mem = Index(threshold=0.6, passages=True)
    mem.add_many(zip(ids, texts))
    with Index(path, threshold=0.6, passages=True) as ix:
        ix.add_many(zip(ids, texts))
    # made into what an earlier version wrote: keys in band tables, no segments
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE bands_0 (key INTEGER NOT NULL, handle INTEGER NOT NULL, "
        "PRIMARY KEY (key, handle)) WITHOUT ROWID"
    )
    for h, blob in conn.execute("SELECT handle, keys FROM docs").fetchall():
        keys = np.unique(np.frombuffer(blob, "<u8")).view(np.int64).tolist()
        conn.executemany("INSERT INTO bands_0 VALUES (?, ?)", [(k, h) for k in keys])
    conn.execute("DROP TABLE segments")
    conn.execute("DROP TABLE gone")
    conn.execute("DELETE FROM counts WHERE name IN ('next_handle', 'covered', 'keys_version')")
    conn.execute("INSERT INTO counts VALUES ('part_docs', 131072)")
    conn.commit()
    conn.close()
    assert not (tmp_path / "old.db-keys").exists()  # fewer texts than a segment holds
    with caplog.at_level("INFO"), Index(path) as ix:
        assert "earlier version" in caplog.text
        tables = [
            r[0]
            for r in ix.storage._conn().execute(
                "SELECT name FROM sqlite_master WHERE name GLOB 'bands_*'"
            )
        ]
        assert tables == [] and ix.storage._keys().covered == len(ids)
        for t in texts[::5]:
            assert ix.query(t) == mem.query(t)
        assert ix.storage.check()["missing_keys"] == 0
        ix.add_many([("new", texts[0] + " and more")])
        assert ix.query(texts[0])[0].id in {"d0", "new"}


def test_another_process_sees_each_write_and_merge(tmp_path):
    """One process writes (segments written out and merged as it goes); this one reads the
    same file after each of its batches: every answer is that of an index in memory."""
    ids, texts = _corpus(200)
    path = tmp_path / "ix.db"
    Index(path, threshold=0.6, storage_options={"flush_docs": 8}).close()
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent("""
            import sys
            from neardup.index import Index
            from neardup.synth import make_corpus
            texts, _ = make_corpus(200, dup_fraction=0.5, seed=11, words=(40, 80),
                                   kinds=("edit",))
            ix = Index(sys.argv[1], storage_options={"flush_docs": 8})
            for b in range(0, 200, 20):
                ix.add_many((f"d{i}", texts[i]) for i in range(b, b + 20))
                ix.remove_many([f"d{b + 3}"])
                print(b + 20, flush=True)
                sys.stdin.readline()
            """),
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT / "src")},
    )
    reader = Index(path, storage_options={"flush_docs": 8})
    mem = Index(threshold=0.6)
    try:
        for b in range(0, 200, 20):
            assert writer.stdout.readline().strip() == str(b + 20)
            mem.add_many((ids[i], texts[i]) for i in range(b, b + 20))
            mem.remove_many([ids[b + 3]])
            for t in texts[: b + 20 : 9]:
                assert reader.query(t) == mem.query(t), b
            writer.stdin.write("\n")
            writer.stdin.flush()
        assert writer.wait(60) == 0
        assert reader.storage.check()["orphan_keys"] == 0
        assert len(reader.storage._keys().segments) <= 6
    finally:
        writer.kill()
        reader.close()


def test_flush_docs_is_checked(tmp_path):
    with pytest.raises(Exception, match="flush_docs"):
        sqlite_backend.SQLiteStorage(tmp_path / "x.db", flush_docs=0)


def test_background_merges_answer_as_memory_does_while_they_run(tmp_path):
    """Merges made by a thread while the texts keep coming (and going): every answer on the
    way is that of an index in memory; once they are done the segments are adjacent, cover
    every text written out, and are few."""
    ids, texts = _corpus(240)
    disk = Index(tmp_path / "a.db", threshold=0.6, storage_options={"flush_docs": 8})
    mem = Index(threshold=0.6)
    st = disk.storage
    for b in range(0, 240, 10):
        for ix in (disk, mem):
            ix.add_many(zip(ids[b : b + 10], texts[b : b + 10]))
            ix.remove_many(ids[b : b + 10 : 6])
        for t in texts[: b + 10 : 9]:
            assert disk.query(t) == mem.query(t), b
    st.wait_merges()
    view = st._keys()
    spans = [(s.lo, s.hi) for s in view.segments]
    assert spans[0][0] == 1 and spans[-1][1] == view.covered
    assert all(x[1] + 1 == y[0] for x, y in zip(spans, spans[1:]))
    levels = [s.level(8) for s in view.segments]
    assert all(levels.count(v) < 4 for v in set(levels)) and len(spans) <= 6, levels
    assert st.check()["orphan_keys"] == 0 and st.check()["missing_keys"] == 0
    for t in texts[::7]:
        assert disk.query(t) == mem.query(t)
    disk.close()
    assert sorted(p.name.split(".")[0] for p in (tmp_path / "a.db-keys").iterdir()) == sorted(
        3 * [s.name for s in view.segments]
    )


@settings(max_examples=150, deadline=None)
@given(
    keys=st.lists(st.integers(0, 40), max_size=300),
    q=st.lists(st.integers(0, 45), max_size=30),
    fence=st.integers(1, 9),
)
def test_bounds_through_the_fence_equal_a_binary_search(tmp_path_factory, keys, q, fence):
    """A memory-mapped segment found through its fence (every fence-th key in memory, of any
    spacing; runs of one key longer than a block) gives the bounds of a plain binary search."""
    was, keystore.FENCE = keystore.FENCE, fence
    keys_were, keystore.FENCE_KEYS = keystore.FENCE_KEYS, (1, 1024)
    try:
        k = np.sort(np.array(keys, np.uint64))
        h = np.arange(len(k), dtype=np.int64)
        folder = tmp_path_factory.mktemp("fence")
        name = keystore.write_segment(folder, 0, max(len(k), 1), k, h)
        seg = keystore.open_segment(folder, name, 0, max(len(k), 1), len(k), len(k))
        qa = np.array(q, np.uint64)
        if len(k) > fence:  # the fence written with the segment: every fence-th key
            assert np.asarray(seg.run.fence).tolist() == k[::fence].tolist()
        lo, n = seg.run.bounds(qa)
        want_lo = np.searchsorted(k, qa, "left")
        assert lo.tolist() == want_lo.tolist()
        assert n.tolist() == (np.searchsorted(k, qa, "right") - want_lo).tolist()
    finally:
        keystore.FENCE, keystore.FENCE_KEYS = was, keys_were


def test_the_tail_is_read_from_the_writers_runs_or_else_from_the_texts(tmp_path):
    """Each batch's keys are stored sorted with it (``tail_runs``), and a reader takes them as
    they are; texts without such a run (gaps, or all of them) are read from the documents."""
    ids, texts = _corpus(90)
    path = tmp_path / "ix.db"
    mem = Index(threshold=0.6, passages=True)
    mem.add_many(zip(ids, texts))
    with Index(path, threshold=0.6, passages=True, storage_options={"flush_docs": 1000}) as ix:
        for b in range(0, 90, 30):
            ix.add_many(zip(ids[b : b + 30], texts[b : b + 30]))
        rows = ix.storage._conn().execute("SELECT lo, hi FROM tail_runs ORDER BY lo").fetchall()
        assert rows == [(1, 30), (31, 60), (61, 90)]
    for drop in ("lo = 31", "1"):  # a gap, then no run at all
        conn = sqlite3.connect(path)
        conn.execute(f"DELETE FROM tail_runs WHERE {drop}")
        conn.commit()
        conn.close()
        with Index(path) as ix:
            view = ix.storage._keys()
            assert view.seen == 90 and not view.segments
            for t in texts[::4]:
                assert ix.query(t) == mem.query(t)
                assert ix.check(t).reused == mem.check(t).reused


def test_a_reader_whose_segment_a_merge_replaced_reads_the_list_again(tmp_path, monkeypatch):
    """A reader that lists the segments and then finds one's files deleted (another process
    rewrote it and deleted them meanwhile, twice in a row) reads the list again: it answers
    as an index in memory does and never takes the write lock (which a busy writer holds:
    that was a 503 "index busy" to a query)."""
    ids, texts = _corpus(60)
    path = tmp_path / "ix.db"
    opts = {"flush_docs": 10, "merges": "inline"}
    writer, mem = Index(path, threshold=0.6, storage_options=opts), Index(threshold=0.6)
    for ix in (writer, mem):
        ix.add_many(zip(ids[:30], texts[:30]), batch_size=10)
    reader = Index(path, storage_options=opts)
    assert reader.query(texts[0]) == mem.query(texts[0])  # the segments of 30 texts opened
    for ix in (writer, mem):  # new segments: one merged of four, two written out
        ix.add_many(zip(ids[30:], texts[30:]), batch_size=10)
    writes = []
    real_write = reader.storage._write
    monkeypatch.setattr(reader.storage, "_write", lambda: (writes.append(1), real_write())[1])
    real_open = keystore.open_segment
    replaced = []

    def open_after_a_rewrite(folder, name, lo, hi, docs, n):
        if len(replaced) < 2:  # the writer removes a third of it: rewritten, files deleted
            with sqlite3.connect(path) as c:
                held = [
                    r[0]
                    for r in c.execute(
                        "SELECT id FROM docs WHERE handle BETWEEN ? AND ? ORDER BY handle", (lo, hi)
                    )
                ]
            out = held[::3]
            replaced.append(name)
            monkeypatch.setattr(keystore, "open_segment", real_open)
            assert writer.remove_many(out) == mem.remove_many(out) == len(out)
            monkeypatch.setattr(keystore, "open_segment", open_after_a_rewrite)
        return real_open(folder, name, lo, hi, docs, n)

    monkeypatch.setattr(keystore, "open_segment", open_after_a_rewrite)
    try:
        for t in texts[::5]:
            assert reader.query(t) == mem.query(t)
        assert len(replaced) == 2 and not (tmp_path / "ix.db-keys" / f"{replaced[0]}.k").exists()
        assert writes == []
    finally:
        reader.close()
        writer.close()


def test_a_write_out_leaves_alone_a_segment_a_merge_is_writing(tmp_path):
    """A merge writes its segment outside the write lock and lists it afterwards: a
    write-out meanwhile (which removes the files no segment lists, left by a killed process)
    keeps a file written to recently, and removes it once it is old."""
    import os

    ids, texts = _corpus(60)
    with Index(tmp_path / "ix.db", threshold=0.6, storage_options={"flush_docs": 10}) as ix:
        ix.add_many(zip(ids[:10], texts[:10]))  # a segment written out: the folder exists
        keys = tmp_path / "ix.db-keys"
        merging = keys / "000000000001-000000000010-0badf00d.k.tmp"
        merging.write_bytes(b"\0" * 64)
        ix.add_many(zip(ids[10:20], texts[10:20]))  # a write-out, with its sweep
        assert merging.exists()
        old = merging.stat().st_mtime - segments_backend.SWEEP_AGE - 1
        os.utime(merging, (old, old))
        ix.add_many(zip(ids[20:30], texts[20:30]))
        assert not merging.exists()
        assert ix.query(texts[25])[0].id == ids[25]
