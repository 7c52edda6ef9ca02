"""MinHash signatures: ``uint32[n, num_perm]``, one row per document.

Two schemes, both with collision probability equal to the Jaccard similarity:

- ``"oph"`` (default): one-permutation hashing with optimal densification (Shrivastava, ICML
  2017). Each shingle is hashed once; the hash picks one of ``num_perm`` bins and the bin keeps
  its minimum. Empty bins borrow the value of a non-empty bin found by a bin-specific probe
  sequence shared by all documents. O(n + k log k) per document instead of O(n k).
- ``"classic"``: k independent universal hashes ``(a*x + b) mod (2**61 - 1)`` (seed 004's
  scheme, datasketch's too), the minimum of each over the document's shingles. O(n k).

The stored value is the low 32 bits of the winning hash: two different minima collide with
probability 2**-32. An empty document's signature is all ``EMPTY`` (0xFFFFFFFF); neardup keeps
empty documents out of LSH.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._hash import MASK32, U64, fmix64, reduce_range
from ._jit import is_cached, njit, prange
from .config import ShingleConfig, SketchConfig
from .text.normalize import NormalizedBatch
from .text.shingle import (
    Shingles,
    count_units,
    doc_shingles,
    kind_code,
    n_shingles,
    shingle_batch,
)

EMPTY = np.uint32(0xFFFFFFFF)
MERSENNE61 = (1 << 61) - 1
_P61 = U64(MERSENNE61)
_S61 = U64(61)
_S32 = U64(32)
_S29 = U64(29)
_S3 = U64(3)
_LOW29 = U64((1 << 29) - 1)
_NOVAL = U64(1 << 32)  # above every 32-bit value: marks an empty OPH bin


def _seed_words(seed: int) -> tuple[int, int]:
    rng = np.random.Generator(np.random.PCG64(seed))
    w = rng.integers(0, 2**63, size=2, dtype=np.int64)
    return int(w[0]) | 1, int(w[1]) | 1


@njit(cache=True, inline="always")
def mod61(x):
    """``x mod (2**61-1)`` for any uint64 ``x``."""
    r = (x & _P61) + (x >> _S61)
    if r >= _P61:
        r -= _P61
    return r


@njit(cache=True, inline="always")
def mulmod61(a, b):
    """``a*b mod (2**61-1)`` for ``a, b < 2**61``, exact, with 64-bit arithmetic only."""
    a_hi = a >> _S32
    a_lo = a & MASK32
    b_hi = b >> _S32
    b_lo = b & MASK32
    lo = a_lo * b_lo
    mid = a_hi * b_lo + a_lo * b_hi
    hi = a_hi * b_hi
    # a*b = hi*2**64 + mid*2**32 + lo, and 2**61 = 1 (mod p), so 2**64 = 8
    r = (lo & _P61) + (lo >> _S61) + (hi << _S3) + (mid >> _S29) + ((mid & _LOW29) << _S32)
    r = (r & _P61) + (r >> _S61)
    r = (r & _P61) + (r >> _S61)
    if r >= _P61:
        r -= _P61
    return r


@njit(cache=True, parallel=True, nogil=True)
def _classic_kernel(hashes, offsets, a, b):
    n = len(offsets) - 1
    k = len(a)
    out = np.empty((n, k), np.uint32)
    for d in prange(n):
        mins = np.full(k, _P61, np.uint64)
        for i in range(offsets[d], offsets[d + 1]):
            x = mod61(hashes[i])
            for j in range(k):
                v = mulmod61(a[j], x) + b[j]
                if v >= _P61:
                    v -= _P61
                if v < mins[j]:
                    mins[j] = v
        for j in range(k):
            out[d, j] = np.uint32(mins[j] & MASK32) if mins[j] < _P61 else np.uint32(0xFFFFFFFF)
    return out


@njit(cache=True, inline="always")
def _oph_row(hashes, a, b, s_bin, s_probe, bins, out_row):
    """OPH signature of ``hashes[a:b]`` into ``out_row`` (``bins``: scratch of the same size)."""
    k = len(out_row)
    for j in range(k):
        bins[j] = _NOVAL
    # No data-dependent branch in this loop (a min, not an if): filling bins is unpredictable
    # early in a document, and mispredictions cost more than the hashing itself.
    for i in range(a, b):
        h = fmix64(hashes[i] ^ s_bin)
        j = reduce_range(h, k)
        bins[j] = min(bins[j], h & MASK32)
    filled = 0
    for j in range(k):
        filled += bins[j] != _NOVAL
    if filled == 0:
        for j in range(k):
            out_row[j] = np.uint32(0xFFFFFFFF)
        return
    for j in range(k):
        if bins[j] != _NOVAL:
            out_row[j] = np.uint32(bins[j])
            continue
        # Optimal densification: probe bins with a hash of (bin, attempt) until a non-empty
        # one is found. The sequence depends only on (j, attempt), never on the document.
        t = U64(1)
        while True:
            src = reduce_range(fmix64(s_probe ^ (U64(j) << _S32) ^ t), k)
            if bins[src] != _NOVAL:
                out_row[j] = np.uint32(bins[src])
                break
            t += U64(1)


@njit(cache=True, parallel=True, nogil=True)
def _oph_kernel(hashes, offsets, k, s_bin, s_probe):
    n = len(offsets) - 1
    out = np.empty((n, k), np.uint32)
    for d in prange(n):
        bins = np.empty(k, np.uint64)
        _oph_row(hashes, offsets[d], offsets[d + 1], s_bin, s_probe, bins, out[d])
    return out


@njit(cache=True, parallel=True, nogil=True)
def _shingle_counts(data, offsets, docs, kind, sk, offset):
    """Units (words or characters) and shingles of each listed document: ``int64[n]`` each."""
    n = len(docs)
    units = np.zeros(n, np.int64)
    counts = np.zeros(n, np.int64)
    for i in prange(n):
        a, b = offsets[docs[i]], offsets[docs[i] + 1]
        units[i] = count_units(data, a, b, kind)
        counts[i] = n_shingles(units[i], sk, offset)
    return units, counts


@njit(cache=True, parallel=True, nogil=True)
def _shingle_oph_fill(data, offsets, docs, kind, sk, offset, k, s_bin, s_probe, units, out_off,
                      h32):
    """Shingle and sketch in one pass, without materialising the 64-bit shingle hashes.

    Returns the OPH signatures ``uint32[n, k]`` and writes, for verification, the high 32 bits of
    every shingle hash of document ``i`` (in text order, repeats kept) to
    ``h32[out_off[i]:out_off[i+1]]``.
    """
    n = len(docs)
    sig = np.empty((n, k), np.uint32)
    for i in prange(n):
        a, b = offsets[docs[i]], offsets[docs[i] + 1]
        m = out_off[i + 1] - out_off[i]
        tmp = np.empty(m, np.uint64)
        doc_shingles(data, a, b, kind, sk, offset, units[i], tmp)
        bins = np.empty(k, np.uint64)
        _oph_row(tmp, 0, m, s_bin, s_probe, bins, sig[i])
        o = out_off[i]
        for j in range(m):
            h32[o + j] = np.uint32(tmp[j] >> _S32)
    return sig


def classic_params(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``(a, b)`` coefficients of the classic scheme: ``uint64[num_perm]`` each, in [1, p)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    a = rng.integers(1, MERSENNE61, size=num_perm, dtype=np.uint64)
    b = rng.integers(1, MERSENNE61, size=num_perm, dtype=np.uint64)
    return a, b


def kernels_cached() -> bool:
    """Whether the fused shingle-and-sketch kernels are compiled and cached already."""
    return is_cached(_shingle_counts) and is_cached(_shingle_oph_fill)


def sketch(shingles: Shingles, cfg: SketchConfig | None = None) -> np.ndarray:
    """MinHash signatures of each document's shingle set: ``uint32[n, num_perm]``.

    Same ``cfg`` gives the same signature for the same shingle set, whatever the batch.
    """
    cfg = cfg or SketchConfig()
    hashes = np.ascontiguousarray(shingles.hashes, dtype=np.uint64)
    offsets = np.ascontiguousarray(shingles.offsets, dtype=np.int64)
    if cfg.scheme == "classic":
        a, b = classic_params(cfg.num_perm, cfg.seed)
        return _classic_kernel(hashes, offsets, a, b)
    s_bin, s_probe = _seed_words(cfg.seed)
    return _oph_kernel(hashes, offsets, cfg.num_perm, U64(s_bin), U64(s_probe))


def estimate_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> np.ndarray | float:
    """Fraction of equal signature values: the MinHash estimate of Jaccard similarity.

    Works on two rows (``uint32[k]``) or two row-aligned matrices (``uint32[m, k]``).
    """
    eq = np.asarray(sig_a) == np.asarray(sig_b)
    return eq.mean(axis=-1)


def shingle_sketch(batch: NormalizedBatch, shingle_cfg: ShingleConfig | None = None,
                   cfg: SketchConfig | None = None, docs: np.ndarray | None = None,
                   h32_out: Callable[[int], np.ndarray] | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shingle and sketch the documents ``docs`` (default all) of a normalised batch in one pass.

    Returns ``(signatures, h32, offsets)``: the same signatures as
    ``sketch(shingle_batch(batch, shingle_cfg, docs), cfg)``, and the high 32 bits of each
    document's shingle hashes (unsorted, with repeats) for exact verification. ``h32_out(m)``,
    if given, supplies the ``uint32[m]`` array the fingerprints are written to (the pipeline
    passes the free end of its index, so they are written once, by the parallel kernel).
    """
    shingle_cfg = shingle_cfg or ShingleConfig()
    cfg = cfg or SketchConfig()
    if docs is None:
        docs = np.arange(len(batch), dtype=np.int64)
    docs = np.ascontiguousarray(docs, dtype=np.int64)
    if cfg.scheme == "classic":
        sh = shingle_batch(batch, shingle_cfg, docs)
        h32 = (sh.hashes >> _S32).astype(np.uint32)
        if h32_out is not None:
            out = h32_out(len(h32))
            out[:] = h32
            h32 = out
        return sketch(sh, cfg), h32, sh.offsets
    s_bin, s_probe = _seed_words(cfg.seed)
    kind = kind_code(shingle_cfg)
    units, counts = _shingle_counts(batch.data, batch.offsets, docs, kind, shingle_cfg.k,
                                    shingle_cfg.offset)
    out_off = np.zeros(len(docs) + 1, np.int64)
    np.cumsum(counts, out=out_off[1:])
    total = int(out_off[-1])
    h32 = np.empty(total, np.uint32) if h32_out is None else h32_out(total)
    if h32.dtype != np.uint32 or h32.shape != (total,):
        raise ValueError(f"h32_out({total}) must return a uint32 array of that length")
    sig = _shingle_oph_fill(batch.data, batch.offsets, docs, kind, shingle_cfg.k,
                            shingle_cfg.offset, cfg.num_perm, U64(s_bin), U64(s_probe), units,
                            out_off, h32)
    return sig, h32, out_off
