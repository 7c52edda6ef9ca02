# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Normalisation kernels: the compiled pass over UTF-8 bytes (see :mod:`neardup.text.normalize`)."""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from ._common cimport load_le64, store_le64

cdef extern from *:
    """
    /* Up to 64 bytes of plain ASCII at once (x86-64: SSE2, which every x86-64 has): the
       longest prefix of src[0:64] that is printable ASCII (0x20-0x7F) with no two spaces in
       a row, and no space first after whitespace (prev), is copied to dst, A-Z lowered if
       lower (dst must have room for 64 bytes). Returns its length; *spaces gets the spaces in
       it and *prev whether its last byte is one (unchanged for an empty prefix). Elsewhere
       always 0 (the caller goes on eight bytes at a time). */
    #if defined(ND_SSE2)
    static inline int nd_ascii_block64(const uint8_t* src, uint8_t* dst, int lower, int* prev,
                                       int64_t* spaces) {
        const __m128i space = _mm_set1_epi8(0x20), before_a = _mm_set1_epi8('A' - 1),
                      after_z = _mm_set1_epi8('Z' + 1);
        __m128i x, up;
        uint64_t bad = 0, sp = 0;
        int w, p;
        for (w = 0; w < 4; w++) {
            x = _mm_loadu_si128((const __m128i*)(src + 16 * w));
            /* signed: below 0x20, or 0x80 and up */
            bad |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmplt_epi8(x, space)) << (16 * w);
            sp |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, space)) << (16 * w);
            if (lower) {
                up = _mm_and_si128(_mm_cmpgt_epi8(x, before_a), _mm_cmplt_epi8(x, after_z));
                x = _mm_or_si128(x, _mm_and_si128(up, space));
            }
            _mm_storeu_si128((__m128i*)(dst + 16 * w), x);
        }
        bad |= sp & ((sp << 1) | (uint64_t)(*prev != 0));
        p = bad ? nd_ctz64(bad) : 64;
        if (p == 0) return 0;
        if (p < 64) sp &= (((uint64_t)1) << p) - 1;
        *prev = (int)((sp >> (p - 1)) & 1);
        *spaces += nd_popcount64(sp);
        return p;
    }
    #else
    static inline int nd_ascii_block64(const uint8_t* src, uint8_t* dst, int lower, int* prev,
                                       int64_t* spaces) {
        (void)src; (void)dst; (void)lower; (void)prev; (void)spaces;
        return 0;
    }
    #endif
    """
    int ascii_block64 "nd_ascii_block64"(const uint8_t* src, uint8_t* dst, int lower,
                                         int* prev, int64_t* spaces) noexcept nogil

cdef uint64_t HIGHS = 0x8080808080808080
cdef uint64_t ONES = 0x0101010101010101
cdef uint64_t SPACES = 0x2020202020202020
cdef uint64_t LOW7 = 0x7F7F7F7F7F7F7F7F
cdef uint64_t BELOW_SPACE = 0x6060606060606060  # + byte: high bit clear iff byte < 0x20
cdef uint64_t FROM_A = 0x3F3F3F3F3F3F3F3F  # + byte: high bit set iff byte >= 'A'
cdef uint64_t PAST_Z = 0x2525252525252525  # + byte: high bit set iff byte > 'Z'


