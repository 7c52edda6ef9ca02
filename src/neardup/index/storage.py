"""The small interface every index backend implements, and the in-memory backend.

A backend stores, per document: the user's id, optionally its text, its shingle fingerprints
(sorted, unique ``uint32``, as the batch engine verifies with) and its LSH band keys
(``uint64[bands]``, each already specific to its band), plus one JSON document of parameters.
It answers three questions fast: which documents share a band key with these keys, what are the
shingles of these documents, and is this id present. Everything else (shingling, sketching,
verification, thresholds) lives in :class:`neardup.index.Index`, once for every backend.

Documents get a dense integer *handle* inside the backend; only ids cross the public API.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np

from ..errors import InputError, NeardupError, OutputError, SkipReason

FORMAT_VERSION = 1


class IndexBusyError(OutputError):
    """The index's lock stayed held by another client longer than a write waits for it."""


class IndexChangedError(NeardupError):
    """The backend no longer holds the index that was opened: its data is gone (a Redis
    server restarted without persistence comes back empty; an SQLite file deleted or moved
    away) or it holds another index (a file put in its place). A write that raises it was not
    kept."""


class IndexFullError(OutputError):
    """A write found no room: the disk is full, or the index reached its size limit (SQLite's
    "database or disk is full"). Nothing of that write was kept."""


class IndexNotFoundError(OutputError):
    """Opened with ``create=False``, the target holds no index (no such SQLite file, or no
    index under the Redis URL's prefix)."""


class DuplicateIdError(InputError):
    """An id that the index already holds (or that repeats within one batch)."""

    def __init__(self, doc_id: str, in_batch: bool = False):
        where = "repeats within one batch" if in_batch else "is already in the index"
        super().__init__(f"id {doc_id!r} {where}", field="id", reason=SkipReason.DUPLICATE_ID)
        self.doc_id = doc_id
        self.in_batch = in_batch

    def __reduce__(self):  # crosses processes as itself (the service's writer process)
        return (DuplicateIdError, (self.doc_id, self.in_batch))


def check_batch_ids(ids: Sequence[str]) -> None:
    """:class:`DuplicateIdError` for the first id that repeats within one batch."""
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        for i in ids:
            if i in seen:
                raise DuplicateIdError(i, in_batch=True)
            seen.add(i)


@dataclass
class StoredDoc:
    """One document as a backend stores it."""

    id: str
    text: str | bytes | None  # as the index encodes it (zstd-compressed UTF-8 by default)
    shingles: np.ndarray  # uint32, sorted and unique
    keys: np.ndarray  # uint64[bands]; empty for a document without shingles


class Storage(ABC):
    """An index backend. Implementations must make :meth:`insert` all-or-nothing and
    :meth:`exclusive` exclusive across every client of the same index (threads, processes,
    hosts), so that ``Index.check_and_add`` is atomic."""

    kind = "abstract"

    @abstractmethod
    def read_meta(self) -> dict[str, Any] | None:
        """The parameters stored with the index, or ``None`` for a new, empty one."""

    def stored_meta(self) -> dict[str, Any] | None:
        """:meth:`read_meta`, where a backend may answer from what it read before (do not
        change the dictionary): for the check that the index is still there, made on every
        request of the service."""
        return self.read_meta()

    @abstractmethod
    def write_meta(self, meta: dict[str, Any]) -> None:
        """Store the parameters of a new index (once)."""

    @abstractmethod
    def insert(self, docs: Sequence[StoredDoc]) -> None:
        """Add documents, all or none; :class:`DuplicateIdError` if an id is present."""

    @abstractmethod
    def delete(self, ids: Sequence[str]) -> list[bool]:
        """Remove documents by id; for each, whether it was present."""

    @abstractmethod
    def candidates(self, keys: np.ndarray, cap: int) -> list[int]:
        """Distinct handles of documents sharing any of ``keys`` (at most ``cap`` per key)."""

    def holders(self, keys: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray]:
        """Who holds each of ``keys`` (distinct): ``(position, handle)`` pairs (``int64`` arrays), one per
        document holding ``keys[position]``, at most ``cap`` per key (SQLite: per band table),
        so that a caller can count both the documents of a key and the keys of a document.
        This default asks :meth:`candidates` one key at a time; backends answer at once."""
        keys = np.asarray(keys, np.uint64)
        pos: list[int] = []
        got: list[int] = []
        for j in range(len(keys)):
            hs = self.candidates(keys[j : j + 1], cap)
            pos += [j] * len(hs)
            got += hs
        return np.asarray(pos, np.int64), np.asarray(got, np.int64)

    def holder_counts(self, keys: np.ndarray, cap: int) -> np.ndarray:
        """How many documents hold each of ``keys`` (distinct), counted up to ``cap`` (SQLite:
        per band table), without reading who they are where the backend can."""
        pos, _ = self.holders(keys, cap)
        return np.bincount(pos, minlength=len(keys)).astype(np.int64)

    @abstractmethod
    def shingles(self, handles: Sequence[int]) -> list[tuple[str, np.ndarray]]:
        """``(id, shingles)`` for each handle still present (removed ones are left out)."""

    def texts_of(self, handles: Sequence[int]) -> list[tuple[str, str | bytes | None]]:
        """``(id, text as stored)`` for each handle still present, in the order given (removed
        ones are left out), without reading shingles where the backend can. This default
        reads the ids with :meth:`shingles`, then the texts by id."""
        ids = [i for i, _ in self.shingles(handles)]
        texts = self.get_texts(ids)
        return [(i, texts[i]) for i in ids if i in texts]

    @abstractmethod
    def get(self, doc_id: str) -> dict[str, Any] | None:
        """``{"id", "text", "shingles"}`` of a document (text as stored, ``None`` if not)."""

    @abstractmethod
    def get_texts(self, ids: Sequence[str]) -> dict[str, str | None]:
        """Texts of the ids present, as stored."""

    @abstractmethod
    def contains(self, doc_id: str) -> bool: ...

    @abstractmethod
    def count(self) -> int: ...

    @abstractmethod
    def iter_ids(self) -> Iterator[str]: ...

    @abstractmethod
    def list_ids(self, after: str | None, limit: int) -> list[str]:
        """Up to ``limit`` ids in code-point order, all greater than ``after`` (if given)."""

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the index's write lock (see :class:`Storage`)."""
        yield

    def stats(self) -> dict[str, Any]:
        return {"backend": self.kind, "documents": self.count()}

    def close(self) -> None:  # noqa: B027 - most backends hold nothing to close
        return None


