"""Locality-sensitive hashing over MinHash signatures (banding).

A signature of ``bands * rows`` values is cut into ``bands`` bands of ``rows`` values; two
documents become a candidate pair when all rows of at least one band agree. For two documents
of Jaccard similarity ``s`` that happens with probability ``1 - (1 - s**rows)**bands``: the
S-curve. :func:`choose_bands` picks ``(bands, rows)`` for a threshold so that a pair sitting
exactly at the threshold is found with probability at least ``min_recall`` (0.9 by default),
and among those choices takes the one with the fewest expected false positives.

Candidates come from sorting each band's keys and pairing the documents within each run of
equal keys; no dictionary per bucket. The document number is packed into the low bits of its
key (``ceil(log2(n))`` bits; the key keeps the rest, at least 32 bits), so one plain sort of 64-bit
integers per band gives both the runs and their members; bands are sorted in parallel. Runs
longer than ``bucket_cap`` (boilerplate) are linked as a star to their first document and
reported, instead of exploding into cap**2 pairs.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import overload

import numpy as np

from ._arrays import sorted_unique
from ._kernels import lsh as _k  # type: ignore[attr-defined]  # compiled: no stubs
from ._records import record
from ._threads import get_num_threads, parallel
from .config import check_banding, check_threshold
from .errors import ConfigError
from .validate import check_int, check_real


@overload
def s_curve(s: float, bands: int, rows: int) -> float: ...
@overload
def s_curve(s: np.ndarray, bands: int, rows: int) -> np.ndarray: ...
def s_curve(s: np.ndarray | float, bands: int, rows: int) -> np.ndarray | float:
    """Probability that a pair of Jaccard similarity ``s`` becomes a candidate (a float for a
    number, an array for an array)."""
    s = np.asarray(s, dtype=np.float64)
    p = 1.0 - (1.0 - s**rows) ** bands
    return float(p) if p.ndim == 0 else p


def _area(bands: int, rows: int, lo: float, hi: float, n: int = 401) -> float:
    xs = np.linspace(lo, hi, n)
    return (
        float(np.trapezoid(s_curve(xs, bands, rows), xs))
        if hasattr(np, "trapezoid")
        else float(np.trapz(s_curve(xs, bands, rows), xs))  # type: ignore[attr-defined]  # numpy < 2
    )


def false_positive_area(bands: int, rows: int, threshold: float) -> float:
    """Integral of the S-curve below the threshold: the expected share of dissimilar pairs
    (uniform over similarity) that become candidates."""
    return _area(bands, rows, 0.0, threshold)


def false_negative_area(bands: int, rows: int, threshold: float) -> float:
    """Integral of ``1 - S-curve`` above the threshold: the expected share of similar pairs
    (uniform over similarity) that are missed."""
    return (1.0 - threshold) - _area(bands, rows, threshold, 1.0)


def choose_bands(
    threshold: float,
    num_perm: int,
    min_recall: float = 0.9,
    fp_weight: float = 1.0,
    fn_weight: float = 1.0,
) -> tuple[int, int]:
    """Choose ``(bands, rows)`` with ``bands * rows <= num_perm``.

    Among the choices whose S-curve at ``threshold`` is at least ``min_recall``, return the one
    minimising ``fp_weight * FP area + fn_weight * FN area``. If no choice reaches
    ``min_recall`` (tiny ``num_perm``), return the one with the highest recall at the threshold.
    Compare datasketch's ``_optimal_param``, which weighs the areas equally with no recall floor
    and at 0.8/128 picks 9x13, finding only about 40% of the pairs at the threshold.
    """
    threshold = check_threshold(threshold)
    num_perm = check_int("num_perm", num_perm, 1)
    min_recall = check_real("min_recall", min_recall, 0.0, 1.0)
    best, best_cost = None, np.inf
    fallback, fallback_p = (num_perm, 1), -1.0
    for rows in range(1, num_perm + 1):
        bands = num_perm // rows
        p = s_curve(threshold, bands, rows)
        if p > fallback_p:
            fallback, fallback_p = (bands, rows), p
        if p < min_recall:
            continue
        cost = fp_weight * false_positive_area(
            bands, rows, threshold
        ) + fn_weight * false_negative_area(bands, rows, threshold)
        if cost < best_cost - 1e-12:
            best, best_cost = (bands, rows), cost
    return best if best is not None else fallback


def lsh_params(lsh, num_perm: int) -> tuple[int, int]:
    """The (bands, rows) of an :class:`~neardup.LSHConfig` for ``num_perm`` values: as given,
    completed from one of them, or chosen for its threshold by :func:`choose_bands`."""
    if lsh.bands is not None and lsh.rows is not None:
        return lsh.bands, lsh.rows
    if lsh.rows is not None:
        return num_perm // lsh.rows, lsh.rows
    if lsh.bands is not None:
        return lsh.bands, num_perm // lsh.bands
    return choose_bands(lsh.threshold, num_perm, lsh.min_recall)


def band_keys(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """One 64-bit key per (band, document): ``uint64[bands, n]``."""
    sig = np.ascontiguousarray(signatures)
    check_banding(sig.shape[1], bands, rows)
    if sig.dtype not in (np.uint32, np.uint64):
        sig = sig.astype(np.uint64)
    n = sig.shape[0]
    keys = np.empty((bands, n), np.uint64)
    parallel(lambda lo, hi: _k.band_keys(sig, bands, rows, keys, lo, hi), n, min_weight=1 << 13)
    return keys


def _runs_to_pairs(
    packed: np.ndarray, idbits: int, ids: np.ndarray, cap: int
) -> tuple[np.ndarray, int, int, int]:
    """Pairs (encoded ``lo << 32 | hi`` of ``ids``, in the order of their runs) within runs of
    equal keys of the sorted ``packed`` keys; runs longer than ``cap`` become stars around
    their first member. A document has one key per band, so it is in one run and the pairs of
    one band's keys are distinct (for distinct ``ids``). Returns the pairs, the capped runs,
    their documents and the longest run."""
    total, capped, capped_docs, largest = _k.count_run_pairs(packed, idbits, cap)
    out = np.empty(total, np.uint64)
    _k.emit_run_pairs(packed, idbits, ids, cap, out)
    return out, capped, capped_docs, largest


@record
class CandidateStats:
    """What candidate generation did, for the summary."""

    bands: int = 0
    rows: int = 0
    bucket_cap: int = 0
    raw_pairs: int = 0  # pairs emitted over all bands, before removing repeats
    candidates: int = 0  # distinct candidate pairs
    capped_buckets: int = 0  # buckets larger than the cap (linked as stars)
    capped_bucket_docs: int = 0
    largest_bucket: int = 0

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def merge(self, other: CandidateStats) -> CandidateStats:
        """Add the counts of ``other`` (candidates found elsewhere: another band, another
        shuffle bucket) to these; returns ``self``."""
        self.raw_pairs += other.raw_pairs
        self.candidates += other.candidates
        self.capped_buckets += other.capped_buckets
        self.capped_bucket_docs += other.capped_bucket_docs
        self.largest_bucket = max(self.largest_bucket, other.largest_bucket)
        return self


# Bands of this many documents or more drop their keys that meet no other before sorting
# (_k.keep_repeats), with a table of at most 2**_REPEAT_TABLE_MAX_BITS values (two bits each).
_REPEAT_FILTER_MIN = 4096
_REPEAT_TABLE_MAX_BITS = 26


def id_bits(n: int) -> int:
    """Bits that hold a document number of ``n`` documents in the low end of a packed band key
    (at least 1)."""
    return max(1, (int(n) - 1).bit_length())


def key_mask(idbits: int) -> np.uint64:
    """The bits of a band key that :func:`candidates_from_keys` compares when it packs
    ``idbits`` bits of document number into the low end: keys equal under this mask meet."""
    return ~np.uint64((1 << idbits) - 1)


def candidate_pairs(
    signatures: np.ndarray,
    bands: int,
    rows: int,
    bucket_cap: int = 500,
    rows_subset: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, CandidateStats]:
    """Candidate pairs of the signature matrix's rows, found by sorting band keys.

    Returns ``left, right`` (``int64[m]``, ``left < right``, sorted, distinct) and the stats.
    ``rows_subset`` restricts LSH to those rows (numbers still refer to the full matrix).
    """
    sig = signatures if rows_subset is None else signatures[rows_subset]
    keys = band_keys(sig, bands, rows)
    left, right, stats = candidates_from_keys(list(keys), bucket_cap, rows_subset, overwrite=True)
    stats.rows = rows
    return left, right, stats


def candidates_from_keys(
    keys: list[np.ndarray],
    bucket_cap: int = 500,
    ids: np.ndarray | None = None,
    overwrite: bool = False,
) -> tuple[np.ndarray, np.ndarray, CandidateStats]:
    """Candidate pairs from precomputed band keys: one ``uint64[n]`` array per band, as
    :func:`band_keys` returns them (the pipeline computes them chunk by chunk and keeps only
    the keys, 8 bytes per band and document, instead of the signatures).

    ``ids`` (``int64[n]``) renumbers the documents in the output (default ``0..n-1``).
    ``overwrite=True`` packs and sorts the given arrays in place (no copy); otherwise they are
    left untouched. Returns ``left, right`` (``int64[m]``, ``left < right``, sorted, distinct)
    and the stats (``rows`` is not known here and left 0).
    """
    n = len(keys[0]) if len(keys) else 0
    ids = np.arange(n, dtype=np.int64) if ids is None else np.ascontiguousarray(ids, np.int64)
    if len(ids) != n or any(len(k) != n for k in keys):
        raise ValueError("every band needs one key per document (and one id per document)")
    if n >= 2**32:
        raise ConfigError("candidate pairs handles at most 2**32-1 documents per call")
    stats = CandidateStats(bands=len(keys), bucket_cap=bucket_cap)
    # The row number goes into the low bits of each key (the key keeps at least 32 bits), so one
    # plain sort of 64-bit integers per band gives both the runs and their members.
    idbits = id_bits(n)
    mask = key_mask(idbits)

    # Most keys of a band meet no other: a pass over a table of their top bits (16 values per
    # document, 4 bytes) drops most of those before the sort, which then sorts about a
    # quarter of the keys (a million documents, 21 bands on one thread: the filter and the
    # sort 0.21 s, against 0.26 s with a byte per value and 4 values per document).
    table_bits = min(_REPEAT_TABLE_MAX_BITS, max(10, n.bit_length() + 4))

    def one_band(row: np.ndarray):
        packed = row if overwrite else row.copy()
        _k.pack_ids(packed, mask)
        if n >= _REPEAT_FILTER_MIN:
            packed = packed[: _k.keep_repeats(packed, table_bits)]
        packed.sort()  # numpy's sort releases the GIL: bands run in parallel
        enc, capped, capped_docs, largest = _runs_to_pairs(packed, idbits, ids, bucket_cap)
        # a key that met no other was a run of one
        return enc, capped, capped_docs, max(largest, 1) if n else largest

    threads = max(1, min(len(keys), get_num_threads()))
    with ThreadPoolExecutor(threads) as pool:
        results = list(pool.map(one_band, keys))
    parts = []
    for enc, capped, capped_docs, largest in results:
        stats.merge(
            CandidateStats(
                raw_pairs=len(enc),
                capped_buckets=capped,
                capped_bucket_docs=capped_docs,
                largest_bucket=int(largest),
            )
        )
        if len(enc):
            parts.append(enc)
    del results
    enc = sorted_unique(np.concatenate(parts), overwrite=True) if parts else np.zeros(0, np.uint64)
    stats.candidates = len(enc)
    left = (enc >> np.uint64(32)).astype(np.int64)
    right = (enc & np.uint64(0xFFFFFFFF)).astype(np.int64)
    return left, right, stats
