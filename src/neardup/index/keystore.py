"""Sorted runs of ``(key, handle)`` pairs: how the SQLite index finds who holds a key.

A text's band keys and passage fingerprints (``uint64``) are kept, with the text, in the
SQLite file (the ``keys`` column of ``docs``: the truth, from which everything here can be
rebuilt). To find who holds a key, they are also kept in *segments*: immutable files beside the
index (``INDEX.db-keys/``), each the keys of a range of handles sorted by ``(key, handle)``, as
two arrays (``NAME.k``: ``uint64`` keys, ``NAME.h``: ``uint32`` handle offsets from the range's
start) read through memory maps, and a fence (``NAME.f``: every ``FENCE``-th key, in memory). A lookup is a binary search per key and segment
(:func:`numpy.searchsorted`), so reads cost microseconds whatever the index's size, and adding
a text costs no B-tree page at all: the newest texts (the *tail*, handles above the last
segment's) are read from ``docs`` into memory by each process (:class:`Run`), and written out as
one segment every ``flush_docs`` texts; segments of the same size are merged four at a time
(a log-structured merge), by a merge that streams through them in blocks, so that memory stays
bounded whatever their size.

A removed text's keys stay in its segment until that is rewritten; its handle is *gone* until
then, and lookups leave gone handles out (:func:`probe`).
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: Texts a segment is written for (the tail's size at most, give or take a batch).
FLUSH_DOCS = 1 << 14
#: Segments of one size merged into one (each key is rewritten log4(texts / FLUSH_DOCS) times).
FANOUT = 4
#: Pairs of each segment a merge reads at a time.
MERGE_BLOCK = 1 << 20
#: A segment is rewritten once its gone texts are this share of those it holds.
GONE_SHARE = 0.25

_EMPTY_I64 = np.zeros(0, np.int64)
_EMPTY_U64 = np.zeros(0, np.uint64)


class KeyStoreError(OSError):
    """A segment file could not be written (``errno`` says why; ENOSPC: the disk is full)."""


#: Keys a page of a segment's keys holds: a segment keeps every FENCE-th key in memory, so
#: that a lookup reads one page of the file (not the ~20 of a binary search through it).
FENCE = 512
#: Lookups of this many keys go through the fence (fewer: a binary search each costs less
#: than the block searches' numpy calls; more: the blocks would take more memory than the
#: pages they save).
FENCE_KEYS = (100, 1024)


@dataclass(frozen=True)
class Run:
    """Sorted ``(key, handle)`` pairs: ``keys`` (``uint64``, ascending; equal keys by handle)
    and ``handles`` (offsets from ``base``), in memory or memory-mapped; ``fence``: every
    ``FENCE``-th key, in memory (for a memory-mapped run)."""

    keys: np.ndarray
    handles: np.ndarray
    base: int = 0
    fence: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.keys)

    def bounds(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each key of ``q``: where its pairs start, and how many there are."""
        if (
            self.fence is None
            or len(self.keys) <= FENCE
            or not FENCE_KEYS[0] <= len(q) <= FENCE_KEYS[1]
        ):
            lo = np.searchsorted(self.keys, q, "left")
            return lo, np.searchsorted(self.keys, q, "right") - lo
        # the block of FENCE keys each bound falls in, from the fence in memory; then a binary
        # search inside that block only (one page of the file), all keys at once
        n = len(self.keys)
        out = []
        for side in ("left", "right"):
            lo = np.maximum(np.searchsorted(self.fence, q, side) - 1, 0) * FENCE
            hi = np.minimum(lo + FENCE, n)
            while True:
                open_ = lo < hi
                if not open_.any():
                    break
                mid = (lo + hi) >> 1
                k = self.keys[np.minimum(mid, n - 1)]
                right = open_ & ((k < q) if side == "left" else (k <= q))
                lo = np.where(right, mid + 1, lo)
                hi = np.where(open_ & ~right, mid, hi)
            out.append(lo)
        return out[0], out[1] - out[0]


@dataclass(frozen=True)
class Segment:
    """A segment file's run, with the handles it covers (``lo`` to ``hi``, both included),
    the texts it was written with, and its name (``NAME.k``, ``NAME.h`` and ``NAME.f`` in the
    folder)."""

    name: str
    lo: int
    hi: int
    docs: int
    run: Run

    @property
    def span(self) -> int:
        return self.hi - self.lo + 1

    def level(self, flush_docs: int) -> int:
        """Its size class: segments of one level are merged together (0: a flush's)."""
        level, size = 0, flush_docs * FANOUT
        while self.span >= size:
            level, size = level + 1, size * FANOUT
        return level