def collapse_whitespace(const uint8_t[::1] buf, const uint8_t[::1] alt,
                        const uint8_t[::1] in_alt, const uint8_t[::1] ws,
                        const uint8_t[::1] cls, const uint8_t[::1] byte_map, bint lower,
                        const int64_t[::1] starts, const int64_t[::1] ends, uint8_t[::1] out,
                        int64_t[::1] offsets, int64_t[::1] chars, int64_t[::1] words):
    """Per document ``src[starts[d]:ends[d]]`` (UTF-8), where ``src`` is ``alt`` if
    ``in_alt[d]`` (an empty ``in_alt``: never) and ``buf`` otherwise: collapse each run of
    whitespace to one space, drop leading and trailing whitespace, and map each ASCII byte
    through ``byte_map``; write the documents packed one after another to ``out`` (at least
    as many bytes as the documents hold), the ends to ``offsets[1:]``, the code points of
    each to ``chars`` and its words (the tokens that single spaces separate: spaces + 1, none
    in an empty text) to ``words``. ``cls`` classes a byte: 0 ASCII, 1 ASCII whitespace, 2 the first byte of
    a multi-byte character; ``ws[cp]`` tells whether code point ``cp`` is whitespace. ``lower``
    must say whether ``byte_map`` lowers A-Z (and maps nothing else from 0x20 to 0x7F):
    printable ASCII with single spaces is then copied (and lowered) up to 64 bytes at once
    (SSE2 on x86-64), else eight at once. Returns the bytes written. Branch-free on ASCII."""
    cdef Py_ssize_t n = starts.shape[0], nws = ws.shape[0], d, i, e, j, m
    cdef int64_t o = 0, first, extra, cp, spaces, retry
    cdef int r, last = 0
    cdef uint8_t c, k, prev
    cdef uint64_t x, y, sp, upper
    cdef bint has_alt = in_alt.shape[0] > 0
    cdef uint8_t* dst = &out[0] if out.shape[0] else NULL
    cdef const uint8_t* src
    cdef const uint8_t* main = &buf[0] if buf.shape[0] else NULL
    cdef const uint8_t* other = &alt[0] if alt.shape[0] else NULL
    with nogil:
        offsets[0] = 0
        for d in range(n):
            first = o
            prev = 1  # 1 after whitespace (or at the start): a further space is not kept
            extra = 0  # continuation bytes of multi-byte characters, for code points
            spaces = 0  # spaces written
            src = other if has_alt and in_alt[d] else main
            i = starts[d]
            e = ends[d]
            retry = i
            while i < e:
                if i + 64 <= e and i >= retry:
                    last = prev
                    r = ascii_block64(src + i, dst + o, lower, &last, &spaces)
                    o += r
                    i += r
                    prev = <uint8_t>last
                    if r == 64:
                        continue
                    # the byte that stopped it, and a few after, go the ways below
                    retry = i + 16
                if i + 8 <= e:
                    x = load_le64(src + i)
                    # printable ASCII (0x20-0x7F) with no two spaces in a row, and no space
                    # first after whitespace: copied as it is, A-Z lowered if asked
                    if (x & HIGHS) == 0 and (~(x + BELOW_SPACE) & HIGHS) == 0:
                        y = x ^ SPACES
                        sp = ~((y + LOW7) | y) & HIGHS  # exactly the bytes that are spaces
                        if (sp & (sp << 8)) == 0 and not (prev and (sp & 0x80)):
                            if lower:
                                upper = (x + FROM_A) & ~(x + PAST_Z) & HIGHS
                                x |= upper >> 2
                            store_le64(dst + o, x)
                            o += 8
                            i += 8
                            spaces += <int64_t>(((sp >> 7) * ONES) >> 56)
                            prev = <uint8_t>(sp >> 63)
                            continue
                c = src[i]
                k = cls[c]
                if k < 2:
                    out[o] = byte_map[c]
                    o += 1 - (k & prev)
                    spaces += k & (1 - prev)
                    prev = k
                    i += 1
                    continue
                # a multi-byte character: decode it only to ask whether it is whitespace
                if c < 0xE0:
                    m = 2
                    cp = ((c & 0x1F) << 6) | (src[i + 1] & 0x3F)
                elif c < 0xF0:
                    m = 3
                    cp = ((c & 0x0F) << 12) | ((src[i + 1] & 0x3F) << 6) | (src[i + 2] & 0x3F)
                else:
                    m = 4
                    cp = nws  # above the table: never whitespace
                if cp < nws and ws[cp]:
                    out[o] = 32
                    o += 1 - prev
                    spaces += 1 - prev
                    prev = 1
                    i += m
                    continue
                for j in range(m):
                    out[o + j] = src[i + j]
                o += m
                extra += m - 1
                prev = 0
                i += m
            if prev == 1 and o > first:
                o -= 1  # a trailing space
                spaces -= 1
            offsets[d + 1] = o
            chars[d] = o - first - extra
            words[d] = spaces + 1 if o > first else 0
    return o


def non_ascii(const uint8_t[::1] buf, const int64_t[::1] starts, const int64_t[::1] ends,
              uint8_t[::1] out):
    """``out[d] = 1`` where document ``buf[starts[d]:ends[d]]`` holds a byte above 127."""
    cdef Py_ssize_t n = starts.shape[0], d, i
    cdef uint8_t acc
    with nogil:
        for d in range(n):
            acc = 0
            for i in range(starts[d], ends[d]):
                acc |= buf[i]
            out[d] = acc >> 7


