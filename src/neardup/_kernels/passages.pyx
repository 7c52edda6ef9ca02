# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Reused-passage kernels (see :mod:`neardup.reuse`): word keys and their hashes for ASCII
texts, the hash of given word keys, and the passages of many pairs of texts at once.

The word hash: the key's UTF-8 bytes taken 8 at a time as little-endian words ``w`` (the last
one padded with zero bytes), ``h = SEED ^ (n * GOLDEN)``, ``h = fmix64(h ^ w) + GOLDEN`` per
word, and ``fmix64(h ^ n)`` at the end (``n``: the key's length in bytes). For keys of up to 8
bytes and one length it is a bijection: no two such keys collide.

The passage search is the one of :func:`neardup.reuse.reused_passages` (its plain-Python
version is the tests' oracle), step for step: seeds from equal fingerprints (the first
``max_occ`` occurrences of a hash in each text), maximal runs through the seeds taken by
diagonal, runs merged into passages across gaps of at most ``max_gap`` words, each passage
extended across gaps at both ends, merged again.
"""

from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcpy, memset

import numpy as np

from ._common cimport GOLDEN, ctz64, fmix64, load_le64

cdef uint64_t SEED = 0x243F6A8885A308D3ULL


cdef inline uint64_t word_hash(const uint8_t* p, int64_t n, const uint8_t* fold) noexcept nogil:
    """The hash of the ``n`` bytes at ``p``, each mapped through ``fold`` first."""
    cdef uint64_t h = SEED ^ (<uint64_t>n * GOLDEN), w = 0
    cdef int64_t t
    cdef int shift = 0
    for t in range(n):
        w |= (<uint64_t>fold[p[t]]) << shift
        shift += 8
        if shift == 64:
            h = fmix64(h ^ w) + GOLDEN
            w = 0
            shift = 0
    if shift:
        h = fmix64(h ^ w) + GOLDEN
    return fmix64(h ^ <uint64_t>n)


def hash_keys(const uint8_t[::1] data, const int64_t[::1] offsets, uint64_t[::1] out):
    """``out[i]``: the hash of the bytes ``data[offsets[i]:offsets[i + 1]]`` (word keys)."""
    cdef uint8_t same[256]
    cdef Py_ssize_t i, n = out.shape[0]
    cdef const uint8_t* d = &data[0] if data.shape[0] else NULL
    for i in range(256):
        same[i] = <uint8_t>i
    with nogil:
        for i in range(n):
            out[i] = word_hash(d + offsets[i], offsets[i + 1] - offsets[i], same)


cdef inline int64_t space_at(const uint8_t* d, int64_t i, int64_t e) noexcept nogil:
    """The length in bytes of the white space at ``d[i]`` (UTF-8), 0 if none: what
    ``str.split()`` splits on (``str.isspace``): U+0009-000D, U+001C-0020, U+0085, U+00A0,
    U+1680, U+2000-200A, U+2028, U+2029, U+202F, U+205F, U+3000."""
    cdef uint8_t c = d[i], x
    if c < 0x80:
        return 1 if (c == 32 or (9 <= c <= 13) or (28 <= c <= 31)) else 0
    if c == 0xC2:
        if i + 1 < e and (d[i + 1] == 0x85 or d[i + 1] == 0xA0):
            return 2
        return 0
    if i + 2 >= e:
        return 0
    if c == 0xE1:
        return 3 if d[i + 1] == 0x9A and d[i + 2] == 0x80 else 0
    if c == 0xE2:
        x = d[i + 2]
        if d[i + 1] == 0x80:
            return 3 if (0x80 <= x <= 0x8A) or x == 0xA8 or x == 0xA9 or x == 0xAF else 0
        return 3 if d[i + 1] == 0x81 and x == 0x9F else 0
    if c == 0xE3:
        return 3 if d[i + 1] == 0x80 and d[i + 2] == 0x80 else 0
    return 0


# ---------------------------------------------------------------------------------------------
# Splitting texts into words, as str.split() does
#
# A text is read 64 bytes at a time into bit masks (bit j for byte j): its ASCII white space
# (9-13, 28-32) and its bytes >= 0x80 (SSE2 compares on x86-64, else 8 bytes at a time in a
# 64-bit word). Of the bytes >= 0x80 only 0xC2, 0xE1, 0xE2 and 0xE3 may start a multi-byte
# white space: at those ``space_at`` decides, and the bytes of a white space found are set in
# the mask (some may fall into the next 64 bytes). The interior bytes of a multi-byte white
# space are continuation bytes (0x80-0xBF), never one of those leads, so this marks exactly the
# bytes that a byte by byte scan steps over as white space. Words are the runs of bytes
# between: their starts and ends are read off the masks.

cdef extern from *:
    """
    #if defined(__SSE2__) || defined(_M_X64)
    #include <emmintrin.h>
    #define ND_SPLIT_SSE2 1
    #endif
    #if defined(__GNUC__) || defined(__clang__)
    #define nd_split_popcount(x) __builtin_popcountll(x)
    #else
    static inline int nd_split_popcount(uint64_t x) {
        x = x - ((x >> 1) & 0x5555555555555555ULL);
        x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
        x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
        return (int)((x * 0x0101010101010101ULL) >> 56);
    }
    #endif
    #define ND_SPLIT_HIGH 0x8080808080808080ULL
    #define ND_SPLIT_REP(c) (0x0101010101010101ULL * (uint64_t)(c))
    #if !defined(ND_SPLIT_SSE2)
    /* the top bit of each byte of z as 8 bits (bit j: byte j) */
    static inline uint64_t nd_split_bits(uint64_t z) {
        return ((z >> 7) & 0x0101010101010101ULL) * 0x0102040810204080ULL >> 56;
    }
    /* 0x80 in each byte of x that is ASCII white space */
    static inline uint64_t nd_split_ascii_spaces8(uint64_t x) {
        const uint64_t low7 = 0x7F7F7F7F7F7F7F7FULL, high = 0x8080808080808080ULL,
                       rep = 0x0101010101010101ULL;
        uint64_t y = x & low7;
        uint64_t ge9 = y + rep * (0x80 - 9), ge14 = y + rep * (0x80 - 14);
        uint64_t ge28 = y + rep * (0x80 - 28), ge33 = y + rep * (0x80 - 33);
        return ((ge9 & ~ge14) | (ge28 & ~ge33)) & high & ~x;
    }
    /* 0x80 in each byte of x equal to c (exactly: no borrow crosses bytes) */
    static inline uint64_t nd_split_eq8(uint64_t x, uint8_t c) {
        const uint64_t low7 = 0x7F7F7F7F7F7F7F7FULL;
        uint64_t y = x ^ (0x0101010101010101ULL * c);
        return ~(((y & low7) + low7) | y | low7);
    }
    #endif
    /* bits of the 64 bytes at p: *high, the bytes >= 0x80; returns the ASCII white space */
    static inline uint64_t nd_split_classify(const uint8_t* p, uint64_t* high) {
        uint64_t s = 0, h = 0;
    #if defined(ND_SPLIT_SSE2)
        const __m128i lo1 = _mm_set1_epi8(8), hi1 = _mm_set1_epi8(14);
        const __m128i lo2 = _mm_set1_epi8(27), hi2 = _mm_set1_epi8(33);
        for (int w = 0; w < 4; w++) {
            __m128i x = _mm_loadu_si128((const __m128i*)(p + 16 * w));
            /* signed compares: bytes >= 0x80 are negative, never white space */
            __m128i a = _mm_and_si128(_mm_cmpgt_epi8(x, lo1), _mm_cmplt_epi8(x, hi1));
            __m128i b = _mm_and_si128(_mm_cmpgt_epi8(x, lo2), _mm_cmplt_epi8(x, hi2));
            s |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_or_si128(a, b)) << (16 * w);
            h |= (uint64_t)(uint32_t)_mm_movemask_epi8(x) << (16 * w);
        }
    #else
        for (int w = 0; w < 8; w++) {
            uint64_t x;
            memcpy(&x, p + 8 * w, 8);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            x = __builtin_bswap64(x);
    #endif
            s |= nd_split_bits(nd_split_ascii_spaces8(x)) << (8 * w);
            h |= nd_split_bits(x & 0x8080808080808080ULL) << (8 * w);
        }
    #endif
        *high = h;
        return s;
    }
    /* bits of the 64 bytes at p that may start a multi-byte white space: 0xC2, 0xE1-0xE3 */
    static inline uint64_t nd_split_leads(const uint8_t* p) {
        uint64_t m = 0;
    #if defined(ND_SPLIT_SSE2)
        const __m128i c2 = _mm_set1_epi8((char)0xC2), e1 = _mm_set1_epi8((char)0xE1);
        const __m128i e2 = _mm_set1_epi8((char)0xE2), e3 = _mm_set1_epi8((char)0xE3);
        for (int w = 0; w < 4; w++) {
            __m128i x = _mm_loadu_si128((const __m128i*)(p + 16 * w));
            __m128i a = _mm_or_si128(_mm_cmpeq_epi8(x, c2), _mm_cmpeq_epi8(x, e1));
            __m128i b = _mm_or_si128(_mm_cmpeq_epi8(x, e2), _mm_cmpeq_epi8(x, e3));
            m |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_or_si128(a, b)) << (16 * w);
        }
    #else
        for (int w = 0; w < 8; w++) {
            uint64_t x;
            memcpy(&x, p + 8 * w, 8);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            x = __builtin_bswap64(x);
    #endif
            m |= nd_split_bits(nd_split_eq8(x, 0xC2) | nd_split_eq8(x, 0xE1)
                               | nd_split_eq8(x, 0xE2) | nd_split_eq8(x, 0xE3)) << (8 * w);
        }
    #endif
        return m;
    }
    """
    const uint64_t HIGH "ND_SPLIT_HIGH"
    uint64_t REP "ND_SPLIT_REP"(int c) noexcept nogil
    int popcount64 "nd_split_popcount"(uint64_t x) noexcept nogil
    uint64_t classify64 "nd_split_classify"(const uint8_t* p, uint64_t* high) noexcept nogil
    uint64_t leads64 "nd_split_leads"(const uint8_t* p) noexcept nogil


cdef inline uint64_t chunk_spaces(const uint8_t* d, int64_t pos, int64_t e, uint8_t* pad,
                                  uint64_t* spill, uint64_t* high) noexcept nogil:
    """Bit j: byte ``pos + j`` of the text ending at ``e`` is white space, for j in [0, 64)
    (past ``e``: set). ``spill``: the bits of a white space begun in the 64 bytes before, in
    and out (those of one that goes on past these); ``high``: the bytes >= 0x80;
    ``pad``: room for 64 bytes."""
    cdef const uint8_t* p = d + pos
    cdef uint64_t sp, lead, run
    cdef int64_t m = e - pos, j, k
    if m < 64:  # the text's last bytes, padded with spaces
        memcpy(pad, p, m)
        memset(pad + m, 32, 64 - m)
        p = pad
    sp = classify64(p, high) | spill[0]
    spill[0] = 0
    if high[0]:
        lead = leads64(p)
        while lead:
            j = ctz64(lead)
            lead &= lead - 1
            k = space_at(d, pos + j, e)
            if k:
                run = (1ULL << k) - 1
                sp |= run << j
                if j + k > 64:
                    spill[0] = run >> (64 - j)
    return sp


cdef inline uint64_t lower8(uint64_t w) noexcept nogil:
    """``w``'s ASCII bytes (each < 0x80) with A-Z made lower case."""
    cdef uint64_t upper = (w + REP(0x80 - 0x41)) & ~(w + REP(0x80 - 0x5B)) & HIGH
    return w | (upper >> 2)