def sort_pairs(keys: np.ndarray, handles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, handles)`` in ``(key, handle)`` order, repeated pairs once."""
    if len(handles) < 2 or (handles[1:] >= handles[:-1]).all():
        order = np.argsort(keys, kind="stable")  # in handle order already: by key only
    else:
        order = np.lexsort((handles, keys))
    keys, handles = keys[order], handles[order]
    if len(keys) > 1:
        new = np.ones(len(keys), bool)
        new[1:] = (keys[1:] != keys[:-1]) | (handles[1:] != handles[:-1])
        if not new.all():
            keys, handles = keys[new], handles[new]
    return keys, handles


def pairs_of(rows: Iterable[tuple[int, bytes]]) -> tuple[np.ndarray, np.ndarray]:
    """The ``(key, handle)`` pairs of ``(handle, keys blob)`` rows, sorted (see
    :func:`sort_pairs`)."""
    hs: list[int] = []
    blobs: list[bytes] = []
    for h, blob in rows:
        hs.append(h)
        blobs.append(blob or b"")
    if not hs:
        return _EMPTY_U64, _EMPTY_I64
    sizes = np.fromiter((len(b) >> 3 for b in blobs), np.int64, len(blobs))
    keys = np.frombuffer(b"".join(blobs), "<u8").astype(np.uint64, copy=False)
    handles = np.repeat(np.asarray(hs, np.int64), sizes)
    return sort_pairs(keys, handles)  # rows read in handle order: sorted by key only


def new_name(lo: int, hi: int) -> str:
    return f"{lo:012d}-{hi:012d}-{secrets.token_hex(4)}"


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class _Writer:
    """Appends blocks of sorted pairs to the two files of a new segment, then makes it
    durable (written to ``.tmp`` names, fsynced, renamed)."""

    def __init__(self, folder: Path, lo: int, hi: int):
        self.folder, self.lo, self.hi = folder, lo, hi
        self.name = new_name(lo, hi)
        self.n = 0
        self._paths = [folder / f"{self.name}.{x}.tmp" for x in "khf"]
        try:
            folder.mkdir(exist_ok=True)
            self._files = [open(p, "wb") for p in self._paths]
        except OSError as e:
            raise KeyStoreError(e.errno, f"{folder}: cannot write a key segment ({e})") from e

    def write(self, keys: np.ndarray, handles: np.ndarray) -> None:
        if not len(keys):
            return
        off = handles - self.lo
        try:
            self._files[0].write(np.ascontiguousarray(keys, "<u8").tobytes())
            self._files[1].write(np.ascontiguousarray(off, "<u4").tobytes())
            # the fence: every FENCE-th key of the whole segment
            first = (-self.n) % FENCE
            self._files[2].write(np.ascontiguousarray(keys[first::FENCE], "<u8").tobytes())
        except OSError as e:
            self.abort()
            raise KeyStoreError(e.errno, f"{self.folder}: cannot write a key segment ({e})") from e
        self.n += len(keys)

    def finish(self) -> str:
        try:
            for f in self._files:
                f.flush()
                os.fsync(f.fileno())
                f.close()
            for p in self._paths:
                os.replace(p, p.with_suffix(""))
        except OSError as e:
            self.abort()
            raise KeyStoreError(e.errno, f"{self.folder}: cannot write a key segment ({e})") from e
        _fsync_dir(self.folder)
        return self.name

    def abort(self) -> None:
        for f in self._files:
            try:
                f.close()
            except OSError:
                pass
        for p in self._paths:
            for q in (p, p.with_suffix("")):
                try:
                    q.unlink()
                except OSError:
                    pass


def write_segment(folder: Path, lo: int, hi: int, keys: np.ndarray, handles: np.ndarray) -> str:
    """Write sorted pairs (handles within ``lo..hi``) as a new segment; its name."""
    w = _Writer(folder, lo, hi)
    w.write(keys, handles)
    return w.finish()


def open_segment(folder: Path, name: str, lo: int, hi: int, docs: int, n: int) -> Segment:
    """Map a segment's files; :class:`FileNotFoundError` if either is missing or not of the
    size its ``n`` pairs take (a segment lost or cut short: rebuilt from the index)."""
    kp, hp = folder / f"{name}.k", folder / f"{name}.h"
    for p, width in ((kp, 8), (hp, 4)):
        try:
            size = p.stat().st_size
        except OSError:
            raise FileNotFoundError(errno.ENOENT, "key segment missing", str(p)) from None
        if size != n * width:
            raise FileNotFoundError(errno.ENOENT, "key segment of the wrong size", str(p))
    if n == 0:
        return Segment(name, lo, hi, docs, Run(_EMPTY_U64, np.zeros(0, np.uint32), lo))
    # plain arrays over the maps (numpy's memmap subclass makes every slice an object of
    # its own, a cost per lookup)
    keys = np.asarray(np.memmap(kp, np.dtype("<u8"), "r", shape=(n,)))
    offs = np.asarray(np.memmap(hp, np.dtype("<u4"), "r", shape=(n,)))
    fence = None
    if n > FENCE:
        try:  # written with the segment: no page of the keys read to make it
            fence = np.fromfile(folder / f"{name}.f", "<u8")
        except OSError:
            pass
        if fence is None or len(fence) != -(-n // FENCE):
            fence = np.array(keys[::FENCE])  # a read of one key a page
    return Segment(name, lo, hi, docs, Run(keys, offs, lo, fence))


def remove_segment(folder: Path, name: str) -> None:
    for suffix in (".k", ".h", ".f"):
        try:
            (folder / f"{name}{suffix}").unlink()
        except OSError:
            pass


def merge_segments(folder: Path, parts: Sequence[Segment], gone: np.ndarray) -> Segment:
    """One segment of ``parts`` (adjacent, in handle order), without the pairs of ``gone``
    handles (sorted ``int64``): a streaming merge, ``MERGE_BLOCK`` pairs of each part at a
    time, so that memory does not grow with the segments' size."""
    lo, hi = parts[0].lo, parts[-1].hi
    w = _Writer(folder, lo, hi)
    at = [0] * len(parts)
    runs = [p.run for p in parts]
    try:
        while True:
            live = [i for i, r in enumerate(runs) if at[i] < len(r)]
            if not live:
                break
            # every key up to the smallest of the parts' next block ends: each key's pairs
            # all in this block, whichever part they come from
            bound = min(runs[i].keys[min(at[i] + MERGE_BLOCK, len(runs[i])) - 1] for i in live)
            ks, hs = [], []
            for i in live:  # parts in handle order: equal keys stay in handle order
                r = runs[i]
                end = at[i] + int(np.searchsorted(r.keys[at[i] :], bound, "right"))
                ks.append(np.asarray(r.keys[at[i] : end]))
                hs.append(np.asarray(r.handles[at[i] : end], np.int64) + r.base)
                at[i] = end
            keys, handles = np.concatenate(ks), np.concatenate(hs)
            if len(ks) > 1:
                order = np.argsort(keys, kind="stable")
                keys, handles = keys[order], handles[order]
            if len(gone):
                keep = ~member(handles, gone)
                keys, handles = keys[keep], handles[keep]
            w.write(keys, handles)
    except BaseException:
        w.abort()
        raise
    name = w.finish()
    docs = sum(p.docs for p in parts) - int(np.count_nonzero((gone >= lo) & (gone <= hi)))
    return open_segment(folder, name, lo, hi, max(docs, 0), w.n)


