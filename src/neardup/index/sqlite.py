"""The SQLite backend, neardup's embedded default: one file, WAL mode, transactional batches.

Tables: ``meta`` (parameters and format version, as JSON), ``docs`` (handle, id, shingles,
band keys), ``texts`` (handle, text: apart, so that the rows a query reads stay small and pack
densely into pages), ``bands_0``, ``bands_1``, ... (band key -> handle, ``WITHOUT ROWID``
B-trees, one per 131,072 consecutive handles, so a lookup is one probe per band and table; new
keys go first to a small table of recent keys, merged into those by handle every 16,384
documents, so that a batch rewrites few pages) and ``counts``. Every batch is one ``BEGIN IMMEDIATE`` transaction,
so a process killed in the middle of a batch leaves the file as it was before that batch, and a
batch that returned is in the file (WAL with ``synchronous=NORMAL`` survives a killed process;
``synchronous="full"`` also survives a power cut, at a cost per commit).

Each thread gets its own connection (SQLite connections are not shared between threads); WAL
lets readers go on while one writer commits. Other processes may open the same file. Only the
first connection may create the file; each use checks (one ``stat``) that the file's name still
leads to the file opened, and a write is checked before and after its commit, so that a write
into a file deleted or replaced meanwhile fails rather than being lost.
"""

from __future__ import annotations

