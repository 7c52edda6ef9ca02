# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Normalisation kernels: the compiled pass over UTF-8 bytes (see :mod:`neardup.text.normalize`)."""

from libc.stdint cimport int64_t, uint8_t


def collapse_whitespace(const uint8_t[::1] buf, const uint8_t[::1] alt,
                        const uint8_t[::1] in_alt, const uint8_t[::1] ws,
                        const uint8_t[::1] cls, const uint8_t[::1] byte_map,
                        const int64_t[::1] starts, const int64_t[::1] ends, uint8_t[::1] out,
                        int64_t[::1] offsets, int64_t[::1] chars):
    """Per document ``src[starts[d]:ends[d]]`` (UTF-8), where ``src`` is ``alt`` if
    ``in_alt[d]`` (an empty ``in_alt``: never) and ``buf`` otherwise: collapse each run of
    whitespace to one space, drop leading and trailing whitespace, and map each ASCII byte
    through ``byte_map``; write the documents packed one after another to ``out`` (at least
    as many bytes as the documents hold), the ends to ``offsets[1:]`` and the code points of
    each to ``chars``. ``cls`` classes a byte: 0 ASCII, 1 ASCII whitespace, 2 the first byte of
    a multi-byte character; ``ws[cp]`` tells whether code point ``cp`` is whitespace. Returns
    the bytes written. Branch-free on ASCII."""
    cdef Py_ssize_t n = starts.shape[0], nws = ws.shape[0], d, i, e, j, m
    cdef int64_t o = 0, first, extra, cp
    cdef uint8_t c, k, prev
    cdef bint has_alt = in_alt.shape[0] > 0
    cdef const uint8_t* src
    cdef const uint8_t* main = &buf[0] if buf.shape[0] else NULL
    cdef const uint8_t* other = &alt[0] if alt.shape[0] else NULL
    with nogil:
        offsets[0] = 0
        for d in range(n):
            first = o
            prev = 1  # 1 after whitespace (or at the start): a further space is not kept
            extra = 0  # continuation bytes of multi-byte characters, for code points
            src = other if has_alt and in_alt[d] else main
            i = starts[d]
            e = ends[d]
            while i < e:
                c = src[i]
                k = cls[c]
                if k < 2:
                    out[o] = byte_map[c]
                    o += 1 - (k & prev)
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
            offsets[d + 1] = o
            chars[d] = o - first - extra
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
