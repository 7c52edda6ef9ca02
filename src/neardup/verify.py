"""Similarity of candidate pairs.

- :func:`jaccard_pairs`: exact Jaccard of the shingle sets, by merging the two sorted hash
  arrays (no Python set, no loop per pair in Python).
- :func:`estimate_pairs`: the MinHash estimate, the fraction of equal signature values.
- :func:`containment_pairs`: ``|A & B| / |A|``, how much of the left text the right one holds.
"""

from __future__ import annotations

import numpy as np

from ._arrays import sorted_unique
from ._jit import njit, prange
from .text.shingle import Shingles


@njit(cache=True, inline="always")
def _intersect_sorted(h, a0, a1, b0, b1):
    i, j, c = a0, b0, 0
    while i < a1 and j < b1:
        x, y = h[i], h[j]
        if x == y:
            c += 1
            i += 1
            j += 1
        elif x < y:
            i += 1
        else:
            j += 1
    return c


@njit(cache=True, parallel=True)
def _pair_overlap(hashes, starts, ends, left, right, mode):
    m = len(left)
    out = np.empty(m, np.float32)
    for p in prange(m):
        a, b = left[p], right[p]
        a0, a1, b0, b1 = starts[a], ends[a], starts[b], ends[b]
        na, nb = a1 - a0, b1 - b0
        inter = _intersect_sorted(hashes, a0, a1, b0, b1)
        if mode == 0:
            union = na + nb - inter
            out[p] = inter / union if union > 0 else 1.0
        else:
            out[p] = inter / na if na > 0 else 1.0
    return out


@njit(cache=True, parallel=True)
def _pair_estimate(sig, left, right):
    m = len(left)
    k = sig.shape[1]
    out = np.empty(m, np.float32)
    for p in prange(m):
        a, b = left[p], right[p]
        c = 0
        for j in range(k):
            if sig[a, j] == sig[b, j]:
                c += 1
        out[p] = c / k
    return out


@njit(cache=True, inline="always")
def _radix_sort32(seg, tmp, count):
    """Sort ``uint32`` values in place: LSD radix, 4 passes of 8 bits (5x numba's quicksort on
    the few hundred values of a shingle set)."""
    n = len(seg)
    src = seg
    dst = tmp
    for shift in (0, 8, 16, 24):
        sh = np.uint32(shift)
        for j in range(256):
            count[j] = 0
        for i in range(n):
            count[(src[i] >> sh) & np.uint32(255)] += 1
        total = 0
        for j in range(256):
            c = count[j]
            count[j] = total
            total += c
        for i in range(n):
            digit = (src[i] >> sh) & np.uint32(255)
            dst[count[digit]] = src[i]
            count[digit] += 1
        src, dst = dst, src
    # an even number of passes: the sorted values are back in seg


@njit(cache=True, parallel=True)
def _sort_unique_segments(hashes, offsets, docs):
    """Sort and deduplicate in place the segments ``hashes[offsets[d]:offsets[d+1]]`` of the
    documents ``docs``; return ``ends`` with ``ends[d]`` the end of the unique values of ``d``
    (for documents not in ``docs``: ``offsets[d+1]``, their segment left as it was)."""
    ends = offsets[1:].copy()
    for i in prange(len(docs)):
        d = docs[i]
        a = offsets[d]
        seg = hashes[a:offsets[d + 1]]
        _radix_sort32(seg, np.empty(len(seg), np.uint32), np.empty(256, np.int64))
        u = 0
        for j in range(len(seg)):
            if j == 0 or seg[j] != seg[u - 1]:
                seg[u] = seg[j]
                u += 1
        ends[d] = a + u
    return ends


def sort_unique_segments(hashes: np.ndarray, offsets: np.ndarray, docs: np.ndarray
                         ) -> np.ndarray:
    """Make the hash segments of ``docs`` sorted sets, in place; return the end of each set
    (``int64[n]``); the start of set ``d`` is ``offsets[d]``. Documents not listed keep their
    segments unsorted: only the listed ones may be passed to :func:`overlap_pairs`. ``hashes``
    must be ``uint32`` (the 32-bit fingerprints the pipeline keeps)."""
    if hashes.dtype != np.uint32:
        raise TypeError(f"hashes must be uint32, got {hashes.dtype}")
    docs = sorted_unique(np.asarray(docs, dtype=np.int64))
    return _sort_unique_segments(hashes, np.ascontiguousarray(offsets, dtype=np.int64), docs)


def overlap_pairs(hashes: np.ndarray, starts: np.ndarray, ends: np.ndarray, left: np.ndarray,
                  right: np.ndarray, containment: bool = False) -> np.ndarray:
    """Jaccard (or containment) of pairs of sorted sets ``hashes[starts[d]:ends[d]]``."""
    left, right = _as_pairs(left, right)
    return _pair_overlap(hashes, starts, ends, left, right, 1 if containment else 0)


def _as_pairs(left, right):
    return (np.ascontiguousarray(left, dtype=np.int64), np.ascontiguousarray(right, dtype=np.int64))


def jaccard_pairs(shingles: Shingles, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Exact Jaccard similarity of each pair ``(left[i], right[i])``: ``float32[m]``.

    Two empty sets have similarity 1.0 by convention.
    """
    left, right = _as_pairs(left, right)
    off = shingles.offsets
    return _pair_overlap(shingles.hashes, off[:-1], off[1:], left, right, 0)


def containment_pairs(shingles: Shingles, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``|A & B| / |A|`` for each pair with ``A = left[i]``, ``B = right[i]``: ``float32[m]``."""
    left, right = _as_pairs(left, right)
    off = shingles.offsets
    return _pair_overlap(shingles.hashes, off[:-1], off[1:], left, right, 1)


def estimate_pairs(signatures: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """MinHash estimate of Jaccard similarity of each pair: ``float32[m]``."""
    left, right = _as_pairs(left, right)
    return _pair_estimate(np.ascontiguousarray(signatures), left, right)