cdef inline uint64_t ascii_key_hash(const uint8_t* p, int64_t n, const uint8_t* end
                                    ) noexcept nogil:
    """``word_hash(p, n, lower)`` for ASCII bytes, 8 at a time (``end``: the buffer's end,
    up to which 8 bytes may be read at once)."""
    cdef uint64_t h = SEED ^ (<uint64_t>n * GOLDEN), w
    cdef int64_t t = 0, r
    while t + 8 <= n:
        h = fmix64(h ^ lower8(load_le64(p + t))) + GOLDEN
        t += 8
    r = n - t
    if r:
        if p + t + 8 <= end:
            w = load_le64(p + t) & ((1ULL << (8 * r)) - 1)
        else:
            w = 0
            while t < n:
                w |= (<uint64_t>p[t]) << (8 * (t + r - n))
                t += 1
        h = fmix64(h ^ lower8(w)) + GOLDEN
    return fmix64(h ^ <uint64_t>n)


def count_words(const uint8_t[::1] data, const int64_t[::1] offsets, int64_t[::1] counts,
                Py_ssize_t lo, Py_ssize_t hi):
    """``counts[t]``: how many words ``str.split()`` finds in the UTF-8 text
    ``data[offsets[t]:offsets[t + 1]]``, for ``t`` in [lo, hi)."""
    cdef Py_ssize_t t
    cdef int64_t pos, e, c
    cdef uint64_t sp, ns, spill, high, carry
    cdef uint8_t pad[64]
    cdef const uint8_t* d = &data[0] if data.shape[0] else NULL
    with nogil:
        for t in range(lo, hi):
            c = 0
            pos = offsets[t]
            e = offsets[t + 1]
            spill = 0
            carry = 0
            while pos < e:
                sp = chunk_spaces(d, pos, e, pad, &spill, &high)
                ns = ~sp
                c += popcount64(ns & ~((ns << 1) | carry))  # word starts
                carry = ns >> 63
                pos += 64
            counts[t] = c


