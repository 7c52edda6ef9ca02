"""The key segments of the SQLite backend: who holds a key, read from sorted runs of
``(key, handle)`` pairs (see :mod:`neardup.index.keystore`) rather than from B-trees of the
file. :class:`KeySegments` is the part of :class:`~neardup.index.sqlite.SQLiteStorage` that
writes the newest texts' keys out as segments, merges segments (in a thread of the writing
process, or inline), rebuilds segments lost or cut short from the file, and keeps each
process's view of the segments, the tail of recent texts and the removed texts (:class:`_View`),
read again only when another connection committed.

It uses the storage's connections and write transactions (``_conn``, ``_write``), its file
(``path``, ``_keys_dir``) and its settings (``flush_docs``, ``_merges``).
"""

from __future__ import annotations

import errno
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._log import get_logger
from . import keystore
from .storage import IndexBusyError, StoredDoc

log = get_logger(__name__)

#: seconds a file of the keys folder that no segment lists is kept (see ``_sweep``)
SWEEP_AGE = 600.0

_LEGACY = "bands_"  # band key tables of the files of earlier versions


@dataclass(frozen=True)
class _View:
    """What one process reads keys from, as of ``version``: the segments, the tail (runs of
    the keys of the texts ``covered + 1 .. seen``) and the gone handles (sorted)."""

    version: int
    covered: int
    seen: int
    segments: tuple[keystore.Segment, ...]
    tail: tuple[keystore.Run, ...]
    gone: np.ndarray

    def runs(self) -> Iterator[tuple[keystore.Run, np.ndarray]]:
        """Each run with the gone handles of its range."""
        g = self.gone
        for seg in self.segments:
            yield seg.run, g[np.searchsorted(g, seg.lo) : np.searchsorted(g, seg.hi, "right")]
        tail_gone = g[np.searchsorted(g, self.covered, "right") :]
        for run in self.tail:
            yield run, tail_gone


#: Pairs up to which the runs of the tail are merged (a lookup searches each run; a merge
#: is paid by the request that reads the texts in, so it stays small).
TAIL_RUN = 1 << 16


def _with_run(tail: tuple[keystore.Run, ...], run: keystore.Run) -> tuple[keystore.Run, ...]:
    """``tail`` and ``run`` (of higher handles), the last two runs merged while the one before
    is at most twice as long and they hold ``TAIL_RUN`` pairs at most together (small runs,
    from adds of a text or a few at a time, kept to a logarithmic number, each pair merged a
    logarithmic number of times), or while there are more than 64 runs (the tail is written
    out every ``flush_docs`` texts: with batches of a thousand texts, ~17 runs)."""
    out = [*tail, run]
    while len(out) > 1 and (
        (len(out[-2]) <= 2 * len(out[-1]) and len(out[-2]) + len(out[-1]) <= TAIL_RUN)
        or len(out) > 64
    ):
        b, a = out.pop(), out.pop()
        keys = np.concatenate([a.keys, b.keys])
        handles = np.concatenate([_absolute(a), _absolute(b)])
        order = np.argsort(keys, kind="stable")  # b's handles are above a's
        out.append(keystore.Run(keys[order], handles[order]))
    return tuple(out)


def _absolute(run: keystore.Run) -> np.ndarray:
    """A run's handles as ``int64``, its base added."""
    h = np.asarray(run.handles, np.int64)
    return h + run.base if run.base else h


def _run_blobs(docs: Sequence[StoredDoc], base: int) -> tuple[bytes, bytes]:
    """The sorted pairs of a batch (handles ``base``, ``base + 1``, ...), as the blobs of a
    ``tail_runs`` row: keys (``<u8``) and handle offsets from ``base`` (``<u4``)."""
    sizes = np.fromiter((len(d.keys) for d in docs), np.int64, len(docs))
    keys = (
        np.concatenate([d.keys for d in docs]).astype(np.uint64, copy=False)
        if sizes.sum()
        else np.zeros(0, np.uint64)
    )
    offs = np.repeat(np.arange(len(docs), dtype=np.int64), sizes)
    keys, offs = keystore.sort_pairs(keys, offs)
    return keys.astype("<u8", copy=False).tobytes(), offs.astype("<u4").tobytes()