def probe(
    run: Run, q: np.ndarray, cap: int, gone: np.ndarray = _EMPTY_I64
) -> tuple[np.ndarray, np.ndarray]:
    """Who holds each of the keys ``q`` (``uint64``) in ``run``: ``(position in q, handle)``
    pairs, at most ``cap`` a key (the lowest handles), none of ``gone`` (sorted ``int64``)."""
    if not len(run) or not len(q):
        return _EMPTY_I64, _EMPTY_I64
    lo, n = run.bounds(q)
    hit = np.flatnonzero(n)
    if not len(hit):
        return _EMPTY_I64, _EMPTY_I64
    lo, n = lo[hit], n[hit]
    take = np.minimum(n, cap)
    pos, got = _gather(run, hit, lo, take)
    if not len(gone):
        return pos, got
    # gone handles read: read on for the keys they left short, a window twice as long each
    # round, until each key has ``cap`` live holders or none left
    while True:
        live = ~member(got, gone)
        have = np.bincount(np.searchsorted(hit, pos[live]), minlength=len(hit))
        short = np.flatnonzero((have < cap) & (take < n))
        if not len(short):
            break
        more = np.minimum(n[short] - take[short], np.maximum(take[short], cap))
        p2, g2 = _gather(run, hit[short], lo[short] + take[short], more)
        take = take.copy()
        take[short] += more
        pos, got = np.concatenate([pos, p2]), np.concatenate([got, g2])
        order = np.argsort(pos, kind="stable")  # a key's holders stay in handle order
        pos, got = pos[order], got[order]
    pos, got = pos[live], got[live]
    rank = np.arange(len(pos)) - np.searchsorted(pos, pos, "left")
    keep = rank < cap
    return pos[keep], got[keep]


def member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Which of ``values`` are in ``sorted_set`` (sorted, unique): a binary search each, so
    that a large set (the gone handles of a segment) costs no sort per call."""
    if not len(sorted_set) or not len(values):
        return np.zeros(len(values), bool)
    at = np.searchsorted(sorted_set, values)
    np.minimum(at, len(sorted_set) - 1, out=at)
    return sorted_set[at] == values


def _gather(
    run: Run, hit: np.ndarray, start: np.ndarray, take: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``start[i] .. start[i] + take[i]`` of ``run`` for each ``hit[i]``."""
    total = int(take.sum())
    if not total:
        return _EMPTY_I64, _EMPTY_I64
    ends = np.cumsum(take)
    idx = np.arange(total, dtype=np.int64) + np.repeat(start - (ends - take), take)
    got = np.asarray(run.handles[idx], np.int64)
    if run.base:
        got += run.base
    return np.repeat(hit, take), got