cdef inline void put_word(const uint8_t* d, const uint8_t* end, int64_t base, int64_t s,
                          int64_t i, bint other, const uint8_t* punct, bint where,
                          int64_t w, uint64_t[::1] hashes, int64_t[::1] starts,
                          int64_t[::1] ends, uint8_t[::1] foreign) noexcept nogil:
    cdef int64_t a = s, b = i
    if where:
        starts[w] = s - base
        ends[w] = i - base
    if other:
        foreign[w] = 1
        hashes[w] = 0
        return
    foreign[w] = 0
    while a < b and punct[d[a]]:
        a += 1
    while b > a and punct[d[b - 1]]:
        b -= 1
    if a == b:  # punctuation only: the word as it is
        a = s
        b = i
    hashes[w] = ascii_key_hash(d + a, b - a, end)


def text_words(const uint8_t[::1] data, const int64_t[::1] offsets,
               const int64_t[::1] word_offsets, const uint8_t[::1] punct,
               uint64_t[::1] hashes, int64_t[::1] starts, int64_t[::1] ends,
               uint8_t[::1] foreign, Py_ssize_t lo, Py_ssize_t hi):
    """The words of the UTF-8 texts ``t`` in [lo, hi): text ``t``'s words go to
    ``[word_offsets[t], word_offsets[t + 1])`` of ``hashes``, ``starts``/``ends`` (the word's
    byte offsets in its text; not written when they are empty) and ``foreign``. A word of
    ASCII bytes gets the hash of its key (lower case, without the bytes marked in ``punct``
    at its ends unless it is made of them only) and ``foreign`` 0; any other word gets
    ``foreign`` 1 and its hash is left for the caller (NFKC and case folding)."""
    cdef bint where = starts.shape[0] > 0, pending, other
    cdef Py_ssize_t t
    cdef int64_t pos, e, base, s = 0, w, js, je, jfrom
    cdef uint64_t sp, ns, spill, high, carry, wstart, wend
    cdef uint8_t pad[64]
    cdef const uint8_t* d = &data[0] if data.shape[0] else NULL
    cdef const uint8_t* end = d + data.shape[0]
    cdef const uint8_t* pu = &punct[0]
    with nogil:
        for t in range(lo, hi):
            base = offsets[t]
            e = offsets[t + 1]
            w = word_offsets[t]
            pos = base
            spill = 0
            carry = 0
            pending = False
            other = False
            while pos < e:
                sp = chunk_spaces(d, pos, e, pad, &spill, &high)
                ns = ~sp
                wstart = ns & ~((ns << 1) | carry)
                wend = sp & ((ns << 1) | carry)
                carry = ns >> 63
                jfrom = 0
                while True:
                    if pending:
                        if wend == 0:
                            other = other or (high >> jfrom) != 0
                            break
                        je = ctz64(wend)
                        wend &= wend - 1
                        other = other or ((high & ((1ULL << je) - 1)) >> jfrom) != 0
                        put_word(d, end, base, s, pos + je, other, pu, where, w, hashes,
                                 starts, ends, foreign)
                        w += 1
                        pending = False
                    if wstart == 0:
                        break
                    js = ctz64(wstart)
                    wstart &= wstart - 1
                    s = pos + js
                    jfrom = js
                    other = False
                    pending = True
                pos += 64
            if pending:  # a word up to the text's end, at the end of 64 bytes
                put_word(d, end, base, s, e, other, pu, where, w, hashes, starts, ends,
                         foreign)


