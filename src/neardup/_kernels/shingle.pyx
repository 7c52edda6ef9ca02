# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Shingling and MinHash kernels (see :mod:`neardup.text.shingle` and :mod:`neardup.sketch` for
the definitions of the hashes and of both MinHash schemes).

Every kernel takes a range ``[lo, hi)`` of the documents it is given and writes only their part
of the outputs, so several threads can share one call's work.
"""

from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc

from ._common cimport (
    CHAR,
    FNV_OFFSET,
    GOLDEN,
    fmix64,
    fnv_step,
    radix_sort,
    reduce_range,
)

cdef extern from *:
    """
    /* The hashing loops that run once per shingle, written so that the compiler vectorises
       them (eight 64-bit lanes with AVX-512, four with AVX2), and compiled for those and for
       plain x86-64 where the C library picks one at load time (GCC's target_clones, on x86-64
       Linux; nd_combine picks its AVX-512 build itself, as its lane count differs);
       elsewhere, once, for the build's target. Each computes exactly what the scalar
       definitions compute: the vector lanes only do several shingles at once. */
    #if defined(__x86_64__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__) \
        && __GNUC__ >= 11
    #define ND_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
    #define ND_CLONES_ON 1
    #else
    #define ND_CLONES
    #endif
    #define ND_BLOCK 256

    /* x[i] = fmix64(x[i]) for i in [0, n) */
    ND_CLONES static void nd_fmix_all(uint64_t* x, int64_t n) {
        for (int64_t i = 0; i < n; i++) x[i] = nd_fmix64(x[i]);
    }

    /* out[j] = fmix64(FNV fold, from GOLDEN, of tok[j*offset : j*offset + width], ^ width) */
    #if defined(__GNUC__)
    /* Several shingles at once in 64-bit vector lanes (GCC's and Clang's vector extensions),
       loaded and stored with memcpy (no alignment assumed): eight with AVX-512 (one register,
       vpmullq), four elsewhere. Eight lanes on AVX2 measured 1.6x slower for the whole
       shingling and sketching than four: GCC kept such a vector on the stack and multiplied
       it lane by lane. */
    typedef uint64_t nd_u64x4 __attribute__((vector_size(32)));
    typedef uint64_t nd_u64x8 __attribute__((vector_size(64)));
    #define ND_COMBINE_LANES(VT, L)                                                 \
        for (; j + L <= m; j += L) {                                                \
            VT h = ((VT){0}) ^ ND_GOLDEN, t;                                        \
            for (int64_t q = 0; q < width; q++) {                                   \
                memcpy(&t, tok + j + q, sizeof t);                                  \
                h = (h ^ t) * ND_FNV_PRIME;                                         \
            }                                                                       \
            h ^= (uint64_t)width;                                                   \
            h ^= h >> 33;                                                           \
            h *= 0xFF51AFD7ED558CCDULL;                                             \
            h ^= h >> 33;                                                           \
            h *= 0xC4CEB9FE1A85EC53ULL;                                             \
            h ^= h >> 33;                                                           \
            memcpy(out + j, &h, sizeof h);                                          \
        }
    #else
    /* eight shingles at a time in plain arrays, for the compiler to vectorise if it can */
    #define ND_COMBINE_LANES(VT, L)                                                 \
        for (; j + 8 <= m; j += 8) {                                                \
            uint64_t h[8];                                                          \
            for (int l = 0; l < 8; l++) h[l] = ND_GOLDEN;                           \
            for (int64_t q = 0; q < width; q++)                                     \
                for (int l = 0; l < 8; l++) h[l] = nd_fnv_step(h[l], tok[j + l + q]); \
            for (int l = 0; l < 8; l++) out[j + l] = nd_fmix64(h[l] ^ (uint64_t)width); \
        }
    #endif

    /* the shingles from j on, one at a time */
    static inline void nd_combine_rest(const uint64_t* tok, int64_t j, int64_t m,
                                       int64_t offset, int64_t width, uint64_t* out) {
        for (; j < m; j++) {
            const uint64_t* t = tok + j * offset;
            uint64_t h = ND_GOLDEN;
            for (int64_t q = 0; q < width; q++) h = nd_fnv_step(h, t[q]);
            out[j] = nd_fmix64(h ^ (uint64_t)width);
        }
    }

    /* nd_combine's definition under the name NAME, compiled with ATTR, L lanes of type VT */
    #define ND_COMBINE_FN(NAME, ATTR, VT, L)                                        \
        ATTR static void NAME(const uint64_t* tok, int64_t m, int64_t offset,        \
                              int64_t width, uint64_t* out) {                         \
            int64_t j = 0;                                                          \
            if (offset == 1) {                                                      \
                ND_COMBINE_LANES(VT, L)                                             \
            }                                                                       \
            nd_combine_rest(tok, j, m, offset, width, out);                         \
        }

    #if defined(ND_CLONES_ON)
    ND_COMBINE_FN(nd_combine_v4, __attribute__((target("arch=x86-64-v4"))), nd_u64x8, 8)
    ND_COMBINE_FN(nd_combine_v3, __attribute__((target_clones("arch=x86-64-v3", "default"))),
                  nd_u64x4, 4)

    /* the AVX-512 build where the processor has x86-64-v4's instructions, else the
       clones' own choice (AVX2 or plain x86-64) */
    static void nd_combine(const uint64_t* tok, int64_t m, int64_t offset, int64_t width,
                           uint64_t* out) {
        static int v4 = -1;  /* found once; threads that race here find the same */
        if (v4 < 0) {
            __builtin_cpu_init();
            v4 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
                 && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")
                 && __builtin_cpu_supports("avx512cd");
        }
        if (v4)
            nd_combine_v4(tok, m, offset, width, out);
        else
            nd_combine_v3(tok, m, offset, width, out);
    }
    #else
    ND_COMBINE_FN(nd_combine, , nd_u64x4, 4)
    #endif

    /* For hashes[0:n] (n <= ND_BLOCK): the OPH bin (multiply-shift of the high 32 bits of
       fmix64(hash ^ s_bin) onto [0, k)) and the value (its low 32 bits) of each. */
    ND_CLONES static void nd_oph_hash(const uint64_t* hashes, int64_t n, uint64_t s_bin,
                                      uint64_t k, uint32_t* bin, uint32_t* val) {
        for (int64_t i = 0; i < n; i++) {
            uint64_t h = nd_fmix64(hashes[i] ^ s_bin);
            bin[i] = (uint32_t)nd_reduce_range(h, k);
            val[i] = (uint32_t)h;
        }
    }

    /* The hash of the token data[s:e] (fmix64 comes after, for all tokens at once): its bytes
       packed big-endian into 64-bit words folded FNV-style from FNV_OFFSET, the last word
       (zero to seven bytes) included, the length mixed in at the end. Reads data up to
       `end`, no further. */
    static inline uint64_t nd_token_hash(const uint8_t* data, int64_t s, int64_t e,
                                         int64_t end) {
        uint64_t h = ND_FNV_OFFSET, w = 0;
        int64_t q = s, r, n = e - s;
        if (n < 16 && s + 16 <= end) {
            /* tokens under 16 bytes (nearly all words), with no branch on their length:
               both words are loaded, the first folded in when the token has 8 bytes or more
               (a mask, not a jump), and the last 0-7 bytes shifted down; (x >> 1) >> (63 - 8r)
               is x >> (64 - 8r) for r in 1..7, and 0 for r = 0 */
            uint64_t x0 = nd_bswap64(nd_load_le64(data + s));
            uint64_t x1 = nd_bswap64(nd_load_le64(data + s + 8));
            uint64_t full = (uint64_t)0 - (uint64_t)(n >> 3);  /* all ones if n >= 8 */
            uint64_t h1 = nd_fnv_step(h, x0);
            h = (h1 & full) | (h & ~full);
            w = (x1 & full) | (x0 & ~full);
            r = n & 7;
            w = (w >> 1) >> (63 - 8 * r);
            return nd_fnv_step(h, w) ^ (uint64_t)n;
        }
        for (; q + 8 <= e; q += 8) h = nd_fnv_step(h, nd_bswap64(nd_load_le64(data + q)));
        r = e - q;
        if (r) {
            if (q + 8 <= end) w = nd_bswap64(nd_load_le64(data + q)) >> (64 - 8 * r);
            else for (; q < e; q++) w = (w << 8) | data[q];
        }
        return nd_fnv_step(h, w) ^ (uint64_t)(e - s);
    }

    /* The tokens of data[a:b] (separated by single spaces) to tok, at most cap of them:
       the spaces of 64 bytes at a time are found as a bit mask, then each token is hashed
       whole, with no branch per byte. Returns the tokens written: one more than the spaces
       (an empty text, a = b, has one empty token). */
    static int64_t nd_tokens(const uint8_t* data, int64_t a, int64_t b, uint64_t* tok,
                             int64_t cap) {
        int64_t t = 0, s = a, i = a, e;
        uint64_t m;
        if (cap <= 0) return 0;
        for (; i + 64 <= b; i += 64) {
            m = nd_byte_mask64(data + i, 32);
            while (m) {
                e = i + nd_ctz64(m);
                tok[t++] = nd_token_hash(data, s, e, b);
                if (t == cap) return t;
                s = e + 1;
                m &= m - 1;
            }
        }
        for (; i < b; i++) {
            if (data[i] == 32) {
                tok[t++] = nd_token_hash(data, s, i, b);
                if (t == cap) return t;
                s = i + 1;
            }
        }
        tok[t++] = nd_token_hash(data, s, b, b);
        return t;
    }
    """
    int64_t tokens "nd_tokens"(const uint8_t* data, int64_t a, int64_t b, uint64_t* tok,
                               int64_t cap) noexcept nogil
    void fmix_all "nd_fmix_all"(uint64_t* x, int64_t n) noexcept nogil
    void combine "nd_combine"(const uint64_t* tok, int64_t m, int64_t offset, int64_t width,
                              uint64_t* out) noexcept nogil
    void oph_hash "nd_oph_hash"(const uint64_t* hashes, int64_t n, uint64_t s_bin, uint64_t k,
                                uint32_t* bin, uint32_t* val) noexcept nogil
    enum: OPH_BLOCK "ND_BLOCK"

cdef uint64_t NOVAL = (<uint64_t>1) << 32  # above every 32-bit value: an empty OPH bin
cdef uint64_t MASK32 = 0xFFFFFFFF
cdef uint64_t P61 = ((<uint64_t>1) << 61) - 1


cdef inline int64_t count_units(const uint8_t* data, int64_t a, int64_t b, int kind) noexcept nogil:
    """Tokens (``kind`` WORD) or code points (CHAR) of the normalised text ``data[a:b]``:
    tokens are separated by exactly one space, with none at either end."""
    cdef int64_t n = 0, i
    if kind == CHAR:
        for i in range(a, b):
            n += (data[i] & 0xC0) != 0x80
        return n
    if b <= a:
        return 0
    for i in range(a, b):
        n += data[i] == 32
    return n + 1


cdef inline int64_t n_shingles(int64_t units, int64_t k, int64_t offset) noexcept nogil:
    if units == 0:
        return 0
    if units < k:
        return 1
    return (units - k) // offset + 1


cdef inline uint64_t hash_run(const uint32_t* units, int64_t a, int64_t b) noexcept nogil:
    """FNV-1a over ``units[a:b]`` (code points), its length mixed in, then fmix64."""
    cdef uint64_t h = FNV_OFFSET
    cdef int64_t i
    for i in range(a, b):
        h = fnv_step(h, units[i])
    return fmix64(h ^ <uint64_t>(b - a))


cdef void decode_utf8(const uint8_t* data, int64_t a, int64_t b, uint32_t* out) noexcept nogil:
    cdef int64_t i = a, n = 0
    cdef uint32_t c
    while i < b:
        c = data[i]
        if c < 0x80:
            out[n] = c
            i += 1
        elif c < 0xE0:
            out[n] = ((c & 0x1F) << 6) | (data[i + 1] & 0x3F)
            i += 2
        elif c < 0xF0:
            out[n] = ((c & 0x0F) << 12) | ((data[i + 1] & 0x3F) << 6) | (data[i + 2] & 0x3F)
            i += 3
        else:
            out[n] = (((c & 0x07) << 18) | ((data[i + 1] & 0x3F) << 12)
                      | ((data[i + 2] & 0x3F) << 6) | (data[i + 3] & 0x3F))
            i += 4
        n += 1


cdef struct Scratch:
    void* buf
    size_t size


cdef inline void* scratch(Scratch* s, size_t size) noexcept nogil:
    """A buffer of at least ``size`` bytes, grown as needed (NULL if memory ran out)."""
    cdef void* p
    if size > s.size:
        p = realloc(s.buf, size)
        if p == NULL:
            return NULL
        s.buf = p
        s.size = size
    return s.buf


cdef int doc_shingles(const uint8_t* data, int64_t a, int64_t b, int kind, int64_t k,
                      int64_t offset, int64_t units, uint64_t* out, Scratch* tmp) noexcept nogil:
    """Write the (unsorted) shingle hashes of ``data[a:b]``, which has ``units`` tokens or code
    points, to ``out``. Returns -1 if memory ran out, else 0."""
    cdef int64_t m = n_shingles(units, k, offset), j, s, t
    cdef uint32_t* cps
    cdef uint64_t* tok
    if m == 0:
        return 0
    if kind == CHAR:
        cps = <uint32_t*>scratch(tmp, units * sizeof(uint32_t))
        if cps == NULL:
            return -1
        decode_utf8(data, a, b, cps)
        if units < k:
            out[0] = hash_run(cps, 0, units)
            return 0
        for j in range(m):
            s = j * offset
            out[j] = hash_run(cps, s, s + k)
        return 0
    tok = <uint64_t*>scratch(tmp, units * sizeof(uint64_t))
    if tok == NULL:
        return -1
    t = tokens(data, a, b, tok, units)  # units: the tokens tok has room for
    fmix_all(tok, t)
    combine(tok, m, offset, k if units >= k else units, out)
    return 0


cdef void oph_row(const uint64_t* hashes, int64_t m, uint64_t s_bin, uint64_t s_probe,
                  uint64_t* bins, uint32_t* out_row, int64_t k) noexcept nogil:
    """One-permutation MinHash with optimal densification of ``hashes[:m]`` into ``out_row``
    (``bins``: scratch of ``k`` values)."""
    cdef int64_t i, i0, n, j, src, filled = 0
    cdef uint64_t v, t
    cdef uint32_t bin[OPH_BLOCK]
    cdef uint32_t val[OPH_BLOCK]
    for j in range(k):
        bins[j] = NOVAL
    # The hashes of a block first (vectorised), then the bins. No data-dependent branch here
    # (a min, not an if): filling bins is unpredictable early in a document, and mispredictions
    # cost more than the hashing itself.
    i0 = 0
    while i0 < m:
        n = m - i0 if m - i0 < OPH_BLOCK else OPH_BLOCK
        oph_hash(hashes + i0, n, s_bin, k, bin, val)
        for i in range(n):
            j = bin[i]
            v = val[i]
            bins[j] = v if v < bins[j] else bins[j]
        i0 += n
    for j in range(k):
        filled += bins[j] != NOVAL
    if filled == 0:
        for j in range(k):
            out_row[j] = 0xFFFFFFFF
        return
    for j in range(k):
        if bins[j] != NOVAL:
            out_row[j] = <uint32_t>bins[j]
            continue
        # Probe bins with a hash of (bin, attempt) until a non-empty one is found. The sequence
        # depends only on (j, attempt), never on the document.
        t = 1
        while True:
            src = reduce_range(fmix64(s_probe ^ ((<uint64_t>j) << 32) ^ t), k)
            if bins[src] != NOVAL:
                out_row[j] = <uint32_t>bins[src]
                break
            t += 1


def shingle_counts(const uint8_t[::1] data, const int64_t[::1] offsets,
                   const int64_t[::1] docs, int kind, int64_t k, int64_t offset,
                   int64_t[::1] units, int64_t[::1] counts, Py_ssize_t lo, Py_ssize_t hi):
    """Units (tokens or code points) and shingles of the documents ``docs[lo:hi]``."""
    cdef Py_ssize_t i
    cdef int64_t u
    cdef const uint8_t* p = &data[0] if data.shape[0] else NULL
    with nogil:
        for i in range(lo, hi):
            u = count_units(p, offsets[docs[i]], offsets[docs[i] + 1], kind)
            units[i] = u
            counts[i] = n_shingles(u, k, offset)


def shingle_oph(const uint8_t[::1] data, const int64_t[::1] offsets, const int64_t[::1] docs,
                int kind, int64_t k, int64_t offset, uint64_t s_bin, uint64_t s_probe,
                const int64_t[::1] units, const int64_t[::1] out_off, uint32_t[::1] h32,
                uint32_t[:, ::1] sig, Py_ssize_t lo, Py_ssize_t hi):
    """Shingle and sketch the documents ``docs[lo:hi]`` in one pass: OPH signatures into
    ``sig`` rows, and the high 32 bits of every shingle hash of document ``i`` (text order,
    repeats kept) into ``h32[out_off[i]:out_off[i+1]]``."""
    cdef Py_ssize_t i
    cdef int64_t m, j, o, nperm = sig.shape[1]
    cdef const uint8_t* p = &data[0] if data.shape[0] else NULL
    cdef Scratch tmp, hs
    cdef uint64_t* hashes
    cdef uint64_t* bins = <uint64_t*>malloc(nperm * sizeof(uint64_t))
    cdef int failed = bins == NULL
    tmp.buf = hs.buf = NULL
    tmp.size = hs.size = 0
    with nogil:
        for i in range(lo, hi):
            if failed:
                break
            m = out_off[i + 1] - out_off[i]
            hashes = <uint64_t*>scratch(&hs, (m if m else 1) * sizeof(uint64_t))
            if hashes == NULL or doc_shingles(p, offsets[docs[i]], offsets[docs[i] + 1], kind,
                                              k, offset, units[i], hashes, &tmp) < 0:
                failed = 1
                break
            oph_row(hashes, m, s_bin, s_probe, bins, &sig[i, 0], nperm)
            o = out_off[i]
            for j in range(m):
                h32[o + j] = <uint32_t>(hashes[j] >> 32)
    free(tmp.buf)
    free(hs.buf)
    free(bins)
    if failed:
        raise MemoryError()


def shingle_sorted(const uint8_t[::1] data, const int64_t[::1] offsets,
                   const int64_t[::1] docs, int kind, int64_t k, int64_t offset,
                   const int64_t[::1] units, const int64_t[::1] raw_off, uint64_t[::1] raw,
                   int64_t[::1] uniq, Py_ssize_t lo, Py_ssize_t hi):
    """The shingle hashes of documents ``docs[lo:hi]`` into ``raw[raw_off[i]:raw_off[i+1]]``,
    each document's sorted and unique at the front of its segment (``uniq[i]`` of them)."""
    cdef Py_ssize_t i
    cdef int64_t a, m, j, u
    cdef const uint8_t* p = &data[0] if data.shape[0] else NULL
    cdef uint64_t* seg
    cdef uint64_t* sbuf
    cdef Scratch tmp, srt
    cdef int failed = 0
    tmp.buf = srt.buf = NULL
    tmp.size = srt.size = 0
    with nogil:
        for i in range(lo, hi):
            a = raw_off[i]
            m = raw_off[i + 1] - a
            if m == 0:
                uniq[i] = 0
                continue
            seg = &raw[a]
            sbuf = <uint64_t*>scratch(&srt, m * sizeof(uint64_t))
            if sbuf == NULL or doc_shingles(p, offsets[docs[i]], offsets[docs[i] + 1], kind, k,
                                            offset, units[i], seg, &tmp) < 0:
                failed = 1
                break
            radix_sort(seg, m, sbuf)
            u = 1
            for j in range(1, m):
                if seg[j] != seg[u - 1]:
                    seg[u] = seg[j]
                    u += 1
            uniq[i] = u
    free(tmp.buf)
    free(srt.buf)
    if failed:
        raise MemoryError()


