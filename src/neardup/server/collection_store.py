"""Uploaded collections, deduplicated, as the service keeps them for the side-by-side view
within budgets (:class:`Collection`, :class:`CollectionStore`); their HTTP side, the reading of
an upload and its routes, is :mod:`.collections`. What is kept is compact and of a size known in
advance:

- the texts and ids as one UTF-8 buffer each with ``int64`` offsets, the ids found again by a
  sorted array of their hashes (``searchsorted``, the id itself compared);
- the exact-duplicate groups as one ``head`` array (each document's group's first row) and the
  verified edges between groups as sorted ``int64`` keys with their similarities: the run keeps
  the compared pairs only (``pairs="edges"``), never the ``g (g - 1) / 2`` pairs of a group of
  ``g`` copies (see :mod:`neardup.expand`), and the similarity of any two documents is still
  known exactly where the run knows it (:meth:`Collection.similarity`);
- the answer to the upload as serialized JSON bytes.

The store keeps the most recently used collections in memory up to a byte budget, moves the
others to files in a private temporary folder of the service (mode 0700, removed when the
service stops) up to a disk budget, and drops the least recently used beyond it. In shared mode
(``shared=``, for several worker processes behind one socket) every collection is written at
once into a folder all the workers read, the budgets apply to that folder as a whole, and each
process keeps the most recently used in memory as a cache.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .._records import record

#: Collections kept at most, in memory and on disk together (least recently used dropped first).
MAX_COLLECTIONS = 8
#: Bytes of collections kept in memory; the others are moved to the service's temporary folder.
COLLECTION_MEMORY_BYTES = 256_000_000
#: Bytes of collections kept on disk; the least recently used are dropped beyond.
COLLECTION_DISK_BYTES = 2_000_000_000
#: Shingles of an uploaded collection (``neardup.dedup``'s default), also the passage size.
COLLECTION_SHINGLE = "word:5"
#: The formats a collection is exported in.
EXPORT_FORMATS = ("csv", "jsonl")

#: A collection id as the service makes them (``secrets.token_hex(8)``); in shared mode any other
#: id names no collection, so that no id reaches outside the shared folder.
COLLECTION_ID = re.compile(r"[0-9a-f]{16}")
#: Seconds between two updates of a shared collection's recency (its folder's mtime) by a process.
TOUCH_SECONDS = 1.0
#: Seconds after which a temporary folder left in the shared folder (by a process that died while
#: writing a collection) is removed.
STALE_SECONDS = 3600.0

#: The arrays of a :class:`Collection`, as its files on disk are named.
_ARRAYS = (
    "ids_buf",
    "ids_off",
    "id_hash",
    "id_row",
    "texts_buf",
    "texts_off",
    "head",
    "labels",
    "representative",
    "rep_similarity",
    "edge_key",
    "edge_similarity",
)


def _pack(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``strings`` as one UTF-8 buffer (``uint8``) and ``int64[n + 1]`` byte offsets."""
    encoded = [s.encode("utf-8", "surrogatepass") for s in strings]
    off = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=off[1:])
    return np.frombuffer(b"".join(encoded), np.uint8), off


def _id_hashes(ids: list[str]) -> np.ndarray:
    return np.fromiter((hash(x) for x in ids), np.int64, len(ids))