# ---------------------------------------------------------------------------------------------
# Winnowing


cdef inline uint64_t kgram(const uint64_t* h, int64_t at, const uint64_t* coef,
                           int64_t k) noexcept nogil:
    """The hash of the k words from ``h[at]`` (reuse.combine_kgrams): sum of word x odd
    coefficient per position, then splitmix64's finaliser."""
    cdef uint64_t acc = 0
    cdef int64_t t
    for t in range(k):
        acc += h[at + t] * coef[t]
    acc ^= acc >> 30
    acc *= 0xBF58476D1CE4E5B9ULL
    acc ^= acc >> 27
    acc *= 0x94D049BB133111EBULL
    acc ^= acc >> 31
    return acc


cdef int64_t winnow_text(const uint64_t* h, int64_t nw, const uint64_t* coef, int64_t k,
                         int64_t window, uint64_t* kh, uint64_t* out_h, int64_t* out_pos
                         ) noexcept nogil:
    """Winnow one text of ``nw`` word hashes: its k-gram hashes into ``kh`` (room for
    ``nw``), then of every window of ``window`` of them the rightmost smallest, each position
    once (a text of fewer k-grams: one window, all of them). Writes the kept hashes and
    positions when ``out_h`` is not NULL; returns how many.

    The smallest is carried from window to window: while it stays inside, only the k-gram
    that enters is compared with it (``<=``: the rightmost of equal ones wins); the window is
    scanned again only when the smallest leaves it (for hashes, in about one step of
    ``window``: O(1) work per k-gram on average; a rising run rescans at every step, as much
    work as scanning every window)."""
    cdef int64_t n = nw - k + 1, s, i, best, last = -1, m = 0, w = window
    cdef uint64_t low
    if n <= 0:
        return 0
    for i in range(n):
        kh[i] = kgram(h, i, coef, k)
    if w > n:
        w = n
    best = -1
    low = 0
    for s in range(n - w + 1):
        if best < s:  # the smallest left the window (or the first window): scan it
            best = s
            low = kh[s]
            for i in range(s + 1, s + w):
                if kh[i] <= low:
                    best = i
                    low = kh[i]
        elif kh[s + w - 1] <= low:
            best = s + w - 1
            low = kh[best]
        if best != last:
            if out_h != NULL:
                out_h[m] = low
                out_pos[m] = best
            m += 1
            last = best
    return m