def compact(const uint64_t[::1] raw, const int64_t[::1] raw_off, const int64_t[::1] out_off,
            uint64_t[::1] out, Py_ssize_t lo, Py_ssize_t hi):
    """Copy the first ``out_off[i+1] - out_off[i]`` values of each segment ``i`` of ``raw`` to
    ``out[out_off[i]:]``, for ``i`` in ``[lo, hi)``."""
    cdef Py_ssize_t i
    cdef int64_t j, p, o
    with nogil:
        for i in range(lo, hi):
            p = raw_off[i]
            o = out_off[i]
            for j in range(out_off[i + 1] - o):
                out[o + j] = raw[p + j]


def oph_sketch(const uint64_t[::1] hashes, const int64_t[::1] offsets, uint64_t s_bin,
               uint64_t s_probe, uint32_t[:, ::1] sig, Py_ssize_t lo, Py_ssize_t hi):
    """OPH signatures of the hash sets ``hashes[offsets[d]:offsets[d+1]]``, ``d`` in [lo, hi)."""
    cdef Py_ssize_t d
    cdef int64_t nperm = sig.shape[1]
    cdef const uint64_t* p = &hashes[0] if hashes.shape[0] else NULL
    cdef uint64_t* bins = <uint64_t*>malloc(nperm * sizeof(uint64_t))
    if bins == NULL:
        raise MemoryError()
    with nogil:
        for d in range(lo, hi):
            oph_row(p + offsets[d], offsets[d + 1] - offsets[d], s_bin, s_probe, bins,
                    &sig[d, 0], nperm)
    free(bins)


