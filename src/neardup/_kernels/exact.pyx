# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The exact-duplicate table's probes (see :class:`neardup.exact.FingerprintTable`)."""

from libc.stdint cimport int64_t, uint8_t, uint64_t


def lookup_insert(uint64_t[::1] tab_hi, uint64_t[::1] tab_lo, int64_t[::1] tab_val,
                  const uint64_t[::1] hi, const uint64_t[::1] lo, const uint8_t[::1] skip,
                  int64_t size, int64_t[::1] out, uint8_t[::1] first):
    """Group of each fingerprint ``(hi[i], lo[i])`` into ``out``; unseen ones are inserted with
    the next group number ``size`` and flagged in ``first``. Rows with ``skip[i]`` get -1.
    Open addressing, linear probing on the low word; returns the new size."""
    cdef Py_ssize_t n = hi.shape[0], i
    cdef uint64_t mask = <uint64_t>(tab_val.shape[0] - 1), h, w
    cdef int64_t s, v
    with nogil:
        for i in range(n):
            first[i] = 0
            if skip[i]:
                out[i] = -1
                continue
            h = hi[i]
            w = lo[i]
            s = <int64_t>(w & mask)
            while True:
                v = tab_val[s]
                if v == -1:
                    tab_hi[s] = h
                    tab_lo[s] = w
                    tab_val[s] = size
                    out[i] = size
                    first[i] = 1
                    size += 1
                    break
                if tab_lo[s] == w and tab_hi[s] == h:
                    out[i] = v
                    break
                s = <int64_t>((<uint64_t>s + 1) & mask)
    return size


def rehash(const uint64_t[::1] tab_hi, const uint64_t[::1] tab_lo, const int64_t[::1] tab_val,
           uint64_t[::1] new_hi, uint64_t[::1] new_lo, int64_t[::1] new_val):
    """Move every entry of the old table into the new (larger, empty) one."""
    cdef uint64_t mask = <uint64_t>(new_val.shape[0] - 1)
    cdef Py_ssize_t s
    cdef int64_t t
    with nogil:
        for s in range(tab_val.shape[0]):
            if tab_val[s] == -1:
                continue
            t = <int64_t>(tab_lo[s] & mask)
            while new_val[t] != -1:
                t = <int64_t>((<uint64_t>t + 1) & mask)
            new_hi[t] = tab_hi[s]
            new_lo[t] = tab_lo[s]
            new_val[t] = tab_val[s]


cdef extern from *:
    """
    /* xxHash 0.8.3 (BSD 2-clause, Yann Collet), vendored: XXH3-128 inlined into this module,
       the same digest as the xxhash package's xxh3_128. */
    #define XXH_INLINE_ALL
    #define XXH_STATIC_LINKING_ONLY
    #include "vendor/xxhash.h"
    """
    ctypedef struct XXH128_hash_t:
        uint64_t low64
        uint64_t high64
    XXH128_hash_t XXH3_128bits(const void* data, size_t length) noexcept nogil


def xxh3_128(const uint8_t[::1] data, const int64_t[::1] offsets, uint64_t[::1] hi,
             uint64_t[::1] lo, Py_ssize_t a, Py_ssize_t b):
    """xxh3-128 of each ``data[offsets[i]:offsets[i+1]]`` for ``i`` in ``[a, b)``: the high
    and low 64 bits of the digest into ``hi[i]`` and ``lo[i]``."""
    cdef Py_ssize_t i
    cdef XXH128_hash_t h
    cdef const uint8_t* p = &data[0] if data.shape[0] else NULL
    with nogil:
        for i in range(a, b):
            if p == NULL:  # no bytes at all: every text is empty
                h = XXH3_128bits(NULL, 0)
            else:
                h = XXH3_128bits(p + offsets[i], <size_t>(offsets[i + 1] - offsets[i]))
            hi[i] = h.high64
            lo[i] = h.low64


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t* size) except? NULL