def winnow(const uint64_t[::1] words, const int64_t[::1] word_offsets,
           const uint64_t[::1] coef, int64_t window, int64_t[::1] counts,
           uint64_t[::1] out_hash, int64_t[::1] out_pos, const int64_t[::1] out_offsets,
           Py_ssize_t lo, Py_ssize_t hi):
    """The winnowed k-gram fingerprints (``k = len(coef)``) of texts ``t`` in [lo, hi) (text
    ``t``'s words: ``words[word_offsets[t]:word_offsets[t + 1]]``). Without output arrays
    (``out_hash`` empty) their number goes to ``counts[t]``; with them text ``t``'s kept
    hashes and positions go to ``[out_offsets[t], out_offsets[t + 1])``."""
    cdef Py_ssize_t t
    cdef int64_t k = coef.shape[0], longest = 0, nw, m
    cdef bint fill = out_hash.shape[0] > 0
    cdef uint64_t* kh
    cdef const uint64_t* wd = &words[0] if words.shape[0] else NULL
    for t in range(lo, hi):
        nw = word_offsets[t + 1] - word_offsets[t]
        if nw > longest:
            longest = nw
    kh = <uint64_t*>malloc((longest + 1) * sizeof(uint64_t))
    if kh == NULL:
        raise MemoryError("out of memory while winnowing")
    try:
        with nogil:
            for t in range(lo, hi):
                nw = word_offsets[t + 1] - word_offsets[t]
                if fill:
                    winnow_text(wd + word_offsets[t], nw, &coef[0], k, window, kh,
                                &out_hash[0] + out_offsets[t], &out_pos[0] + out_offsets[t])
                else:
                    counts[t] = winnow_text(wd + word_offsets[t], nw, &coef[0], k, window, kh,
                                            NULL, NULL)
    finally:
        free(kh)


# ---------------------------------------------------------------------------------------------
# Passages of pairs of texts

cdef struct Seed:
    int64_t d   # i - j: the diagonal
    int64_t i
    int64_t j

cdef struct Run:
    int64_t i
    int64_t j
    int64_t n

cdef int cmp_seed(const void* x, const void* y) noexcept nogil:
    cdef const Seed* a = <const Seed*>x
    cdef const Seed* b = <const Seed*>y
    if a.d != b.d:
        return -1 if a.d < b.d else 1
    if a.i != b.i:
        return -1 if a.i < b.i else 1
    return 0

cdef int cmp_run(const void* x, const void* y) noexcept nogil:
    cdef const Run* a = <const Run*>x
    cdef const Run* b = <const Run*>y
    if a.i != b.i:
        return -1 if a.i < b.i else 1
    if a.j != b.j:
        return -1 if a.j < b.j else 1
    if a.n != b.n:
        return -1 if a.n < b.n else 1
    return 0


cdef struct Buf:
    # a growable array of ``size``-byte items
    char* p
    int64_t n
    int64_t cap
    int64_t size


cdef inline bint buf_reserve(Buf* b, int64_t want) noexcept nogil:
    cdef int64_t cap = b.cap
    cdef char* q
    if want <= cap:
        return True
    if cap < 16:
        cap = 16
    while cap < want:
        cap *= 2
    q = <char*>realloc(b.p, cap * b.size)
    if q == NULL:
        return False
    b.p = q
    b.cap = cap
    return True


cdef inline void buf_init(Buf* b, int64_t size) noexcept nogil:
    b.p = NULL
    b.n = 0
    b.cap = 0
    b.size = size


cdef struct Work:
    # scratch of one thread
    Buf seeds      # Seed
    Buf runs       # Run: maximal runs (then with the extensions)
    Buf grp_first  # int64: per group, its first run in ``order`` (a linked list)
    Buf grp_last
    Buf nxt        # int64: per run slot, the next run slot of its group (-1: none)
    Buf slot_run   # Run: the run of each slot (groups hold slots)
    Buf gnext      # int64: per group, next group in its ``ends`` list
    Buf gprev
    Buf gend       # int64: per group, the end position (in a) it is listed under
    Buf ext        # Run: one group's runs while it is extended
    int64_t* head  # per end position in a: first group listed there (-1: none)
    int64_t* tail
    int64_t cap_pos
    int64_t ngroups


cdef inline int64_t run_len(const uint64_t* a, int64_t la, const uint64_t* b, int64_t lb,
                            int64_t i, int64_t j) noexcept nogil:
    cdef int64_t t = 0, m = la - i
    if lb - j < m:
        m = lb - j
    while t < m and a[i + t] == b[j + t]:
        t += 1
    return t


cdef inline Run max_run(const uint64_t* a, int64_t la, const uint64_t* b, int64_t lb,
                        int64_t i, int64_t j) noexcept nogil:
    """The maximal run of equal words through (i, j) (reused._run)."""
    cdef int64_t m = i if i < j else j, back = 0
    cdef Run r
    while back < m and a[i - 1 - back] == b[j - 1 - back]:
        back += 1
    r.i = i - back
    r.j = j - back
    r.n = run_len(a, la, b, lb, r.i, r.j)
    return r