cdef extern from "unifold.h":
    """
    /* the folding of one code point of the BMP: a difference, ND_FOLD_NONE or a longer one */
    static inline int32_t nd_fold_of(uint32_t cp) {
        return nd_fold_stage2[nd_fold_stage1[cp >> 8]][cp & 255];
    }
    """
    const char* UNIFOLD_VERSION "ND_UNIFOLD_VERSION"
    int32_t FOLD_NONE "ND_FOLD_NONE"
    int32_t FOLD_MULTI "ND_FOLD_MULTI"
    int FOLD_MULTI_WIDTH "ND_FOLD_MULTI_WIDTH"
    const uint32_t fold_multi "nd_fold_multi"[][3]
    const uint8_t fold_multi_len "nd_fold_multi_len"[]
    int32_t fold_of "nd_fold_of"(uint32_t cp) noexcept nogil


#: the Unicode version the folding table was made from (``unicodedata.unidata_version`` of the
#: Python that built the kernels); the caller uses the table only where its Python agrees
unifold_version = UNIFOLD_VERSION.decode("ascii")


cdef inline int64_t put_utf8(uint8_t* o, uint32_t cp) noexcept nogil:
    if cp < 0x80:
        o[0] = <uint8_t>cp
        return 1
    if cp < 0x800:
        o[0] = <uint8_t>(0xC0 | (cp >> 6))
        o[1] = <uint8_t>(0x80 | (cp & 0x3F))
        return 2
    o[0] = <uint8_t>(0xE0 | (cp >> 12))
    o[1] = <uint8_t>(0x80 | ((cp >> 6) & 0x3F))
    o[2] = <uint8_t>(0x80 | (cp & 0x3F))
    return 3


def fold_simple(const uint8_t[::1] buf, const int64_t[::1] starts, const int64_t[::1] ends,
                const int64_t[::1] docs, uint8_t[::1] out, int64_t[::1] out_starts,
                int64_t[::1] out_ends, uint8_t[::1] done):
    """NFKC then ``casefold`` of the UTF-8 documents ``buf[starts[d]:ends[d]]``, ``d`` in
    ``docs``, for those made only of characters the table calls simple (see
    ``build_tools/unifold.py``): such a text is its own NFKC, and its case folding is that of
    each character. Each one folded is written to ``out[out_starts[i]:out_ends[i]]`` with
    ``done[i] = 1``; any other (a character beyond U+FFFF or not simple, or ``out`` full) gets
    ``done[i] = 0`` and is left to Python. Returns the bytes written."""
    cdef Py_ssize_t n = docs.shape[0], i, j, cap = out.shape[0]
    cdef int64_t o = 0, first, p, e
    cdef uint32_t cp
    cdef uint8_t c
    cdef int32_t v
    cdef bint ok
    cdef uint8_t* dst = &out[0] if cap else NULL
    with nogil:
        for i in range(n):
            first = o
            p = starts[docs[i]]
            e = ends[docs[i]]
            ok = True
            while p < e:
                if o + 3 * FOLD_MULTI_WIDTH > cap:
                    ok = False
                    break
                c = buf[p]
                if c < 0x80:
                    dst[o] = c + 32 if 65 <= c <= 90 else c  # casefold is lower on ASCII
                    o += 1
                    p += 1
                    continue
                if c < 0xE0:
                    cp = ((c & 0x1F) << 6) | (buf[p + 1] & 0x3F)
                    p += 2
                elif c < 0xF0:
                    cp = ((c & 0x0F) << 12) | ((buf[p + 1] & 0x3F) << 6) | (buf[p + 2] & 0x3F)
                    p += 3
                else:  # beyond the BMP: not in the table
                    ok = False
                    break
                v = fold_of(cp)
                if v == FOLD_NONE:
                    ok = False
                    break
                if v >= FOLD_MULTI and v < FOLD_MULTI + 4096:
                    for j in range(fold_multi_len[v - FOLD_MULTI]):
                        o += put_utf8(dst + o, fold_multi[v - FOLD_MULTI][j])
                else:
                    o += put_utf8(dst + o, <uint32_t>(<int32_t>cp + v))
            if ok:
                out_starts[i] = first
                out_ends[i] = o
                done[i] = 1
            else:
                o = first
                done[i] = 0
    return o
