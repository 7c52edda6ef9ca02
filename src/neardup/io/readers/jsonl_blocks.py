"""The batch path of JSONL: the file in blocks of whole lines (read into buffers, or views of
a memory map), the lines of a block, and the compiled scanner that reads a block's records
into :class:`ArrowBatch` objects, no Python object per record."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from typing import Any, BinaryIO

from ..._records import record
from .base import _Options


def _after_last_newline(view: memoryview, start: int) -> int:
    """The position after the last newline of ``view[start:]``, 0 if it holds none (looked for
    from the end, in pieces that double: lines are short)."""
    end = len(view)
    step = 1 << 16
    hi = end
    while hi > start:
        lo = max(start, hi - step)
        at = bytes(view[lo:hi]).rfind(b"\n")
        if at >= 0:
            return lo + at + 1
        hi, step = lo, 2 * step
    return 0


def _read_blocks(stream: BinaryIO, size: int, block_size: int) -> Iterator[memoryview]:
    """The bytes of ``stream`` in blocks of whole lines (the last one as it ends): ``size``
    bytes read first, doubling up to ``block_size``; a line longer than that makes its block
    larger. Each block is read into a buffer of its own, after the unfinished line of the one
    before: only that line is copied twice (``read`` and then joining the line's start to the
    block copied every block again: 2 GB of JSONL in 0.5-0.6 s, 0.3 s so). The buffers are not
    cleared (``numpy.empty``) and, freed with their block, come back from the heap."""
    import numpy as np

    tail = np.empty(0, np.uint8)  # the unfinished line at the end of the last block
    while True:
        buf = np.empty(len(tail) + size, np.uint8)
        buf[: len(tail)] = tail
        got = stream.readinto(buf.data[len(tail) :])  # type: ignore[attr-defined]
        size = min(2 * size, block_size)
        if got:
            end = len(tail) + got
            view = buf.data[:end]
            cut = _after_last_newline(view, len(tail))
            if cut == 0:
                tail = buf[:end]
                continue
            tail = buf[cut:end]
            yield view[:cut]
        elif len(tail):
            yield tail.data
            return
        else:
            return


def _physical_memory() -> int:
    """The machine's memory in bytes (a large number where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


class _MappedBlocks:
    """The blocks of :func:`_read_blocks` (the same cuts, for the same ``size`` and
    ``block_size``) of a regular file, as views of a read-only memory map of it: the bytes are
    read where the system keeps them, not copied into buffers of the process first (2 GB of
    JSONL: 0.5-1.0 s less processor time), and each block's pages are let go once the next one
    is asked for, so that no more than about two blocks are mapped at a time.

    The file's size is checked before each block: a file that became shorter while it was read
    raises :class:`OSError` before the block is touched (the caller then reads the rest line by
    line, as after any read error), where a read of the bytes gone would stop the process. A
    file cut short in the milliseconds while a block is scanned still does that; neither the
    reader nor the copy of the corpus expects its inputs to change during a run.
    :attr:`position` is the end of the last block."""

    def __init__(self, raw: BinaryIO, size: int, block_size: int):
        import mmap

        self._fd = raw.fileno()
        self.total = os.fstat(self._fd).st_size
        self._map = mmap.mmap(self._fd, self.total, access=mmap.ACCESS_READ) if self.total else None
        self._size = size
        self._block_size = block_size
        self.position = 0
        self._released = 0  # the map's pages before this offset have been let go
        # A file larger than half the machine's memory cannot stay in the page cache through
        # the run: the pages read are dropped from it too, so that they do not push out what
        # is read again (a budgeted run's smaller scratch files, other files) and the system
        # need not find pages to evict for the ones to come.
        self._drop = self.total > _physical_memory() // 2 and hasattr(os, "posix_fadvise")

    @staticmethod
    def usable(raw: BinaryIO) -> bool:
        """Whether ``raw`` is a regular file that can be mapped (POSIX systems only)."""
        import stat

        if os.name != "posix":
            return False
        try:
            return stat.S_ISREG(os.fstat(raw.fileno()).st_mode)
        except (OSError, AttributeError, io.UnsupportedOperation):
            return False

    def _release(self, upto: int) -> None:
        import mmap

        page = mmap.PAGESIZE
        end = upto // page * page
        if self._map is not None and end > self._released:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                self._map.madvise(mmap.MADV_DONTNEED, self._released, end - self._released)
            if self._drop:
                with contextlib.suppress(OSError):
                    os.posix_fadvise(
                        self._fd, self._released, end - self._released, os.POSIX_FADV_DONTNEED
                    )
            self._released = end

    def __iter__(self) -> Iterator[memoryview]:
        if self._map is None:
            return
        view = memoryview(self._map)
        try:
            yield from _view_blocks(self, view, self.total, self._size, self._block_size)
        finally:
            view.release()
            with contextlib.suppress(BufferError):  # a block still held: closed when let go
                self._map.close()

    def before(self, pos: int) -> None:
        """Before the block from ``pos``: the pages before it let go, the file's size checked."""
        self._release(pos)
        if os.fstat(self._fd).st_size < self.total:  # before any of its bytes is touched
            raise OSError(f"the file became shorter while it was read (at byte {pos})")


