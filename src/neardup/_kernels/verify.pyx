# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Verification kernels: exact overlap of sorted sets, MinHash estimates, sorting the 32-bit
shingle fingerprints of a document set (see :mod:`neardup.verify`)."""

from libc.stdint cimport int64_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from ._common cimport radix_sort

cdef extern from *:
    """
    /* Sort a[0:n] (32-bit hash values, close to uniform) in place, tmp holding n values and
       cnt 65,536 counters: the values are spread into about n buckets by their top bits, then
       one insertion pass puts each bucket in order (a value or two each). Returns 0, having
       changed nothing, when a bucket would hold more than 32 values (values that are not
       spread, or many equal ones): the caller sorts another way, so the time stays linear
       whatever the values. */
    static int nd_bucket_sort_u32(uint32_t* a, int64_t n, uint32_t* tmp, uint32_t* cnt) {
        int b = 1, sh;
        int64_t i, j, nb;
        uint32_t total = 0, v, most = 0, x;
        while (b < 16 && ((int64_t)1 << b) < n) b++;
        nb = (int64_t)1 << b;
        sh = 32 - b;
        memset(cnt, 0, (size_t)nb * sizeof(uint32_t));
        for (i = 0; i < n; i++) cnt[a[i] >> sh]++;
        for (j = 0; j < nb; j++) {
            v = cnt[j];
            most = v > most ? v : most;
            cnt[j] = total;
            total += v;
        }
        if (most > 32) return 0;
        for (i = 0; i < n; i++) {
            x = a[i];
            tmp[cnt[x >> sh]++] = x;
        }
        a[0] = tmp[0];
        for (i = 1; i < n; i++) {
            x = tmp[i];
            j = i - 1;
            while (j >= 0 && a[j] > x) {
                a[j + 1] = a[j];
                j--;
            }
            a[j + 1] = x;
        }
        return 1;
    }
    """
    int bucket_sort_u32 "nd_bucket_sort_u32"(uint32_t* a, int64_t n, uint32_t* tmp,
                                             uint32_t* cnt) noexcept nogil

ctypedef fused hash_t:
    uint32_t
    uint64_t


cdef inline int64_t intersect_sorted(const hash_t* h, int64_t a0, int64_t a1, int64_t b0,
                                     int64_t b1) noexcept nogil:
    cdef int64_t i = a0, j = b0, c = 0
    cdef hash_t x, y
    while i < a1 and j < b1:
        x = h[i]
        y = h[j]
        if x == y:
            c += 1
            i += 1
            j += 1
        elif x < y:
            i += 1
        else:
            j += 1
    return c


def pair_overlap(const hash_t[::1] hashes, const int64_t[::1] starts, const int64_t[::1] ends,
                 const int64_t[::1] left, const int64_t[::1] right, int containment,
                 float[::1] out, Py_ssize_t lo, Py_ssize_t hi):
    """Jaccard (or, with ``containment``, ``|A & B| / |A|``) of the sorted sets
    ``hashes[starts[d]:ends[d]]`` of each pair ``(left[p], right[p])``, ``p`` in [lo, hi)."""
    cdef Py_ssize_t p
    cdef int64_t a, b, na, nb, inter, union
    cdef const hash_t* h = &hashes[0] if hashes.shape[0] else NULL
    with nogil:
        for p in range(lo, hi):
            a = left[p]
            b = right[p]
            na = ends[a] - starts[a]
            nb = ends[b] - starts[b]
            inter = intersect_sorted(h, starts[a], ends[a], starts[b], ends[b])
            if containment == 0:
                union = na + nb - inter
                out[p] = (<double>inter / union) if union > 0 else 1.0
            else:
                out[p] = (<double>inter / na) if na > 0 else 1.0


def pair_estimate(const uint32_t[:, ::1] sig, const int64_t[::1] left,
                  const int64_t[::1] right, float[::1] out, Py_ssize_t lo, Py_ssize_t hi):
    """Fraction of equal signature values of each pair ``(left[p], right[p])``, ``p`` in
    [lo, hi)."""
    cdef Py_ssize_t p
    cdef int64_t j, c, k = sig.shape[1]
    with nogil:
        for p in range(lo, hi):
            c = 0
            for j in range(k):
                c += sig[left[p], j] == sig[right[p], j]
            out[p] = <double>c / k


def sort_unique_segments(uint32_t[::1] hashes, const int64_t[::1] offsets,
                         const int64_t[::1] docs, int64_t[::1] ends, Py_ssize_t lo,
                         Py_ssize_t hi):
    """Sort and deduplicate in place the segments ``hashes[offsets[d]:offsets[d+1]]`` of the
    documents ``d = docs[i]``, ``i`` in [lo, hi); ``ends[d]``: the end of its unique values."""
    cdef Py_ssize_t i
    cdef int64_t d, a, m, j, u, cap = 0
    cdef uint32_t* seg
    cdef uint32_t* tmp = NULL
    cdef uint32_t* cnt = <uint32_t*>malloc(65536 * sizeof(uint32_t))
    cdef int failed = 0
    if cnt == NULL:
        raise MemoryError()
    with nogil:
        for i in range(lo, hi):
            d = docs[i]
            a = offsets[d]
            m = offsets[d + 1] - a
            if m > cap:
                free(tmp)
                tmp = <uint32_t*>malloc(m * sizeof(uint32_t))
                cap = m
                if tmp == NULL:
                    failed = 1
                    break
            seg = &hashes[a] if m else NULL
            if m < 48 or not bucket_sort_u32(seg, m, tmp, cnt):
                radix_sort(seg, m, tmp)
            u = 0
            for j in range(m):
                if j == 0 or seg[j] != seg[u - 1]:
                    seg[u] = seg[j]
                    u += 1
            ends[d] = a + u
    free(tmp)
    free(cnt)
    if failed:
        raise MemoryError()


cdef extern from *:
    """
    /* The sizes of two sets given as unsorted 32-bit values with repeats, a[0:na] and
       b[0:nb], and of their intersection, by one open-addressing table of (value, stamp):
       a slot is taken in this pair when its stamp's upper bits are this pair's generation
       (so the table is never cleared between pairs); the two low bits say whether the value
       came from a (1), from b only (2), or from both (3). cap: a power of two >= 2 (na + nb)
       slots. Sorting each document's values first and merging measured 3x slower for the
       candidates of a million documents (each document is in about two pairs). */
    static inline void nd_set_sizes(const uint32_t* a, int64_t na, const uint32_t* b,
                                    int64_t nb, uint32_t* keys, uint16_t* stamps, int bits,
                                    uint32_t gen, int64_t* ua, int64_t* ub, int64_t* inter) {
        uint32_t mask = ((uint32_t)1 << bits) - 1, x, s;
        uint16_t st, g = (uint16_t)(gen << 2);
        int sh = 32 - bits;
        int64_t i, u = 0, v = 0, c = 0;
        for (i = 0; i < na; i++) {
            x = a[i];
            s = (uint32_t)(x * 2654435761u) >> sh;
            for (;;) {
                st = stamps[s];
                if ((st & ~3u) != g) { keys[s] = x; stamps[s] = g | 1u; u++; break; }
                if (keys[s] == x) break;
                s = (s + 1) & mask;
            }
        }
        for (i = 0; i < nb; i++) {
            x = b[i];
            s = (uint32_t)(x * 2654435761u) >> sh;
            for (;;) {
                st = stamps[s];
                if ((st & ~3u) != g) { keys[s] = x; stamps[s] = g | 2u; v++; break; }
                if (keys[s] == x) {
                    if ((st & 3u) == 1u) { stamps[s] = g | 3u; v++; c++; }
                    break;
                }
                s = (s + 1) & mask;
            }
        }
        *ua = u; *ub = v; *inter = c;
    }
    """
    void set_sizes "nd_set_sizes"(const uint32_t* a, int64_t na, const uint32_t* b, int64_t nb,
                                  uint32_t* keys, uint16_t* stamps, int bits, uint32_t gen,
                                  int64_t* ua, int64_t* ub, int64_t* inter) noexcept nogil


def pair_overlap_unsorted(const uint32_t[::1] hashes, const int64_t[::1] offsets,
                          const int64_t[::1] left, const int64_t[::1] right, int containment,
                          float[::1] out, Py_ssize_t lo, Py_ssize_t hi):
    """Jaccard (or, with ``containment``, ``|A & B| / |A|``) of the sets of the unsorted
    segments ``hashes[offsets[d]:offsets[d+1]]`` (repeats allowed) of each pair
    ``(left[p], right[p])``, ``p`` in [lo, hi)."""
    cdef Py_ssize_t p
    cdef int64_t a, b, ma, mb, ua, ub, inter, union
    cdef int bits, cap_bits = 0
    cdef uint32_t gen = 0
    cdef uint32_t* keys = NULL
    cdef uint16_t* stamps = NULL
    cdef const uint32_t* h = &hashes[0] if hashes.shape[0] else NULL
    cdef int failed = 0
    with nogil:
        for p in range(lo, hi):
            a = left[p]
            b = right[p]
            ma = offsets[a + 1] - offsets[a]
            mb = offsets[b + 1] - offsets[b]
            bits = 4
            while (<int64_t>1 << bits) < 2 * (ma + mb):
                bits += 1
            if bits > cap_bits or gen >= (1u << 14) - 1:
                if bits > cap_bits:
                    free(keys)
                    free(stamps)
                    cap_bits = bits if bits > 10 else 10
                    keys = <uint32_t*>malloc((<size_t>1 << cap_bits) * sizeof(uint32_t))
                    stamps = <uint16_t*>malloc((<size_t>1 << cap_bits) * sizeof(uint16_t))
                    if keys == NULL or stamps == NULL:
                        failed = 1
                        break
                memset(stamps, 0, (<size_t>1 << cap_bits) * sizeof(uint16_t))
                gen = 0
            gen += 1
            set_sizes(h + offsets[a], ma, h + offsets[b], mb, keys, stamps, bits, gen, &ua, &ub,
                      &inter)
            if containment == 0:
                union = ua + ub - inter
                out[p] = (<double>inter / union) if union > 0 else 1.0
            else:
                out[p] = (<double>inter / ua) if ua > 0 else 1.0
    free(keys)
    free(stamps)
    if failed:
        raise MemoryError()