class Collection:
    """An uploaded collection and its deduplication, as kept for the side-by-side view.

    Per document row ``i``: its id and text (in ``ids_buf`` / ``texts_buf`` at the offsets),
    ``head[i]`` the first row of its exact-duplicate group (``i`` itself for a text seen once),
    ``labels[i]`` its cluster, ``representative[i]`` and ``rep_similarity[i]``. ``edge_key``:
    the verified edges between groups, ``min(head) * n + max(head)``, sorted, and their
    ``edge_similarity``. ``summary``: the upload's answer, JSON. Arrays may be read-only maps of
    the files of a collection kept on disk."""

    __slots__ = ("summary", *_ARRAYS)
    summary: bytes
    ids_buf: np.ndarray
    ids_off: np.ndarray
    id_hash: np.ndarray
    id_row: np.ndarray
    texts_buf: np.ndarray
    texts_off: np.ndarray
    head: np.ndarray
    labels: np.ndarray
    representative: np.ndarray
    rep_similarity: np.ndarray
    edge_key: np.ndarray
    edge_similarity: np.ndarray

    def __init__(self, summary: bytes, **arrays: np.ndarray):
        self.summary = summary
        for name in _ARRAYS:
            setattr(self, name, arrays[name])

    @classmethod
    def build(cls, ids: list[str], texts: list[str], result: Any, summary: bytes) -> Collection:
        """From the records and the :class:`~neardup.Result` of ``dedup(..., pairs="edges")``:
        its pairs are each copy with its group's first document (method "fingerprint") and
        the verified edges between groups' first documents."""
        from ..result import FINGERPRINT

        n = len(ids)
        p = result.pairs
        copy = p.method == FINGERPRINT
        head = np.arange(n, dtype=np.int64)
        head[p.right[copy]] = p.left[copy]
        el, er = p.left[~copy], p.right[~copy]
        key = np.minimum(el, er) * n + np.maximum(el, er)
        order = np.argsort(key, kind="stable")
        id_hash = _id_hashes(ids)
        id_row = np.argsort(id_hash, kind="stable")
        ids_buf, ids_off = _pack(ids)
        texts_buf, texts_off = _pack(texts)
        small = np.int32 if n < 2**31 else np.int64
        return cls(
            summary,
            ids_buf=ids_buf,
            ids_off=ids_off,
            id_hash=id_hash[id_row],
            id_row=id_row.astype(small),
            texts_buf=texts_buf,
            texts_off=texts_off,
            head=head.astype(small),
            labels=np.asarray(result.labels).astype(small),
            representative=np.asarray(result.representative).astype(small),
            rep_similarity=np.asarray(result.similarity, np.float32),
            edge_key=key[order],
            edge_similarity=p.similarity[~copy][order].astype(np.float32),
        )

    def __len__(self) -> int:
        return len(self.head)

    @property
    def nbytes(self) -> int:
        """Bytes it holds."""
        return len(self.summary) + sum(getattr(self, a).nbytes for a in _ARRAYS)

    def _str(self, buf: str, row: int) -> str:
        off = getattr(self, buf + "_off")
        return bytes(getattr(self, buf + "_buf")[off[row] : off[row + 1]]).decode(
            "utf-8", "surrogatepass"
        )

    def id(self, row: int) -> str:
        return self._str("ids", row)

    def text(self, row: int) -> str:
        return self._str("texts", row)

    def export(self, what: str, fmt: str) -> Iterator[bytes]:
        """The collection as a file, in parts: ``what`` "kept" (the deduplicated list: each
        cluster's representative and every document in no cluster, ``id`` and ``text``) or
        "groups" (every document: ``id``, ``cluster``, ``representative``, ``similarity`` to
        it, ``kept``); ``fmt`` "csv" (with a header row) or "jsonl"."""
        import csv
        import io

        import orjson

        n = len(self)
        rep = np.asarray(self.representative)
        if what == "kept":
            cols = ["id", "text"]
            rows = np.flatnonzero(rep == np.arange(n))
        else:
            cols = ["id", "cluster", "representative", "similarity", "kept"]
            rows = np.arange(n)
        labels, sims = np.asarray(self.labels), np.asarray(self.rep_similarity)

        def record(i: int) -> list[Any]:
            if what == "kept":
                return [self.id(i), self.text(i)]
            kept = bool(rep[i] == i)
            return [
                self.id(i),
                int(labels[i]),
                self.id(int(rep[i])),
                round(float(sims[i]), 6),
                kept if fmt == "jsonl" else str(kept).lower(),
            ]

        if fmt == "csv":
            buf = io.StringIO()
            out = csv.writer(buf, lineterminator="\n")
            out.writerow(cols)
        for s in range(0, len(rows), 1000):  # a thousand rows a part
            part = rows[s : s + 1000].tolist()
            if fmt == "csv":
                out.writerows(record(i) for i in part)
                yield buf.getvalue().encode("utf-8", "surrogatepass")
                buf.seek(0)
                buf.truncate()
            else:
                yield b"".join(orjson.dumps(dict(zip(cols, record(i)))) + b"\n" for i in part)
        if fmt == "csv" and not len(rows):
            yield buf.getvalue().encode("utf-8")

    def row_of(self, doc_id: str) -> int | None:
        """The row of the document ``doc_id``, or None."""
        h = hash(doc_id)
        lo = int(np.searchsorted(self.id_hash, h, "left"))
        hi = int(np.searchsorted(self.id_hash, h, "right"))
        for r in self.id_row[lo:hi].tolist():
            if self.id(r) == doc_id:
                return r
        return None

    def similarity(self, a: int, b: int) -> float | None:
        """The similarity of rows ``a`` and ``b`` where the run knows it exactly: 1.0 inside an
        exact-duplicate group; the edge's similarity for members of two groups joined by a
        verified edge; a member's similarity to its representative (or a copy of it); else
        None."""
        ha, hb = int(self.head[a]), int(self.head[b])
        if ha == hb:
            return 1.0
        key = min(ha, hb) * len(self) + max(ha, hb)
        at = int(np.searchsorted(self.edge_key, key))
        if at < len(self.edge_key) and int(self.edge_key[at]) == key:
            return float(self.edge_similarity[at])
        if int(self.head[int(self.representative[b])]) == ha:
            return float(self.rep_similarity[b])
        if int(self.head[int(self.representative[a])]) == hb:
            return float(self.rep_similarity[a])
        return None

    def same_cluster(self, a: int, b: int) -> bool:
        return bool(self.labels[a] == self.labels[b])

    # -- on disk ---------------------------------------------------------------------------
    def save(self, folder: Path) -> None:
        """Write it into ``folder`` (new): one ``.npy`` file per array, the summary as JSON."""
        folder.mkdir(mode=0o700)
        for name in _ARRAYS:
            np.save(folder / f"{name}.npy", np.ascontiguousarray(getattr(self, name)))
        (folder / "summary.json").write_bytes(self.summary)

    @classmethod
    def load(cls, folder: Path) -> Collection:
        """A collection saved in ``folder``, its arrays mapped read-only (not read into
        memory)."""
        arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in _ARRAYS}
        return cls((folder / "summary.json").read_bytes(), **arrays)