cdef inline bint gap_step(const uint64_t* a, int64_t la, const uint64_t* b, int64_t lb,
                          int64_t i, int64_t j, int64_t g, int64_t m, bint forwards,
                          int64_t* oda, int64_t* odb) noexcept nogil:
    """reused._gap_step: the smallest (da, db) by da + db (first in da, then db order), not
    both 0, each at most g, where m words agree again."""
    cdef int64_t La, Lb, da, db, u, best = -1, bda = 0, bdb = 0, lim_a, lim_b
    cdef bint ok
    if forwards:
        La = la - i
        Lb = lb - j
    else:
        La = i
        Lb = j
    if La > g + m:
        La = g + m
    if Lb > g + m:
        Lb = g + m
    lim_a = La - m
    if lim_a > g:
        lim_a = g
    lim_b = Lb - m
    if lim_b > g:
        lim_b = g
    for da in range(lim_a + 1):
        for db in range(lim_b + 1):
            if da == 0 and db == 0:
                continue
            if best >= 0 and da + db >= best:
                continue
            ok = True
            for u in range(m):
                if forwards:
                    if a[i + da + u] != b[j + db + u]:
                        ok = False
                        break
                else:
                    if a[i - 1 - da - u] != b[j - 1 - db - u]:
                        ok = False
                        break
            if ok:
                best = da + db
                bda = da
                bdb = db
    if best < 0:
        return False
    oda[0] = bda
    odb[0] = bdb
    return True


cdef bint merge_runs(Work* w, const Run* runs, int64_t nruns, int64_t gap) noexcept nogil:
    """reused._merge over ``runs`` (sorted, unique): the groups as linked lists of slots
    (``w.grp_first``/``w.grp_last``, ``w.nxt``, ``w.slot_run``), in order of their first
    run. ``False``: out of memory."""
    cdef int64_t r, ie, g, target, last_end_j, lo
    cdef int64_t* grp_first
    cdef int64_t* grp_last
    cdef int64_t* nxt
    cdef int64_t* gnext
    cdef int64_t* gprev
    cdef int64_t* gend
    cdef Run* slot
    cdef Run x, last
    if not (buf_reserve(&w.grp_first, nruns) and buf_reserve(&w.grp_last, nruns)
            and buf_reserve(&w.nxt, nruns) and buf_reserve(&w.slot_run, nruns)
            and buf_reserve(&w.gnext, nruns) and buf_reserve(&w.gprev, nruns)
            and buf_reserve(&w.gend, nruns)):
        return False
    grp_first = <int64_t*>w.grp_first.p
    grp_last = <int64_t*>w.grp_last.p
    nxt = <int64_t*>w.nxt.p
    slot = <Run*>w.slot_run.p
    gnext = <int64_t*>w.gnext.p
    gprev = <int64_t*>w.gprev.p
    gend = <int64_t*>w.gend.p
    w.ngroups = 0
    for r in range(nruns):
        x = runs[r]
        slot[r] = x
        nxt[r] = -1
        target = -1
        lo = x.i - gap
        if lo < 0:
            lo = 0
        ie = x.i
        while ie >= lo and target < 0:
            g = w.head[ie]
            while g >= 0:
                last = slot[grp_last[g]]
                last_end_j = last.j + last.n
                if 0 <= x.j - last_end_j <= gap:
                    target = g
                    break
                g = gnext[g]
            ie -= 1
        if target >= 0:
            # off its list
            if gprev[target] >= 0:
                gnext[gprev[target]] = gnext[target]
            else:
                w.head[gend[target]] = gnext[target]
            if gnext[target] >= 0:
                gprev[gnext[target]] = gprev[target]
            else:
                w.tail[gend[target]] = gprev[target]
            nxt[grp_last[target]] = r
            grp_last[target] = r
        else:
            target = w.ngroups
            w.ngroups += 1
            grp_first[target] = r
            grp_last[target] = r
        # onto the list of its new end, last
        ie = x.i + x.n
        gend[target] = ie
        gnext[target] = -1
        gprev[target] = w.tail[ie]
        if w.tail[ie] >= 0:
            gnext[w.tail[ie]] = target
        else:
            w.head[ie] = target
        w.tail[ie] = target
    # clear the lists for the next call
    for g in range(w.ngroups):
        w.head[gend[g]] = -1
        w.tail[gend[g]] = -1
    return True


cdef bint sort_unique_runs(Buf* runs) noexcept nogil:
    cdef Run* r = <Run*>runs.p
    cdef int64_t n = runs.n, i, k = 0
    if n == 0:
        return True
    qsort(r, n, sizeof(Run), cmp_run)
    for i in range(1, n):
        if r[i].i != r[k].i or r[i].j != r[k].j or r[i].n != r[k].n:
            k += 1
            r[k] = r[i]
    runs.n = k + 1
    return True


