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
