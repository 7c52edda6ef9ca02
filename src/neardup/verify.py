"""Similarity of candidate pairs.

- :func:`jaccard_pairs`: exact Jaccard of the shingle sets, by merging the two sorted hash
  arrays (no Python set, no loop per pair in Python).
- :func:`estimate_pairs`: the MinHash estimate, the fraction of equal signature values.
- :func:`containment_pairs`: ``|A & B| / |A|``, how much of the left text the right one holds.
"""

from __future__ import annotations

import numpy as np

from ._arrays import check_pairs, check_segments, sorted_unique
from ._kernels import verify as _k  # type: ignore[attr-defined]  # compiled: no stubs
from ._threads import parallel
from .text.shingle import Shingles


def _overlap(
    hashes: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    containment: bool,
) -> np.ndarray:
    hashes = np.ascontiguousarray(hashes)
    if hashes.dtype not in (np.uint32, np.uint64):
        hashes = hashes.astype(np.uint64)
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    check_segments(len(hashes), starts, ends, "sets")
    check_pairs(len(starts), left, right)
    out = np.empty(len(left), np.float32)
    mode = 1 if containment else 0
    parallel(
        lambda lo, hi: _k.pair_overlap(hashes, starts, ends, left, right, mode, out, lo, hi),
        len(left),
        min_weight=1 << 12,
    )
    return out


def sort_unique_segments(hashes: np.ndarray, offsets: np.ndarray, docs: np.ndarray) -> np.ndarray:
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
    parallel(
        lambda lo, hi: _k.sort_unique_segments(hashes, offsets, docs, ends, lo, hi),
        len(docs),
        offsets[docs + 1] - offsets[docs],
        min_weight=1 << 16,
    )
    return ends


def unsorted_overlap_pairs(
    hashes: np.ndarray,
    offsets: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    containment: bool = False,
) -> np.ndarray:
    """Jaccard (or containment) of pairs of sets given as the unsorted segments
    ``hashes[offsets[d]:offsets[d+1]]`` (repeats allowed) of 32-bit fingerprints: what
    :func:`sort_unique_segments` and :func:`overlap_pairs` give, without sorting anything.

    Each pair's two segments are counted through a small hash table of its own (a few KB, in
    the processor's cache), so the time is linear in the pairs' sizes and the segments are
    left as they are. Where each document is in a pair or two, as among the candidates of a
    deduplication, this took 0.05 s for the 21,511 candidate pairs of 100,000 documents,
    against 0.10-0.16 s for sorting their documents' segments and merging."""
    if hashes.dtype != np.uint32:
        raise TypeError(f"hashes must be uint32, got {hashes.dtype}")
    hashes = np.ascontiguousarray(hashes)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    left, right = _as_pairs(left, right)
    check_segments(len(hashes), offsets[:-1], offsets[1:])
    check_pairs(len(offsets) - 1, left, right)
    out = np.empty(len(left), np.float32)
    mode = 1 if containment else 0
    sizes = (offsets[left + 1] - offsets[left]) + (offsets[right + 1] - offsets[right])
    parallel(
        lambda lo, hi: _k.pair_overlap_unsorted(hashes, offsets, left, right, mode, out, lo, hi),
        len(left),
        sizes,
        min_weight=1 << 16,
    )
    return out


def overlap_pairs(
    hashes: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    containment: bool = False,
) -> np.ndarray:
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
    parallel(
        lambda lo, hi: _k.pair_estimate(sig, left, right, out, lo, hi),
        len(left),
        min_weight=1 << 12,
    )
    return out
