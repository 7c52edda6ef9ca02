# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The JSONL scanner: the text fields and the id of each line of a block, straight from its
bytes (see :mod:`neardup.io.readers`).

Each line is checked against the JSON grammar (RFC 8259) as it is read: every string, key and
value, the UTF-8 of every string, the escapes, the numbers, the nesting. A line the scanner is
not sure to read exactly as ``orjson.loads`` would (a syntax error, a missing, repeated or
non-string text field, a key with an escape, a number that ``orjson`` turns into a float or
refuses, nesting deeper than 64, a lone surrogate) stops the scan there: the caller reads that
line with the line reader, whose answer is the reference, and scans on after it. So the scanner
never accepts what the line reader would refuse, and never reads a text or an id otherwise.
"""

from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy

from ._common cimport ctz64, load_le64, store_le64

cdef extern from *:
    """
    /* The bytes among p[0:64] that a JSON string cannot copy as they are (a quote, a
       backslash, a control byte, a byte of a multi-byte character), as a bit mask: four
       SSE2 compares each on x86-64. Elsewhere all ones: the caller goes on 8 bytes at a
       time. */
    #if defined(ND_SSE2)
    static inline uint64_t nd_json_special64(const uint8_t* p) {
        const __m128i quote = _mm_set1_epi8(0x22), backslash = _mm_set1_epi8(0x5C),
                      space = _mm_set1_epi8(0x20);
        uint64_t m = 0;
        for (int w = 0; w < 4; w++) {
            __m128i x = _mm_loadu_si128((const __m128i*)(p + 16 * w));
            /* signed: below 0x20, or 0x80 and up */
            __m128i v = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote),
                                                  _mm_cmpeq_epi8(x, backslash)),
                                     _mm_cmplt_epi8(x, space));
            m |= (uint64_t)(uint32_t)_mm_movemask_epi8(v) << (16 * w);
        }
        return m;
    }
    #else
    static inline uint64_t nd_json_special64(const uint8_t* p) { (void)p; return ~(uint64_t)0; }
    #endif
    """
    uint64_t json_special64 "nd_json_special64"(const uint8_t* p) noexcept nogil

cdef enum:
    MAX_DEPTH = 64        # deeper nesting: left to the line reader
    MAX_FIELDS = 16       # text fields the scanner takes (more: the caller does not call it)
    MAX_INT_DIGITS = 200  # longer numbers: left to the line reader (orjson: inf, an error)
    MAX_ID_DIGITS = 18    # integer ids that are surely int64: longer ones to the line reader

cdef uint64_t ONES = 0x0101010101010101
cdef uint64_t HIGHS = 0x8080808080808080
cdef uint64_t QUOTES = 0x2222222222222222
cdef uint64_t BACKSLASHES = 0x5C5C5C5C5C5C5C5C
cdef uint64_t SPACES = 0x2020202020202020


cdef inline uint64_t has_zero(uint64_t x) noexcept nogil:
    # non-zero iff a byte of x is zero (exact as a yes/no answer)
    return (x - ONES) & ~x & HIGHS


cdef inline const uint8_t* skip_ws(const uint8_t* p, const uint8_t* e) noexcept nogil:
    while p < e and (p[0] == 32 or p[0] == 10 or p[0] == 13 or p[0] == 9):
        p += 1
    return p


cdef inline int utf8_seq(const uint8_t* p, const uint8_t* e) noexcept nogil:
    """The length of the valid UTF-8 character at ``p`` (its first byte >= 0x80), or 0 if it is
    not one (overlong forms, surrogates and code points past U+10FFFF are not)."""
    cdef uint8_t c = p[0], lo = 0x80, hi = 0xBF
    cdef int n
    if c < 0xC2:
        return 0
    if c < 0xE0:
        n = 2
    elif c < 0xF0:
        n = 3
        if c == 0xE0:
            lo = 0xA0
        elif c == 0xED:
            hi = 0x9F
    elif c < 0xF5:
        n = 4
        if c == 0xF0:
            lo = 0x90
        elif c == 0xF4:
            hi = 0x8F
    else:
        return 0
    if e - p < n or p[1] < lo or p[1] > hi:
        return 0
    if n > 2 and (p[2] & 0xC0) != 0x80:
        return 0
    if n > 3 and (p[3] & 0xC0) != 0x80:
        return 0
    return n


cdef inline int hex4(const uint8_t* p) noexcept nogil:
    """The value of four hex digits at ``p``, or -1."""
    cdef int v = 0, k, c
    for k in range(4):
        c = p[k]
        if 48 <= c <= 57:
            c -= 48
        elif 97 <= c <= 102:
            c -= 87
        elif 65 <= c <= 70:
            c -= 55
        else:
            return -1
        v = (v << 4) | c
    return v


cdef const uint8_t* scan_string(const uint8_t* p, const uint8_t* e, uint8_t* dst,
                                int64_t* written, bint* escaped) noexcept nogil:
    """A JSON string whose opening quote is just before ``p``: its unescaped bytes to ``dst``
    (unless NULL), their number to ``written``, whether it held an escape to ``escaped``.
    Returns the byte after the closing quote, or NULL for anything not valid."""
    cdef uint8_t* d = dst
    cdef uint64_t x, m
    cdef uint8_t c
    cdef int n, cp, lo, k
    cdef const uint8_t* retry = p
    escaped[0] = False
    while True:
        # 64 bytes at a time while they need nothing done (the output has room for them: it
        # never runs ahead of the line read), then 8 at a time; after a stop, the next 16
        # bytes go the slower ways (a text of multi-byte characters stops at each)
        while p + 64 <= e and p >= retry:
            m = json_special64(p)
            k = 64 if m == 0 else ctz64(m)
            if d != NULL:
                memcpy(d, p, 64)
                d += k
            p += k
            if k < 64:
                retry = p + 16
                break
        while p + 8 <= e:
            x = load_le64(p)
            # a quote, a backslash, a control byte or a byte >= 0x80 among the eight?
            if (has_zero(x ^ QUOTES) | has_zero(x ^ BACKSLASHES)
                    | ((x - SPACES) & ~x & HIGHS) | (x & HIGHS)):
                break
            if d != NULL:
                store_le64(d, x)
                d += 8
            p += 8
        if p >= e:
            return NULL
        c = p[0]
        if c == 34:  # the closing quote
            if d != NULL:
                written[0] = d - dst
            return p + 1
        if c < 0x20:  # a control character must be escaped
            return NULL
        if c < 0x80 and c != 92:
            if d != NULL:
                d[0] = c
                d += 1
            p += 1
            continue
        if c >= 0x80:
            n = utf8_seq(p, e)
            if n == 0:
                return NULL
            if d != NULL:
                memcpy(d, p, n)
                d += n
            p += n
            continue
        # an escape
        escaped[0] = True
        if e - p < 2:
            return NULL
        c = p[1]
        p += 2
        if c == 34 or c == 92 or c == 47:
            pass
        elif c == 98:
            c = 8
        elif c == 102:
            c = 12
        elif c == 110:
            c = 10
        elif c == 114:
            c = 13
        elif c == 116:
            c = 9
        elif c == 117:
            if e - p < 4:
                return NULL
            cp = hex4(p)
            if cp < 0:
                return NULL
            p += 4
            if 0xDC00 <= cp <= 0xDFFF:
                return NULL  # a lone low surrogate
            if 0xD800 <= cp <= 0xDBFF:
                if e - p < 6 or p[0] != 92 or p[1] != 117:
                    return NULL
                lo = hex4(p + 2)
                if lo < 0xDC00 or lo > 0xDFFF:
                    return NULL
                p += 6
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)
            if d != NULL:
                if cp < 0x80:
                    d[0] = <uint8_t>cp
                    d += 1
                elif cp < 0x800:
                    d[0] = <uint8_t>(0xC0 | (cp >> 6))
                    d[1] = <uint8_t>(0x80 | (cp & 0x3F))
                    d += 2
                elif cp < 0x10000:
                    d[0] = <uint8_t>(0xE0 | (cp >> 12))
                    d[1] = <uint8_t>(0x80 | ((cp >> 6) & 0x3F))
                    d[2] = <uint8_t>(0x80 | (cp & 0x3F))
                    d += 3
                else:
                    d[0] = <uint8_t>(0xF0 | (cp >> 18))
                    d[1] = <uint8_t>(0x80 | ((cp >> 12) & 0x3F))
                    d[2] = <uint8_t>(0x80 | ((cp >> 6) & 0x3F))
                    d[3] = <uint8_t>(0x80 | (cp & 0x3F))
                    d += 4
            continue
        else:
            return NULL
        if d != NULL:
            d[0] = c
            d += 1


cdef const uint8_t* scan_number(const uint8_t* p, const uint8_t* e, bint* integer
                                ) noexcept nogil:
    """A JSON number at ``p``: returns the byte after it, or NULL if it is not one or is one
    that ``orjson`` may not read as written (past MAX_INT_DIGITS digits, or an exponent of three
    or more digits). ``integer``: no fraction and no exponent."""
    cdef const uint8_t* start
    integer[0] = True
    if p < e and p[0] == 45:
        p += 1
    if p >= e:
        return NULL
    start = p
    if p[0] == 48:
        p += 1
    elif 49 <= p[0] <= 57:
        while p < e and 48 <= p[0] <= 57:
            p += 1
        if p - start > MAX_INT_DIGITS:
            return NULL
    else:
        return NULL
    if p < e and p[0] == 46:
        integer[0] = False
        p += 1
        start = p
        while p < e and 48 <= p[0] <= 57:
            p += 1
        if p == start:
            return NULL
    if p < e and (p[0] == 101 or p[0] == 69):
        integer[0] = False
        p += 1
        if p < e and (p[0] == 43 or p[0] == 45):
            p += 1
        start = p
        while p < e and 48 <= p[0] <= 57:
            p += 1
        if p == start or p - start > 2:
            return NULL
    return p


cdef const uint8_t* skip_value(const uint8_t* p, const uint8_t* e, int depth) noexcept nogil:
    """Any JSON value at ``p`` (no white space before it), checked and passed over: returns the
    byte after it, or NULL."""
    cdef int64_t n
    cdef bint flag
    cdef uint8_t c
    if p >= e:
        return NULL
    c = p[0]
    if c == 34:
        return scan_string(p + 1, e, NULL, &n, &flag)
    if c == 123 or c == 91:  # { or [
        if depth >= MAX_DEPTH:
            return NULL
        p = skip_ws(p + 1, e)
        if p < e and p[0] == c + 2:  # } or ]: empty
            return p + 1
        while True:
            if c == 123:
                if p >= e or p[0] != 34:
                    return NULL
                p = scan_string(p + 1, e, NULL, &n, &flag)
                if p == NULL:
                    return NULL
                p = skip_ws(p, e)
                if p >= e or p[0] != 58:
                    return NULL
                p = skip_ws(p + 1, e)
            p = skip_value(p, e, depth + 1)
            if p == NULL:
                return NULL
            p = skip_ws(p, e)
            if p >= e:
                return NULL
            if p[0] == 44:
                p = skip_ws(p + 1, e)
                continue
            if p[0] == c + 2:
                return p + 1
            return NULL
    if c == 116:
        return p + 4 if e - p >= 4 and memcmp(p, b"true", 4) == 0 else NULL
    if c == 102:
        return p + 5 if e - p >= 5 and memcmp(p, b"false", 5) == 0 else NULL
    if c == 110:
        return p + 4 if e - p >= 4 and memcmp(p, b"null", 4) == 0 else NULL
    if c == 45 or 48 <= c <= 57:
        return scan_number(p, e, &flag)
    return NULL


cdef bint scan_line(const uint8_t* p, const uint8_t* e, const uint8_t** keys,
                    const int64_t* key_len, int nf, const uint8_t* id_key, int64_t id_len,
                    uint8_t* out, int64_t* text_len, uint8_t* scratch, uint8_t* id_out,
                    int64_t* id_written) noexcept nogil:
    """One line ``[p, e)``: its text fields, joined by ``\\n`` in the order of ``keys``, to
    ``out`` (their length to ``text_len``) and its id's text to ``id_out`` (``id_key`` NULL: no
    id). False: the line is left to the line reader (nothing it wrote counts)."""
    cdef int64_t piece_at[MAX_FIELDS]
    cdef int64_t piece_len[MAX_FIELDS]
    cdef bint seen_id = id_key == NULL, flag, integer
    cdef int seen = 0, j, found
    cdef int64_t o = 0, n, klen
    cdef const uint8_t* k
    cdef const uint8_t* q
    for j in range(nf):
        piece_len[j] = -1
    p = skip_ws(p, e)
    if p >= e or p[0] != 123:
        return False
    p = skip_ws(p + 1, e)
    while True:
        if p >= e or p[0] != 34:
            return False  # also an empty object: its fields are missing
        k = p + 1
        p = scan_string(k, e, NULL, &n, &flag)
        if p == NULL or flag:
            return False  # a key with an escape could name a field: the line reader decides
        klen = p - 1 - k
        p = skip_ws(p, e)
        if p >= e or p[0] != 58:
            return False
        p = skip_ws(p + 1, e)
        found = -1
        for j in range(nf):
            if klen == key_len[j] and memcmp(k, keys[j], klen) == 0:
                found = j
                break
        if found >= 0:
            if piece_len[found] >= 0 or p >= e or p[0] != 34:
                return False  # repeated, or not a string
            p = scan_string(p + 1, e, out + o, &n, &flag)
            if p == NULL:
                return False
            piece_at[found] = o
            piece_len[found] = n
            o += n
            seen += 1
        elif id_key != NULL and klen == id_len and memcmp(k, id_key, klen) == 0:
            if seen_id or p >= e:
                return False
            seen_id = True
            if p[0] == 34:
                p = scan_string(p + 1, e, id_out, id_written, &flag)
            else:
                q = p
                p = scan_number(p, e, &integer)
                if p == NULL or not integer:
                    return False  # floats, booleans, null...: the line reader's error
                n = p - q
                if n - (q[0] == 45) > MAX_ID_DIGITS or (n == 2 and q[0] == 45 and q[1] == 48):
                    return False  # a long integer, or -0 (the id is then "0")
                memcpy(id_out, q, n)
                id_written[0] = n
            if p == NULL:
                return False
        else:
            p = skip_value(p, e, 1)
            if p == NULL:
                return False
        p = skip_ws(p, e)
        if p >= e:
            return False
        if p[0] == 44:
            p = skip_ws(p + 1, e)
            continue
        if p[0] != 125:
            return False
        break
    if skip_ws(p + 1, e) != e or seen != nf or not seen_id:
        return False
    if nf > 1:  # the pieces in the order of the fields, joined by "\n"
        n = 0
        for j in range(nf):
            if j:
                scratch[n] = 10
                n += 1
            memcpy(scratch + n, out + piece_at[j], piece_len[j])
            n += piece_len[j]
        memcpy(out, scratch, n)
        o = n
    text_len[0] = o
    return True


def scan_lines(const uint8_t[::1] block, const int64_t[::1] starts, const int64_t[::1] ends,
               Py_ssize_t first, tuple keys, object id_key, uint8_t[::1] out,
               int64_t[::1] offsets, uint8_t[::1] id_out, int64_t[::1] id_offsets,
               uint8_t[::1] scratch):
    """Scan the lines ``block[starts[i]:ends[i]]`` from ``i = first`` on, in order, while each
    is a JSON object whose text fields ``keys`` (bytes, distinct, at most 16) are strings and
    whose ``id_key`` field (bytes; None: no id) is a string or an integer, as above. Line
    ``i``'s text goes to ``out[offsets[i]:offsets[i+1]]`` and its id's text to
    ``id_out[id_offsets[i]:id_offsets[i+1]]``; the caller sets ``offsets[first]`` and
    ``id_offsets[first]``. ``out`` and ``id_out`` must hold the lines' bytes after those
    offsets, ``scratch`` the longest line's (with two or more keys). Returns the index of the
    first line not read (``len(starts)`` if none): that line is for the line reader."""
    cdef Py_ssize_t n = starts.shape[0], i, stop
    cdef int nf = len(keys), j
    cdef const uint8_t* key_ptr[MAX_FIELDS]
    cdef int64_t key_len[MAX_FIELDS]
    cdef const uint8_t* idk = NULL
    cdef int64_t idl = 0, t, w
    cdef const uint8_t* base = &block[0] if block.shape[0] else NULL
    cdef uint8_t* dst = &out[0] if out.shape[0] else NULL
    cdef uint8_t* ids = &id_out[0] if id_out.shape[0] else NULL
    cdef uint8_t* tmp = &scratch[0] if scratch.shape[0] else NULL
    cdef bytes kb
    if nf < 1 or nf > MAX_FIELDS:
        raise ValueError(f"scan_lines takes 1 to {MAX_FIELDS} text fields, not {nf}")
    if ends.shape[0] != n or offsets.shape[0] < n + 1 or id_offsets.shape[0] < n + 1:
        raise ValueError("scan_lines: starts, ends and the offsets disagree in length")
    if first < 0 or first > n:
        raise ValueError(f"scan_lines: first line {first} of {n}")
    for j in range(nf):
        kb = keys[j]
        key_ptr[j] = <const uint8_t*>kb
        key_len[j] = len(kb)
    if id_key is not None:
        kb = id_key
        idk = <const uint8_t*>kb
        idl = len(kb)
    t = 0
    for i in range(first, n):
        if starts[i] < 0 or ends[i] < starts[i] or ends[i] > block.shape[0]:
            raise ValueError(f"scan_lines: line {i} lies outside the block")
        t += ends[i] - starts[i]
    if (offsets[first] < 0 or id_offsets[first] < 0 or offsets[first] + t > out.shape[0]
            or (id_key is not None and id_offsets[first] + t > id_out.shape[0])):
        raise ValueError("scan_lines: the output buffers cannot hold the lines")
    if nf > 1:
        for i in range(first, n):
            if ends[i] - starts[i] > scratch.shape[0]:
                raise ValueError("scan_lines: the scratch buffer is shorter than a line")
    stop = n
    with nogil:
        for i in range(first, n):
            w = 0
            if not scan_line(base + starts[i], base + ends[i], key_ptr, key_len, nf, idk, idl,
                             dst + offsets[i], &t, tmp, ids + id_offsets[i], &w):
                stop = i
                break
            offsets[i + 1] = offsets[i] + t
            id_offsets[i + 1] = id_offsets[i] + w
    return stop


def decode_ids(const uint8_t[::1] buf, const int64_t[::1] offsets, Py_ssize_t n):
    """The first ``n`` ids of :func:`scan_lines` as Python strings (their UTF-8 was checked)."""
    cdef Py_ssize_t i
    cdef list out
    cdef const char* base
    if offsets.shape[0] < n + 1:
        raise ValueError("decode_ids: fewer offsets than ids")
    if n == 0 or offsets[n] == offsets[0]:
        return [""] * n
    if offsets[0] < 0 or offsets[n] > buf.shape[0]:
        raise ValueError("decode_ids: the ids lie outside their buffer")
    base = <const char*>&buf[0]
    out = [None] * n
    for i in range(n):
        out[i] = PyUnicode_DecodeUTF8(base + offsets[i], offsets[i + 1] - offsets[i], NULL)
    return out


cdef extern from "string.h" nogil:
    const void* memchr(const void* s, int c, size_t n)


def line_ends(const uint8_t[::1] block):
    """``int64`` array: the position after each ``\\n`` of ``block``, in order, found by the C
    library's ``memchr`` (vectorised) in one pass."""
    import numpy as np

    cdef Py_ssize_t n = block.shape[0], k = 0, cap = n // 64 + 16
    cdef const uint8_t* base = &block[0] if n else NULL
    cdef const uint8_t* p = base
    cdef const uint8_t* e = base + n
    cdef const uint8_t* hit
    cdef int64_t* buf = <int64_t*>malloc(cap * sizeof(int64_t))
    cdef int64_t* grown
    cdef bint failed = False
    if buf == NULL:
        raise MemoryError()
    with nogil:
        while p < e:
            hit = <const uint8_t*>memchr(p, 10, <size_t>(e - p))
            if hit == NULL:
                break
            if k == cap:
                grown = <int64_t*>realloc(buf, 2 * cap * sizeof(int64_t))
                if grown == NULL:
                    failed = True
                    break
                buf = grown
                cap *= 2
            buf[k] = hit - base + 1
            k += 1
            p = hit + 1
    if failed:
        free(buf)
        raise MemoryError()
    out = np.empty(k, np.int64)
    cdef int64_t[::1] view = out
    if k:
        memcpy(&view[0], buf, k * sizeof(int64_t))
    free(buf)
    return out
