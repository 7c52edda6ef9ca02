"""The record stream shared by the reader and the writer (:class:`RecordStream`): the records
of the sources in order, numbered, their ids checked, with the text rules and the error policy
applied; and :func:`record_stream`, which checks the options and resolves the inputs into one.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Generator, Iterable, Iterator
from contextlib import ExitStack, closing
from dataclasses import dataclass
from typing import Any, cast

from ..._records import record
from ...errors import ConfigError, InputError, SkipReason
from ..options import ReadOptions
from .base import (
    _READ_ERRORS,
    _empty,
    _is_utf8,
    _Item,
    _open_error,
    _open_source,
    _Options,
    _Progress,
    _read_error,
    _record_error,
    _Source,
    utf8_len,
)
from .csv_tsv import _csv_records
from .json_array import _json_records
from .jsonl import _is_blank, _jsonl_line, _jsonl_records
from .jsonl_blocks import (
    ArrowBatch,
    DataBlocks,
    _BlockLines,
    _BlockParser,
    _MappedBlocks,
    _read_blocks,
)
from .parquet import _parquet_records
from .reports import IdInfo, SkipReport
from .sources import Source, _as_paths, _in_memory, _memory_source, _resolve_sources
from .textdir import _textdir_records

# The record generator of each format (what they yield: see .base).
_GENERATORS = {
    "json": _json_records,
    "jsonl": _jsonl_records,
    "csv": _csv_records,
    "tsv": _csv_records,
    "parquet": _parquet_records,
    "textdir": _textdir_records,
}


# Bytes of JSONL scanned at a time by the batch path; a line longer than this makes its block
# larger. The first block of a file is smaller (JSONL_FIRST_BLOCK_BYTES, doubling up to the full
# size), so that normalisation starts after a millisecond of reading, not after 8 MB of it.
# (Read by RecordStream.jsonl_batches from this module.)
JSONL_BLOCK_BYTES = 8 << 20
JSONL_FIRST_BLOCK_BYTES = 1 << 20


@dataclass
class Record:
    """One valid record of a :class:`RecordStream`."""

    index: int  # global record number (0-based), the index into ``keep``
    id: str
    text: str
    raw: Any  # JSONL: the line's bytes; CSV: the row; Parquet: (batch, row); folder: path
    line: int  # the line where the record starts (Parquet: row; folder: file number)
    location: int  # (source index << 40) | line
    span: tuple[int, int] | None = None  # bytes [start, end) of the line in an uncompressed file


class RecordStream:
    """The records of the inputs, in order: global numbering, ids, duplicate-id detection, the
    text rules of the options (``skip_empty``, ``max_text_bytes``) and the error policy.

    Iterating yields the valid :class:`Record` objects; a bad record raises
    :class:`InputError` (``on_error="fail"``) or is counted in ``report`` (``"skip"``).
    :meth:`with_errors` also yields each skipped record's error, in place.
    """

    def __init__(
        self, sources: list[_Source], opts: _Options, on_error: str, report: SkipReport | None
    ):
        self.sources = sources
        self.opts = opts
        self.fail = on_error == "fail"
        self.report = report if report is not None else SkipReport()
        self.count = 0
        self.progress = _Progress()
        # ids of a field, of a template or of a folder's files can repeat (running numbers
        # cannot)
        check = (
            opts.id_field is not None
            or opts.default_id is not None
            or any(s.fmt == "textdir" for s in sources)
        )
        # id -> (source index << 40) | line: a compiled table of the ids' digests, cheap for
        # millions of ids (see neardup.exact.IdTable)
        self.seen: Any = None
        if check and opts.unique_ids:
            from ..._kernels.exact import IdTable

            self.seen = IdTable()
        self.header: Any = None  # the CSV header / Parquet schema of the current source
        textdirs = frozenset(s.index for s in sources if s.fmt == "textdir")
        self.ids = IdInfo(
            field=opts.id_field,
            detected=opts.id_optional,
            file_names=bool(textdirs),
            textdir_sources=textdirs,
            field_inputs=len(textdirs) < len(sources),
        )
        #: raise a detected field's repeated id at the end of the read (the Dask engine
        #: decides across partitions instead)
        self.check_repeats = True
        self._parser: _BlockParser | None = None

    def _no_field(self, src: _Source, line: int) -> None:
        """A record without the detected id field: the ids are row numbers from here on (and
        :meth:`IdInfo.fix` turns those given before into row numbers)."""
        info = self.ids
        info.missing = self._where((src.index << 40) | line)
        info.fallback_row = self.count
        if not info.file_names:
            self.seen = None  # row numbers cannot repeat
        if self._parser is not None:
            self._parser.id_key = None  # the scanner need not take ids any more

    def finish_ids(self) -> None:
        """At the end of the read: raise a detected field's repeated id."""
        err = self.ids.repeat_error() if self.check_repeats else None
        if err is not None:
            raise err

    def _handle(self, err: InputError) -> None:
        if self.fail and err.reason is not SkipReason.EMPTY_TEXT:  # empty: left out, counted
            raise err
        self.report.add(err)

    def _where(self, code: int) -> str:
        src = self.sources[code >> 40]
        line = code & ((1 << 40) - 1)
        if src.fmt == "textdir" and src.files is not None:
            return str(src.files[line - 1][1])
        if src.fmt == "parquet":
            return f"{src.name}: row {line}"
        return f"{src.name}:{line}"

    def _rules(
        self, src: _Source, items: Generator[_Item | InputError, None, None]
    ) -> Generator[_Item | InputError, None, None]:
        """``items`` with ``max_text_bytes`` and ``skip_empty`` applied (an error in place of a
        text they leave out) and the ids of ``default_id`` given. A generator of its own, put
        in front of a source's only with these options, so that reading without them pays
        nothing for them."""
        opts = self.opts
        limit = opts.max_text_bytes
        skip_empty = opts.skip_empty
        default_id = opts.default_id
        fields = opts.text_fields
        field = fields[0] if len(fields) == 1 and src.fmt != "textdir" else None
        subject = f"field {field!r}" if field is not None else "the text"
        with closing(items):
            for item in items:
                if isinstance(item, InputError) or item[0] == 0:
                    yield item
                    continue
                line, text, rid, raw = item
                reason = None
                if limit is not None and len(text) > limit >> 2:
                    n = utf8_len(text)
                    if n > limit:
                        reason, what = (
                            SkipReason.TEXT_TOO_LARGE,
                            f"is {n} bytes; the limit is {limit}",
                        )
                if reason is None and skip_empty and not text.strip():
                    reason, what = SkipReason.EMPTY_TEXT, "is empty"
                if reason is not None:
                    if src.fmt == "textdir":
                        yield _record_error(f"the text {what}", str(raw), None, None, reason)
                    else:
                        yield _record_error(f"{subject} {what}", src.name, line, field, reason)
                    continue
                if rid is None and default_id is not None:
                    item = line, text, default_id.format(line=line, name=src.name), raw
                yield item

    def _accept(self, src: _Source, item: _Item) -> Record | InputError | None:
        """A valid item of ``src`` as the next :class:`Record`; its duplicate-id error (after
        ``_handle``); or ``None`` for a header pseudo-item."""
        line, text, rid, raw = item
        if line == 0:  # pseudo-item: CSV header or Parquet schema
            self.header = raw
            return None
        detect = self.ids.detected and src.fmt != "textdir"
        if rid is None:
            if detect and self.ids.missing is None:
                self._no_field(src, line)
            rid = str(self.count)
        elif detect and self.ids.missing is not None:
            rid = str(self.count)  # the detected field gave way to row numbers
        seen = self.seen
        if seen is not None:
            code = (src.index << 40) | line
            prev = seen.setdefault(rid, code)
            if prev != code and detect:
                # not a bad record: the ids may still become row numbers (finish_ids)
                if self.ids.repeat is None:
                    parquet = src.fmt == "parquet"
                    self.ids.repeat = (
                        rid,
                        self._where(prev),
                        f"{src.name}: row {line}" if parquet else src.name,
                        None if parquet else line,
                        self.count,
                    )
            elif prev != code:
                where = str(raw) if src.fmt == "textdir" else src.name
                err = InputError(
                    f"duplicate id {rid!r} (first seen at {self._where(prev)})",
                    path=where,
                    line=None if src.fmt == "textdir" else line,
                    field=self.opts.id_field,
                    reason=SkipReason.DUPLICATE_ID,
                )
                self._handle(err)
                return err
        rec = Record(self.count, rid, text, raw, line, (src.index << 40) | line)
        self.count += 1
        return rec

    def _items(self, src: _Source, errors: bool) -> Iterator[Record | InputError]:
        """The valid records of one source, in order, and with ``errors`` each bad one's error
        (after ``_handle``, which raises it with ``on_error="fail"``)."""
        self.header = None
        opts = self.opts
        gen = _GENERATORS[src.fmt](src, opts, self.progress)
        if opts.skip_empty or opts.max_text_bytes is not None or opts.default_id is not None:
            gen = self._rules(src, gen)
        with closing(gen):
            for item in gen:
                if isinstance(item, InputError):
                    self._handle(item)
                    if errors:
                        yield item
                    continue
                out = self._accept(src, item)
                if out is not None and (errors or type(out) is Record):
                    yield out
        self.progress.finish(src)

    # -- the batch path of JSONL files: blocks read by the scanner, no Python object per record

    def batchable(self, src: _Source) -> bool:
        """Whether :meth:`jsonl_batches` can read ``src``: a whole UTF-8 JSONL file (or bytes)
        read with neither text rules nor id templates, its fields distinct."""
        o = self.opts
        fields = (*o.text_fields, *((o.id_field,) if o.id_field is not None else ()))
        return (
            src.fmt == "jsonl"
            and src.whole
            and src.fileobj is None
            and _is_utf8(o.encoding)
            and not o.skip_empty
            and o.max_text_bytes is None
            and o.default_id is None
            and len(set(fields)) == len(fields)
        )

    def jsonl_batches(
        self, src: _Source, block_size: int | None = None
    ) -> Iterator[ArrowBatch | Record]:
        """The valid records of a JSONL source (see :meth:`batchable`), block by block: each
        run of lines that the compiled scanner reads (see :class:`_BlockParser`), with every
        text field a string and every id present, distinct and a string or an integer, as one
        :class:`ArrowBatch`; any other line through the line reader as a :class:`Record`, with
        the same results, errors and numbering as :meth:`records`. A read error (a damaged
        compressed stream) sends the rest of the file through the line-by-line reader, so that
        every line before the damage is read, as there."""
        block_size = block_size or JSONL_BLOCK_BYTES
        size = min(JSONL_FIRST_BLOCK_BYTES, block_size)
        self.header = None
        consumed = 0  # decompressed bytes before the current block
        lineno = 0  # lines before the current block
        records = 0
        parser = self._parser = _BlockParser(self.opts)
        if self.ids.detected and self.ids.missing is not None:
            parser.id_key = None
        plain = src.compression is None  # byte offsets in the file are those of the lines
        bom = 0  # the length of a byte order mark the file starts with
        with ExitStack() as stack:
            blocks: Iterator[memoryview]
            if src.data is not None and plain:  # bytes in memory: blocks are views of them
                viewed = DataBlocks(src.data, size, block_size)
                self.progress.start(src, lambda: viewed.position)
                blocks = iter(viewed)
            else:
                try:
                    raw_f, stream = stack.enter_context(_open_source(src))
                except _READ_ERRORS as e:
                    self._handle(_open_error(src, e))
                    return
                if plain and _MappedBlocks.usable(raw_f):
                    mapped = _MappedBlocks(raw_f, size, block_size)
                    self.progress.start(src, lambda: mapped.position)
                    blocks = iter(mapped)
                else:
                    self.progress.start(src, raw_f.tell)
                    blocks = _read_blocks(stream, size, block_size)
            while True:
                try:
                    block = next(blocks, None)
                except _READ_ERRORS:
                    stack.close()
                    yield from self._jsonl_rest(src, consumed, lineno, records)
                    return
                if block is None:
                    break
                if consumed == 0 and bytes(block[:3]) == codecs.BOM_UTF8:
                    # a byte order mark: the line reader ignores it on the first line, and
                    # left in the block it would make a line holding only the mark count as
                    # a record (so that two objects on one line could pass the row count)
                    block = memoryview(block)[len(codecs.BOM_UTF8) :]
                    consumed = bom = len(codecs.BOM_UTF8)
                    if not len(block):
                        continue
                lines = _BlockLines(block)
                records += lines.records
                base = consumed if plain else None
                spans = None
                for part in parser.parse(block, lines, lineno, src.index):
                    if isinstance(part, int):  # a line for the line reader
                        yield from self._block_records(
                            src, block, lines, lineno, base, bom, part, part + 1
                        )
                        continue
                    a, b, batch = part
                    if not self._claim_ids(batch):  # a repeated id: named line by line
                        yield from self._block_records(src, block, lines, lineno, base, bom, a, b)
                        continue
                    batch.first = self.count
                    self.count += len(batch)
                    if plain:
                        if spans is None:
                            spans = lines.record_spans(consumed)
                            if bom and len(spans) and spans[0, 0] == bom:
                                spans[0, 0] = 0  # the line is copied with its mark
                        batch.spans = spans[a:b]
                    yield batch
                consumed += len(block)
                lineno += lines.n
        if records == 0:
            self._handle(_empty(src, "no JSON lines"))
        self.progress.finish(src)

    def _claim_ids(self, batch: ArrowBatch) -> bool:
        """Record the ids of ``batch`` as seen, if all are new and distinct (else leave
        everything as it was: the block is then read line by line, which names each
        duplicate)."""
        seen = self.seen
        if seen is None or batch.ids is None:
            return True
        import numpy as np

        codes = np.ascontiguousarray(batch.locations, np.int64)
        if batch.id_bytes is not None:  # the digests from the bytes, outside the GIL
            return seen.claim_utf8(batch.id_bytes, batch.id_offsets, codes)
        return seen.claim(batch.ids, codes)

    def _block_records(
        self,
        src: _Source,
        block: bytes | memoryview,
        lines: _BlockLines,
        lineno: int,
        base: int | None,
        bom: int,
        first: int,
        stop: int,
    ) -> Iterator[Record]:
        """The records ``first:stop`` of a block (positions among its non-blank lines), read
        line by line; ``base``: the byte where the block starts in an uncompressed file (each
        record then gets the span of its line, the first line with the byte order mark of
        ``bom`` bytes before it)."""
        single = self.opts.text_fields[0] if len(self.opts.text_fields) == 1 else None
        for k in lines.rec[first:stop].tolist():
            a, b = int(lines.starts[k]), int(lines.ends[k])
            raw = bytes(block[a:b])
            item = _jsonl_line(raw, src.name, lineno + 1 + k, self.opts, True, single)
            if isinstance(item, InputError):
                self._handle(item)
                continue
            out = self._accept(src, item)
            if type(out) is Record:
                if base is not None:
                    out.span = (0 if bom and base + a == bom else base + a, base + b)
                yield out

    def _jsonl_rest(
        self, src: _Source, consumed: int, lineno: int, records: int
    ) -> Iterator[Record]:
        """The lines of ``src`` after its first ``consumed`` decompressed bytes (``lineno``
        lines), read one by one, after a read error in the batch path."""
        single = self.opts.text_fields[0] if len(self.opts.text_fields) == 1 else None
        with ExitStack() as stack:
            try:
                _, stream = stack.enter_context(_open_source(src))
                left = consumed
                while left:
                    got = stream.read(min(left, 1 << 20))
                    if not got:
                        break
                    left -= len(got)
            except _READ_ERRORS as e:
                self._handle(_read_error(src.name, lineno, e))
                self.progress.finish(src)
                return
            while True:
                try:
                    raw = stream.readline()
                except _READ_ERRORS as e:
                    self._handle(_read_error(src.name, lineno, e))
                    break
                if not raw:
                    if records == 0:
                        self._handle(_empty(src, "no JSON lines"))
                    break
                lineno += 1
                if _is_blank(raw):
                    continue
                records += 1
                item = _jsonl_line(raw, src.name, lineno, self.opts, True, single)
                if isinstance(item, InputError):
                    self._handle(item)
                    continue
                out = self._accept(src, item)
                if type(out) is Record:
                    yield out
        self.progress.finish(src)

    def records(self, src: _Source) -> Iterator[Record]:
        """The valid records of one source, in order."""
        return self._items(src, False)  # type: ignore[return-value]

    def __iter__(self) -> Iterator[Record]:
        for src in self.sources:
            yield from self._items(src, False)  # type: ignore[misc]
        self.finish_ids()

    def with_errors(self) -> Iterator[Record | InputError]:
        """Each valid :class:`Record` and, in place, the :class:`InputError` of each record (or
        file) left out, as the input is read: with ``on_error="skip"`` the errors are counted in
        the report and yielded, so that a caller can say where each one was and go on (with
        ``"fail"`` the first one raises, as when iterating). ``error.whole_file`` tells an
        error about a whole input (unreadable, empty, a header without the field) from one about
        a record."""
        for src in self.sources:
            yield from self._items(src, True)
        self.finish_ids()


