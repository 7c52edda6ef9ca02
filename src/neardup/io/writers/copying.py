"""The kept lines of a JSONL input copied into the deduplicated corpus without parsing them
again: by line numbers (:func:`_copy_lines`), by byte ranges through the system
(:func:`_copy_ranges`: ``copy_file_range``, ``O_DIRECT``, packed blocks, threads), or as the
keep flags are decided (:func:`_copy_streaming`); :func:`_copy_jsonl` chooses."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import numpy as np

from ...errors import ConfigError
from ..readers import _open_binary, _RecordStream, _Source
from .keep import _Keep
from .staged import Staged

if TYPE_CHECKING:
    from typing import Protocol

    class _ReadsInto(Protocol):
        def readinto(self, buffer: memoryview, /) -> int | None: ...


_COPY_BLOCK = 1 << 18  # bytes read at a time when copying the kept lines of a JSONL input
_LONG_LINE = 1024  # from this average line length on, newlines are looked for one by one
_WRITEBACK_EVERY = 8 << 20  # bytes of copied corpus after which its writing to disk is started
_PARALLEL_COPY = 32 << 20  # bytes of kept ranges per copying thread, at least
_DIRECT_COPY = 64 << 20  # from this many bytes of kept ranges on, copied past the page cache
_DIRECT_BLOCK = 8 << 20  # bytes read and written at a time when copying past the page cache
_PACKED_BLOCK = 1 << 20  # and when packing short runs through the page cache
_DIRECT_ALIGN = 4096  # what O_DIRECT asks of offsets and lengths (a multiple of the sector)
_SHORT_RUN = 1 << 20  # runs shorter than this on average are copied through this process
# errors of os.copy_file_range that mean "not between these files": copy through this process
_NO_COPY_RANGE = {
    getattr(errno, n)
    for n in ("EXDEV", "ENOSYS", "EINVAL", "EOPNOTSUPP", "ENOTSUP", "EBADF", "EPERM")
    if hasattr(errno, n)
}


def _copy_lines(
    data: BinaryIO,
    out: BinaryIO | _Writeback,
    wanted: np.ndarray,
    block_size: int = _COPY_BLOCK,
    long_line: int = _LONG_LINE,
) -> bool:
    """Write the lines of ``data`` numbered ``wanted`` (1-based, strictly increasing) to
    ``out``, byte for byte; return ``False`` when ``data`` ends before the last of them.

    Lines end with ``b"\\n"`` (kept, as any ``b"\\r"`` before it); a last line without one is a
    line too. ``data`` is read in blocks of ``block_size`` bytes and each run of consecutive
    wanted lines is written with one ``write`` per block it spans; reading stops after the
    last wanted line. The newlines of a block are found with numpy, or, after a block whose
    lines were longer than ``long_line`` bytes on average, with ``bytearray.find`` from one to
    the next (cheaper than two passes over every byte when they are few).
    """
    n = len(wanted)
    if n == 0:
        return True
    # typing.BinaryIO leaves out readinto, which the files and decompressed streams given
    # here (io.BufferedReader, gzip.GzipFile) all have
    reader = cast("_ReadsInto", data)
    w = np.asarray(wanted, dtype=np.int64)
    cut = np.flatnonzero(np.diff(w) != 1) + 1
    firsts = w[np.concatenate(([0], cut))]  # runs of consecutive lines [firsts[k], lasts[k]]
    lasts = w[np.concatenate((cut - 1, [n - 1]))]
    n_runs = len(firsts)
    buf = bytearray(block_size)
    view = memoryview(buf)
    arr = np.frombuffer(buf, dtype=np.uint8)
    is_nl = np.empty(block_size, dtype=np.bool_)
    find = buf.find
    write = out.write
    k = 0  # the first run not written to its end
    ended = 0  # lines ended (by a newline) before the block
    open_line = False  # whether the bytes read so far end inside a line
    sparse = False  # whether to look for the newlines one by one
    while k < n_runs:
        got = reader.readinto(view)
        if not got:
            break
        if sparse:
            found = []
            p = find(b"\n", 0, got)
            while p >= 0:
                found.append(p)
                p = find(b"\n", p + 1, got)
            nl = np.array(found, dtype=np.int64)
        else:
            np.equal(arr[:got], 10, out=is_nl[:got])
            nl = np.flatnonzero(is_nl[:got])
        m = len(nl)
        sparse = got > m * long_line
        # the block holds the ends of lines ended + 1 .. ended + m, and the start of line
        # ended + m + 1 (``top``, still open; empty when the block ends with a newline); line
        # ended + 1 + i spans bounds[i]:bounds[i + 1] of the block
        top = ended + m + 1
        bounds = np.empty(m + 2, dtype=np.int64)
        bounds[0] = 0
        np.add(nl, 1, out=bounds[1 : m + 1])
        bounds[m + 1] = got
        stop = int(np.searchsorted(firsts, top, side="right"))  # runs starting in the block
        if stop > k:
            lo = np.maximum(firsts[k:stop], ended + 1) - (ended + 1)
            hi = np.minimum(lasts[k:stop], top) - ended
            for s, e in zip(bounds[lo].tolist(), bounds[hi].tolist()):
                if e > s:
                    write(view[s:e])
            k = stop if lasts[stop - 1] < top else stop - 1
        ended += m
        open_line = buf[got - 1] != 10
    return k == n_runs or int(lasts[-1]) <= ended + open_line


_NO_FUNCTION: Any = object()
_sync_file_range_fn: Any = _NO_FUNCTION


def _sync_file_range() -> Any:
    """The C library's ``sync_file_range`` (Linux), or ``None``."""
    global _sync_file_range_fn
    if _sync_file_range_fn is _NO_FUNCTION:
        _sync_file_range_fn = None
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                fn = ctypes.CDLL(None, use_errno=True).sync_file_range
                fn.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint]
                fn.restype = ctypes.c_int
                _sync_file_range_fn = fn
            except (OSError, AttributeError):
                pass
    return _sync_file_range_fn


