"""The SQLite backend, neardup's embedded default: one file, WAL mode, transactional batches.

Tables: ``meta`` (parameters and format version, as JSON), ``docs`` (handle, id, shingles,
keys: band keys and passage fingerprints), ``texts`` (handle, text: apart, so that the rows a
query reads stay small and pack densely into pages), ``counts``, and ``segments`` and ``gone``,
which say where to find who holds a key. Those lookups are not answered by B-trees of the file
but by sorted runs of ``(key, handle)`` pairs in memory-mapped files beside it
(``INDEX.db-keys/``, see :mod:`neardup.index.keystore`): the newest texts' keys are read from
``docs`` into each process's memory, and written out as a segment every ``flush_docs`` texts.
The file alone is the whole index: segments lost or cut short are rebuilt from it, and an
index made by an earlier version (band keys in ``bands_*`` tables) has its segments built once
when it is opened.

Every batch is one ``BEGIN IMMEDIATE`` transaction, so a process killed in the middle of a
batch leaves the file as it was before that batch, and a batch that returned is in the file
(WAL with ``synchronous=NORMAL`` survives a killed process; ``synchronous="full"`` also
survives a power cut, at a cost per commit). A segment is made durable (written, fsynced,
renamed) before the transaction that lists it commits.

Each thread gets its own connection (SQLite connections are not shared between threads); WAL
lets readers go on while one writer commits. Other processes may open the same file. Only the
first connection may create the file; each use checks (one ``stat``) that the file's name still
leads to the file opened, and a write is checked before and after its commit, so that a write
into a file deleted or replaced meanwhile fails rather than being lost.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from .._log import get_logger
from ..errors import OutputError
from ..validate import check_choice, check_int
from . import keystore
from .segments import KeySegments, _run_blobs, _View
from .storage import (
    DuplicateIdError,
    IndexChangedError,
    IndexFullError,
    IndexNotFoundError,
    Storage,
    StoredDoc,
    check_batch_ids,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (
    handle INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    shingles BLOB NOT NULL,
    keys BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS texts (handle INTEGER PRIMARY KEY, text BLOB);
CREATE TABLE IF NOT EXISTS counts (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS segments (
    name TEXT PRIMARY KEY,
    lo INTEGER NOT NULL,
    hi INTEGER NOT NULL,
    docs INTEGER NOT NULL,
    n INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS gone (handle INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS tail_runs (
    lo INTEGER PRIMARY KEY,
    hi INTEGER NOT NULL,
    keys BLOB NOT NULL,
    handles BLOB NOT NULL
);
INSERT OR IGNORE INTO counts VALUES ('documents', 0);
"""

# counts: 'next_handle' (handles are never given twice: a removed text's keys may stay in a
# segment until it is rewritten), 'covered' (the texts up to this handle have their keys in
# segments; those above are the tail) and 'keys_version' (changed with the segments or the
# gone handles: a process re-reads them then)

log = get_logger(__name__)

#: the size of the write-ahead log at which a write starts it again (see ``_reset_log``)
WAL_RESET_BYTES = 64 << 20

_CHUNK = 512  # host parameters per IN (...) list, well under SQLite's limit
#: Statements each connection keeps prepared: the reads by handle come in a few sizes (see
#: _padded), and preparing one of hundreds of terms costs more than running it.
_STATEMENTS = 256

#: SQLite's primary result codes (``sqlite3`` names them from Python 3.11 only)
SQLITE_FULL = 13
SQLITE_READONLY = 8


def _padded(values: list, most: int) -> list[list]:
    """``values`` in lists of at most ``most``, each padded with None (SQL NULL, which no
    ``=`` or ``IN`` matches) to a power of two of at least 8: the statements made for them
    come in a few sizes, so that each connection prepares them once and reuses them."""
    out = []
    for s in range(0, len(values), most):
        part = values[s : s + most]
        size = max(8, 1 << (len(part) - 1).bit_length())
        out.append(part + [None] * (min(size, most) - len(part)))
    return out


