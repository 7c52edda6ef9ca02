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

import numpy as np
from numba import njit, prange

from ._hash import MASK32, U64, fmix64, reduce_range
from .config import SketchConfig
from .text.shingle import Shingles

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


@njit(cache=True, parallel=True, nogil=True)
def _oph_kernel(hashes, offsets, k, s_bin, s_probe):
    n = len(offsets) - 1
    out = np.empty((n, k), np.uint32)
    for d in prange(n):
        bins = np.full(k, _NOVAL, np.uint64)
        filled = 0
        for i in range(offsets[d], offsets[d + 1]):
            h = fmix64(hashes[i] ^ s_bin)
            j = reduce_range(h, k)
            v = h & MASK32
            if bins[j] == _NOVAL:
                filled += 1
            if v < bins[j]:
                bins[j] = v
        if filled == 0:
            for j in range(k):
                out[d, j] = np.uint32(0xFFFFFFFF)
            continue
        for j in range(k):
            if bins[j] != _NOVAL:
                out[d, j] = np.uint32(bins[j])
                continue
            # Optimal densification: probe bins with a hash of (bin, attempt) until a non-empty
            # one is found. The sequence depends only on (j, attempt), never on the document.
            t = U64(1)
            while True:
                src = reduce_range(fmix64(s_probe ^ (U64(j) << _S32) ^ t), k)
                if bins[src] != _NOVAL:
                    out[d, j] = np.uint32(bins[src])
                    break
                t += U64(1)
    return out


def classic_params(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``(a, b)`` coefficients of the classic scheme: ``uint64[num_perm]`` each, in [1, p)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    a = rng.integers(1, MERSENNE61, size=num_perm, dtype=np.uint64)
    b = rng.integers(1, MERSENNE61, size=num_perm, dtype=np.uint64)
    return a, b


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
