# Shared inline helpers of the compiled kernels: 64-bit hashing that wraps modulo 2**64.
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

cdef enum:
    WORD = 0
    CHAR = 1

# The hash primitives, in C so that the kernels' Cython code and their vectorised C loops
# (shingle.pyx) share one definition.
cdef extern from *:
    """
    #define ND_FNV_OFFSET 0xCBF29CE484222325ULL
    #define ND_FNV_PRIME 0x100000001B3ULL
    #define ND_GOLDEN 0x9E3779B97F4A7C15ULL
    /* MurmurHash3's 64-bit finaliser: a bijection with full avalanche. */
    static inline uint64_t nd_fmix64(uint64_t h) {
        h ^= h >> 33;
        h *= 0xFF51AFD7ED558CCDULL;
        h ^= h >> 33;
        h *= 0xC4CEB9FE1A85EC53ULL;
        h ^= h >> 33;
        return h;
    }
    /* Map a 64-bit hash to [0, n) by multiply-shift on its high 32 bits (n < 2**32). */
    static inline int64_t nd_reduce_range(uint64_t h, uint64_t n) {
        return (int64_t)(((h >> 32) * n) >> 32);
    }
    static inline uint64_t nd_fnv_step(uint64_t h, uint64_t w) {
        return (h ^ w) * ND_FNV_PRIME;
    }
    """
    const uint64_t FNV_OFFSET "ND_FNV_OFFSET"
    const uint64_t GOLDEN "ND_GOLDEN"
    uint64_t fmix64 "nd_fmix64"(uint64_t h) noexcept nogil
    int64_t reduce_range "nd_reduce_range"(uint64_t h, uint64_t n) noexcept nogil
    uint64_t fnv_step "nd_fnv_step"(uint64_t h, uint64_t w) noexcept nogil

# Eight bytes at a time (unaligned; the caller keeps p[0:8] inside its buffer).
cdef extern from *:
    """
    #include <string.h>
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline uint64_t nd_bswap64(uint64_t x) { return _byteswap_uint64(x); }
    static inline int nd_ctz64(uint64_t x) { unsigned long i; _BitScanForward64(&i, x); return (int)i; }
    #else
    static inline uint64_t nd_bswap64(uint64_t x) { return __builtin_bswap64(x); }
    static inline int nd_ctz64(uint64_t x) { return __builtin_ctzll(x); }
    #endif
    /* the 8 bytes at p as a little-endian word: p[0] in the low bits */
    static inline uint64_t nd_load_le64(const uint8_t* p) {
        uint64_t x;
        memcpy(&x, p, 8);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        x = nd_bswap64(x);
    #endif
        return x;
    }
    static inline void nd_store_le64(uint8_t* p, uint64_t x) {
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        x = nd_bswap64(x);
    #endif
        memcpy(p, &x, 8);
    }
    /* the set bits of x (branch-free) */
    static inline int nd_popcount64(uint64_t x) {
        x = x - ((x >> 1) & 0x5555555555555555ULL);
        x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
        x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
        return (int)((x * 0x0101010101010101ULL) >> 56);
    }
    /* SSE2, which every x86-64 has: the kernels' 64-byte steps (ND_SSE2 defined) */
    #if defined(__SSE2__) || defined(_M_X64)
    #include <emmintrin.h>
    #define ND_SSE2 1
    #endif
    /* bit i set where p[i] == c, for i in [0, 64): four SSE2 compares on x86-64, else eight
       words tested for a zero byte (exactly: no false positive from a borrow) */
    #if defined(ND_SSE2)
    static inline uint64_t nd_byte_mask64(const uint8_t* p, uint8_t c) {
        const __m128i v = _mm_set1_epi8((char)c);
        uint64_t m = 0;
        for (int w = 0; w < 4; w++) {
            __m128i x = _mm_loadu_si128((const __m128i*)(p + 16 * w));
            m |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, v)) << (16 * w);
        }
        return m;
    }
    #else
    static inline uint64_t nd_byte_mask64(const uint8_t* p, uint8_t c) {
        const uint64_t low7 = 0x7F7F7F7F7F7F7F7FULL, rep = 0x0101010101010101ULL * c;
        uint64_t m = 0;
        for (int w = 0; w < 8; w++) {
            uint64_t y = nd_load_le64(p + 8 * w) ^ rep;
            uint64_t z = ~(((y & low7) + low7) | y | low7);  /* 0x80 in each zero byte */
            m |= ((z >> 7) * 0x0102040810204080ULL >> 56) << (8 * w);
        }
        return m;
    }
    #endif
    """
    uint64_t byte_mask64 "nd_byte_mask64"(const uint8_t* p, uint8_t c) noexcept nogil
    uint64_t load_le64 "nd_load_le64"(const uint8_t* p) noexcept nogil
    void store_le64 "nd_store_le64"(uint8_t* p, uint64_t x) noexcept nogil
    uint64_t bswap64 "nd_bswap64"(uint64_t x) noexcept nogil
    int ctz64 "nd_ctz64"(uint64_t x) noexcept nogil


ctypedef fused sortable:
    uint32_t
    uint64_t


cdef inline void radix_sort(sortable* a, int64_t n, sortable* tmp) noexcept nogil:
    """Sort ``a[:n]`` in place: insertion sort when short, else LSD radix on bytes (the counts
    of every byte taken in one pass; the passes whose byte is the same everywhere skipped);
    ``tmp`` holds ``n`` values."""
    cdef int64_t i, j, total, cnt
    cdef int64_t count[8][256]
    cdef sortable x
    cdef sortable* src = a
    cdef sortable* dst = tmp
    cdef sortable* swap
    cdef int p, passes = <int>sizeof(sortable)
    cdef int64_t* c
    if n < 48:
        for i in range(1, n):
            x = a[i]
            j = i - 1
            while j >= 0 and a[j] > x:
                a[j + 1] = a[j]
                j -= 1
            a[j + 1] = x
        return
    for p in range(passes):
        for j in range(256):
            count[p][j] = 0
    for i in range(n):
        x = a[i]
        for p in range(passes):
            count[p][(x >> (8 * p)) & 255] += 1
    for p in range(passes):
        c = &count[p][0]
        if c[(src[0] >> (8 * p)) & 255] == n:
            continue  # one byte value everywhere: this pass would not move anything
        total = 0
        for j in range(256):
            cnt = c[j]
            c[j] = total
            total += cnt
        for i in range(n):
            x = src[i]
            j = (x >> (8 * p)) & 255
            dst[c[j]] = x
            c[j] += 1
        swap = src
        src = dst
        dst = swap
    if src != a:
        for i in range(n):
            a[i] = src[i]