def remove_index_files(path: str | os.PathLike) -> None:
    """Remove an SQLite index: the file, its write-ahead log and shared memory, and its key
    segments (``PATH-keys/``)."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    shutil.rmtree(f"{path}-keys", ignore_errors=True)


def move_index_files(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Give a closed SQLite index at ``src`` the name ``dst``: the file, then its key
    segments (a file without them rebuilds them when opened)."""
    os.replace(src, dst)
    keys = Path(f"{src}-keys")
    if keys.is_dir():
        shutil.rmtree(f"{dst}-keys", ignore_errors=True)  # no index's: dst did not exist
        os.replace(keys, f"{dst}-keys")


class SQLiteStorage(KeySegments, Storage):
    """An index in one SQLite file. ``create=False``: the file must hold an index already
    (:class:`IndexNotFoundError` otherwise). ``max_bytes``: the most the file may grow to (a
    write beyond fails as SQLite's "database or disk is full" does); None: no limit.

    The storage keeps to the file it opened (its device and inode): it never makes a file
    after that, and a file deleted, moved away or replaced while in use is an
    :class:`IndexChangedError` on the next read or write, never an empty index."""

    kind = "sqlite"

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        synchronous: str = "normal",
        timeout: float = 60.0,
        flush_docs: int = keystore.FLUSH_DOCS,
        merges: str = "background",
        create: bool = True,
        max_bytes: int | None = None,
    ):
        check_choice("synchronous", synchronous, ("normal", "full"))
        check_int("max_bytes", max_bytes, 4096, none=True)
        self.path = Path(path)
        if self.path.is_dir():
            raise OutputError(f"{self.path}: is a directory, not an index file")
        if not self.path.parent.is_dir():
            raise OutputError(f"{self.path}: the folder {self.path.parent} does not exist")
        if not create and not self.path.exists():
            raise IndexNotFoundError(f"{self.path}: no such index file")
        self._sync = synchronous.upper()
        self._timeout = timeout
        self._max_bytes = max_bytes
        # the one file this storage uses, by absolute name and by (device, inode): connections
        # after the first open that file only (never create one), and every use checks that the
        # name still leads to it (see _check_file)
        self._abs = os.path.abspath(self.path)
        self._uri = "file:" + quote(self._abs) + "?mode=rw"
        self._file: tuple[int, int] | None = None
        self._salvaged = False
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self._wlock = threading.Lock()
        self._merger: threading.Thread | None = None
        self._merge_lock = threading.Lock()
        self._merge_again = False
        conn = self._conn(create=create)
        if (
            not create
            and conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
            ).fetchone()
            is None
        ):
            self.close()
            raise IndexNotFoundError(f"{self.path}: holds no neardup index")
        try:
            conn.executescript(_SCHEMA)
        except sqlite3.DatabaseError as e:
            raise OutputError(f"{self.path}: not a neardup SQLite index ({e})") from e
        check_int("flush_docs", flush_docs, 1)
        check_choice("merges", merges, ("background", "inline"))
        self.flush_docs = flush_docs
        self._merges = merges
        self._keys_dir = Path(self._abs + "-keys")
        self._view: _View | None = None
        self._view_lock = threading.Lock()
        self._opened: dict[str, keystore.Segment] = {}
        self._open_keys()

    # -- connections ------------------------------------------------------------------------
    def _check_file(self) -> None:
        """:class:`IndexChangedError` unless the file's name still leads to the file opened (one
        ``stat``): a file deleted or moved away, or another file put in its place, is never
        read or written as if it were the index."""
        try:
            st = os.stat(self._abs)
        except FileNotFoundError:
            raise IndexChangedError(
                f"the index file {self.path.name} was deleted or moved away after it was "
                "opened; nothing is read or written until it is back under its name (a "
                "write that gets this error was not kept)"
            ) from None
        if (st.st_dev, st.st_ino) != self._file:
            raise IndexChangedError(
                f"the index file {self.path.name} was replaced by another file after it was "
                "opened; nothing is read or written in the new file (a write that gets this "
                "error was not kept)"
            )

    def _moved(self) -> bool:
        """Whether the file's name no longer leads to the file opened."""
        try:
            st = os.stat(self._abs)
        except OSError:
            return True
        return (st.st_dev, st.st_ino) != self._file

    def _salvage(self, conn: sqlite3.Connection) -> None:
        """Once the file was deleted, moved away or replaced: move the commits still in the
        write-ahead log (``NAME-wal``, found by name) into the file opened, and empty the log,
        so that the file moved away holds every write acknowledged, and a file put in its
        place never has this index's log applied to it (that would corrupt it). A log some
        reader holds is left as it is after a second."""
        with self._all_lock:
            if self._salvaged:
                return
            self._salvaged = True
        try:
            busy = self._truncate_log(conn)
        except sqlite3.Error as e:
            log.warning(
                "%s: the index file changed; its write-ahead log could not be moved into it: %s",
                self.path.name,
                e,
            )
            return
        if busy:
            log.warning(
                "%s: the index file changed; its write-ahead log was held by a reader "
                "and is left as it is",
                self.path.name,
            )

    def _conn(self, create: bool = False) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            try:
                self._check_file()
            except IndexChangedError:
                if self._local.depth == 0 and not self._salvaged:
                    self._salvage(conn)
                raise
            return conn
        try:
            # the first connection may make the file (create=True); the others open it only
            target = self._abs if create else self._uri
            conn = sqlite3.connect(
                target,
                timeout=self._timeout,
                isolation_level=None,
                check_same_thread=False,
                uri=not create,
                cached_statements=_STATEMENTS,
            )
            if self._file is None:
                st = os.stat(self._abs)
                self._file = (st.st_dev, st.st_ino)
            self._check_file()
            conn.execute("PRAGMA journal_mode=WAL")
        except sqlite3.DatabaseError as e:
            if conn is not None:
                conn.close()
            if self._file is not None and not os.path.exists(self._abs):
                self._check_file()  # deleted: say so
            raise OutputError(f"{self.path}: cannot open as an SQLite index ({e})") from e
        except IndexChangedError:
            assert conn is not None  # raised by _check_file, once connected
            conn.close()
            raise
        conn.execute(f"PRAGMA synchronous={self._sync}")
        conn.execute("PRAGMA cache_size=-65536")  # 64 MB per connection
        conn.execute("PRAGMA mmap_size=4294967296")  # reads share the OS page cache
        conn.execute("PRAGMA temp_store=MEMORY")
        if self._max_bytes is not None:  # a full database then, as a full disk would be
            page = conn.execute("PRAGMA page_size").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count={max(1, self._max_bytes // page)}")
        self._local.conn = conn
        self._local.depth = 0
        with self._all_lock:
            self._all.append(conn)
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, or a part of the enclosing one (see :meth:`exclusive`). The
        file is checked once the write lock is held, before the commit and after it: a write
        into a file deleted or replaced meanwhile is an :class:`IndexChangedError`, never a
        success (what it wrote went to a file no one will open again)."""
        conn = self._conn()
        if self._local.depth:
            yield conn
            return
        # Threads of this process queue on a lock (first come, first served) rather than on
        # SQLite's busy handler, which polls with sleeps of up to 100 ms; other processes still
        # wait on SQLite's own lock.
        with self._wlock:
            conn.execute("BEGIN IMMEDIATE")
            self._local.depth = 1
            # key segments this transaction made (removed if it is rolled back) and replaced
            # (removed once it has committed)
            self._local.written, self._local.dropped = [], []
            self._local.want_merge = False
            self._local.data_version = None  # its own commit: the next read looks again
            try:
                self._check_file()
                yield conn
                self._check_file()
                conn.execute("COMMIT")
            except BaseException as e:
                # SQLite may have rolled back already (a full disk, an I/O error)
                if conn.in_transaction:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                for name in self._local.written:
                    keystore.remove_segment(self._keys_dir, name)
                if (getattr(e, "sqlite_errorcode", None) or 0) & 0xFF == SQLITE_FULL or (
                    isinstance(e, OSError) and e.errno == errno.ENOSPC
                ):
                    raise IndexFullError(
                        f"{self.path.name}: no room for this write: the disk is full, or the "
                        "index file reached its size limit (" + str(e) + "); nothing of it "
                        "was kept"
                    ) from e
                raise
            finally:
                self._local.depth = 0
            for name in self._local.dropped:
                self._opened.pop(name, None)
                keystore.remove_segment(self._keys_dir, name)
            if self._local.want_merge:
                self._start_merger()
            self._check_file()  # deleted or replaced during the commit: not kept
            self._reset_log(conn)

    def _reset_log(self, conn: sqlite3.Connection) -> None:
        """Start the write-ahead log again once it holds ``WAL_RESET_BYTES`` (called by the
        writer after its commit, the write lock of this process held). SQLite's own checkpoints
        copy the log into the file but start it again only at a moment when no reader uses it,
        which never comes while readers follow each other without a pause (a service under
        load): the log then grows without end (3 GB in a minute of a million-document index
        under four readers and a writer), and every read searches it. A ``TRUNCATE``
        checkpoint waits (within the busy timeout) for the readers of the log to finish, then
        empties it."""
        try:
            size = os.stat(self._abs + "-wal").st_size
        except OSError:
            return
        if size >= WAL_RESET_BYTES:
            try:
                self._truncate_log(conn)
            except sqlite3.OperationalError:  # busy: the next write tries again
                pass

    def _truncate_log(self, conn: sqlite3.Connection) -> bool:
        """Copy the write-ahead log into the file and empty it (a ``TRUNCATE`` checkpoint),
        waiting at most a second for its readers (a reader of another process that stays long
        is not waited for); whether a reader kept it from being emptied."""
        conn.execute(f"PRAGMA busy_timeout={int(min(self._timeout, 1.0) * 1000)}")
        try:
            return bool(conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0])
        finally:
            conn.execute(f"PRAGMA busy_timeout={int(self._timeout * 1000)}")

    @contextmanager
    def exclusive(self):
        self._conn()
        if self._local.depth:
            self._local.depth += 1
            try:
                yield
            finally:
                self._local.depth -= 1
            return
        with self._write():
            yield

    # -- interface --------------------------------------------------------------------------
    def read_meta(self):
        rows = dict(self._conn().execute("SELECT key, value FROM meta"))
        if "params" not in rows:
            return None
        meta = {
            "format_version": int(rows.get("format_version", "0")),
            "params": json.loads(rows["params"]),
        }
        self._meta = meta
        return meta

    def stored_meta(self):
        # parameters are written once, when the index is made; the file is the one opened
        # (checked by _conn on every use): what was read then still holds
        meta = getattr(self, "_meta", None)
        if meta is None:
            return self.read_meta()
        self._conn()
        return meta

    def write_meta(self, meta):
        self._meta = None
        with self._write() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                [
                    ("format_version", str(meta["format_version"])),
                    ("params", json.dumps(meta["params"], sort_keys=True)),
                ],
            )

    def insert(self, docs: Sequence[StoredDoc]) -> None:
        if not docs:
            return
        ids = [d.id for d in docs]
        check_batch_ids(ids)
        with self._write() as conn:
            for s in range(0, len(ids), _CHUNK):
                part = ids[s : s + _CHUNK]
                row = conn.execute(
                    f"SELECT id FROM docs WHERE id IN ({','.join('?' * len(part))}) LIMIT 1", part
                ).fetchone()
                if row is not None:
                    raise DuplicateIdError(row[0])
            base = self._count(conn, "next_handle")
            conn.executemany(
                "INSERT INTO docs (handle, id, shingles, keys) VALUES (?, ?, ?, ?)",
                [
                    (
                        base + i,
                        d.id,
                        d.shingles.astype("<u4", copy=False).tobytes(),
                        d.keys.astype("<u8", copy=False).tobytes(),
                    )
                    for i, d in enumerate(docs)
                ],
            )
            conn.executemany(
                "INSERT INTO texts (handle, text) VALUES (?, ?)",
                [(base + i, d.text) for i, d in enumerate(docs) if d.text is not None],
            )
            conn.execute(
                "UPDATE counts SET value = value + ? WHERE name = 'documents'", (len(docs),)
            )
            conn.execute(
                "UPDATE counts SET value = ? WHERE name = 'next_handle'", (base + len(docs),)
            )
            # the batch's keys sorted once, here, for every process to read as they are
            # (rather than each sorting them again from the documents)
            conn.execute(
                "INSERT INTO tail_runs (lo, hi, keys, handles) VALUES (?, ?, ?, ?)",
                (base, base + len(docs) - 1, *_run_blobs(docs, base)),
            )
            if base + len(docs) - 1 - self._count(conn, "covered") >= self.flush_docs:
                self._flush(conn)

    def delete(self, ids):
        out = []
        gone = []
        with self._write() as conn:
            for doc_id in ids:
                row = conn.execute("SELECT handle FROM docs WHERE id = ?", (doc_id,)).fetchone()
                out.append(row is not None)
                if row is None:
                    continue
                conn.execute("DELETE FROM docs WHERE handle = ?", (row[0],))
                conn.execute("DELETE FROM texts WHERE handle = ?", (row[0],))
                gone.append(row)
            if gone:
                # its keys stay where they are (a segment, the tails of processes) until its
                # segment is rewritten: lookups leave the handle out until then
                conn.executemany("INSERT OR IGNORE INTO gone (handle) VALUES (?)", gone)
                conn.execute(
                    "UPDATE counts SET value = value - ? WHERE name = 'documents'", (len(gone),)
                )
                self._changed(conn)
                # a segment of which a quarter is gone is rewritten: counted in SQLite for the
                # segments these texts were in (not the whole gone table read at each removal)
                handles = [h for (h,) in gone]
                for seg in self._segments(conn, repair=True):
                    if any(seg.lo <= h <= seg.hi for h in handles) and conn.execute(
                        "SELECT COUNT(*) FROM gone WHERE handle BETWEEN ? AND ?", (seg.lo, seg.hi)
                    ).fetchone()[0] >= keystore.GONE_SHARE * max(seg.docs, 1):
                        self._compact(conn)
                        break
        return out

    def candidates(self, keys, cap):
        q = np.ascontiguousarray(keys, np.uint64)
        if not len(q):
            return []
        got = [keystore.probe(run, q, cap, gone)[1] for run, gone in self._keys().runs()]
        handles = np.concatenate(got) if got else np.zeros(0, np.int64)
        if not len(handles):
            return []
        _, first = np.unique(handles, return_index=True)
        return handles[np.sort(first)].tolist()

    def holders(self, keys, cap):
        q = np.ascontiguousarray(keys, np.uint64)
        found = [keystore.probe(run, q, cap, gone) for run, gone in self._keys().runs()]
        if not found:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return (np.concatenate([p for p, _ in found]), np.concatenate([h for _, h in found]))

    def holder_counts(self, keys, cap):
        q = np.ascontiguousarray(keys, np.uint64)
        out = np.zeros(len(q), np.int64)
        for run, gone in self._keys().runs():
            if len(gone):
                pos, _ = keystore.probe(run, q, cap, gone)
                out += np.bincount(pos, minlength=len(q))
            elif len(run):
                out += np.minimum(run.bounds(q)[1], cap)
        return out

    def texts_of(self, handles):
        return self._by_handle(
            "SELECT d.handle, d.id, t.text FROM docs d LEFT JOIN texts t "
            "USING (handle) WHERE d.handle IN",
            handles,
            lambda t: t,
        )

    def shingles(self, handles):
        return self._by_handle(
            "SELECT handle, id, shingles FROM docs WHERE handle IN",
            handles,
            lambda b: np.frombuffer(b, "<u4").astype(np.uint32, copy=False),
        )

    def _by_handle(self, select: str, handles: Sequence[int], value: Any) -> list[tuple]:
        """``(id, value(column))`` of the rows of ``select`` (``handle, id, column ...
        WHERE handle IN``) for ``handles``, in their order; handles not there left out."""
        conn = self._conn()
        rows: dict[int, tuple[str, Any]] = {}
        # plain ints: SQLite would take a numpy integer for a blob and match nothing
        for part in _padded([int(h) for h in handles], _CHUNK):
            for h, doc_id, got in conn.execute(f"{select} ({','.join('?' * len(part))})", part):
                rows[h] = (doc_id, value(got))
        return [rows[h] for h in handles if h in rows]

    def get(self, doc_id):
        row = (
            self._conn()
            .execute(
                "SELECT d.id, t.text, d.shingles FROM docs d LEFT JOIN texts t USING (handle) "
                "WHERE d.id = ?",
                (doc_id,),
            )
            .fetchone()
        )
        if row is None:
            return None
        return {"id": row[0], "text": row[1], "shingles": np.frombuffer(row[2], "<u4")}

    def get_texts(self, ids: Sequence[str]) -> dict[str, str | None]:
        conn = self._conn()
        out: dict[str, str | None] = {}
        ids = list(ids)
        for s in range(0, len(ids), _CHUNK):
            part = ids[s : s + _CHUNK]
            out.update(
                conn.execute(
                    f"SELECT d.id, t.text FROM docs d LEFT JOIN texts t "
                    f"USING (handle) WHERE d.id IN "
                    f"({','.join('?' * len(part))})",
                    part,
                )
            )
        return out

    def contains(self, doc_id):
        return (
            self._conn().execute("SELECT 1 FROM docs WHERE id = ?", (doc_id,)).fetchone()
            is not None
        )

    def count(self):
        return int(
            self._conn().execute("SELECT value FROM counts WHERE name = 'documents'").fetchone()[0]
        )

    def iter_ids(self):
        cur = self._conn().execute("SELECT id FROM docs ORDER BY handle")
        for (doc_id,) in cur:
            yield doc_id

    def list_ids(self, after, limit):
        conn = self._conn()
        if after is None:
            rows = conn.execute("SELECT id FROM docs ORDER BY id LIMIT ?", (limit,))
        else:
            rows = conn.execute(
                "SELECT id FROM docs WHERE id > ? ORDER BY id LIMIT ?", (after, limit)
            )
        return [r[0] for r in rows]

    def stats(self):
        st = super().stats()
        st["path"] = str(self.path)
        try:
            st["file_bytes"] = self.path.stat().st_size
        except OSError:
            pass
        view = self._keys()
        st["key_segments"] = len(view.segments)
        st["key_bytes"] = sum(12 * len(s.run) for s in view.segments)
        return st

    def check(self) -> dict[str, Any]:
        """SQLite's own integrity check plus neardup's invariants (used by the tests):
        ``orphan_keys`` counts keys in segments of a handle that is neither a text's nor
        gone, and texts without their document; ``missing_keys`` the keys of texts up to the
        covered handle that their segment lacks."""
        conn = self._conn()
        ok = conn.execute("PRAGMA integrity_check").fetchone()[0]
        docs = conn.execute("SELECT COUNT(*) FROM docs").fetchone()[0]
        counted = self.count()
        view = self._keys()
        live = np.fromiter(
            (h for (h,) in conn.execute("SELECT handle FROM docs ORDER BY handle")), np.int64
        )
        pairs = [
            (np.asarray(s.run.keys), np.asarray(s.run.handles, np.int64) + s.run.base)
            for s in view.segments
        ]
        have = (
            np.concatenate([k for k, _ in pairs]) if pairs else np.zeros(0, np.uint64),
            np.concatenate([h for _, h in pairs]) if pairs else np.zeros(0, np.int64),
        )
        orphan = int(np.count_nonzero(~np.isin(have[1], live) & ~np.isin(have[1], view.gone)))
        orphan += conn.execute(
            "SELECT COUNT(*) FROM texts WHERE handle NOT IN (SELECT handle FROM docs)"
        ).fetchone()[0]
        want = keystore.pairs_of(
            conn.execute(
                "SELECT handle, keys FROM docs WHERE handle <= ? ORDER BY handle", (view.covered,)
            )
        )
        held = {(int(k), int(h)) for k, h in zip(*have)}
        missing = sum((int(k), int(h)) not in held for k, h in zip(*want))
        return {
            "integrity": ok,
            "documents": docs,
            "counted": counted,
            "orphan_keys": orphan,
            "missing_keys": missing,
        }

    def close(self):
        self.wait_merges()
        if self._file is not None and not self._salvaged and self._all and self._moved():
            self._salvage(self._all[0])  # closing no longer checkpoints a moved file
        with self._all_lock:
            for conn in self._all:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._all.clear()
        self._local = threading.local()
        self._view = None
        self._opened = {}