cdef inline uint64_t mod61(uint64_t x) noexcept nogil:
    """``x mod (2**61-1)`` for any uint64 ``x``."""
    cdef uint64_t r = (x & P61) + (x >> 61)
    if r >= P61:
        r -= P61
    return r


cdef extern from *:
    """
    /* a*b mod (2**61-1) for a, b < 2**61, exact: with a 128-bit product where the compiler has
       one (a*b = H*2**61 + L, and 2**61 = 1 mod p), else from four 32-bit products. */
    static inline uint64_t nd_mulmod61(uint64_t a, uint64_t b) {
        const uint64_t p = (((uint64_t)1) << 61) - 1;
        uint64_t r;
    #if defined(__SIZEOF_INT128__)
        unsigned __int128 f = (unsigned __int128)a * b;
        uint64_t lo = (uint64_t)f, hi = (uint64_t)(f >> 64);
        r = (lo & p) + ((lo >> 61) | (hi << 3));
    #else
        uint64_t a_hi = a >> 32, a_lo = a & 0xFFFFFFFFu, b_hi = b >> 32, b_lo = b & 0xFFFFFFFFu;
        uint64_t lo = a_lo * b_lo, mid = a_hi * b_lo + a_lo * b_hi, hi = a_hi * b_hi;
        /* a*b = hi*2**64 + mid*2**32 + lo, and 2**64 = 8 (mod p) */
        r = (lo & p) + (lo >> 61) + (hi << 3) + (mid >> 29) + ((mid & ((((uint64_t)1) << 29) - 1)) << 32);
        r = (r & p) + (r >> 61);
        r = (r & p) + (r >> 61);
    #endif
        return r >= p ? r - p : r;
    }
    """
    uint64_t mulmod61 "nd_mulmod61"(uint64_t a, uint64_t b) noexcept nogil


