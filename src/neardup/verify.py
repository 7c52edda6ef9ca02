"""Similarity of candidate pairs.

- :func:`jaccard_pairs`: exact Jaccard of the shingle sets, by merging the two sorted hash
  arrays (no Python set, no loop per pair in Python).
- :func:`estimate_pairs`: the MinHash estimate, the fraction of equal signature values.
- :func:`containment_pairs`: ``|A & B| / |A|``, how much of the left text the right one holds.
"""

from __future__ import annotations

import numpy as np

from ._arrays import check_pairs, check_segments, sorted_unique
from ._kernels import verify as _k
from ._threads import parallel
from .text.shingle import Shingles


def _overlap(hashes: np.ndarray, starts: np.ndarray, ends: np.ndarray, left: np.ndarray,
             right: np.ndarray, containment: bool) -> np.ndarray:
    hashes = np.ascontiguousarray(hashes)
    if hashes.dtype not in (np.uint32, np.uint64):
        hashes = hashes.astype(np.uint64)
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    check_segments(len(hashes), starts, ends, "sets")
    check_pairs(len(starts), left, right)
    out = np.empty(len(left), np.float32)
    mode = 1 if containment else 0
    parallel(lambda lo, hi: _k.pair_overlap(hashes, starts, ends, left, right, mode, out, lo,
                                            hi), len(left), min_weight=1 << 12)
    return out


def sort_unique_segments(hashes: np.ndarray, offsets: np.ndarray, docs: np.ndarray
                         ) -> np.ndarray:
    """Make the hash segments of ``docs`` sorted sets, in place; return the end of each set
    (``int64[n]``); the start of set ``d`` is ``offsets[d]``. Documents not listed keep their
    segments unsorted: only the listed ones may be passed to :func:`overlap_pairs`. ``hashes``
    must be ``uint32`` (the 32-bit fingerprints the pipeline keeps)."""
    if hashes.dtype != np.uint32:
        raise TypeError(f"hashes must be uint32, got {hashes.dtype}")
    docs = sorted_unique(np.asarray(docs, dtype=np.int64))
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    check_segments(len(hashes), offsets[:-1], offsets[1:])
    if len(docs) and (docs[0] < 0 or docs[-1] >= len(offsets) - 1):
        raise ValueError(f"docs must be segment numbers 0..{len(offsets) - 2}")
    ends = offsets[1:].copy()
    parallel(lambda lo, hi: _k.sort_unique_segments(hashes, offsets, docs, ends, lo, hi),
             len(docs), offsets[docs + 1] - offsets[docs], min_weight=1 << 16)
    return ends


def overlap_pairs(hashes: np.ndarray, starts: np.ndarray, ends: np.ndarray, left: np.ndarray,
                  right: np.ndarray, containment: bool = False) -> np.ndarray:
    """Jaccard (or containment) of pairs of sorted sets ``hashes[starts[d]:ends[d]]``."""
    left, right = _as_pairs(left, right)
    return _overlap(hashes, starts, ends, left, right, containment)


def _as_pairs(left, right):
    return (np.ascontiguousarray(left, dtype=np.int64), np.ascontiguousarray(right, dtype=np.int64))


def jaccard_pairs(shingles: Shingles, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Exact Jaccard similarity of each pair ``(left[i], right[i])``: ``float32[m]``.

    Two empty sets have similarity 1.0 by convention.
    """
    left, right = _as_pairs(left, right)
    off = shingles.offsets
    return _overlap(shingles.hashes, off[:-1], off[1:], left, right, False)


def containment_pairs(shingles: Shingles, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``|A & B| / |A|`` for each pair with ``A = left[i]``, ``B = right[i]``: ``float32[m]``."""
    left, right = _as_pairs(left, right)
    off = shingles.offsets
    return _overlap(shingles.hashes, off[:-1], off[1:], left, right, True)


def estimate_pairs(signatures: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """MinHash estimate of Jaccard similarity of each pair: ``float32[m]``."""
    left, right = _as_pairs(left, right)
    sig = np.ascontiguousarray(signatures, dtype=np.uint32)
    check_pairs(sig.shape[0], left, right)
    out = np.empty(len(left), np.float32)
    parallel(lambda lo, hi: _k.pair_estimate(sig, left, right, out, lo, hi), len(left),
             min_weight=1 << 12)
    return out
