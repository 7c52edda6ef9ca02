"""CSV and TSV files: a header, then one record per row."""

from __future__ import annotations

import codecs
import csv
import sys
from collections.abc import Generator
from contextlib import ExitStack
from typing import BinaryIO

from ...errors import InputError, SkipReason
from .base import (
    _READ_ERRORS,
    _empty,
    _is_utf8,
    _Item,
    _nearest,
    _open_error,
    _open_source,
    _Options,
    _Progress,
    _read_error,
    _record_error,
    _Source,
    _undecodable,
)

csv.field_size_limit(sys.maxsize)


class _Undecodable(Exception):
    def __init__(self, lineno: int, exc: UnicodeDecodeError):
        super().__init__(str(exc))
        self.lineno = lineno
        self.exc = exc


class _LineSource:
    """Decoded physical lines of a binary stream, counting them; usable again after a decoding
    error (unlike a generator), so a CSV reader can be restarted on it."""

    def __init__(self, stream: BinaryIO, encoding: str):
        self.stream = stream
        self.encoding = encoding
        self.utf8 = _is_utf8(encoding)
        self.lineno = 0
        self.first_ending: str | None = None

    def __iter__(self) -> _LineSource:
        return self

    def __next__(self) -> str:
        raw = self.stream.readline()
        if not raw:
            raise StopIteration
        self.lineno += 1
        if self.lineno == 1:
            if self.utf8 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            self.first_ending = "\r\n" if raw.endswith(b"\r\n") else "\n"
        try:
            return raw.decode(self.encoding)
        except UnicodeDecodeError as e:
            raise _Undecodable(self.lineno, e) from None


def _csv_records(
    src: _Source, opts: _Options, progress: _Progress
) -> Generator[_Item | InputError, None, None]:
    """Records of a CSV/TSV file. ``raw`` is the row (a list of str); the header is available
    as ``raw`` of a first pseudo-item ``(0, "", None, ("header", header, line_ending))`` which the
    record stream passes on to the writer only."""
    name = src.name
    delimiter = "\t" if src.fmt == "tsv" else ","
    kind = src.fmt.upper()
    with ExitStack() as stack:
        try:
            raw_f, stream = stack.enter_context(_open_source(src))
        except _READ_ERRORS as e:
            yield _open_error(src, e)
            return
        progress.start(src, raw_f.tell)
        lines = _LineSource(stream, opts.encoding)
        reader = csv.reader(lines, delimiter=delimiter)
        header: list[str] | None = None
        text_idx: list[int] = []
        id_idx: int | None = None
        ncols = 0
        records = 0
        while True:
            start = lines.lineno + 1
            try:
                row = next(reader)
            except StopIteration:
                break
            except _Undecodable as e:
                if header is None:  # a header that cannot be decoded: nothing else can be read
                    yield _undecodable(
                        name, e.lineno, e.exc, opts.encoding, what=f"the {kind} header"
                    )
                    return
                yield _undecodable(name, e.lineno, e.exc, opts.encoding)
                reader = csv.reader(lines, delimiter=delimiter)
                continue
            except csv.Error as e:
                yield InputError(
                    f"malformed {kind}: {e}", path=name, line=start, reason=SkipReason.BAD_ROW
                )
                reader = csv.reader(lines, delimiter=delimiter)
                continue
            except _READ_ERRORS as e:
                yield _read_error(name, lines.lineno, e)
                return
            if not row:
                continue  # blank line
            if header is None:
                header = row
                ncols = len(header)
                id_field = opts.id_field
                if opts.id_optional and id_field not in header:
                    id_field = None  # a detected id column that this file does not have
                wanted = [*opts.text_fields, *([id_field] if id_field else [])]
                absent = next((f for f in wanted if f not in header), None)
                if absent is not None:
                    err = _record_error(
                        f"{absent!r} is not a column of the {kind} header "
                        f"(columns: {', '.join(header)}){_nearest(absent, header)}",
                        name,
                        start,
                        absent,
                        SkipReason.MISSING_FIELD,
                    )
                    err.whole_file = True
                    yield err
                    return
                text_idx = [header.index(f) for f in opts.text_fields]
                if id_field is not None:
                    id_idx = header.index(id_field)
                yield 0, "", None, ("header", header, lines.first_ending or "\n")
                continue
            records += 1
            if len(row) != ncols:
                yield InputError(
                    f"expected {ncols} fields, found {len(row)}",
                    path=name,
                    line=start,
                    reason=SkipReason.BAD_ROW,
                )
                continue
            if len(text_idx) == 1:
                text = row[text_idx[0]]
            else:
                text = "\n".join([row[i] for i in text_idx])
            rid = row[id_idx] if id_idx is not None else None
            yield start, text, rid, row
        if records == 0:
            yield _empty(src, "no rows" if header is None else "only a header")