# The names the writer and the Dask engine have used.
_Record = Record
_RecordStream = RecordStream


@record(frozen=True)
class FilePart:
    """A part of one input file, read on its own (the Dask engine reads one per partition).

    Of an uncompressed JSONL file: the bytes ``[start, end)``, where ``start`` is a line
    boundary and ``first_line`` lines of the file come before it (their numbers continue in
    error messages); the check that the whole file holds a record is the caller's, which sees
    every part. Of a Parquet file (``row_groups=True``): the row groups ``[start, end)``
    (``end=None``: to the last), rows numbered across the file; only the part holding row group
    0 reports the errors about the whole file (unreadable footer, missing or mistyped columns,
    no rows), so they are counted once.
    """

    start: int = 0
    end: int | None = None
    first_line: int = 0
    row_groups: bool = False


def record_stream(
    source: Source,
    options: ReadOptions | None = None,
    report: SkipReport | None = None,
    *,
    name: str | None = None,
    part: FilePart | None = None,
    all_columns: bool = False,
) -> RecordStream:
    """The records of ``source`` one by one (``.id``, ``.text``, ``.line``, ``.raw``), with
    the options checked and every input resolved at once (raising before anything is read).

    ``source``: a path or an iterable of paths (files and folders); or the bytes of one file
    (``bytes``, ``bytearray``, ``memoryview``); or one binary file object (``open(path,
    "rb")``, ``sys.stdin.buffer``, ``io.BytesIO``), read from where it stands with
    ``readline`` as the lines arrive (nothing is read ahead, so a pipe's records come as they
    are written) and left open. ``name``: what messages call bytes or a file object (default:
    the file object's ``name``, e.g. ``<stdin>``; else ``<bytes>``/``<stream>``); without
    ``options.format`` the format is told from it (``detect_format``; for bytes also from
    their first bytes), and a ``.gz``/``.zst`` suffix means compressed. JSONL, CSV and TSV
    are read from bytes and file objects, Parquet from bytes and seekable file objects, a
    folder of text files only from its path.

    ``part``: read only that part of the one file given. ``all_columns``: read every Parquet
    column (the corpus writer copies whole rows). Iterating yields the valid records in order;
    bad ones raise or go to ``report`` as ``options.on_error`` says
    (:meth:`RecordStream.with_errors` yields them too).
    """
    options = options or ReadOptions()
    if _in_memory(source):
        sources = [_memory_source(source, name, options.format)]
    else:
        if name is not None:
            raise ConfigError(
                f"name={name!r} is invalid: only for bytes or a file object (a path names itself)"
            )
        paths = cast("str | os.PathLike | Iterable[str | os.PathLike]", source)  # not in memory
        sources = _resolve_sources(_as_paths(paths), options.format)
    if part is not None:
        if len(sources) != 1:
            raise ConfigError("part: give exactly one input file with it")
        src = sources[0]
        src.start, src.end, src.first_line, src.whole = (
            part.start,
            part.end,
            part.first_line,
            False,
        )
    opts = _Options(
        options.text_fields,
        options.id_field or options.detect_id,
        options.encoding,
        batch_size=max(1, min(options.chunk_size, 65_536)),
        all_columns=all_columns,
        skip_empty=options.skip_empty,
        max_text_bytes=options.max_text_bytes,
        default_id=options.default_id,
        unique_ids=options.unique_ids,
        id_optional=options.detect_id is not None,
    )
    return RecordStream(sources, opts, options.on_error, report)