cdef XXH128_hash_t str_digest(object s) except *:
    """xxh3-128 of the UTF-8 bytes of the ``str`` ``s``; a lone surrogate, which UTF-8 cannot
    hold, is written as ``surrogatepass`` writes it (bytes that no other string gives)."""
    cdef Py_ssize_t size
    cdef const char* p
    cdef bytes raw
    if not isinstance(s, str):
        raise TypeError(f"an id must be a str, not a {type(s).__name__}")
    try:
        p = PyUnicode_AsUTF8AndSize(s, &size)
    except UnicodeEncodeError:
        raw = (<str>s).encode("utf-8", "surrogatepass")
        return XXH3_128bits(<const char*>raw, <size_t>len(raw))
    return XXH3_128bits(p, <size_t>size)


def xxh3_128_strings(list strings, uint64_t[::1] hi, uint64_t[::1] lo):
    """xxh3-128 of each ``str`` of ``strings`` (see :func:`str_digest`) into ``hi``, ``lo``."""
    cdef Py_ssize_t i, n = len(strings)
    cdef XXH128_hash_t h
    if hi.shape[0] < n or lo.shape[0] < n:
        raise ValueError("hi and lo need a value per string")
    for i in range(n):
        h = str_digest(strings[i])
        hi[i] = h.high64
        lo[i] = h.low64


