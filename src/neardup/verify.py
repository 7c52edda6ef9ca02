"""Similarity of candidate pairs.

- :func:`jaccard_pairs`: exact Jaccard of the shingle sets, by merging the two sorted hash
  arrays (no Python set, no loop per pair in Python).
- :func:`estimate_pairs`: the MinHash estimate, the fraction of equal signature values.
- :func:`containment_pairs`: ``|A & B| / |A|``, how much of the left text the right one holds.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

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
def _pair_overlap(hashes, offsets, left, right, mode):
    m = len(left)
    out = np.empty(m, np.float32)
    for p in prange(m):
        a, b = left[p], right[p]
        a0, a1, b0, b1 = offsets[a], offsets[a + 1], offsets[b], offsets[b + 1]
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


def _as_pairs(left, right):
    return (np.ascontiguousarray(left, dtype=np.int64), np.ascontiguousarray(right, dtype=np.int64))


def jaccard_pairs(shingles: Shingles, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Exact Jaccard similarity of each pair ``(left[i], right[i])``: ``float32[m]``.

    Two empty sets have similarity 1.0 by convention.
    """
    left, right = _as_pairs(left, right)
    return _pair_overlap(shingles.hashes, shingles.offsets, left, right, 0)


def containment_pairs(shingles: Shingles, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``|A & B| / |A|`` for each pair with ``A = left[i]``, ``B = right[i]``: ``float32[m]``."""
    left, right = _as_pairs(left, right)
    return _pair_overlap(shingles.hashes, shingles.offsets, left, right, 1)


def estimate_pairs(signatures: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """MinHash estimate of Jaccard similarity of each pair: ``float32[m]``."""
    left, right = _as_pairs(left, right)
    return _pair_estimate(np.ascontiguousarray(signatures), left, right)
