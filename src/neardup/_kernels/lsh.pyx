# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""LSH kernels: band keys, and candidate pairs from runs of equal keys (see :mod:`neardup.lsh`)."""

from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free

from ._common cimport GOLDEN, fmix64, fnv_step

ctypedef fused sig_t:
    uint32_t
    uint64_t


cdef inline uint64_t band_key(const sig_t* row, int64_t b, int64_t rows) noexcept nogil:
    """The key of band ``b`` of one signature ``row``: FNV over its ``rows`` values, then
    fmix64."""
    cdef uint64_t h = GOLDEN ^ <uint64_t>b
    cdef int64_t r
    for r in range(b * rows, (b + 1) * rows):
        h = fnv_step(h, row[r])
    return fmix64(h)


def band_keys(const sig_t[:, ::1] sig, int64_t bands, int64_t rows, uint64_t[:, ::1] keys,
              Py_ssize_t lo, Py_ssize_t hi):
    """``keys[b, i]``: a 64-bit hash of the ``rows`` values of band ``b`` of signature ``i``,
    for ``i`` in [lo, hi)."""
    cdef Py_ssize_t i
    cdef int64_t b
    with nogil:
        for i in range(lo, hi):
            for b in range(bands):
                keys[b, i] = band_key(&sig[i, 0], b, rows)


def band_keys_into(const uint32_t[:, ::1] sig, int64_t bands, int64_t rows,
                   const uint64_t[::1] addresses, Py_ssize_t lo, Py_ssize_t hi):
    """:func:`band_keys` of signatures ``[lo, hi)``, band ``b``'s keys written to the
    ``uint64`` array at address ``addresses[b]`` (element ``i`` for signature ``i``): the
    arrays of a caller that holds them alive, one per band, such as the free ends of its
    growing stores."""
    cdef Py_ssize_t i
    cdef int64_t b
    if addresses.shape[0] < bands:
        raise ValueError("one address per band is needed")
    with nogil:
        for i in range(lo, hi):
            for b in range(bands):
                (<uint64_t*>(<size_t>addresses[b]))[i] = band_key(&sig[i, 0], b, rows)


def pack_ids(uint64_t[::1] keys, uint64_t keep):
    """Replace the bits of ``keys[i]`` outside the mask ``keep`` by ``i``, in place."""
    cdef Py_ssize_t i
    with nogil:
        for i in range(keys.shape[0]):
            keys[i] = (keys[i] & keep) | <uint64_t>i


def count_run_pairs(const uint64_t[::1] packed, int idbits, int64_t cap):
    """Over the runs of equal keys of the sorted ``packed`` keys (the low ``idbits`` bits hold
    the row): ``(pairs, capped runs, documents in capped runs, longest run)``, where a run of
    ``m > cap`` members gives ``m - 1`` pairs (a star) and a shorter one ``m (m-1) / 2``."""
    cdef Py_ssize_t n = packed.shape[0], i = 0, j
    cdef int64_t m, total = 0, capped = 0, capped_docs = 0, largest = 0
    with nogil:
        while i < n:
            j = i + 1
            while j < n and (packed[j] >> idbits) == (packed[i] >> idbits):
                j += 1
            m = j - i
            if m > largest:
                largest = m
            if m > cap:
                total += m - 1
                capped += 1
                capped_docs += m
            else:
                total += m * (m - 1) // 2
            i = j
    return total, capped, capped_docs, largest


cdef inline uint64_t encode_pair(int64_t a, int64_t b) noexcept nogil:
    """A pair as ``min << 32 | max``."""
    if a > b:
        return ((<uint64_t>b) << 32) | <uint64_t>a
    return ((<uint64_t>a) << 32) | <uint64_t>b


def emit_run_pairs(const uint64_t[::1] packed, int idbits, const int64_t[::1] ids, int64_t cap,
                   uint64_t[::1] out):
    """Write the pairs counted by :func:`count_run_pairs` to ``out``, each as
    ``min(id) << 32 | max(id)`` of the members' ``ids``; runs longer than ``cap`` become stars
    around their first member."""
    cdef Py_ssize_t n = packed.shape[0], i = 0, j, q, r, p = 0
    cdef uint64_t low = ((<uint64_t>1) << idbits) - 1
    cdef int64_t a, first
    with nogil:
        while i < n:
            j = i + 1
            while j < n and (packed[j] >> idbits) == (packed[i] >> idbits):
                j += 1
            if j - i > 1:
                if j - i > cap:
                    first = ids[packed[i] & low]
                    for q in range(i + 1, j):
                        out[p] = encode_pair(first, ids[packed[q] & low])
                        p += 1
                else:
                    for q in range(i, j):
                        a = ids[packed[q] & low]
                        for r in range(q + 1, j):
                            out[p] = encode_pair(a, ids[packed[r] & low])
                            p += 1
            i = j
    return p


def keep_repeats(uint64_t[::1] packed, int table_bits):
    """Keep, packed at the front of ``packed`` (in their order), the keys whose top
    ``table_bits`` bits occur at least twice; return how many. Keys equal above the low id
    bits share their top bits, so every run of equal keys is kept whole: what is dropped is
    only keys that meet no other (band keys are hashes, so their top bits are uniform and
    most keys of a band meet nothing). Two passes over a table of two bits per value of the
    top bits ("seen", "seen twice"; the two words of 64 values side by side, in one cache
    line): a table of ``2**table_bits`` bits of each kind, a quarter of a byte per value,
    so a larger table (fewer keys kept by chance) for the same cache."""
    cdef Py_ssize_t n = packed.shape[0], i, m = 0
    cdef int shift = 64 - table_bits
    cdef size_t words = ((<size_t>1) << table_bits) >> 6
    cdef uint64_t* seen = <uint64_t*>calloc(2 * (words if words else 1), sizeof(uint64_t))
    cdef uint64_t x, idx, bit, w
    if seen == NULL:
        raise MemoryError()
    with nogil:
        for i in range(n):
            idx = packed[i] >> shift
            w = (idx >> 6) << 1
            bit = (<uint64_t>1) << (idx & 63)
            seen[w + 1] |= seen[w] & bit
            seen[w] |= bit
        for i in range(n):
            x = packed[i]
            idx = x >> shift
            if seen[((idx >> 6) << 1) + 1] & ((<uint64_t>1) << (idx & 63)):
                packed[m] = x
                m += 1
    free(seen)
    return m