class _SegmentMissing(FileNotFoundError):
    """A listed key segment whose files are missing or cut short (``segment``: its name)."""

    def __init__(self, segment: str):
        super().__init__(errno.ENOENT, "key segment missing or cut short", segment)
        self.segment = segment


#: times a reader reads the list of segments again when a merge replaced one it was opening
_REFRESHES = 16


class KeySegments:
    """The key segments of an SQLite index (a part of :class:`SQLiteStorage`)."""

    # what it uses of the storage (set by SQLiteStorage.__init__)
    path: Path
    flush_docs: int
    _keys_dir: Path
    _merges: str
    _local: threading.local
    _all: list[sqlite3.Connection]
    _all_lock: threading.Lock
    _merger: threading.Thread | None
    _merge_lock: threading.Lock
    _merge_again: bool
    _view: _View | None
    _view_lock: threading.Lock
    _opened: dict[str, keystore.Segment]

    if TYPE_CHECKING:

        def _conn(self, create: bool = False) -> sqlite3.Connection: ...

        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...

    @staticmethod
    def _count(conn: sqlite3.Connection, name: str) -> int:
        return int(conn.execute("SELECT value FROM counts WHERE name = ?", (name,)).fetchone()[0])

    @staticmethod
    def _changed(conn: sqlite3.Connection) -> None:
        """The segments or the gone handles changed: every process re-reads them."""
        conn.execute("UPDATE counts SET value = value + 1 WHERE name = 'keys_version'")

    def _open_keys(self) -> None:
        """Make the key segments ready: the counts they need set (a file of an earlier
        version), the band key tables of such a file replaced by segments (once), and
        segments lost or cut short rebuilt from the file."""
        conn = self._conn()
        legacy = conn.execute(
            f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name GLOB '{_LEGACY}*' LIMIT 1"
        ).fetchone()
        have = conn.execute(
            "SELECT COUNT(*) FROM counts WHERE name IN ('next_handle', 'covered', 'keys_version')"
        ).fetchone()[0]
        if legacy is not None or have < 3:
            with self._write() as conn:
                self._upgrade(conn)
        self._keys()

    def _upgrade(self, conn: sqlite3.Connection) -> None:
        last = conn.execute("SELECT COALESCE(MAX(handle), 0) FROM docs").fetchone()[0]
        conn.executemany(
            "INSERT OR IGNORE INTO counts VALUES (?, ?)",
            [("next_handle", last + 1), ("covered", 0), ("keys_version", 0)],
        )
        tables = [
            r[0]
            for r in conn.execute(
                f"SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB '{_LEGACY}*'"
            )
        ]
        if tables:
            log.info(
                "%s: made by an earlier version of neardup: building its key segments "
                "from its %d texts (once)",
                self.path.name,
                self._count(conn, "documents"),
            )
            for t in tables:
                conn.execute(f"DROP TABLE {t}")
            conn.execute("DELETE FROM counts WHERE name IN ('part_docs', 'recent_docs')")
            self._flush(conn)

    def _build(self, conn: sqlite3.Connection, lo: int, hi: int) -> keystore.Segment | None:
        """A segment of the keys of the texts with handles ``lo .. hi`` (None if they have
        none), read from ``docs``: at most ``FANOUT`` flushes' texts in memory at a time,
        their runs then merged."""
        block = self.flush_docs * keystore.FANOUT
        parts: list[keystore.Segment] = []
        for a in range(lo, hi + 1, block):
            b = min(hi, a + block - 1)
            rows = conn.execute(
                "SELECT handle, keys FROM docs WHERE handle BETWEEN ? AND ? ORDER BY handle", (a, b)
            ).fetchall()
            keys, handles = keystore.pairs_of(rows)
            name = keystore.write_segment(self._keys_dir, a, b, keys, handles)
            self._local.written.append(name)
            parts.append(keystore.open_segment(self._keys_dir, name, a, b, len(rows), len(keys)))
        if len(parts) == 1:
            seg = parts[0]
        else:
            seg = keystore.merge_segments(self._keys_dir, parts, np.zeros(0, np.int64))
            self._local.written.append(seg.name)
            for p in parts:
                keystore.remove_segment(self._keys_dir, p.name)
        if len(seg.run) == 0:
            keystore.remove_segment(self._keys_dir, seg.name)
            return None
        return seg

    def _flush(self, conn: sqlite3.Connection) -> None:
        """Write the tail's keys out as a segment (inside the caller's write transaction),
        then merge segments of one size."""
        covered = self._count(conn, "covered")
        last = self._count(conn, "next_handle") - 1
        if last > covered:
            seg = self._build(conn, covered + 1, last)
            if seg is not None:
                self._list(conn, seg)
            # the gone texts of the tail are in no segment
            conn.execute("DELETE FROM gone WHERE handle > ? AND handle <= ?", (covered, last))
            conn.execute("UPDATE counts SET value = ? WHERE name = 'covered'", (last,))
            self._changed(conn)
        conn.execute("DELETE FROM tail_runs WHERE hi <= ?", (last,))
        self._compact(conn)
        self._sweep(conn)

    def _sweep(self, conn: sqlite3.Connection) -> None:
        """Remove the files of segments no longer listed (a process killed between a merge's
        commit and its removals, or while writing one). A merge writes its segment outside the
        write lock and lists it after: a file not listed that was written to in the last
        ``SWEEP_AGE`` seconds may be one, of a thread of this process or of another, and is
        left alone."""
        listed = {r[0] for r in conn.execute("SELECT name FROM segments")}
        listed.update(self._local.written)
        try:
            names = os.listdir(self._keys_dir)
        except OSError:
            return
        now = time.time()
        for name in names:
            if name.split(".", 1)[0] not in listed:
                path = self._keys_dir / name
                try:
                    if now - path.stat().st_mtime >= SWEEP_AGE:
                        os.unlink(path)
                except OSError:
                    pass

    def _list(
        self,
        conn: sqlite3.Connection,
        seg: keystore.Segment,
        replaces: Sequence[keystore.Segment] = (),
    ) -> None:
        """List ``seg`` in place of ``replaces`` (whose files go once the transaction has
        committed)."""
        for old in replaces:
            conn.execute("DELETE FROM segments WHERE name = ?", (old.name,))
            self._local.dropped.append(old.name)
        conn.execute(
            "INSERT INTO segments (name, lo, hi, docs, n) VALUES (?, ?, ?, ?, ?)",
            (seg.name, seg.lo, seg.hi, seg.docs, len(seg.run)),
        )
        self._opened[seg.name] = seg
        self._changed(conn)

    def _segments(self, conn: sqlite3.Connection, repair: bool = False) -> list[keystore.Segment]:
        """The listed segments in handle order, opened; with ``repair`` (inside a write
        transaction), one whose files are lost or cut short is rebuilt from ``docs``, and
        :class:`FileNotFoundError` otherwise."""
        out = []
        for name, lo, hi, docs, n in conn.execute(
            "SELECT name, lo, hi, docs, n FROM segments ORDER BY lo"
        ).fetchall():
            seg = self._opened.get(name)
            if seg is None:
                try:
                    seg = keystore.open_segment(self._keys_dir, name, lo, hi, docs, n)
                except FileNotFoundError as e:
                    if not repair:
                        raise _SegmentMissing(name) from e
                    log.warning(
                        "%s: the key segment %s is missing or cut short: building "
                        "it again from the index",
                        self.path.name,
                        name,
                    )
                    conn.execute("DELETE FROM segments WHERE name = ?", (name,))
                    self._changed(conn)
                    conn.execute("DELETE FROM gone WHERE handle BETWEEN ? AND ?", (lo, hi))
                    seg = self._build(conn, lo, hi)
                    if seg is None:
                        continue
                    self._list(conn, seg)
                self._opened[seg.name] = seg
            out.append(seg)
        return out

    def _plan(
        self, segs: Sequence[keystore.Segment], gone: np.ndarray
    ) -> list[keystore.Segment] | None:
        """The segments to merge next: one whose gone texts reached ``GONE_SHARE`` of it, or
        the newest ``FANOUT`` adjacent segments of one size; None when neither."""
        for seg in segs:
            n_gone = int(np.searchsorted(gone, seg.hi, "right") - np.searchsorted(gone, seg.lo))
            if n_gone and n_gone >= keystore.GONE_SHARE * max(seg.docs, 1):
                return [seg]
        levels = [s.level(self.flush_docs) for s in segs]
        for end in range(len(segs), keystore.FANOUT - 1, -1):
            if len(set(levels[end - keystore.FANOUT : end])) == 1:
                return list(segs[end - keystore.FANOUT : end])
        return None

    def _put(
        self,
        conn: sqlite3.Connection,
        work: Sequence[keystore.Segment],
        seg: keystore.Segment,
        gone: np.ndarray,
    ) -> None:
        """List the merge ``seg`` of ``work``, which left the ``gone`` handles out (inside the
        caller's write transaction)."""
        self._local.written.append(seg.name)
        conn.executemany("DELETE FROM gone WHERE handle = ?", [(h,) for h in gone.tolist()])
        if len(seg.run):
            self._list(conn, seg, replaces=work)
        else:
            keystore.remove_segment(self._keys_dir, seg.name)
            for old in work:
                conn.execute("DELETE FROM segments WHERE name = ?", (old.name,))
                self._local.dropped.append(old.name)
            self._changed(conn)

    @staticmethod
    def _gone(conn: sqlite3.Connection) -> np.ndarray:
        return np.fromiter(
            (h for (h,) in conn.execute("SELECT handle FROM gone ORDER BY handle")), np.int64
        )

    def _compact(self, conn: sqlite3.Connection) -> None:
        """Merge segments (see :meth:`_plan`) until none is left to merge: inside the caller's
        write transaction with ``merges="inline"``; otherwise by a thread of this process,
        once this transaction has committed (:meth:`_merge_loop`)."""
        if self._merges == "background":
            self._local.want_merge = True
            return
        while True:
            segs = self._segments(conn, repair=True)
            gone = self._gone(conn)
            work = self._plan(segs, gone)
            if work is None:
                return
            g = gone[(gone >= work[0].lo) & (gone <= work[-1].hi)]
            self._put(conn, work, keystore.merge_segments(self._keys_dir, work, g), g)

    def _start_merger(self) -> None:
        with self._merge_lock:
            self._merge_again = True
            if self._merger is None:
                self._merger = threading.Thread(
                    target=self._merge_loop, daemon=True, name=f"neardup-merge-{self.path.name}"
                )
                self._merger.start()

    def wait_merges(self) -> None:
        """Return once this process's merges of key segments are done."""
        with self._merge_lock:
            t = self._merger
        if t is not None:
            t.join()

    def _merge_loop(self) -> None:
        """Merge segments while there is work, without the write lock: segments are read and
        merged into a new file, and only the swap (the merged segment listed in place of its
        parts, if they are still listed) is a write transaction. A process that dies meanwhile
        leaves the parts listed and a file no one lists (removed by the next write-out)."""
        try:
            while True:
                with self._merge_lock:
                    if not self._merge_again:
                        self._merger = None
                        return
                    self._merge_again = False
                while self._merge_once():
                    pass
        except Exception as e:  # the segments stay as they are; the next write-out tries again
            log.warning("%s: merging key segments failed: %s", self.path.name, e)
            with self._merge_lock:
                self._merger = None
        finally:
            conn = getattr(self._local, "conn", None)
            if conn is not None:  # this thread's connection
                with self._all_lock:
                    if conn in self._all:
                        self._all.remove(conn)
                conn.close()

    def _merge_once(self) -> bool:
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            segs = self._segments(conn)
            gone = self._gone(conn)
        finally:
            conn.execute("COMMIT")
        work = self._plan(segs, gone)
        if work is None:
            return False
        g = gone[(gone >= work[0].lo) & (gone <= work[-1].hi)]
        seg = keystore.merge_segments(self._keys_dir, work, g)
        try:
            with self._write() as conn:
                listed = {r[0] for r in conn.execute("SELECT name FROM segments")}
                if all(w.name in listed for w in work):
                    self._put(conn, work, seg, g)
                    return True
        except BaseException:
            keystore.remove_segment(self._keys_dir, seg.name)
            raise
        keystore.remove_segment(self._keys_dir, seg.name)  # merged by another process
        return True

    def _keys(self) -> _View:
        """The keys as this process reads them now (see :class:`_View`): re-read when another
        writer changed the segments, and the texts added since read into the tail."""
        conn = self._conn()
        writing = self._local.depth > 0
        if not writing:
            # nothing committed by another connection since this thread's last look (nor by
            # its own: a write forgets it): the view it saw, or a later one, is current
            seen = conn.execute("PRAGMA data_version").fetchone()[0]
            view = self._view
            if view is not None and getattr(self._local, "data_version", None) == seen:
                return view
        with self._view_lock:
            lost = None
            for _ in range(_REFRESHES):
                try:
                    view = self._refresh(conn, writing)
                    if not writing:
                        self._local.data_version = seen
                    return view
                except _SegmentMissing as e:
                    if writing:  # the list is the latest: the files are lost
                        self._segments(conn, repair=True)
                        continue
                    # A reader's list may be older than a merge that has since replaced the
                    # segment and deleted its files: then the list read again no longer
                    # names it. One still listed after its files went missing is lost (a
                    # merge deletes files only after it has listed their replacement), and
                    # is rebuilt, under the write lock.
                    listed = conn.execute(
                        "SELECT 1 FROM segments WHERE name = ?", (e.segment,)
                    ).fetchone()
                    if listed is not None:
                        if lost == e.segment:
                            raise
                        lost = e.segment
                        with self._write() as wconn:
                            self._segments(wconn, repair=True)
        raise IndexBusyError(
            f"{self.path.name}: its key segments were replaced by other "
            f"writers {_REFRESHES} times while being read; try again"
        )

    def _refresh(self, conn: sqlite3.Connection, writing: bool) -> _View:
        own = not conn.in_transaction
        if own:
            conn.execute("BEGIN")  # one snapshot: the segments and the tail agree
        try:
            v = self._view
            version = self._count(conn, "keys_version")
            if v is None or version != v.version:
                covered = self._count(conn, "covered")
                segs = tuple(self._segments(conn))
                self._opened = {s.name: s for s in segs}
                gone = np.fromiter(
                    (h for (h,) in conn.execute("SELECT handle FROM gone ORDER BY handle")),
                    np.int64,
                )
                if v is not None and v.seen >= covered:
                    seen = v.seen
                    tail = tuple(
                        keystore.Run(r.keys[m], h[m])
                        for r in v.tail
                        if (m := (h := _absolute(r)) > covered).any()
                    )
                else:
                    seen, tail = covered, ()
                v = _View(version, covered, seen, segs, tail, gone)
            # the batches added since: their runs as the writer sorted them
            tail, seen = v.tail, v.seen
            for lo, hi, keys, offs in conn.execute(
                "SELECT lo, hi, keys, handles FROM tail_runs WHERE hi > ? ORDER BY lo", (seen,)
            ):
                if lo <= seen:  # pragma: no cover - batches are read whole
                    continue
                if lo > seen + 1:  # texts without a run (not written by insert): from docs
                    tail = self._tail_from_docs(conn, tail, seen, lo - 1)
                tail = _with_run(
                    tail, keystore.Run(np.frombuffer(keys, "<u8"), np.frombuffer(offs, "<u4"), lo)
                )
                seen = hi
            last = conn.execute("SELECT COALESCE(MAX(handle), 0) FROM docs").fetchone()[0]
            if last > seen:
                tail = self._tail_from_docs(conn, tail, seen, last)
                seen = last
            if seen != v.seen:
                v = _View(v.version, v.covered, seen, v.segments, tail, v.gone)
        finally:
            if own:
                conn.execute("COMMIT")
        if not writing:  # what a write transaction sees may yet be rolled back
            self._view = v
        return v

    @staticmethod
    def _tail_from_docs(
        conn: sqlite3.Connection, tail: tuple[keystore.Run, ...], seen: int, last: int
    ) -> tuple[keystore.Run, ...]:
        rows = conn.execute(
            "SELECT handle, keys FROM docs WHERE handle > ? AND handle <= ? ORDER BY handle",
            (seen, last),
        ).fetchall()
        if not rows:
            return tail
        keys, handles = keystore.pairs_of(rows)
        return _with_run(tail, keystore.Run(keys, handles))
