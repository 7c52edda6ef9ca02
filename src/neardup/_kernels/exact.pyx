# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The exact-duplicate table's probes (see :class:`neardup.exact.FingerprintTable`)."""

from libc.stdint cimport int64_t, uint8_t, uint64_t


def lookup_insert(uint64_t[::1] tab_hi, uint64_t[::1] tab_lo, int64_t[::1] tab_val,
                  const uint64_t[::1] hi, const uint64_t[::1] lo, const uint8_t[::1] skip,
                  int64_t size, int64_t[::1] out, uint8_t[::1] first):
    """Group of each fingerprint ``(hi[i], lo[i])`` into ``out``; unseen ones are inserted with
    the next group number ``size`` and flagged in ``first``. Rows with ``skip[i]`` get -1.
    Open addressing, linear probing on the low word; returns the new size."""
    cdef Py_ssize_t n = hi.shape[0], i
    cdef uint64_t mask = <uint64_t>(tab_val.shape[0] - 1), h, w
    cdef int64_t s, v
    with nogil:
        for i in range(n):
            first[i] = 0
            if skip[i]:
                out[i] = -1
                continue
            h = hi[i]
            w = lo[i]
            s = <int64_t>(w & mask)
            while True:
                v = tab_val[s]
                if v == -1:
                    tab_hi[s] = h
                    tab_lo[s] = w
                    tab_val[s] = size
                    out[i] = size
                    first[i] = 1
                    size += 1
                    break
                if tab_lo[s] == w and tab_hi[s] == h:
                    out[i] = v
                    break
                s = <int64_t>((<uint64_t>s + 1) & mask)
    return size


def rehash(const uint64_t[::1] tab_hi, const uint64_t[::1] tab_lo, const int64_t[::1] tab_val,
           uint64_t[::1] new_hi, uint64_t[::1] new_lo, int64_t[::1] new_val):
    """Move every entry of the old table into the new (larger, empty) one."""
    cdef uint64_t mask = <uint64_t>(new_val.shape[0] - 1)
    cdef Py_ssize_t s
    cdef int64_t t
    with nogil:
        for s in range(tab_val.shape[0]):
            if tab_val[s] == -1:
                continue
            t = <int64_t>(tab_lo[s] & mask)
            while new_val[t] != -1:
                t = <int64_t>((<uint64_t>t + 1) & mask)
            new_hi[t] = tab_hi[s]
            new_lo[t] = tab_lo[s]
            new_val[t] = tab_val[s]


cdef extern from *:
    """
    /* xxHash 0.8.3 (BSD 2-clause, Yann Collet), vendored: XXH3-128 inlined into this module,
       the same digest as the xxhash package's xxh3_128. */
    #define XXH_INLINE_ALL
    #define XXH_STATIC_LINKING_ONLY
    #include "vendor/xxhash.h"
    """
    ctypedef struct XXH128_hash_t:
        uint64_t low64
        uint64_t high64
    XXH128_hash_t XXH3_128bits(const void* data, size_t length) noexcept nogil


def xxh3_128(const uint8_t[::1] data, const int64_t[::1] offsets, uint64_t[::1] hi,
             uint64_t[::1] lo, Py_ssize_t a, Py_ssize_t b):
    """xxh3-128 of each ``data[offsets[i]:offsets[i+1]]`` for ``i`` in ``[a, b)``: the high
    and low 64 bits of the digest into ``hi[i]`` and ``lo[i]``."""
    cdef Py_ssize_t i
    cdef XXH128_hash_t h
    cdef const uint8_t* p = &data[0] if data.shape[0] else NULL
    with nogil:
        for i in range(a, b):
            if p == NULL:  # no bytes at all: every text is empty
                h = XXH3_128bits(NULL, 0)
            else:
                h = XXH3_128bits(p + offsets[i], <size_t>(offsets[i + 1] - offsets[i]))
            hi[i] = h.high64
            lo[i] = h.low64
