"""Small array helpers shared by the stages."""

from __future__ import annotations

import errno
import mmap
import os

import numpy as np


def sorted_unique(x: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """The distinct values of a 1-D array, sorted: ``np.unique(x)`` by sorting.

    numpy 2's hash-based ``np.unique`` measured 40x slower than this on the large integer
    arrays of the pipeline (0.36 s against 0.009 s on 377k values). ``overwrite=True`` sorts
    ``x`` itself instead of a copy."""
    x = np.ravel(x)
    s = x if overwrite else x.copy()
    s.sort()
    if len(s) < 2:
        return s
    return s[np.concatenate(([True], s[1:] != s[:-1]))]


def check_pairs(n: int, left: np.ndarray, right: np.ndarray) -> None:
    """Raise ``ValueError`` unless ``left`` and ``right`` have one length and every member is a
    row ``0..n-1``: the compiled kernels index arrays by these numbers without checking."""
    if len(left) != len(right):
        raise ValueError(f"left and right differ in length ({len(left)} and {len(right)})")
    for side in (left, right):
        if len(side) and (side.min() < 0 or side.max() >= n):
            raise ValueError(f"pair members must be rows 0..{n - 1}")


def check_segments(size: int, starts: np.ndarray, ends: np.ndarray, what: str = "segments") -> None:
    """Raise ``ValueError`` unless every segment ``[starts[i], ends[i])`` lies inside an array of
    ``size`` values (``starts`` and ``ends`` of one length): the compiled kernels read them
    without checking."""
    if len(starts) != len(ends):
        raise ValueError(f"{what}: {len(starts)} starts but {len(ends)} ends")
    if len(starts) and (starts.min() < 0 or ends.max() > size or (ends < starts).any()):
        raise ValueError(f"{what} must lie within the {size} values they index")


class Growable:
    """An append-only 1-D array in a private anonymous memory map that grows in place.

    Appending copies a part in and lets it go at once, so the index never exists twice in memory
    (no concatenation at the end). Growing remaps pages (``mremap``) instead of copying them, and
    pages not yet written are not resident, so doubling the capacity costs no memory.
    """

    def __init__(self, dtype, capacity: int = 1 << 16):
        self._dtype = np.dtype(dtype)
        self._cap = capacity
        # Plain 4 KB pages on purpose: with MADV_HUGEPAGE the kernel zeroes (and may compact
        # for) 2 MB at each fault, which measured 2-4x more system time for the index at 1M
        # documents than small pages (benchmarks/README.md, "Where the time goes").
        self._map: mmap.mmap | None = mmap.mmap(
            -1, capacity * self._dtype.itemsize, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
        )
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def append(self, part: np.ndarray) -> None:
        part = part.reshape(-1)
        view = self.reserve(len(part))
        view[:] = part
        del view  # the map cannot be resized while a view of it exists
        self.commit(len(part))

    def reserve(self, m: int) -> np.ndarray:
        """A writable view of the next ``m`` free elements (growing as needed); fill it, drop it,
        then :meth:`commit` them. Lets a kernel write its output straight into the index."""
        assert self._map is not None, "Growable used after take()"
        need = self._n + m
        if need > self._cap:
            self._cap = max(need, 2 * self._cap)
            self._map.resize(self._cap * self._dtype.itemsize)
        return np.frombuffer(self._map, self._dtype, count=m, offset=self._n * self._dtype.itemsize)

    def commit(self, m: int) -> None:
        """Count the ``m`` elements written through the last :meth:`reserve` as appended."""
        if self._n + m > self._cap:
            raise ValueError("commit() past the reserved capacity")
        self._n += m

    def read(self, idx: np.ndarray) -> np.ndarray:
        """A copy of the appended values at the positions ``idx`` (the map may grow again
        afterwards: the copy does not hold it)."""
        assert self._map is not None, "read() after take()"
        view = np.frombuffer(self._map, self._dtype, count=self._n)
        out = view[idx]
        del view
        return out

    def take(self) -> np.ndarray:
        """The appended values as one array backed by the map, trimmed to size (no copy)."""
        m, n = self._map, self._n
        assert m is not None, "Growable used after take()"
        self._map, self._n, self._cap = None, 0, 0
        if n == 0:
            m.close()
            return np.empty(0, self._dtype)
        m.resize(n * self._dtype.itemsize)
        return np.frombuffer(m, self._dtype, count=n)


_DIRECT_READERS = 4  # threads reading past the page cache (see _read_ranges)


def read_ranges(
    path: str | os.PathLike,
    dtype: np.dtype,
    starts: np.ndarray,
    ends: np.ndarray,
    window: int = 256 << 10,
    direct: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The values of the element ranges ``[starts[i], ends[i])`` of a file of ``dtype`` values
    one after another, and where each begins (``offsets``, one more than the ranges): read by
    the compiled kernel on every thread, a window of the file at a time, so that neighbouring
    ranges cost one read (ranges in increasing order read fastest); ``window``: the bytes read
    at most at a time. ``direct``: read past the page cache (``O_DIRECT``, in aligned blocks)
    where the system and the file system allow it, for a file read once that is not cached
    (filling the page cache costs a processor about 1.5 s per GB); plainly elsewhere."""
    flag = getattr(os, "O_DIRECT", 0) if direct else 0
    if flag:
        try:
            return _read_ranges(path, dtype, starts, ends, window, flag)
        except OSError as e:
            if e.errno != errno.EINVAL:  # EINVAL: a file system that takes no O_DIRECT
                raise
    return _read_ranges(path, dtype, starts, ends, window, 0)


def _read_ranges(
    path: str | os.PathLike,
    dtype: np.dtype,
    starts: np.ndarray,
    ends: np.ndarray,
    window: int,
    flag: int,
) -> tuple[np.ndarray, np.ndarray]:
    from ._kernels import copyout as _copy  # type: ignore[attr-defined]  # compiled: no stubs
    from ._threads import get_num_threads, parallel, set_num_threads

    dtype = np.dtype(dtype)
    starts = np.ascontiguousarray(starts, np.int64)
    ends = np.ascontiguousarray(ends, np.int64)
    sizes = ends - starts
    offsets = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype)
    if len(out) == 0:
        return out, offsets
    size = dtype.itemsize
    b_starts, b_ends, b_dest = starts * size, ends * size, offsets[:-1] * size
    raw = out.view(np.uint8)
    fd = os.open(path, os.O_RDONLY | flag)
    errors: list[int] = []
    try:

        def part(lo: int, hi: int) -> None:
            rc = _copy.read_ranges(fd, b_starts, b_ends, raw, b_dest, lo, hi, window, bool(flag))
            if rc:
                errors.append(rc)

        if flag:
            # reads past the page cache wait on the disk, not on a processor: at least four
            # at a time keep it busy (1.45 -> 1.55 GB/s at 256 KB on an SSD, measured)
            before = get_num_threads()
            set_num_threads(max(before, _DIRECT_READERS))
            try:
                parallel(part, len(starts), sizes * size, min_weight=1 << 20)
            finally:
                set_num_threads(before)
        else:
            parallel(part, len(starts), sizes * size, min_weight=1 << 20)
    finally:
        os.close(fd)
    if errors:
        rc = errors[0]
        raise OSError(
            rc if rc > 0 else 5, f"{path}: {os.strerror(rc) if rc > 0 else 'ended early'}"
        )
    return out, offsets