def classic_sketch(const uint64_t[::1] hashes, const int64_t[::1] offsets,
                   const uint64_t[::1] a, const uint64_t[::1] b, uint32_t[:, ::1] sig,
                   Py_ssize_t lo, Py_ssize_t hi):
    """Classic MinHash: for each of the ``len(a)`` hash functions ``(a*x + b) mod (2**61-1)``,
    the minimum over the set ``hashes[offsets[d]:offsets[d+1]]``, ``d`` in [lo, hi)."""
    cdef Py_ssize_t d
    cdef int64_t i, j, k = a.shape[0]
    cdef uint64_t x, v
    cdef uint64_t* mins = <uint64_t*>malloc(k * sizeof(uint64_t))
    if mins == NULL:
        raise MemoryError()
    with nogil:
        for d in range(lo, hi):
            for j in range(k):
                mins[j] = P61
            for i in range(offsets[d], offsets[d + 1]):
                x = mod61(hashes[i])
                for j in range(k):
                    v = mulmod61(a[j], x) + b[j]
                    if v >= P61:
                        v -= P61
                    if v < mins[j]:
                        mins[j] = v
            for j in range(k):
                sig[d, j] = <uint32_t>(mins[j] & MASK32) if mins[j] < P61 else 0xFFFFFFFF
    free(mins)


def py_fmix64(uint64_t h):
    """:func:`fmix64` of one value, for the tests' oracle."""
    return fmix64(h)


def py_mulmod61(uint64_t a, uint64_t b):
    """:func:`mulmod61` of one pair, for the tests' oracle."""
    return mulmod61(a, b)
