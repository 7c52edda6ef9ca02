# Shared inline helpers of the compiled kernels: 64-bit hashing that wraps modulo 2**64.
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

cdef enum:
    WORD = 0
    CHAR = 1

cdef inline uint64_t fmix64(uint64_t h) noexcept nogil:
    """MurmurHash3's 64-bit finaliser: a bijection with full avalanche."""
    h ^= h >> 33
    h *= <uint64_t>0xFF51AFD7ED558CCD
    h ^= h >> 33
    h *= <uint64_t>0xC4CEB9FE1A85EC53
    h ^= h >> 33
    return h

cdef inline int64_t reduce_range(uint64_t h, uint64_t n) noexcept nogil:
    """Map a 64-bit hash to ``[0, n)`` by multiply-shift on its high 32 bits (n < 2**32)."""
    return <int64_t>(((h >> 32) * n) >> 32)

cdef inline uint64_t fnv_step(uint64_t h, uint64_t w) noexcept nogil:
    return (h ^ w) * <uint64_t>0x100000001B3

cdef extern from *:
    """
    #define ND_FNV_OFFSET 0xCBF29CE484222325ULL
    #define ND_GOLDEN 0x9E3779B97F4A7C15ULL
    """
    const uint64_t FNV_OFFSET "ND_FNV_OFFSET"
    const uint64_t GOLDEN "ND_GOLDEN"

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
    """
    uint64_t load_le64 "nd_load_le64"(const uint8_t* p) noexcept nogil
    void store_le64 "nd_store_le64"(uint8_t* p, uint64_t x) noexcept nogil
    uint64_t bswap64 "nd_bswap64"(uint64_t x) noexcept nogil
    int ctz64 "nd_ctz64"(uint64_t x) noexcept nogil
