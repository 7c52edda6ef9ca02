# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Clustering kernels: union-find, greedy stars, dense labels (see :mod:`neardup.cluster`)."""

from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc


cdef inline int64_t find(int64_t* parent, int64_t x) noexcept nogil:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def components(const int64_t[::1] left, const int64_t[::1] right, const int64_t[::1] rank,
               int64_t[::1] rep):
    """Union-find over the pairs: ``rep[i]``, the lowest-``rank`` member of ``i``'s component."""
    cdef Py_ssize_t n = rep.shape[0], p, i
    cdef int64_t a, b
    cdef int64_t* parent = <int64_t*>malloc((n if n else 1) * sizeof(int64_t))
    if parent == NULL:
        raise MemoryError()
    with nogil:
        for i in range(n):
            parent[i] = i
        for p in range(left.shape[0]):
            a = find(parent, left[p])
            b = find(parent, right[p])
            if a != b:
                # the root is always the preferred document (lowest rank): the representative
                if rank[a] < rank[b]:
                    parent[b] = a
                else:
                    parent[a] = b
        for i in range(n):
            rep[i] = find(parent, i)
    free(parent)


def stars(const int64_t[::1] left, const int64_t[::1] right, const int64_t[::1] order,
          int64_t[::1] rep):
    """Greedy star clustering: documents visited in ``order``; an unassigned one becomes a
    representative and takes every unassigned document it has a pair with."""
    cdef Py_ssize_t n = rep.shape[0], m = left.shape[0], p, q, i
    cdef int64_t a, b, j, r
    cdef int64_t* off = <int64_t*>malloc((n + 1) * sizeof(int64_t))
    cdef int64_t* fill = <int64_t*>malloc((n + 1) * sizeof(int64_t))
    cdef int64_t* nbr = <int64_t*>malloc((2 * m if m else 1) * sizeof(int64_t))
    if off == NULL or fill == NULL or nbr == NULL:
        free(off)
        free(fill)
        free(nbr)
        raise MemoryError()
    with nogil:
        # adjacency in CSR form, both directions
        for i in range(n + 1):
            off[i] = 0
        for p in range(m):
            off[left[p] + 1] += 1
            off[right[p] + 1] += 1
        for i in range(n):
            off[i + 1] += off[i]
        for i in range(n):
            fill[i] = off[i]
        for p in range(m):
            a = left[p]
            b = right[p]
            nbr[fill[a]] = b
            fill[a] += 1
            nbr[fill[b]] = a
            fill[b] += 1
        for i in range(n):
            rep[i] = -1
        for q in range(n):
            r = order[q]
            if rep[r] >= 0:
                continue
            rep[r] = r
            for p in range(off[r], off[r + 1]):
                j = nbr[p]
                if rep[j] < 0:
                    rep[j] = r
    free(off)
    free(fill)
    free(nbr)


def labels_by_first_appearance(const int64_t[::1] rep, int64_t[::1] out):
    """Dense labels ``0..C-1`` of the representatives ``rep`` (rows), by first appearance."""
    cdef Py_ssize_t n = rep.shape[0], i
    cdef int64_t c = 0, r
    cdef int64_t* label = <int64_t*>malloc((n if n else 1) * sizeof(int64_t))
    if label == NULL:
        raise MemoryError()
    with nogil:
        for i in range(n):
            label[i] = -1
        for i in range(n):
            r = rep[i]
            if label[r] < 0:
                label[r] = c
                c += 1
            out[i] = label[r]
    free(label)