cdef int pair_passages(Work* w, const uint64_t* a, int64_t la, const uint64_t* b, int64_t lb,
                       const uint64_t* fha, const int64_t* fpa, int64_t nfa,
                       const uint64_t* fhb, const int64_t* fpb, int64_t nfb,
                       int64_t k, int64_t gap, int64_t min_match, int64_t max_occ,
                       int64_t shortest, int64_t pair, Buf* out_p, Buf* out_r) noexcept nogil:
    """The passages of one pair; appends to ``out_p`` (int64 x 8 per passage: pair, a0, a1,
    b0, b1, matched, first run in ``out_r``, runs) and ``out_r`` (Run per run of a passage).
    Returns 0, or -1 when out of memory. ``fha``/``fpa``: a's fingerprints sorted by hash
    then position."""
    cdef int64_t x = 0, y = 0, x1, y1, ca, cb, u, v, g, s
    cdef int64_t lo_d = 0, hi_i = 0, cur_d = 0
    cdef bint have = False
    cdef uint64_t h
    cdef Seed* seeds
    cdef Seed sd
    cdef Run run, first, last
    cdef Run* runs
    cdef Run* ext
    cdef int64_t da, db, matched, n0
    cdef int64_t* grp_first
    cdef int64_t* nxt
    cdef Run* slot
    cdef int64_t* row
    # positions of ends in a: 0..la
    if la + 1 > w.cap_pos:
        free(w.head)
        free(w.tail)
        w.head = <int64_t*>malloc((la + 1) * sizeof(int64_t))
        w.tail = <int64_t*>malloc((la + 1) * sizeof(int64_t))
        if w.head == NULL or w.tail == NULL:
            w.cap_pos = 0
            return -1
        w.cap_pos = la + 1
        for u in range(la + 1):
            w.head[u] = -1
            w.tail[u] = -1
    # seeds: equal hashes, the first max_occ positions of each hash on each side
    w.seeds.n = 0
    while x < nfa and y < nfb:
        if fha[x] < fhb[y]:
            x += 1
        elif fha[x] > fhb[y]:
            y += 1
        else:
            h = fha[x]
            x1 = x
            while x1 < nfa and fha[x1] == h:
                x1 += 1
            y1 = y
            while y1 < nfb and fhb[y1] == h:
                y1 += 1
            ca = x1 - x if x1 - x < max_occ else max_occ
            cb = y1 - y if y1 - y < max_occ else max_occ
            if not buf_reserve(&w.seeds, w.seeds.n + ca * cb):
                return -1
            seeds = <Seed*>w.seeds.p
            for u in range(ca):
                for v in range(cb):
                    sd.i = fpa[x + u]
                    sd.j = fpb[y + v]
                    sd.d = sd.i - sd.j
                    seeds[w.seeds.n] = sd
                    w.seeds.n += 1
            x = x1
            y = y1
    if w.seeds.n == 0:
        return 0
    seeds = <Seed*>w.seeds.p
    qsort(seeds, w.seeds.n, sizeof(Seed), cmp_seed)
    # maximal runs through the seeds, by diagonal
    w.runs.n = 0
    for u in range(w.seeds.n):
        sd = seeds[u]
        if have and sd.d == cur_d and lo_d <= sd.i < hi_i:
            continue
        run = max_run(a, la, b, lb, sd.i, sd.j)
        have = True
        cur_d = sd.d
        lo_d = run.i
        hi_i = run.i + run.n
        if run.i + run.n >= sd.i + k:
            if not buf_reserve(&w.runs, w.runs.n + 1):
                return -1
            (<Run*>w.runs.p)[w.runs.n] = run
            w.runs.n += 1
    if w.runs.n == 0:
        return 0
    sort_unique_runs(&w.runs)
    if gap:
        # extend each group of the first merge across gaps at both ends
        if not merge_runs(w, <Run*>w.runs.p, w.runs.n, gap):
            return -1
        grp_first = <int64_t*>w.grp_first.p
        nxt = <int64_t*>w.nxt.p
        slot = <Run*>w.slot_run.p
        for g in range(w.ngroups):
            # the group's runs into ext, then extensions appended (forwards) and collected in
            # front (backwards; their order does not matter: they all go to the run set)
            w.ext.n = 0
            s = grp_first[g]
            while s >= 0:
                if not buf_reserve(&w.ext, w.ext.n + 1):
                    return -1
                (<Run*>w.ext.p)[w.ext.n] = slot[s]
                w.ext.n += 1
                s = nxt[s]
            while True:
                last = (<Run*>w.ext.p)[w.ext.n - 1]
                if not gap_step(a, la, b, lb, last.i + last.n, last.j + last.n, gap,
                                min_match, True, &da, &db):
                    break
                run = max_run(a, la, b, lb, last.i + last.n + da, last.j + last.n + db)
                if not buf_reserve(&w.ext, w.ext.n + 1):
                    return -1
                (<Run*>w.ext.p)[w.ext.n] = run
                w.ext.n += 1
            first = (<Run*>w.ext.p)[0]
            while True:
                if not gap_step(a, la, b, lb, first.i, first.j, gap, min_match, False,
                                &da, &db):
                    break
                first = max_run(a, la, b, lb, first.i - da - min_match,
                                first.j - db - min_match)
                if not buf_reserve(&w.ext, w.ext.n + 1):
                    return -1
                (<Run*>w.ext.p)[w.ext.n] = first
                w.ext.n += 1
            # every run found goes to the set (group order and seeds are not needed again)
            if not buf_reserve(&w.runs, w.runs.n + w.ext.n):
                return -1
            ext = <Run*>w.ext.p
            for u in range(w.ext.n):
                (<Run*>w.runs.p)[w.runs.n] = ext[u]
                w.runs.n += 1
        sort_unique_runs(&w.runs)
    if not merge_runs(w, <Run*>w.runs.p, w.runs.n, gap):
        return -1
    grp_first = <int64_t*>w.grp_first.p
    nxt = <int64_t*>w.nxt.p
    slot = <Run*>w.slot_run.p
    for g in range(w.ngroups):
        s = grp_first[g]
        first = slot[s]
        matched = 0
        n0 = out_r.n
        while s >= 0:
            last = slot[s]
            matched += last.n
            if not buf_reserve(out_r, out_r.n + 1):
                return -1
            (<Run*>out_r.p)[out_r.n] = last
            out_r.n += 1
            s = nxt[s]
        if last.i + last.n - first.i < shortest:
            out_r.n = n0
            continue
        if not buf_reserve(out_p, out_p.n + 1):
            return -1
        row = (<int64_t*>out_p.p) + 8 * out_p.n
        row[0] = pair
        row[1] = first.i
        row[2] = last.i + last.n
        row[3] = first.j
        row[4] = last.j + last.n
        row[5] = matched
        row[6] = n0
        row[7] = out_r.n - n0
        out_p.n += 1
    return 0


