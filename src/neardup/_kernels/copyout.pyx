# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Copying many byte ranges of one file into another through large aligned buffers (see
:func:`neardup.io.writers._copy_ranges`): the source is read in large windows and the kept
ranges are packed into whole output blocks, so that the output can be written with
``O_DIRECT`` (offsets, lengths and buffers aligned), past the page cache."""

from libc.errno cimport EINTR, errno
from libc.stdint cimport int64_t
from libc.string cimport memcpy, memset


cdef extern from *:
    """
    /* positional reads and writes and aligned buffers; where the system has no pread (Windows)
       every call fails with ENOSYS and the caller copies another way */
    #include <errno.h>
    #include <stdlib.h>
    #if defined(_WIN32)
    #include <malloc.h>
    static Py_ssize_t nd_pread(int fd, void* buf, size_t n, int64_t at) {
        (void)fd; (void)buf; (void)n; (void)at; errno = ENOSYS; return -1; }
    static Py_ssize_t nd_pwrite(int fd, const void* buf, size_t n, int64_t at) {
        (void)fd; (void)buf; (void)n; (void)at; errno = ENOSYS; return -1; }
    static void* nd_aligned(size_t align, size_t n) { return _aligned_malloc(n, align); }
    static void nd_aligned_free(void* p) { _aligned_free(p); }
    #else
    #include <unistd.h>
    static Py_ssize_t nd_pread(int fd, void* buf, size_t n, int64_t at) {
        return pread(fd, buf, n, (off_t)at); }
    static Py_ssize_t nd_pwrite(int fd, const void* buf, size_t n, int64_t at) {
        return pwrite(fd, buf, n, (off_t)at); }
    static void* nd_aligned(size_t align, size_t n) {
        void* p = NULL; return posix_memalign(&p, align, n) == 0 ? p : NULL; }
    static void nd_aligned_free(void* p) { free(p); }
    #endif
    /* start writing a range of a file to disk without waiting (Linux; elsewhere nothing) */
    #if defined(__linux__)
    #include <fcntl.h>
    static void nd_writeback(int fd, int64_t at, int64_t n) {
        sync_file_range(fd, (off_t)at, (off_t)n, SYNC_FILE_RANGE_WRITE); }
    #else
    static void nd_writeback(int fd, int64_t at, int64_t n) { (void)fd; (void)at; (void)n; }
    #endif
    """
    Py_ssize_t pread "nd_pread"(int fd, void* buf, size_t n, int64_t at) nogil
    Py_ssize_t pwrite "nd_pwrite"(int fd, const void* buf, size_t n, int64_t at) nogil
    void* aligned "nd_aligned"(size_t align, size_t n) nogil
    void aligned_free "nd_aligned_free"(void* p) nogil
    void writeback "nd_writeback"(int fd, int64_t at, int64_t n) nogil


cdef enum:
    ALIGN = 4096


cdef int write_all(int fd, const char* buf, int64_t n, int64_t at) noexcept nogil:
    """Write ``buf[:n]`` at ``at``; 0, or the ``errno`` of the failure."""
    cdef Py_ssize_t w
    while n > 0:
        w = pwrite(fd, buf, <size_t>n, at)
        if w < 0:
            if errno == EINTR:
                continue
            return errno
        if w == 0:
            return 5  # EIO: nothing written and no error
        buf += w
        n -= w
        at += w
    return 0


cdef int refill(int fd, char* buf, int64_t size, int64_t a, int64_t* win_lo,
                int64_t* win_hi) noexcept nogil:
    """Make the window ``[win_lo, win_hi)`` of ``fd`` (held in ``buf``, at most ``size``
    bytes) hold byte ``a``: read ``size`` bytes from ``a`` unless it already does. 0, -1 when
    ``fd`` ended, or the ``errno`` of a failed read."""
    cdef Py_ssize_t got
    if win_lo[0] <= a < win_hi[0]:
        return 0
    while True:
        got = pread(fd, buf, <size_t>size, a)
        if got < 0:
            if errno == EINTR:
                continue
            return errno
        if got == 0:
            return -1
        win_lo[0] = a
        win_hi[0] = a + got
        return 0


def copy_packed(int src, int dst, const int64_t[::1] starts, const int64_t[::1] ends,
                const int64_t[::1] dest, Py_ssize_t r0, Py_ssize_t r1, int64_t lo, int64_t hi,
                bint last, int64_t block, bint start_writeback=False):
    """Write the output bytes ``[lo, hi)`` of ``dst``: run ``i`` (``starts[i]:ends[i]`` of
    ``src``) goes to ``dest[i]`` onward, runs ``r0:r1`` cover ``[lo, hi)`` in order and without
    gaps. The source is read ``block`` bytes at a time and the output written in pieces of
    ``block`` bytes from ``lo``; with ``last`` the final piece is padded with zeros to a
    multiple of 4,096 bytes (the caller truncates the file to its size). ``lo`` and ``block``
    must be multiples of 4,096 for an ``O_DIRECT`` output. With ``start_writeback`` (an output
    through the page cache) the system is asked to start writing each piece to disk as soon
    as it is written (Linux), so that the caller's ``fsync`` waits for the last one only.
    Returns 0, -1 when ``src`` ended early (it changed), or the ``errno`` of a failed read or
    write."""
    cdef char* inbuf = NULL
    cdef char* outbuf = NULL
    cdef Py_ssize_t i
    cdef int64_t a, o, e, run_at, take, n
    cdef int64_t win_lo = 0, win_hi = 0, obase = lo, fill = 0
    cdef int rc = 0
    if block <= 0 or block % ALIGN:
        raise ValueError("block must be a positive multiple of 4096")
    inbuf = <char*>aligned(ALIGN, <size_t>block)
    outbuf = <char*>aligned(ALIGN, <size_t>block)
    if inbuf == NULL or outbuf == NULL:
        aligned_free(inbuf)
        aligned_free(outbuf)
        raise MemoryError()
    with nogil:
        for i in range(r0, r1):
            run_at = dest[i]
            a = starts[i]
            o = run_at
            if o < lo:
                a += lo - o
                o = lo
            e = run_at + (ends[i] - starts[i])
            if e > hi:
                e = hi
            while o < e:
                rc = refill(src, inbuf, block, a, &win_lo, &win_hi)
                if rc:
                    break
                take = e - o
                if take > win_hi - a:
                    take = win_hi - a
                if take > block - fill:
                    take = block - fill
                memcpy(outbuf + fill, inbuf + (a - win_lo), <size_t>take)
                fill += take
                a += take
                o += take
                if fill == block:
                    rc = write_all(dst, outbuf, block, obase)
                    if rc:
                        break
                    if start_writeback:
                        writeback(dst, obase, block)
                    obase += block
                    fill = 0
            if rc:
                break
        if rc == 0 and fill:
            n = fill
            if last and n % ALIGN:
                n += ALIGN - n % ALIGN
                memset(outbuf + fill, 0, <size_t>(n - fill))
            rc = write_all(dst, outbuf, n, obase)
    aligned_free(inbuf)
    aligned_free(outbuf)
    return rc


def read_ranges(int src, const int64_t[::1] starts, const int64_t[::1] ends,
                unsigned char[::1] out, const int64_t[::1] dest, Py_ssize_t lo, Py_ssize_t hi,
                int64_t window, bint direct=False):
    """Read the byte ranges ``starts[i]:ends[i]`` of ``src`` into ``out[dest[i]:]``, for
    ``i`` in ``lo:hi`` (ranges in increasing order read fastest): the file is read at most
    ``window`` bytes at a time from the start of a range, up to the end of the last of the
    ranges that follow and end within that window (no further), and those ranges are copied
    from it, so that neighbouring ranges cost one read and a sparse one a read of its own
    bytes. With ``direct`` (``src`` opened with ``O_DIRECT``) every read starts and ends on a
    multiple of 4,096 bytes (``window`` is rounded up to one). Returns 0, -1 when ``src``
    ended early, or the ``errno`` of a failed read."""
    cdef char* buf = NULL
    cdef Py_ssize_t i, j
    cdef int64_t a, e, o, take, need, size, at
    cdef int64_t win_lo = 0, win_hi = 0
    cdef int rc = 0
    if window <= 0:
        raise ValueError("window must be positive")
    if direct and window % ALIGN:
        window += ALIGN - window % ALIGN
    buf = <char*>aligned(ALIGN, <size_t>window)
    if buf == NULL:
        raise MemoryError()
    with nogil:
        for i in range(lo, hi):
            a = starts[i]
            e = ends[i]
            o = dest[i]
            while a < e:
                if not (win_lo <= a < win_hi):
                    # read no further than the ranges from here on that end within a window
                    # of ``a`` need: sparse ranges cost a read of their own bytes only
                    at = a - a % ALIGN if direct else a
                    need = e
                    j = i + 1
                    while j < hi and need - at < window:
                        if starts[j] < ends[j]:
                            if starts[j] < a or ends[j] - at > window:
                                break
                            if ends[j] > need:
                                need = ends[j]
                        j += 1
                    size = need - at
                    if direct and size % ALIGN:
                        size += ALIGN - size % ALIGN
                    if size > window:
                        size = window
                    win_lo = win_hi = 0  # read anew from ``at``
                    rc = refill(src, buf, size, at, &win_lo, &win_hi)
                    if rc == 0 and win_hi <= a:  # the file ends before ``a``
                        rc = -1
                    if rc:
                        break
                take = e - a
                if take > win_hi - a:
                    take = win_hi - a
                memcpy(&out[o], buf + (a - win_lo), <size_t>take)
                a += take
                o += take
            if rc:
                break
    aligned_free(buf)
    return rc