import json
import os
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
INSERT OR IGNORE INTO counts VALUES ('documents', 0);
"""

log = get_logger(__name__)

#: the size of the write-ahead log at which a write starts it again (see ``_reset_log``)
WAL_RESET_BYTES = 64 << 20

_CHUNK = 512  # host parameters per IN (...) list, well under SQLite's limit
_COMPOUND = 256  # probes per compound SELECT (SQLite's limit: 500 terms)
#: Statements each connection keeps prepared: the probe statements come in a few sizes per
#: table (see _padded), and preparing one of hundreds of terms costs more than running it.
_STATEMENTS = 1024


def _padded(values: list, most: int) -> list[list]:
    """``values`` in lists of at most ``most``, each padded with None (SQL NULL, which no
    ``=`` or ``IN`` matches) to a power of two of at least 8: the statements made for them
    come in a few sizes, so that each connection prepares them once and reuses them."""
    out = []
    for s in range(0, len(values), most):
        part = values[s:s + most]
        size = max(8, 1 << (len(part) - 1).bit_length())
        out.append(part + [None] * (min(size, most) - len(part)))
    return out

# Band keys live in one table per PART_DOCS consecutive handles. A commit rewrites every B-tree
# page it touches, and the keys of a batch land on random pages: in one table for the whole
# index the pages per batch (and the time per document) grow with the index; with bounded
# tables they stay bounded, for a query cost of one probe per band and table.
PART_DOCS = 1 << 17

# Even so, a batch of 1,000 documents puts ~73,000 keys (with passage fingerprints) on random
# pages of a table of up to PART_DOCS documents, and its commit rewrites most of them (0.57 s
# of a batch at a million documents). New keys therefore go to a small table of recent keys
# first (0.11-0.29 s a batch), which is merged into the tables by handle, in key order, once it
# holds RECENT_DOCS documents (1.2 s for 20,000 documents: 0.06 s a batch). The recent table is
# named like a table of handles no index reaches (RECENT_PART), so that every reader, this
# version's and those before it, probes it with the others.
RECENT_DOCS = 1 << 14
RECENT_PART = 1 << 40
_RECENT = f"bands_{RECENT_PART}"

_PART_SQL = """CREATE TABLE IF NOT EXISTS bands_{g} (
    key INTEGER NOT NULL,
    handle INTEGER NOT NULL,
    PRIMARY KEY (key, handle)
) WITHOUT ROWID"""


def _signed(keys: np.ndarray) -> list[int]:
    """uint64 band keys as the signed 64-bit integers SQLite stores."""
    return np.ascontiguousarray(keys, np.uint64).view(np.int64).tolist()


class SQLiteStorage(Storage):
    """An index in one SQLite file. ``create=False``: the file must hold an index already
    (:class:`IndexNotFoundError` otherwise). ``max_bytes``: the most the file may grow to (a
    write beyond fails as SQLite's "database or disk is full" does); None: no limit.

    The storage keeps to the file it opened (its device and inode): it never makes a file
    after that, and a file deleted, moved away or replaced while in use is an
    :class:`IndexChangedError` on the next read or write, never an empty index."""

    kind = "sqlite"

    def __init__(self, path: str | os.PathLike, *, synchronous: str = "normal",
                 timeout: float = 60.0, part_docs: int = PART_DOCS, create: bool = True,
                 max_bytes: int | None = None):
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
        conn = self._conn(create=create)
        if not create and conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                                       "AND name = 'meta'").fetchone() is None:
            self.close()
            raise IndexNotFoundError(f"{self.path}: holds no neardup index")
        try:
            conn.executescript(_SCHEMA)
        except sqlite3.DatabaseError as e:
            raise OutputError(f"{self.path}: not a neardup SQLite index ({e})") from e
        check_int("part_docs", part_docs, 1)
        # fixed when the file is made: the handles of each band table
        conn.execute("INSERT OR IGNORE INTO counts VALUES ('part_docs', ?)", (part_docs,))
        self.part_docs = int(conn.execute(
            "SELECT value FROM counts WHERE name = 'part_docs'").fetchone()[0])

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
                "write that gets this error was not kept)") from None
        if (st.st_dev, st.st_ino) != self._file:
            raise IndexChangedError(
                f"the index file {self.path.name} was replaced by another file after it was "
                "opened; nothing is read or written in the new file (a write that gets this "
                "error was not kept)")

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
            log.warning("%s: the index file changed; its write-ahead log could not be "
                        "moved into it: %s", self.path.name, e)
            return
        if busy:
            log.warning("%s: the index file changed; its write-ahead log was held by a reader "
                        "and is left as it is", self.path.name)

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
            conn = sqlite3.connect(target, timeout=self._timeout, isolation_level=None,
                                   check_same_thread=False, uri=not create,
                                   cached_statements=_STATEMENTS)
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
                if (getattr(e, "sqlite_errorcode", None) or 0) & 0xFF == sqlite3.SQLITE_FULL:
                    raise IndexFullError(
                        f"{self.path.name}: no room for this write: the disk is full, or the "
                        "index file reached its size limit (" + str(e) + "); nothing of it "
                        "was kept") from e
                raise
            finally:
                self._local.depth = 0
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
        return {"format_version": int(rows.get("format_version", "0")),
                "params": json.loads(rows["params"])}

    def write_meta(self, meta):
        with self._write() as conn:
            conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                             [("format_version", str(meta["format_version"])),
                              ("params", json.dumps(meta["params"], sort_keys=True))])

    def insert(self, docs: Sequence[StoredDoc]) -> None:
        if not docs:
            return
        ids = [d.id for d in docs]
        check_batch_ids(ids)
        with self._write() as conn:
            for s in range(0, len(ids), _CHUNK):
                part = ids[s:s + _CHUNK]
                row = conn.execute(f"SELECT id FROM docs WHERE id IN ({','.join('?' * len(part))})"
                                   " LIMIT 1", part).fetchone()
                if row is not None:
                    raise DuplicateIdError(row[0])
            base = conn.execute("SELECT COALESCE(MAX(handle), 0) FROM docs").fetchone()[0] + 1
            conn.executemany(
                "INSERT INTO docs (handle, id, shingles, keys) VALUES (?, ?, ?, ?)",
                [(base + i, d.id, d.shingles.astype("<u4", copy=False).tobytes(),
                  d.keys.astype("<u8", copy=False).tobytes()) for i, d in enumerate(docs)])
            conn.executemany("INSERT INTO texts (handle, text) VALUES (?, ?)",
                             [(base + i, d.text) for i, d in enumerate(docs)
                              if d.text is not None])
            sizes = np.fromiter((len(d.keys) for d in docs), np.int64, len(docs))
            if sizes.sum():
                keys = np.concatenate([d.keys for d in docs]).astype(np.uint64)
                handles = np.repeat(np.arange(base, base + len(docs), dtype=np.int64), sizes)
                order = np.lexsort((handles, keys.view(np.int64)))  # B-tree order
                conn.execute(_PART_SQL.format(g=RECENT_PART))
                conn.executemany(f"INSERT OR IGNORE INTO {_RECENT} (key, handle) VALUES (?, ?)",
                                 zip(_signed(keys[order]), handles[order].tolist()))
            conn.execute("UPDATE counts SET value = value + ? WHERE name = 'documents'",
                         (len(docs),))
            conn.execute("INSERT OR IGNORE INTO counts VALUES ('recent_docs', 0)")
            conn.execute("UPDATE counts SET value = value + ? WHERE name = 'recent_docs'",
                         (len(docs),))
            recent = conn.execute("SELECT value FROM counts WHERE name = 'recent_docs'"
                                  ).fetchone()[0]
            if recent >= min(RECENT_DOCS, self.part_docs):
                self._merge_recent(conn)

    def _merge_recent(self, conn: sqlite3.Connection) -> None:
        """Move the recent keys into the tables of their handles, in key order (inside the
        caller's write transaction)."""
        lo, hi = conn.execute(f"SELECT MIN(handle), MAX(handle) FROM {_RECENT}").fetchone()
        if lo is not None:
            for g in range(lo // self.part_docs, hi // self.part_docs + 1):
                conn.execute(_PART_SQL.format(g=g))
                conn.execute(f"INSERT OR IGNORE INTO bands_{g} (key, handle) SELECT key, handle "
                             f"FROM {_RECENT} WHERE handle >= ? AND handle < ? ORDER BY key, "
                             "handle", (g * self.part_docs, (g + 1) * self.part_docs))
            conn.execute(f"DELETE FROM {_RECENT}")
        conn.execute("UPDATE counts SET value = 0 WHERE name = 'recent_docs'")

    def delete(self, ids):
        out = []
        with self._write() as conn:
            for doc_id in ids:
                row = conn.execute("SELECT handle, keys FROM docs WHERE id = ?",
                                   (doc_id,)).fetchone()
                out.append(row is not None)
                if row is None:
                    continue
                handle, keys = row
                if keys:
                    pairs = [(k, handle) for k in _signed(np.frombuffer(keys, "<u8"))]
                    tables = {t for t in self._parts(conn)
                              if t in (f"bands_{handle // self.part_docs}", _RECENT)}
                    for table in sorted(tables):  # its keys are in one of the two
                        conn.executemany(f"DELETE FROM {table} WHERE key = ? AND handle = ?",
                                         pairs)
                conn.execute("DELETE FROM docs WHERE handle = ?", (handle,))
                conn.execute("DELETE FROM texts WHERE handle = ?", (handle,))
            if any(out):
                conn.execute("UPDATE counts SET value = value - ? WHERE name = 'documents'",
                             (sum(out),))
        return out

    def _parts(self, conn: sqlite3.Connection) -> list[str]:
        """The band tables, re-read only when the schema changed (another writer may add one)."""
        version = conn.execute("PRAGMA schema_version").fetchone()[0]
        cached = getattr(self._local, "parts", None)
        if cached is None or cached[0] != version:
            names = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'bands_*'")]
            names.sort(key=lambda n: int(n.rsplit("_", 1)[1]))
            cached = (version, names)
            self._local.parts = cached
        return cached[1]

    def candidates(self, keys, cap):
        conn = self._conn()
        keys = _signed(keys)
        if not keys:
            return []
        out: dict[int, None] = {}
        for table in self._parts(conn):
            # a statement per table and _COMPOUND keys (SQLite allows 500 terms in a compound
            # SELECT; a long text has thousands of passage keys): a capped probe per key
            for part in _padded(keys, _COMPOUND):
                sql = " UNION ALL ".join(
                    f"SELECT * FROM (SELECT handle FROM {table} WHERE key = ? LIMIT {int(cap)})"
                    for _ in part)
                for (h,) in conn.execute(sql, part):
                    out[h] = None
        return list(out)

    def holders(self, keys, cap):
        conn = self._conn()
        as_signed = np.ascontiguousarray(keys, np.uint64).view(np.int64)
        signed = as_signed.tolist()
        rows: list[tuple[int, int]] = []
        for table in self._parts(conn):
            # as in candidates: a capped probe per key, _COMPOUND keys a statement; each row
            # names its key (the table's B-tree holds it: no extra read)
            for part in _padded(signed, _COMPOUND):
                sql = " UNION ALL ".join(
                    f"SELECT * FROM (SELECT key, handle FROM {table} WHERE key = ? "
                    f"LIMIT {int(cap)})" for _ in part)
                rows += conn.execute(sql, part).fetchall()
        if not rows:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        got = np.array(rows, np.int64)
        order = np.argsort(as_signed, kind="stable")
        pos = order[np.searchsorted(as_signed, got[:, 0], sorter=order)]
        return pos.astype(np.int64), np.ascontiguousarray(got[:, 1])

    def holder_counts(self, keys, cap):
        conn = self._conn()
        as_signed = np.ascontiguousarray(keys, np.uint64).view(np.int64)
        out = np.zeros(len(as_signed), np.int64)
        where = {k: j for j, k in enumerate(as_signed.tolist())}
        for table in self._parts(conn):
            # counted inside SQLite: no row of a holder comes out
            for part in _padded(list(where), _COMPOUND):
                sql = " UNION ALL ".join(
                    f"SELECT k, count(*) FROM (SELECT key AS k FROM {table} WHERE key = ? "
                    f"LIMIT {int(cap)})" for _ in part)
                for k, n in conn.execute(sql, part):
                    if k is not None:
                        out[where[k]] += n
        return out

    def texts_of(self, handles):
        return self._by_handle("SELECT d.handle, d.id, t.text FROM docs d LEFT JOIN texts t "
                               "USING (handle) WHERE d.handle IN", handles, lambda t: t)

    def shingles(self, handles):
        return self._by_handle("SELECT handle, id, shingles FROM docs WHERE handle IN", handles,
                               lambda b: np.frombuffer(b, "<u4").astype(np.uint32, copy=False))

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
        row = self._conn().execute(
            "SELECT d.id, t.text, d.shingles FROM docs d LEFT JOIN texts t USING (handle) "
            "WHERE d.id = ?", (doc_id,)).fetchone()
        if row is None:
            return None
        return {"id": row[0], "text": row[1], "shingles": np.frombuffer(row[2], "<u4")}

    def get_texts(self, ids):
        conn = self._conn()
        out: dict[str, str | None] = {}
        ids = list(ids)
        for s in range(0, len(ids), _CHUNK):
            part = ids[s:s + _CHUNK]
            out.update(conn.execute(f"SELECT d.id, t.text FROM docs d LEFT JOIN texts t "
                                    f"USING (handle) WHERE d.id IN "
                                    f"({','.join('?' * len(part))})", part))
        return out

    def contains(self, doc_id):
        return self._conn().execute("SELECT 1 FROM docs WHERE id = ?",
                                    (doc_id,)).fetchone() is not None

    def count(self):
        return int(self._conn().execute(
            "SELECT value FROM counts WHERE name = 'documents'").fetchone()[0])

    def iter_ids(self):
        cur = self._conn().execute("SELECT id FROM docs ORDER BY handle")
        for (doc_id,) in cur:
            yield doc_id

    def list_ids(self, after, limit):
        conn = self._conn()
        if after is None:
            rows = conn.execute("SELECT id FROM docs ORDER BY id LIMIT ?", (limit,))
        else:
            rows = conn.execute("SELECT id FROM docs WHERE id > ? ORDER BY id LIMIT ?",
                                (after, limit))
        return [r[0] for r in rows]

    def stats(self):
        st = super().stats()
        st["path"] = str(self.path)
        try:
            st["file_bytes"] = self.path.stat().st_size
        except OSError:
            pass
        return st

    def check(self) -> dict[str, Any]:
        """SQLite's own integrity check plus neardup's invariants (used by the tests):
        ``orphan_keys`` counts band keys and texts whose document is gone."""
        conn = self._conn()
        ok = conn.execute("PRAGMA integrity_check").fetchone()[0]
        docs = conn.execute("SELECT COUNT(*) FROM docs").fetchone()[0]
        counted = self.count()
        orphan = sum(conn.execute(f"SELECT COUNT(*) FROM {t} WHERE handle NOT IN "
                                  "(SELECT handle FROM docs)").fetchone()[0]
                     for t in self._parts(conn))
        orphan += conn.execute("SELECT COUNT(*) FROM texts WHERE handle NOT IN "
                               "(SELECT handle FROM docs)").fetchone()[0]
        return {"integrity": ok, "documents": docs, "counted": counted, "orphan_keys": orphan}

    def close(self):
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
