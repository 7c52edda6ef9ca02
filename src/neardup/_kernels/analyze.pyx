# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Brute-force Jaccard for the analyses (see :mod:`neardup.analyze.corpus`)."""

from libc.stdint cimport int64_t, uint64_t


def jaccard_block(const uint64_t[::1] hashes, const int64_t[::1] offsets, int64_t i0,
                  double lo, double[:, ::1] out, Py_ssize_t r0, Py_ssize_t r1):
    """Exact Jaccard of the non-empty sorted sets ``i0 + r``, ``r`` in [r0, r1), with every later
    set into ``out[r, j]`` (zeroed by the caller): exact where it is >= ``lo``, some value
    below ``lo`` (often 0) where it is not."""
    cdef Py_ssize_t n = offsets.shape[0] - 1, r, j
    cdef int64_t i, a0, a1, b0, b1, na, nb, x, y, c, rest
    cdef double need
    cdef uint64_t u, v
    with nogil:
        for r in range(r0, r1):
            i = i0 + r
            a0 = offsets[i]
            a1 = offsets[i + 1]
            na = a1 - a0
            for j in range(i + 1, n):
                b0 = offsets[j]
                b1 = offsets[j + 1]
                nb = b1 - b0
                if (na if na < nb else nb) < lo * (na if na > nb else nb):
                    continue
                # J >= lo needs an overlap of at least lo * (na + nb) / (1 + lo): stop the merge
                # as soon as what is left of the shorter remainder cannot reach it
                need = lo * (na + nb) / (1.0 + lo) - 1e-9
                x = a0
                y = b0
                c = 0
                while x < a1 and y < b1:
                    rest = (a1 - x) if (a1 - x) < (b1 - y) else (b1 - y)
                    if c + rest < need:
                        break
                    u = hashes[x]
                    v = hashes[y]
                    if u == v:
                        c += 1
                        x += 1
                        y += 1
                    elif u < v:
                        x += 1
                    else:
                        y += 1
                out[r, j] = <double>c / (na + nb - c)