class _Writeback:
    """A binary file's ``write`` that, every ``every`` bytes, asks the kernel to start writing
    the file's dirty pages to disk (``sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE)``, on
    Linux; it does not wait), so that the disk works while the copy goes on and the fsync of
    :meth:`Staged.close` finds little left: the copy and the fsync of 205 MB took 0.19 s,
    0.13 s so. Elsewhere, or where the call fails, a plain ``write``."""

    def __init__(self, f: BinaryIO, every: int = _WRITEBACK_EVERY):
        self.f = f
        self.every = every
        self.pending = 0
        self.start = _sync_file_range()
        try:
            self.fd = f.fileno()
        except (OSError, ValueError, AttributeError):
            self.start = None

    def write(self, data: Any) -> int:
        n = self.f.write(data)
        self.written(n)
        return n

    def written(self, n: int) -> None:
        """Count ``n`` bytes written to the file (by :meth:`write` or past it)."""
        self.pending += n
        if self.pending >= self.every and self.start is not None:
            self.pending = 0
            if self.start(self.fd, 0, 0, 2) != 0:  # 2: SYNC_FILE_RANGE_WRITE
                self.start = None


def _runs(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ranges ``[starts[i], ends[i])`` (at least one, in order) with adjacent ones joined:
    the starts and ends of the runs."""
    cut = np.flatnonzero(starts[1:] != ends[:-1]) + 1
    return (starts[np.concatenate(([0], cut))], ends[np.concatenate((cut - 1, [len(starts) - 1]))])


def _direct_on(dst: int) -> int | None:
    """Switch the file descriptor ``dst`` to ``O_DIRECT`` writes; return its flags before, to
    give to :func:`_direct_off`, or ``None`` where the system or file system has none."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return None
    import fcntl

    try:
        mode = fcntl.fcntl(dst, fcntl.F_GETFL)
        fcntl.fcntl(dst, fcntl.F_SETFL, mode | flag)
    except OSError:  # a file system without direct writes
        return None
    return mode


def _direct_off(dst: int, mode: int) -> None:
    import fcntl

    fcntl.fcntl(dst, fcntl.F_SETFL, mode)


def _copy_ranges(
    path: Path, out: BinaryIO, starts: np.ndarray, ends: np.ndarray, threads: int | None = None
) -> bool:
    """Append the bytes ``[starts[i], ends[i])`` of the file ``path`` to ``out``, in order,
    without reading them into this process where the system can copy between files
    (``os.copy_file_range``: Linux; else ``os.pread`` and ``os.pwrite``). Adjacent ranges are
    copied in one call. Each range's place in ``out`` is known beforehand, so from
    ``_PARALLEL_COPY`` bytes on the ranges are split into ``threads`` shares of about equal
    bytes (default: :func:`neardup._threads.get_num_threads`), copied at once by as many
    threads (the copying is the kernel's work, outside the GIL): 1.7 GB in 1.1-1.2 s with two
    threads, 1.5-1.6 s with one. Returns ``False`` when the file is shorter than the last range
    (it changed since it was read)."""
    n = len(starts)
    if n == 0:
        return True
    run_starts, run_ends = _runs(starts, ends)
    out.flush()
    dst = out.fileno()
    base = out.tell()
    dest = base + np.concatenate(([0], np.cumsum(run_ends - run_starts)))
    total = int(dest[-1] - base)
    src = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        if os.fstat(src).st_size < int(run_ends[-1]):
            return False
        if threads is None:
            from ..._threads import get_num_threads

            threads = get_num_threads()
        if total >= _DIRECT_COPY and base % _DIRECT_ALIGN == 0:
            done = _copy_direct(src, out, run_starts, run_ends, dest, total, threads)
            if done is not None:
                return done
        if total < len(run_starts) * _SHORT_RUN and hasattr(os, "pread"):
            # many short runs: one system call per run would cost more than copying them
            # through this process (21,000 short documents: 3,063 runs, 23-43 ms against 9-18)
            ok = _copy_packed(src, dst, run_starts, run_ends, dest, total, threads, False)
            assert ok is not None  # None only with direct writes
            return ok
        shares = max(1, min(threads, total // _PARALLEL_COPY, len(run_starts)))
        # share k copies the runs whose first byte lands in [k/shares, (k+1)/shares) of total
        bounds = np.searchsorted(dest[:-1] - base, np.arange(shares + 1) * total // shares)
        bounds[-1] = len(run_starts)
        jobs = [
            (run_starts[a:b].tolist(), run_ends[a:b].tolist(), dest[a:b].tolist())
            for a, b in zip(bounds[:-1], bounds[1:])
            if b > a
        ]
        if len(jobs) == 1:
            ok = _copy_runs(src, dst, *jobs[0])
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(len(jobs), thread_name_prefix="neardup-copy") as pool:
                ok = all(list(pool.map(lambda job: _copy_runs(src, dst, *job), jobs)))
        if not ok:
            return False
    finally:
        os.close(src)
        out.seek(0, os.SEEK_END)  # the buffered file object's position, after the copies
    return True


def _copy_direct(
    src: int,
    out: BinaryIO,
    run_starts: np.ndarray,
    run_ends: np.ndarray,
    dest: np.ndarray,
    total: int,
    threads: int,
) -> bool | None:
    """:func:`_copy_ranges` past the page cache: the source is read in windows of
    ``_DIRECT_BLOCK`` bytes and the runs packed into whole blocks written with ``O_DIRECT``
    (Linux), ``threads`` threads each writing its share of the output. Copying the 152,868
    runs of a million-document corpus (1.65 GB) took 1.6-2.8 s with ``copy_file_range``, one
    system call per run, and 1.0-1.5 s so. ``None`` when the output's file system does not
    take it (no ``O_DIRECT``; ``EINVAL``): the caller then copies the usual way."""
    dst = out.fileno()  # flushed by the caller
    mode = _direct_on(dst)
    if mode is None:
        return None
    try:
        return _copy_packed(src, dst, run_starts, run_ends, dest, total, threads, True)
    finally:
        _direct_off(dst, mode)


def _copy_packed(
    src: int,
    dst: int,
    run_starts: np.ndarray,
    run_ends: np.ndarray,
    dest: np.ndarray,
    total: int,
    threads: int,
    direct: bool,
) -> bool | None:
    """Copy the runs to ``dest[0]`` onward in ``dst`` through blocks of this process (the
    compiled :func:`~neardup._kernels.copyout.copy_packed`), ``threads`` threads each writing
    its share of the output (cut at multiples of 4,096 bytes). With ``direct`` (``dst`` opened
    with ``O_DIRECT``) the last block is padded and the file truncated after it, and ``None``
    means that the file system refused the writes. ``False``: the source ended early."""
    base = int(dest[0])
    done = _copy_packed_range(
        src, dst, run_starts, run_ends, dest, base, base + total, threads, direct, direct
    )
    if done is None:
        os.ftruncate(dst, base)
    elif done and direct:
        os.ftruncate(dst, base + total)  # the last block's padding
    return done


def _copy_packed_range(
    src: int,
    dst: int,
    run_starts: np.ndarray,
    run_ends: np.ndarray,
    dest: np.ndarray,
    lo: int,
    hi: int,
    threads: int,
    direct: bool,
    last: bool,
) -> bool | None:
    """The bytes ``[lo, hi)`` of the output that the runs make (run ``i``: the source's bytes
    ``[run_starts[i], run_ends[i])``, written at ``dest[i]``; ``dest`` has one more value, the
    end of the last run). With ``direct``, ``lo`` is a multiple of 4,096 bytes and so is ``hi``
    unless ``last``: the last block is then padded (the caller truncates the file). ``None``:
    the file system refused direct writes; ``False``: the source ended early."""
    from ..._kernels.copyout import copy_packed

    total = hi - lo
    shares = max(1, min(threads, total // _PARALLEL_COPY, len(run_starts)))
    # (a cut never before lo: lo need not be a multiple of 4,096 through the page cache)
    cuts = (
        [lo]
        + [
            max(lo, (lo + k * total // shares) // _DIRECT_ALIGN * _DIRECT_ALIGN)
            for k in range(1, shares)
        ]
        + [hi]
    )
    jobs = []
    for k in range(shares):
        a, b = cuts[k], cuts[k + 1]
        if b <= a:
            continue
        r0 = int(np.searchsorted(dest[1:], a, side="right"))  # the run holding byte a
        r1 = int(np.searchsorted(dest[:-1], b, side="left"))  # the runs starting before b
        jobs.append((r0, r1, a, b, direct and last and k == shares - 1))

    # through the page cache: smaller pieces, each sent to disk as soon as it is written, so
    # that the file's fsync waits for the last piece only (17 MB: 13 ms of waiting before),
    # and less fresh memory for the buffers
    block = _DIRECT_BLOCK if direct else _PACKED_BLOCK

    def job(j: tuple) -> int:
        r0, r1, a, b, pad = j
        return copy_packed(
            src, dst, run_starts, run_ends, dest, r0, r1, a, b, pad, block, not direct
        )

    if len(jobs) <= 1:
        codes = [job(j) for j in jobs]
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(jobs), thread_name_prefix="neardup-copy") as pool:
            codes = list(pool.map(job, jobs))
    if direct and any(c == errno.EINVAL for c in codes):  # no direct writes on this system
        return None
    for c in codes:
        if c > 0:
            raise OSError(c, os.strerror(c))
    return not any(c < 0 for c in codes)


def _copy_streaming(
    path: Path,
    out: BinaryIO,
    starts: np.ndarray,
    ends: np.ndarray,
    keep: _Keep,
    first: int,
    threads: int | None = None,
) -> bool:
    """Append the lines ``[starts[i], ends[i])`` of the file ``path`` whose keep flag
    (record ``first + i`` of ``keep.stream``) is true to ``out``, in order, as the flags are
    decided: each time more are, their kept lines are copied (past the page cache where the
    system allows it: :func:`_copy_direct`), up to the last whole block of the output so far.
    ``False`` when the file is shorter than the last line (it changed since it was read)."""
    assert keep.stream is not None
    n = len(starts)
    out.flush()
    dst = out.fileno()
    base = out.tell()
    if threads is None:
        from ..._threads import get_num_threads

        threads = get_num_threads()
    src = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    mode = None
    try:
        if n and os.fstat(src).st_size < int(ends[-1]):
            return False
        if base % _DIRECT_ALIGN == 0:
            mode = _direct_on(dst)
        direct = mode is not None
        # the runs of kept lines not yet wholly written: source bytes and place in the output
        r_starts = r_ends = r_dest = np.zeros(0, np.int64)
        pos = done = base  # the end of the output so far, and of what is written
        i = 0
        while True:
            final = i >= n
            if not final:
                j = min(keep.stream.wait(first + i + 1) - first, n)
                flags = keep.array[first + i : first + j]
                s, e = starts[i:j][flags], ends[i:j][flags]
                i = j
                if len(s):
                    rs, re_ = _runs(s, e)
                    sizes = re_ - rs
                    r_starts = np.concatenate((r_starts, rs))
                    r_ends = np.concatenate((r_ends, re_))
                    r_dest = np.concatenate((r_dest, pos + np.cumsum(sizes) - sizes))
                    pos += int(sizes.sum())
            hi = pos if final or not direct else pos // _DIRECT_ALIGN * _DIRECT_ALIGN
            if hi > done:
                dest = np.concatenate((r_dest, [pos]))
                ok = _copy_packed_range(
                    src, dst, r_starts, r_ends, dest, done, hi, threads, direct, final
                )
                if ok is None:  # no direct writes here after all: through the page cache
                    assert mode is not None  # direct: the flags _direct_on gave
                    _direct_off(dst, mode)
                    mode = None
                    direct = False
                    os.ftruncate(dst, done)
                    continue
                if not ok:
                    return False
                done = hi
                whole = int(np.searchsorted(dest[1:], done, side="right"))  # written in full
                r_starts, r_ends, r_dest = r_starts[whole:], r_ends[whole:], r_dest[whole:]
            if final:
                break
        if direct and pos > base:
            os.ftruncate(dst, pos)  # the last block's padding
        return True
    finally:
        if mode is not None:
            _direct_off(dst, mode)
        os.close(src)
        out.seek(0, os.SEEK_END)


def _copy_runs(src: int, dst: int, starts: list[int], ends: list[int], dest: list[int]) -> bool:
    """Copy the bytes ``[starts[i], ends[i])`` of ``src`` to ``dest[i]`` onward in ``dst``
    (file descriptors); ``False`` when ``src`` ended early. Every ``_WRITEBACK_EVERY`` bytes the
    kernel is asked to start writing ``dst`` to disk (:class:`_Writeback`)."""
    fast = getattr(os, "copy_file_range", None)
    sync = _sync_file_range()
    pending = 0
    for a, b, o in zip(starts, ends, dest):
        while a < b:
            done = 0
            if fast is not None:
                try:
                    done = fast(src, dst, b - a, a, o)
                except OSError as e:  # another file system, not supported: plain copy
                    if e.errno not in _NO_COPY_RANGE:
                        raise
                    fast = None
                    continue
            else:
                data = os.pread(src, min(b - a, _COPY_BLOCK << 4), a)
                done = len(data)
                view = memoryview(data)
                at = o
                while view:
                    w = os.pwrite(dst, view, at)
                    view, at = view[w:], at + w
            if done == 0:
                return False  # the file ended early
            a, o = a + done, o + done
            pending += done
            if pending >= _WRITEBACK_EVERY and sync is not None:
                pending = 0
                if sync(dst, 0, 0, 2) != 0:  # 2: SYNC_FILE_RANGE_WRITE
                    sync = None
    return True


def _copy_jsonl(
    stream: _RecordStream,
    src: _Source,
    staged: Staged,
    keep: _Keep,
    lines: np.ndarray,
    spans: np.ndarray | None = None,
) -> None:
    """Copy the kept lines of a JSONL source without parsing it again: ``lines`` holds the line
    number of each of its records, in record order, as the first reading found them, and
    ``spans`` (optional) the bytes ``[start, end)`` of each record's line in the file (``-1``
    where unknown). With every kept record's span known, an uncompressed file is copied range
    by range (:func:`_copy_ranges`) instead of being read again."""
    f = staged.file
    assert f is not None
    base = stream.count
    if base + len(lines) > keep.n:
        raise ConfigError(
            f"keep has {keep.n} flags but the inputs hold more records: keep "
            "must come from reading the same inputs with the same options"
        )
    if (
        keep.stream is not None
        and spans is not None
        and src.compression is None
        and hasattr(os, "pwrite")
        and src.path is not None
        and len(lines)
    ):
        # flags still being decided: copy as they come, where every line's bytes are known
        starts, ends = spans[:, 0], spans[:, 1]
        if (
            int(ends[-1]) - int(starts[0]) >= _DIRECT_COPY
            and lines[0] >= 1
            and (np.diff(lines) > 0).all()
            and (starts >= 0).all()
            and (ends > starts).all()
            and (starts[1:] >= ends[:-1]).all()
        ):
            stream.count += len(lines)
            if _copy_streaming(src.path, f, starts, ends, keep, base):
                return
            raise ConfigError(f"{src.name}: is shorter than when it was read: it changed meanwhile")
    keep.ready()
    flags = keep.array[base : base + len(lines)]
    wanted = lines[flags]
    stream.count += len(lines)
    if len(wanted) == 0:
        return
    if wanted[0] < 1 or (np.diff(wanted) <= 0).any():
        raise ConfigError(
            f"{src.name}: the locations of its records are not line numbers in "
            "reading order: they must come from reading the same inputs"
        )
    if (
        spans is not None
        and src.compression is None
        and hasattr(os, "pwrite")
        and src.path is not None
    ):
        kept = spans[flags]
        starts, ends = kept[:, 0], kept[:, 1]
        if (starts >= 0).all() and (ends > starts).all() and (starts[1:] >= ends[:-1]).all():
            if _copy_ranges(src.path, f, starts, ends):
                return
            raise ConfigError(f"{src.name}: is shorter than when it was read: it changed meanwhile")
    assert src.path is not None  # the inputs written are named files (see _output_names)
    with _open_binary(src.path, src.compression) as (raw, data):
        if src.start:  # a part of an uncompressed file (a Dask partition): read from its start
            raw.seek(src.start)
        if _copy_lines(data, _Writeback(f), wanted - src.first_line, _COPY_BLOCK, _LONG_LINE):
            return
    raise ConfigError(f"{src.name}: has fewer lines than when it was read: it changed meanwhile")