def pair_passages_many(const uint64_t[::1] words, const int64_t[::1] word_offsets,
                       const uint64_t[::1] fp_hash, const int64_t[::1] fp_pos,
                       const int64_t[::1] fp_offsets, const int64_t[::1] left,
                       const int64_t[::1] right, Py_ssize_t lo, Py_ssize_t hi, int64_t k,
                       int64_t max_gap, int64_t min_match, int64_t max_occ,
                       int64_t shortest):
    """The passages of the pairs ``(left[p], right[p])``, ``p`` in [lo, hi): text ``d``'s word
    hashes are ``words[word_offsets[d]:word_offsets[d + 1]]`` and its winnowed fingerprints
    ``fp_hash``/``fp_pos`` over ``[fp_offsets[d], fp_offsets[d + 1])``, sorted by hash then
    position. Returns ``(passages, runs)``: ``int64[P, 8]`` rows ``(pair, a_start, a_end,
    b_start, b_end, matched, first_run, runs)`` (word ranges; the passages of a pair in the
    order of their first run) and ``int64[R, 3]`` rows ``(i, j, n)``: the runs of each
    passage in order."""
    cdef Work w
    cdef Buf out_p, out_r
    cdef Py_ssize_t p
    cdef int64_t da, db, rc = 0
    cdef const uint64_t* wd = &words[0] if words.shape[0] else NULL
    cdef const uint64_t* fh = &fp_hash[0] if fp_hash.shape[0] else NULL
    cdef const int64_t* fp = &fp_pos[0] if fp_pos.shape[0] else NULL
    cdef int64_t[:, ::1] pv
    cdef int64_t[:, ::1] rv
    buf_init(&w.seeds, sizeof(Seed))
    buf_init(&w.runs, sizeof(Run))
    buf_init(&w.grp_first, sizeof(int64_t))
    buf_init(&w.grp_last, sizeof(int64_t))
    buf_init(&w.nxt, sizeof(int64_t))
    buf_init(&w.slot_run, sizeof(Run))
    buf_init(&w.gnext, sizeof(int64_t))
    buf_init(&w.gprev, sizeof(int64_t))
    buf_init(&w.gend, sizeof(int64_t))
    buf_init(&w.ext, sizeof(Run))
    w.head = NULL
    w.tail = NULL
    w.cap_pos = 0
    buf_init(&out_p, 8 * sizeof(int64_t))
    buf_init(&out_r, sizeof(Run))
    try:
        with nogil:
            for p in range(lo, hi):
                da = left[p]
                db = right[p]
                rc = pair_passages(&w, wd + word_offsets[da], word_offsets[da + 1] - word_offsets[da],
                                   wd + word_offsets[db], word_offsets[db + 1] - word_offsets[db],
                                   fh + fp_offsets[da], fp + fp_offsets[da],
                                   fp_offsets[da + 1] - fp_offsets[da],
                                   fh + fp_offsets[db], fp + fp_offsets[db],
                                   fp_offsets[db + 1] - fp_offsets[db],
                                   k, max_gap, min_match, max_occ, shortest, p, &out_p, &out_r)
                if rc != 0:
                    break
        if rc != 0:
            raise MemoryError("out of memory while comparing passages")
        passages = np.empty((out_p.n, 8), np.int64)
        runs = np.empty((out_r.n, 3), np.int64)
        if out_p.n:
            pv = passages
            memcpy(&pv[0, 0], out_p.p, out_p.n * 8 * sizeof(int64_t))
        if out_r.n:
            rv = runs
            memcpy(&rv[0, 0], out_r.p, out_r.n * sizeof(Run))
        return passages, runs
    finally:
        free(w.seeds.p)
        free(w.runs.p)
        free(w.grp_first.p)
        free(w.grp_last.p)
        free(w.nxt.p)
        free(w.slot_run.p)
        free(w.gnext.p)
        free(w.gprev.p)
        free(w.gend.p)
        free(w.ext.p)
        free(w.head)
        free(w.tail)
        free(out_p.p)
        free(out_r.p)