cdef class IdTable:
    """Distinct string ids, each with the ``int64`` code (>= 0) it was first seen with: an
    open-addressing table of the ids' xxh3-128 digests (see :class:`neardup.exact.IdTable`)."""

    cdef object _arrays
    cdef uint64_t[::1] t_hi
    cdef uint64_t[::1] t_lo
    cdef int64_t[::1] t_code
    cdef Py_ssize_t size
    cdef uint64_t mask

    def __init__(self, Py_ssize_t capacity=1 << 10):
        self.size = 0
        self._alloc(capacity)

    cdef _alloc(self, Py_ssize_t capacity):
        import numpy as np

        cap = 1 << max(4, int(capacity - 1).bit_length())
        self._arrays = (np.zeros(cap, np.uint64), np.zeros(cap, np.uint64),
                        np.full(cap, -1, np.int64))
        self.t_hi, self.t_lo, self.t_code = self._arrays
        self.mask = <uint64_t>(cap - 1)

    cdef _reserve(self, Py_ssize_t more):
        """Room for ``more`` ids at a load factor of at most 3/4 (see
        :class:`neardup.exact.FingerprintTable`)."""
        cdef uint64_t[::1] old_hi = self.t_hi
        cdef uint64_t[::1] old_lo = self.t_lo
        cdef int64_t[::1] old_code = self.t_code
        cdef Py_ssize_t s
        if 4 * (self.size + more) <= 3 * self.t_code.shape[0]:
            return
        keep = self._arrays
        self._alloc((4 * (self.size + more) + 2) // 3)
        self.size = 0
        for s in range(old_code.shape[0]):
            if old_code[s] >= 0:
                self._put(old_hi[s], old_lo[s], old_code[s])
        del keep

    cdef inline Py_ssize_t _slot(self, uint64_t h, uint64_t w) noexcept nogil:
        """The slot of the digest ``(h, w)``: where it is, or the empty slot it would take."""
        cdef Py_ssize_t s = <Py_ssize_t>(w & self.mask)
        while self.t_code[s] >= 0 and not (self.t_lo[s] == w and self.t_hi[s] == h):
            s = <Py_ssize_t>((<uint64_t>(s + 1)) & self.mask)
        return s

    cdef inline int64_t _put(self, uint64_t h, uint64_t w, int64_t code) noexcept:
        """The code of the digest ``(h, w)``, inserted with ``code`` if absent."""
        cdef Py_ssize_t s = self._slot(h, w)
        if self.t_code[s] >= 0:
            return self.t_code[s]
        self.t_hi[s] = h
        self.t_lo[s] = w
        self.t_code[s] = code
        self.size += 1
        return code

    def __len__(self):
        return self.size

    def setdefault(self, str rid, int64_t code):
        """The code ``rid`` was first seen with; a new ``rid`` is taken with ``code``."""
        if code < 0:
            raise ValueError("codes must be >= 0")
        self._reserve(1)
        cdef XXH128_hash_t h = str_digest(rid)
        return self._put(h.high64, h.low64, code)

    def claim(self, list ids, const int64_t[::1] codes):
        """Take every id of ``ids`` (with ``codes[i]``) if all are new and distinct; else
        change nothing and return ``False``."""
        import numpy as np

        cdef Py_ssize_t i, n = len(ids)
        cdef XXH128_hash_t h
        if codes.shape[0] != n:
            raise ValueError("claim needs one code per id")
        self._check_codes(codes, n)
        taken_a = np.empty(n, np.intp)
        cdef Py_ssize_t[::1] taken = taken_a
        for i in range(n):
            try:
                h = str_digest(ids[i])
            except BaseException:
                self._undo(&taken[0], i)
                raise
            if not self._take(h, codes[i], &taken[0], i):
                return False
        self.size += n
        return True

    def claim_utf8(self, const uint8_t[::1] buf, const int64_t[::1] offsets,
                   const int64_t[::1] codes):
        """:meth:`claim` of the ids whose UTF-8 bytes are ``buf[offsets[i]:offsets[i+1]]``
        (valid UTF-8, as the JSONL scanner hands them over): the digests of their strings,
        taken from the bytes, without making the strings and without the GIL."""
        import numpy as np

        cdef Py_ssize_t i, n = codes.shape[0]
        cdef XXH128_hash_t h
        cdef const uint8_t* p = &buf[0] if buf.shape[0] else NULL
        cdef bint ok = True
        if offsets.shape[0] < n + 1:
            raise ValueError("claim_utf8 needs one offset more than codes")
        for i in range(n):
            if offsets[i] < 0 or offsets[i + 1] < offsets[i] or offsets[i + 1] > buf.shape[0]:
                raise ValueError("claim_utf8: an id lies outside its buffer")
        self._check_codes(codes, n)
        taken_a = np.empty(n, np.intp)
        cdef Py_ssize_t[::1] taken = taken_a
        with nogil:
            for i in range(n):
                if offsets[i + 1] == offsets[i]:
                    h = XXH3_128bits(NULL, 0)
                else:
                    h = XXH3_128bits(p + offsets[i], <size_t>(offsets[i + 1] - offsets[i]))
                if not self._take(h, codes[i], &taken[0], i):
                    ok = False
                    break
        if ok:
            self.size += n
        return ok

    cdef _check_codes(self, const int64_t[::1] codes, Py_ssize_t n):
        """Raise unless every code of a batch of ``n`` is >= 0; then make room for it."""
        cdef Py_ssize_t i
        for i in range(n):
            if codes[i] < 0:
                raise ValueError("codes must be >= 0")
        self._reserve(n)

    cdef inline bint _take(self, XXH128_hash_t h, int64_t code, Py_ssize_t* taken,
                           Py_ssize_t i) noexcept nogil:
        """Put the ``i``-th id of a batch (digest ``h``) in its slot, noted in ``taken``; if it
        was seen before (or earlier in the batch) undo the batch so far and return False."""
        cdef Py_ssize_t s = self._slot(h.high64, h.low64)
        if self.t_code[s] >= 0:
            self._undo(taken, i)
            return False
        self.t_hi[s] = h.high64
        self.t_lo[s] = h.low64
        self.t_code[s] = code
        taken[i] = s
        return True

    cdef void _undo(self, Py_ssize_t* taken, Py_ssize_t k) noexcept nogil:
        """Empty the slots of the first ``k`` ids of a batch, the last taken first: undoing
        linear-probing insertions in reverse order gives back the table as it was."""
        cdef Py_ssize_t j
        for j in range(k - 1, -1, -1):
            self.t_code[taken[j]] = -1