class MemoryStorage(Storage):
    """Everything in Python dictionaries: for tests, notebooks and short-lived services."""

    kind = "memory"

    def __init__(self) -> None:
        self._meta: dict[str, Any] | None = None
        self._handle_of: dict[str, int] = {}
        self._docs: dict[int, StoredDoc] = {}
        self._bands: dict[int, dict[int, None]] = {}  # key -> handles, in insertion order
        self._next = 0
        self._lock = threading.RLock()

    def read_meta(self):
        return self._meta

    def write_meta(self, meta):
        self._meta = dict(meta)

    def insert(self, docs: Sequence[StoredDoc]) -> None:
        with self._lock:
            seen: set[str] = set()
            for d in docs:
                if d.id in seen:
                    raise DuplicateIdError(d.id, in_batch=True)
                if d.id in self._handle_of:
                    raise DuplicateIdError(d.id)
                seen.add(d.id)
            for d in docs:
                h = self._next
                self._next += 1
                self._handle_of[d.id] = h
                self._docs[h] = d
                for k in d.keys.tolist():
                    self._bands.setdefault(k, {})[h] = None

    def delete(self, ids):
        out = []
        with self._lock:
            for doc_id in ids:
                h = self._handle_of.pop(doc_id, None)
                out.append(h is not None)
                if h is None:
                    continue
                d = self._docs.pop(h)
                for k in d.keys.tolist():
                    bucket = self._bands.get(k)
                    if bucket is not None:
                        bucket.pop(h, None)
                        if not bucket:
                            del self._bands[k]
        return out

    def candidates(self, keys: np.ndarray, cap: int) -> list[int]:
        out: dict[int, None] = {}
        with self._lock:
            for k in np.asarray(keys, np.uint64).tolist():
                bucket = self._bands.get(k)
                if bucket:
                    for i, h in enumerate(bucket):
                        if i >= cap:
                            break
                        out[h] = None
        return list(out)

    def holders(self, keys: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray]:
        pos: list[int] = []
        got: list[int] = []
        with self._lock:
            for j, k in enumerate(np.asarray(keys, np.uint64).tolist()):
                bucket = self._bands.get(k)
                if bucket:
                    hs = list(islice(bucket, cap))
                    pos += [j] * len(hs)
                    got += hs
        return np.asarray(pos, np.int64), np.asarray(got, np.int64)

    def holder_counts(self, keys, cap):
        with self._lock:
            return np.array(
                [
                    min(len(self._bands.get(k) or ()), cap)
                    for k in np.asarray(keys, np.uint64).tolist()
                ],
                np.int64,
            )

    def shingles(self, handles):
        with self._lock:
            return [(d.id, d.shingles) for h in handles if (d := self._docs.get(h)) is not None]

    def texts_of(self, handles):
        with self._lock:
            return [(d.id, d.text) for h in handles if (d := self._docs.get(h)) is not None]

    def get(self, doc_id):
        with self._lock:
            h = self._handle_of.get(doc_id)
            if h is None:
                return None
            d = self._docs[h]
            return {"id": d.id, "text": d.text, "shingles": d.shingles}

    def get_texts(self, ids):
        with self._lock:
            return {i: self._docs[self._handle_of[i]].text for i in ids if i in self._handle_of}

    def contains(self, doc_id):
        return doc_id in self._handle_of

    def count(self):
        return len(self._handle_of)

    def iter_ids(self):
        with self._lock:
            ids = list(self._handle_of)
        return iter(ids)

    def list_ids(self, after, limit):
        import bisect

        with self._lock:
            ids = sorted(self._handle_of)
        start = 0 if after is None else bisect.bisect_right(ids, after)
        return ids[start : start + limit]

    @contextmanager
    def exclusive(self):
        with self._lock:
            yield