class DataBlocks:
    """The blocks of :func:`_read_blocks` (the same cuts) of bytes in memory (``bytes`` or a
    ``memoryview``, e.g. of a memory map of a byte range of a file), as views of them: nothing
    copied. :attr:`position` is the end of the last block."""

    def __init__(self, data: bytes | bytearray | memoryview, size: int, block_size: int):
        self._view = memoryview(data).cast("B")
        self.total = len(self._view)
        self._size = size
        self._block_size = block_size
        self.position = 0

    def before(self, pos: int) -> None:
        pass

    def __iter__(self) -> Iterator[memoryview]:
        if self.total:
            yield from _view_blocks(self, self._view, self.total, self._size, self._block_size)


def _view_blocks(
    owner: _MappedBlocks | DataBlocks, view: memoryview, total: int, size: int, block_size: int
) -> Iterator[memoryview]:
    """The blocks of ``view[:total]`` cut as :func:`_read_blocks` cuts a stream; ``owner``'s
    ``before(pos)`` is called before each block and its ``position`` set to each block's end."""
    # ``hi``: where _read_blocks would have read to (each read ``size`` bytes on from the
    # last, ``size`` doubling up to the block size), so that the cuts are the same
    pos, hi = 0, 0
    while True:
        owner.before(pos)
        lo, hi = hi, min(hi + size, total)
        size = min(2 * size, block_size)
        if lo == hi:  # the end: the last line, without its newline
            if pos < total:
                owner.position = total
                yield view[pos:total]
            return
        cut = _after_last_newline(view[:hi], lo)  # [pos, lo) holds no newline
        if cut:
            owner.position = cut
            yield view[pos:cut]
            pos = cut


class _BlockLines:
    """The lines of a block of JSONL (whole lines; the last may lack its ``\\n``): where each
    starts and ends (``\\n`` included), the blank ones (skipped, as the line reader skips
    them) and the others, the records: ``rec``, their line numbers in the block (0-based),
    ``rec_starts``/``rec_ends``, their bytes."""

    def __init__(self, block: bytes | memoryview):
        import numpy as np

        from ..._kernels.jsonl import line_ends

        arr = np.frombuffer(block, np.uint8)
        nl = line_ends(arr)  # memchr: 0.5 s less than numpy's compare and nonzero at 2 GB
        found = len(nl)
        n = found + (0 if len(arr) and arr[-1] == 10 else 1)
        ends = nl if n == found else np.append(nl, len(block))
        starts = np.empty(n, np.int64)
        starts[:1] = 0
        starts[1:] = ends[:-1]
        first = arr[starts]
        maybe = np.flatnonzero((first == 32) | (first == 9) | (first == 13) | (first == 10))
        self.blank = {int(k) for k in maybe if not bytes(block[starts[k] : ends[k]]).strip()}
        self.n = n
        self.starts = starts
        self.ends = ends
        self.records = n - len(self.blank)
        if self.blank:
            self.rec = np.delete(np.arange(n, dtype=np.int64), sorted(self.blank))
            self.rec_starts = starts[self.rec]
            self.rec_ends = ends[self.rec]
        else:
            self.rec = np.arange(n, dtype=np.int64)
            self.rec_starts = starts
            self.rec_ends = ends

    def record_lines(self, first_line: int):
        """The 1-based line numbers of the non-blank lines, for a block after ``first_line``
        lines."""
        return self.rec + (first_line + 1)

    def record_spans(self, base: int):
        """``int64[records, 2]``: the bytes ``[start, end)`` of each non-blank line, for a
        block that starts at byte ``base`` of its file."""
        import numpy as np

        spans = np.empty((self.records, 2), np.int64)
        np.add(self.rec_starts, base, out=spans[:, 0])
        np.add(self.rec_ends, base, out=spans[:, 1])
        return spans


