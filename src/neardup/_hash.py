"""64-bit integer hashing primitives shared by the compiled kernels.

All arithmetic is on ``uint64`` and wraps modulo 2**64; constants are module-level ``np.uint64``
so numba never promotes a mixed signed/unsigned expression to float.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit

U64 = np.uint64
M1 = U64(0xFF51AFD7ED558CCD)
M2 = U64(0xC4CEB9FE1A85EC53)
FNV_PRIME = U64(0x100000001B3)
FNV_OFFSET = U64(0xCBF29CE484222325)
GOLDEN = U64(0x9E3779B97F4A7C15)
S33 = U64(33)
S32 = U64(32)
MASK32 = U64(0xFFFFFFFF)


@njit(cache=True, inline="always")
def fmix64(h):
    """MurmurHash3's 64-bit finaliser: a bijection with full avalanche."""
    h ^= h >> S33
    h *= M1
    h ^= h >> S33
    h *= M2
    h ^= h >> S33
    return h


@njit(cache=True, inline="always")
def reduce_range(h, n):
    """Map a 64-bit hash to ``[0, n)`` by multiply-shift on its high 32 bits (n < 2**32)."""
    return np.int64(((h >> S32) * U64(n)) >> S32)


def fmix64_py(h: int) -> int:
    """Plain-Python oracle of :func:`fmix64`."""
    m = (1 << 64) - 1
    h &= m
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & m
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & m
    h ^= h >> 33
    return h