def known_pairs(col: Collection) -> int:
    """Pairs of documents known to be near-duplicates: every two copies of an exact group, and
    every member of one group with every member of the other for each verified edge."""
    n = len(col)
    if n == 0:
        return 0
    size = np.bincount(np.asarray(col.head, np.int64), minlength=n).astype(np.int64)
    within = int((size * (size - 1) // 2).sum())
    key = np.asarray(col.edge_key)
    cross = int((size[key // n] * size[key % n]).sum())
    return within + cross


#: Characters of a member's text that an upload's answer shows as its title.
TITLE_CHARS = 80


def title_of(text: str) -> str:
    """What the page shows of a document beside its id: its first line, cut at
    :data:`TITLE_CHARS` characters (with "..." where cut)."""
    line = text.strip().split("\n", 1)[0].strip()
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 3].rstrip() + "..."


def summary_json(
    meta: dict[str, Any], ids: list[str], result: Any, texts: list[str] | None = None
) -> bytes:
    """The upload's answer (``CollectionOut``) as JSON: ``meta`` (every field in the model's
    order, ``clusters`` a placeholder) with the clusters of two or more
    documents, largest first, their members in document order (with ``texts``, each with its
    title: :func:`title_of`). Built a cluster at a time, not as models of every member."""
    import orjson

    labels = np.asarray(result.labels)
    sizes = np.bincount(labels) if len(labels) else np.zeros(0, np.int64)
    big = np.flatnonzero(sizes >= 2)
    rows = np.flatnonzero(sizes[labels] >= 2) if len(big) else np.zeros(0, np.int64)
    rows = rows[np.lexsort((rows, labels[rows]))]  # by cluster, then row
    first = np.searchsorted(labels[rows], big)  # where each cluster's rows start
    parts = []
    for c in sorted(range(len(big)), key=lambda c: (-int(sizes[big[c]]), int(big[c]))):
        members = rows[first[c] : first[c] + int(sizes[big[c]])].tolist()
        sims = result.similarity[members].tolist()
        parts.append(
            orjson.dumps(
                {
                    "cluster": int(big[c]),
                    "size": len(members),
                    "representative": ids[int(result.representative[members[0]])],
                    "members": [
                        {
                            "id": ids[r],
                            "similarity_to_representative": round(s, 6),
                            **({"title": title_of(texts[r])} if texts is not None else {}),
                        }
                        for r, s in zip(members, sims)
                    ],
                }
            )
        )
    keys = list(meta)
    at = keys.index("clusters")
    before = orjson.dumps({k: meta[k] for k in keys[:at]})
    after = orjson.dumps({k: meta[k] for k in keys[at + 1 :]})
    return b"".join([before[:-1], b',"clusters":[', b",".join(parts), b"],", after[1:]])


# ---------------------------------------------------------------------------------------------
# The store


@record
class _Kept:
    collection: Collection | None  # in memory, or None: on disk at ``folder``
    nbytes: int
    folder: Path | None = None


class CollectionStore:
    """Collections by id, the most recently used in memory up to ``memory_bytes``, the others
    in files of a private temporary folder up to ``disk_bytes``, at most ``max_collections`` in
    all; the least recently used are dropped first. Thread-safe. :meth:`close` removes the
    folder (also done when the store is garbage collected or the process exits).

    Shared mode, for several processes that serve the same collections (``shared``: an existing
    folder of mode 0700 that the caller makes and removes; the store never removes it): each
    collection put is written at once into ``shared/<cid>`` (into a temporary name first, then
    renamed, so that no process ever sees half of one) and also kept in this process's memory,
    a cache of the most recently used up to ``memory_bytes`` and ``max_collections`` (beyond,
    forgotten from memory only). :meth:`get` answers from the cache, else loads
    ``shared/<cid>`` (its arrays mapped, then cached), else None. ``max_collections`` and
    ``disk_bytes`` apply to the folder as a whole: after writing a collection, the process
    holds an exclusive ``flock`` of ``shared/.lock`` while it removes the least recently used
    beyond them, across all processes: a collection's recency is its folder's mtime, which
    :meth:`get` updates (at most once a :data:`TOUCH_SECONDS` per collection and process). A
    collection removed by another process may be served from this process's cache until its
    next update finds it gone. Ids other than :data:`COLLECTION_ID` name no collection (get:
    None; put: ValueError), so that none reaches outside the folder."""

    def __init__(
        self,
        memory_bytes: int = COLLECTION_MEMORY_BYTES,
        disk_bytes: int = COLLECTION_DISK_BYTES,
        max_collections: int = MAX_COLLECTIONS,
        parent: str | None = None,
        shared: Path | str | None = None,
    ):
        self.memory_bytes = memory_bytes
        self.disk_bytes = disk_bytes
        self.max_collections = max_collections
        self._parent = parent
        self._d: OrderedDict[str, _Kept] = OrderedDict()
        self._lock = threading.Lock()
        self._folder: Path | None = None
        self._finalizer: weakref.finalize | None = None
        self._shared = None if shared is None else Path(shared)
        if self._shared is not None and not self._shared.is_dir():
            raise ValueError(f"shared={str(shared)!r} is not a folder")
        self._touched: OrderedDict[str, float] = OrderedDict()  # cid: monotonic time

    # -- the folder ------------------------------------------------------------------------
    @property
    def folder(self) -> Path | None:
        """The folder of the collections on disk: the shared folder, else the private one (None
        until the first is written)."""
        return self._shared if self._shared is not None else self._folder

    def _make_folder(self) -> Path:
        if self._folder is None:
            # mkdtemp: mode 0700, a name no one else can take
            self._folder = Path(tempfile.mkdtemp(prefix="neardup-collections-", dir=self._parent))
            self._finalizer = weakref.finalize(self, shutil.rmtree, str(self._folder), True)
        return self._folder

    def close(self) -> None:
        """Forget every collection and remove the folder (in shared mode: forget the cache,
        leave the folder and its collections)."""
        with self._lock:
            self._d.clear()
            self._touched.clear()
            if self._finalizer is not None:
                self._finalizer()
            self._folder = self._finalizer = None

    # -- the collections -------------------------------------------------------------------
    def __len__(self) -> int:
        if self._shared is not None:
            return len(self._counted())
        return len(self._d)

    def usage(self) -> dict[str, int]:
        """Collections and bytes kept in memory and on disk (in shared mode: this process's
        cache, and the shared folder's collections, of all processes)."""
        if self._shared is not None:
            with self._lock:
                mem = [k.nbytes for k in self._d.values()]
            disk = [nbytes for _, _, nbytes in self._counted()]
        else:
            with self._lock:
                mem = [k.nbytes for k in self._d.values() if k.collection is not None]
                disk = [k.nbytes for k in self._d.values() if k.collection is None]
        return {
            "in_memory": len(mem),
            "memory_bytes": sum(mem),
            "on_disk": len(disk),
            "disk_bytes": sum(disk),
        }

    def put(self, cid: str, col: Collection) -> bool:
        """Keep ``col`` as the most recently used; False if it is over both budgets (not
        kept; in shared mode: if it is over ``disk_bytes`` alone or could not be written)."""
        if self._shared is not None:
            return self._put_shared(cid, col)
        nbytes = col.nbytes
        with self._lock:
            self._d[cid] = _Kept(col, nbytes)
            self._d.move_to_end(cid)
            self._enforce()
            return cid in self._d

    def get(self, cid: str) -> Collection | None:
        """The collection ``cid`` (made the most recently used), or None if not kept."""
        if self._shared is not None:
            return self._get_shared(cid)
        with self._lock:
            kept = self._d.get(cid)
            if kept is None:
                return None
            self._d.move_to_end(cid)
            if kept.collection is not None:
                return kept.collection
            folder = kept.folder
            assert folder is not None  # not in memory: on disk
        try:
            return Collection.load(folder)
        except FileNotFoundError:  # dropped meanwhile
            return None

    def _used(self, in_memory: bool) -> int:
        return sum(k.nbytes for k in self._d.values() if (k.collection is not None) == in_memory)

    def _drop(self, cid: str) -> None:
        kept = self._d.pop(cid)
        if kept.folder is not None:
            shutil.rmtree(kept.folder, ignore_errors=True)

    def _enforce(self) -> None:
        while len(self._d) > self.max_collections:
            self._drop(next(iter(self._d)))
        while self._used(True) > self.memory_bytes:  # the least recently used to disk
            cid, kept = next((c, k) for c, k in self._d.items() if k.collection is not None)
            if kept.nbytes > self.disk_bytes:
                self._drop(cid)
                continue
            folder = self._make_folder() / cid
            assert kept.collection is not None  # picked for being in memory
            try:
                kept.collection.save(folder)
            except OSError:
                shutil.rmtree(folder, ignore_errors=True)
                self._drop(cid)
                continue
            kept.collection, kept.folder = None, folder
        while self._used(False) > self.disk_bytes:
            self._drop(next(c for c, k in self._d.items() if k.collection is None))

    # -- shared mode -----------------------------------------------------------------------
    def _put_shared(self, cid: str, col: Collection) -> bool:
        if not _is_cid(cid):
            raise ValueError(f"{cid!r} is not a collection id")
        assert self._shared is not None
        with self._lock:  # an older collection of that id is not served any more
            self._d.pop(cid, None)
        if col.nbytes > self.disk_bytes:
            return False
        tmp = self._shared / f".tmp-{cid}-{os.getpid()}-{secrets.token_hex(4)}"
        fits = kept = False
        try:
            col.save(tmp)
            fits = _folder_bytes(tmp) <= self.disk_bytes
            if fits:
                with self._flock(exclusive=True):
                    if os.path.lexists(self._shared / cid):  # put again: replaced
                        self._remove_shared(cid)
                    os.rename(tmp, self._shared / cid)
                    kept = cid in self._enforce_shared(newest=cid)
        except OSError:
            kept = False
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # gone after the rename, unless it failed
        if not (fits and kept):
            return False
        with self._lock:
            self._d[cid] = _Kept(col, col.nbytes)
            self._enforce_cache()
            self._touched[cid] = time.monotonic()
            self._touched.move_to_end(cid)
        return True

    def _get_shared(self, cid: str) -> Collection | None:
        if not _is_cid(cid):
            return None
        assert self._shared is not None
        folder = self._shared / cid
        with self._lock:
            kept = self._d.get(cid)
            if kept is not None:
                self._d.move_to_end(cid)
        if kept is not None:
            if self._touch(cid, folder):
                return kept.collection
            with self._lock:  # removed by another process: forgotten here too
                if self._d.get(cid) is kept:
                    del self._d[cid]
            return None
        try:
            col = Collection.load(folder)
        except (OSError, ValueError, EOFError):  # not there, or being removed
            return None
        if self._touch(cid, folder):
            with self._lock:
                self._d[cid] = _Kept(col, col.nbytes)
                self._d.move_to_end(cid)
                self._enforce_cache()
        return col  # loaded whole (its files stay readable while mapped)

    def _enforce_cache(self) -> None:
        """Forget the least recently used collections beyond the budgets (they stay in the
        shared folder)."""
        while self._d and (
            len(self._d) > self.max_collections or self._used(True) > self.memory_bytes
        ):
            self._d.popitem(last=False)

    def _touch(self, cid: str, folder: Path) -> bool:
        """Make ``cid`` the most recently used in the shared folder (its mtime), at most once a
        :data:`TOUCH_SECONDS` per process; False if its folder is gone."""
        now = time.monotonic()
        with self._lock:
            last = self._touched.get(cid)
            if last is not None and now - last < TOUCH_SECONDS:
                return True
            self._touched[cid] = now
            self._touched.move_to_end(cid)
            while len(self._touched) > 4 * self.max_collections + 64:
                self._touched.popitem(last=False)
        try:
            t = time.time_ns()  # the clock of puts (the kernel's may be a tick behind)
            os.utime(folder, ns=(t, t))
        except FileNotFoundError:
            with self._lock:
                self._touched.pop(cid, None)
            return False
        except OSError:
            pass
        return True

    @contextlib.contextmanager
    def _flock(self, exclusive: bool) -> Iterator[None]:
        """The shared folder's lock: exclusive to change it, shared to count it."""
        import fcntl  # POSIX only, as the shared mode is (worker processes are forked)

        assert self._shared is not None
        fd = os.open(
            self._shared / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600
        )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)  # and the lock with it

    def _counted(self) -> list[tuple[int, str, int]]:
        """The shared folder's collections; none once the folder is gone (the service
        stopping)."""
        try:
            return self._shared_collections()
        except FileNotFoundError:
            return []

    def _shared_collections(self, clean: bool = False) -> list[tuple[int, str, int]]:
        """``(mtime_ns, cid, bytes)`` of each collection in the shared folder, under its lock;
        ``clean`` (the caller holds the exclusive lock): also remove what processes that died
        left behind."""
        assert self._shared is not None
        out = []
        with contextlib.ExitStack() as stack:
            if not clean:
                stack.enter_context(self._flock(exclusive=False))
            now = time.time()
            with os.scandir(self._shared) as entries:
                for e in entries:
                    try:
                        if _is_cid(e.name):
                            if e.is_dir(follow_symlinks=False):
                                st = e.stat(follow_symlinks=False)
                                out.append((st.st_mtime_ns, e.name, _folder_bytes(Path(e.path))))
                        elif clean and (
                            e.name.startswith(".del-")
                            or (
                                e.name.startswith(".tmp-")
                                and now - e.stat(follow_symlinks=False).st_mtime > STALE_SECONDS
                            )
                        ):
                            shutil.rmtree(e.path, ignore_errors=True)
                    except FileNotFoundError:
                        continue
        return out

    def _enforce_shared(self, newest: str) -> set[str]:
        """Make ``newest`` the most recently used collection of the shared folder, and remove
        the least recently used beyond ``max_collections`` and ``disk_bytes`` (the caller holds
        the exclusive lock); the ids kept."""
        assert self._shared is not None
        found = self._shared_collections(clean=True)
        # later than every other, even where the clock's ticks are coarser than puts
        t = max([time.time_ns()] + [m + 1 for m, c, _ in found if c != newest])
        os.utime(self._shared / newest, ns=(t, t))
        found = [(t if c == newest else m, c, nbytes) for m, c, nbytes in found]
        kept: set[str] = set()
        count = total = 0
        full = False
        for _, cid, nbytes in sorted(found, reverse=True):
            if not full and count < self.max_collections and total + nbytes <= self.disk_bytes:
                kept.add(cid)
                count += 1
                total += nbytes
            else:  # this one and every older one
                full = True
                self._remove_shared(cid)
        return kept

    def _remove_shared(self, cid: str) -> None:
        """Remove ``shared/<cid>`` (the caller holds the exclusive lock): renamed away at once,
        so that a process loading it meanwhile finds it gone rather than half of it."""
        assert self._shared is not None
        dead = self._shared / f".del-{cid}-{secrets.token_hex(4)}"
        try:
            os.rename(self._shared / cid, dead)
        except FileNotFoundError:
            return
        shutil.rmtree(dead, ignore_errors=True)


def _is_cid(cid: object) -> bool:
    return isinstance(cid, str) and COLLECTION_ID.fullmatch(cid) is not None


def _folder_bytes(folder: Path) -> int:
    """Bytes of the files in ``folder`` (a collection's: no subfolder)."""
    with os.scandir(folder) as entries:
        return sum(
            e.stat(follow_symlinks=False).st_size
            for e in entries
            if e.is_file(follow_symlinks=False)
        )