@record
class ArrowBatch:
    """Consecutive valid records of one JSONL source, as the scanner read them: ``texts``, a
    pyarrow string array (the text fields joined by ``\\n``); ``ids``, their ids (``None``:
    the running record numbers from ``first``); ``locations``, ``int64`` ``(source index <<
    40) | line``; ``text_bytes``, the UTF-8 bytes of the texts; ``first``, the global number
    of the first record (set when the batch is taken); ``spans``, the bytes of each record's
    line in an uncompressed file (see :class:`DocChunk`), else ``None``."""

    texts: Any
    ids: list[str] | None
    locations: Any
    text_bytes: int
    first: int = 0
    spans: Any = None
    # the ids' UTF-8 bytes as the scanner wrote them (``id_offsets``: one more than ids, into
    # ``id_bytes``), for checking that they are new without their strings
    id_bytes: Any = None
    id_offsets: Any = None

    def __len__(self) -> int:
        return len(self.locations)

    def id_list(self) -> list[str]:
        if self.ids is not None:
            return self.ids
        return list(map(str, range(self.first, self.first + len(self))))


class _BlockParser:
    """Reads the records of a block of JSONL with the compiled scanner
    (:mod:`neardup._kernels.jsonl`), which checks each line against the JSON grammar and takes
    its text fields and id from its bytes: no Python object per record. :meth:`parse` yields,
    in order, each run of lines the scanner read as an :class:`ArrowBatch` of their records
    (positions ``a:b`` among the block's records) and the position of each line it left to the
    line reader (a syntax error, a missing or non-string text field, an id that is neither a
    string nor an integer, anything it does not read exactly as ``orjson`` does)."""

    def __init__(self, opts: _Options):
        self.keys = tuple(f.encode("utf-8", "surrogatepass") for f in opts.text_fields)
        self.id_key = (
            None if opts.id_field is None else opts.id_field.encode("utf-8", "surrogatepass")
        )

    def parse(
        self, block: bytes | memoryview, lines: _BlockLines, first_line: int, source_index: int
    ) -> Iterator[tuple[int, int, ArrowBatch] | int]:
        import numpy as np
        import pyarrow as pa

        from ..._kernels.jsonl import decode_ids, scan_lines

        n = lines.records
        if n == 0:
            return
        starts, ends = lines.rec_starts, lines.rec_ends
        size = len(block)
        out = np.empty(size, np.uint8)
        offsets = np.empty(n + 1, np.int64)
        id_out = np.empty(size if self.id_key is not None else 0, np.uint8)
        id_offsets = np.empty(n + 1, np.int64)
        scratch = np.empty(int((ends - starts).max()) if len(self.keys) > 1 else 0, np.uint8)
        data = np.frombuffer(block, np.uint8)
        locations = lines.record_lines(first_line) | (source_index << 40)
        text_buf = None
        pos = 0
        offsets[0] = id_offsets[0] = 0
        while pos < n:
            stop = scan_lines(
                data,
                starts,
                ends,
                pos,
                self.keys,
                self.id_key,
                out,
                offsets,
                id_out,
                id_offsets,
                scratch,
            )
            if stop > pos:
                if text_buf is None:
                    text_buf = pa.py_buffer(out)
                k = stop - pos
                texts = pa.Array.from_buffers(
                    pa.large_string(), k, [None, pa.py_buffer(offsets[pos : stop + 1]), text_buf]
                )
                ids = id_offs = None
                if self.id_key is not None:
                    id_offs = id_offsets[pos : stop + 1]
                    ids = decode_ids(id_out, id_offs, k)
                text_bytes = int(offsets[stop] - offsets[pos])
                yield (
                    pos,
                    stop,
                    ArrowBatch(
                        texts,
                        ids,
                        locations[pos:stop],
                        text_bytes,
                        id_bytes=None if ids is None else id_out,
                        id_offsets=id_offs,
                    ),
                )
            if stop < n:
                yield stop  # for the line reader
                offsets[stop + 1] = offsets[stop]
                id_offsets[stop + 1] = id_offsets[stop]
            pos = stop + 1
