"""Verification: the similarity of candidate pairs, and the pairs at or over a threshold.

A *measure* says how similar two distinct texts are, by their numbers: the exact Jaccard
similarity of their shingle sets (:class:`ShingleSets`, sets kept sorted; :class:`ShingleBags`,
fingerprints kept as shingled, with repeats) or the MinHash estimate of their signatures
(:class:`Signatures`). :func:`verify_pairs` is the step every engine and the online index run
over their candidates.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import numpy as np

from .._threads import get_num_threads, set_num_threads
from ..result import JACCARD, MINHASH
from ..verify import estimate_pairs, overlap_pairs, sort_unique_segments, unsorted_overlap_pairs

__all__ = [
    "Measure",
    "ShingleSets",
    "ShingleBags",
    "ShingleRanges",
    "Signatures",
    "sort_sets",
    "verify_pairs",
]


class Measure(Protocol):
    """What verification and clustering ask of a similarity: ``pairs(a, b)``, the
    ``float32`` similarity of each pair ``(a[i], b[i])``, and ``method``, its code in the
    pairs table (:data:`neardup.result.JACCARD`, ...)."""

    method: int

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray: ...


class ShingleSets:
    """Exact Jaccard similarity of sorted, distinct shingle sets:
    ``hashes[starts[i]:ends[i]]`` is text ``i``'s set."""

    method = JACCARD

    def __init__(self, hashes: np.ndarray, starts: np.ndarray, ends: np.ndarray):
        self.hashes, self.starts, self.ends = hashes, starts, ends

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return overlap_pairs(self.hashes, self.starts, self.ends, a, b)


class ShingleBags:
    """Exact Jaccard similarity of shingle fingerprints kept as they were shingled (unsorted,
    with repeats): ``hashes[offsets[i]:offsets[i + 1]]`` is text ``i``'s."""

    method = JACCARD

    def __init__(self, hashes: np.ndarray, offsets: np.ndarray):
        self.hashes, self.offsets = hashes, offsets

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return unsorted_overlap_pairs(self.hashes, self.offsets, a, b)


class ShingleRanges:
    """:class:`ShingleBags` whose fingerprints are read when asked for, a batch of pairs at a
    time (a store on disk): ``ranges(starts, ends)`` gives the fingerprints of the ranges
    ``[starts[i], ends[i])`` one after another and where each begins; text ``i``'s are the range
    ``[offsets[i], offsets[i + 1])``. A batch holds at most about ``batch_bytes`` of
    fingerprints (both texts of each pair counted); the next batch is read while one is
    measured, so two are held at a time."""

    method = JACCARD

    def __init__(
        self,
        ranges: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
        offsets: np.ndarray,
        batch_bytes: int = 256 << 20,
    ):
        self.ranges, self.offsets, self.batch_bytes = ranges, offsets, batch_bytes

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a = np.asarray(a, np.int64)
        b = np.asarray(b, np.int64)
        out = np.empty(len(a), np.float32)
        off = self.offsets
        weight = np.cumsum((off[a + 1] - off[a]) + (off[b + 1] - off[b])) * 4
        cuts, lo, n = [], 0, len(a)
        while lo < n:
            base = int(weight[lo - 1]) if lo else 0
            hi = max(int(np.searchsorted(weight, base + self.batch_bytes, side="right")), lo + 1)
            cuts.append((lo, hi))
            lo = hi
        if not cuts:
            return out

        def load(lo: int, hi: int):
            docs, at = np.unique(np.concatenate((a[lo:hi], b[lo:hi])), return_inverse=True)
            hashes, local = self.ranges(off[docs], off[docs + 1])
            return hashes, local, at

        if len(cuts) == 1:
            hashes, local, at = load(*cuts[0])
            k = len(a)
            out[:] = unsorted_overlap_pairs(hashes, local, at[:k], at[k:])
            return out
        # The next batch is read (from the disk, where the reads wait) while this one is
        # measured: two batches in memory at a time.
        threads = get_num_threads()
        with ThreadPoolExecutor(
            1, thread_name_prefix="neardup-read", initializer=set_num_threads, initargs=(threads,)
        ) as pool:
            ahead = pool.submit(load, *cuts[0])
            for i, (lo, hi) in enumerate(cuts):
                hashes, local, at = ahead.result()
                if i + 1 < len(cuts):
                    ahead = pool.submit(load, *cuts[i + 1])
                k = hi - lo
                out[lo:hi] = unsorted_overlap_pairs(hashes, local, at[:k], at[k:])
                del hashes, local, at
        return out


class Signatures:
    """The MinHash estimate: the fraction of equal values of two rows of ``signatures``."""

    method = MINHASH

    def __init__(self, signatures: np.ndarray):
        self.signatures = signatures

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return estimate_pairs(self.signatures, a, b)


def sort_sets(hashes: np.ndarray, offsets: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """Make the fingerprint segments of ``docs`` sorted sets in place, for :class:`ShingleSets`;
    returns each segment's new end (:func:`neardup.verify.sort_unique_segments`)."""
    return sort_unique_segments(hashes, offsets, docs)


def verify_pairs(
    measure: Measure, left: np.ndarray, right: np.ndarray, threshold: float | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs ``(left[i], right[i])`` whose similarity is at least ``threshold``, with it:
    ``(left, right, similarity)``, in their order. ``threshold=None`` keeps every pair."""
    sim = measure.pairs(left, right)
    if threshold is None:
        return left, right, sim
    ok = sim >= np.float32(threshold)
    return left[ok], right[ok], sim[ok]
