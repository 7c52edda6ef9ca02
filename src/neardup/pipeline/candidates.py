"""Candidates: the pairs of distinct texts that share a band key (LSH).

:func:`find_candidates` is the step every engine runs over a whole corpus (from the band keys
it kept, or from whole signatures); :func:`run_candidates` the same search over one run of keys
that an engine gathered elsewhere (the Dask engine's shuffle buckets).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._arrays import sorted_unique
from ..lsh import CandidateStats, candidate_pairs, candidates_from_keys

__all__ = ["CandidateStats", "find_candidates", "find_candidates_by_band", "run_candidates"]

_NONE = np.zeros(0, np.int64)


def find_candidates(
    n: int,
    bands: int,
    rows: int,
    bucket_cap: int,
    keys: Sequence[np.ndarray] | None = None,
    signatures: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, CandidateStats]:
    """The candidate pairs of ``n`` distinct texts: ``left, right`` (``int64[m]``,
    ``left < right``, sorted, distinct) and what the search did. Either ``keys`` (one
    ``uint64[n]`` array per band; they are sorted in place, so the caller must not use them
    again) or ``signatures`` (``uint32[n, bands * rows]``)."""
    if n < 2:
        return _NONE, _NONE.copy(), CandidateStats(bands=bands, rows=rows, bucket_cap=bucket_cap)
    if keys is not None:
        left, right, stats = candidates_from_keys(list(keys), bucket_cap, overwrite=True)
        stats.rows = rows
        return left, right, stats
    if signatures is None:
        raise ValueError("find_candidates needs keys or signatures")
    return candidate_pairs(signatures, bands, rows, bucket_cap)


def run_candidates(
    keys: np.ndarray, bucket_cap: int
) -> tuple[np.ndarray, np.ndarray, CandidateStats]:
    """Candidate pairs among the positions of one band's ``keys`` (``uint64[n]``, sorted in
    place): :func:`find_candidates` over a single band, with its stats to merge."""
    return candidates_from_keys([keys], bucket_cap, overwrite=True)


def find_candidates_by_band(
    n: int,
    bands: int,
    rows: int,
    bucket_cap: int,
    band_keys: Callable[[int], np.ndarray],
    threads: int = 1,
) -> tuple[np.ndarray, np.ndarray, CandidateStats]:
    """:func:`find_candidates` over keys read one band at a time (``band_keys(b)``: the
    ``uint64[n]`` keys of band ``b``, which are sorted in place), ``threads`` bands at once:
    the same pairs and stats, holding only those bands' keys and the pairs found so far."""
    stats = CandidateStats(bands=bands, rows=rows, bucket_cap=bucket_cap)
    if n < 2:
        return _NONE, _NONE.copy(), stats

    def one(b: int) -> tuple[np.ndarray, CandidateStats]:
        left, right, st = candidates_from_keys([band_keys(b)], bucket_cap, overwrite=True)
        return (left.astype(np.uint64) << np.uint64(32)) | right.astype(np.uint64), st

    parts = []
    with ThreadPoolExecutor(max(1, min(threads, bands))) as pool:
        for enc, st in pool.map(one, range(bands)):
            stats.merge(st)
            if len(enc):
                parts.append(enc)
    enc = sorted_unique(np.concatenate(parts), overwrite=True) if parts else np.zeros(0, np.uint64)
    stats.candidates = len(enc)
    left = (enc >> np.uint64(32)).astype(np.int64)
    right = (enc & np.uint64(0xFFFFFFFF)).astype(np.int64)
    return left, right, stats
