"""Streaming readers for JSONL, CSV/TSV, Parquet and directories of text files.

Everything here is built on one record stream (:class:`_RecordStream`) that turns input files
into records ``(index, id, text, raw, line)``. :func:`read_documents` groups them into
:class:`DocChunk` objects; :func:`neardup.io.writers.write_deduplicated` walks the very same
stream a second time and uses ``raw`` to copy the kept records, so both passes agree on which
records exist, which are skipped and how they are numbered.

Line-oriented formats (JSONL, CSV, TSV) are split into lines on the byte ``b"\\n"`` before
decoding, so their ``encoding`` must be ASCII-compatible (UTF-8, Latin-1, cp1252, ...); a UTF-8
byte order mark at the start of a file is ignored.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import os
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ..errors import ConfigError, InputError
from .options import INPUT_FORMATS, ReadOptions

__all__ = [
    "SkipReport", "DocChunk", "FilePart", "detect_format", "format_of_name", "split_compression",
    "total_input_bytes", "read_documents", "record_stream", "utf8_len", "INPUT_FORMATS",
]

_SUFFIX_FORMATS = {
    ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl",
    ".csv": "csv", ".tsv": "tsv",
    ".parquet": "parquet", ".pq": "parquet",
}
_COMPRESSIONS = {".gz": "gz", ".zst": "zst"}
_MAX_EXAMPLES = 20
_MAX_SNIPPET = 160

csv.field_size_limit(sys.maxsize)


# ---------------------------------------------------------------------------------------------
# Public data classes


@dataclass
class SkipReport:
    """Counts of the records (or whole files) skipped with ``on_error="skip"``, by reason."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def add(self, err: InputError) -> None:
        reason = str(getattr(err, "reason", "invalid"))  # a plain str: JSON writers want one
        self.counts[reason] = self.counts.get(reason, 0) + 1
        if len(self.examples) < _MAX_EXAMPLES:
            self.examples.append(str(err))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def to_dict(self) -> dict:
        return {"total": self.total, "by_reason": dict(sorted(self.counts.items())),
                "examples": list(self.examples)}


@dataclass
class DocChunk:
    """Up to ``chunk_size`` documents, with progress figures.

    ``locations``: where each record came from, ``(source index << 40) | line`` (the line in the
    decompressed file, or the row or file number); :func:`write_deduplicated` uses them to copy
    the kept JSONL lines without parsing them again.
    """

    ids: list[str]
    texts: list[str]
    progress_bytes: int
    text_bytes: int
    locations: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)


# ---------------------------------------------------------------------------------------------
# Format detection and sources


def split_compression(name: str) -> tuple[str, str | None]:
    """``"a.jsonl.gz"`` -> ``("a.jsonl", "gz")``."""
    lower = name.lower()
    for suffix, comp in _COMPRESSIONS.items():
        if lower.endswith(suffix):
            return name[: -len(suffix)], comp
    return name, None


def format_of_name(name: str) -> str | None:
    """The data format a file name's suffix stands for (after ``.gz``/``.zst``), or ``None``."""
    base, _ = split_compression(name)
    return _SUFFIX_FORMATS.get(Path(base).suffix.lower())


def detect_format(path: str | os.PathLike) -> str:
    """The input format of ``path``: ``"jsonl"``, ``"csv"``, ``"tsv"``, ``"parquet"`` (by suffix,
    after removing ``.gz``/``.zst``) or ``"textdir"`` for a directory. An unknown suffix is an
    :class:`InputError` with reason ``"unknown_format"``."""
    p = Path(path)
    if p.is_dir():
        return "textdir"
    fmt = format_of_name(p.name)
    if fmt is None:
        raise InputError("cannot tell the input format from the file name (known suffixes: "
                         f"{', '.join(_SUFFIX_FORMATS)}, optionally + .gz/.zst); "
                         "give the format explicitly", path=str(path), reason="unknown_format")
    return fmt


def _list_text_dir(root: Path) -> list[tuple[str, Path]]:
    """Every regular, non-hidden file below ``root`` (hidden directories are not entered), as
    ``(relative path with "/", path)`` sorted by relative path."""
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        rel_dir = Path(dirpath).relative_to(root)
        for name in filenames:
            if name.startswith("."):
                continue
            full = Path(dirpath) / name
            if full.is_file():
                found.append(((rel_dir / name).as_posix(), full))
    found.sort(key=lambda item: item[0])
    return found


@dataclass
class _Source:
    index: int
    path: Path
    fmt: str
    compression: str | None
    size: int
    files: list[tuple[str, Path, int]] | None = None  # textdir: (relpath, path, size)
    # A part of a file (the Dask engine reads one per partition), with ``whole=False``:
    # of an uncompressed JSONL file, bytes [start, end) starting at a line boundary, after
    # ``first_line`` lines of the file (the empty-file check is left to the caller, which sees
    # every range); of a Parquet file, the row groups [start, end) (``end=None``: to the last),
    # rows numbered across the file, and only the part with row group 0 reports the errors
    # about the whole file (unreadable footer, missing or mistyped columns, no rows).
    start: int = 0
    end: int | None = None
    first_line: int = 0
    whole: bool = True

    @property
    def name(self) -> str:
        return str(self.path)


def _check_missing(paths: Sequence[Path]) -> None:
    for p in paths:
        if not p.exists():
            raise InputError("no such file or directory", path=str(p), reason="missing_path")


def _as_paths(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        return [Path(paths)]
    return [Path(p) for p in paths]


def _resolve_sources(paths: list[Path], fmt: str | None) -> list[_Source]:
    if not paths:
        raise ConfigError("paths is empty: give at least one input file or directory")
    _check_missing(paths)
    sources = []
    for i, p in enumerate(paths):
        if p.is_dir():
            files = [(rel, f, f.stat().st_size) for rel, f in _list_text_dir(p)]
            sources.append(_Source(i, p, "textdir", None, sum(s for _, _, s in files), files))
            continue
        if fmt == "textdir":
            raise InputError("is not a directory (fmt='textdir')", path=str(p),
                             reason="not_a_directory")
        f = fmt or detect_format(p)
        _, comp = split_compression(p.name)
        if f == "parquet" and comp is not None:
            raise InputError("compressed Parquet files are not supported (Parquet compresses "
                             "internally)", path=str(p), reason="unknown_format")
        sources.append(_Source(i, p, f, comp, p.stat().st_size))
    return sources


def total_input_bytes(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> int:
    """Sum of the on-disk sizes of the inputs (for a directory: of the files that are read)."""
    plist = _as_paths(paths)
    _check_missing(plist)
    total = 0
    for p in plist:
        if p.is_dir():
            total += sum(f.stat().st_size for _, f in _list_text_dir(p))
        else:
            total += p.stat().st_size
    return total


# ---------------------------------------------------------------------------------------------
# Low-level helpers


class _Progress:
    """On-disk bytes consumed so far: finished sources plus the position in the current one."""

    def __init__(self) -> None:
        self.base = 0
        self.reported = 0
        self.tell: Callable[[], int] = lambda: 0
        self.limit = 0

    def start(self, source: _Source, tell: Callable[[], int]) -> None:
        self.tell = tell
        self.limit = source.size

    def finish(self, source: _Source) -> None:
        self.base += source.size
        self.tell = lambda: 0
        self.limit = 0

    def delta(self) -> int:
        try:
            cur = min(self.tell(), self.limit)
        except (ValueError, OSError):
            cur = self.limit
        now = self.base + cur
        d = max(now - self.reported, 0)
        self.reported = max(now, self.reported)
        return d


_READ_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError, zlib.error)
try:  # pragma: no cover - zstandard is a dependency
    import zstandard

    _READ_ERRORS = (*_READ_ERRORS, zstandard.ZstdError)
except ImportError:  # pragma: no cover
    zstandard = None  # type: ignore[assignment]


@contextmanager
def _open_binary(path: Path, compression: str | None) -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """``(raw file, decompressed stream)``; ``raw.tell()`` is the on-disk position."""
    raw = open(path, "rb", buffering=1 << 16)  # noqa: SIM115  (8 KB makes readline 3x slower)
    stream: Any = raw
    try:
        if compression == "gz":
            stream = gzip.GzipFile(fileobj=raw, mode="rb")
        elif compression == "zst":
            if zstandard is None:  # pragma: no cover
                raise InputError("zstandard is not installed", path=str(path),
                                 reason="unreadable")
            reader = zstandard.ZstdDecompressor().stream_reader(
                raw, read_across_frames=True, closefd=False)
            stream = io.BufferedReader(reader, buffer_size=1 << 16)  # type: ignore[arg-type]
        yield raw, stream
    finally:
        try:
            if stream is not raw:
                stream.close()
        finally:
            raw.close()


def _open_error(src: _Source, exc: BaseException) -> InputError:
    return InputError(f"cannot read the file: {exc}", path=src.name, reason="unreadable")


def _read_error(name: str, lineno: int, exc: BaseException) -> InputError:
    """A corrupt/truncated compressed stream or an I/O error after ``lineno`` good lines."""
    if lineno == 0:
        return InputError(f"cannot read the file: {exc}", path=name, reason="unreadable")
    return InputError(f"cannot read the file after line {lineno}: {exc}", path=name,
                      reason="unreadable")


def _snippet(data: bytes | str) -> str:
    if isinstance(data, bytes):
        data = data[:_MAX_SNIPPET].decode("utf-8", "replace")
    s = data[:_MAX_SNIPPET].strip()
    return repr(s) if len(s) < _MAX_SNIPPET else repr(s) + "..."


def _type_name(v: Any) -> str:
    return "null" if v is None else type(v).__name__


def utf8_len(t: str) -> int:
    """The length of ``t`` in UTF-8 bytes (lone surrogates count as 3)."""
    return len(t) if t.isascii() else len(t.encode("utf-8", "surrogatepass"))


def _is_utf8(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name in ("utf-8", "utf-8-sig")
    except LookupError:
        return False


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
                raw = raw[len(codecs.BOM_UTF8):]
            self.first_ending = "\r\n" if raw.endswith(b"\r\n") else "\n"
        try:
            return raw.decode(self.encoding)
        except UnicodeDecodeError as e:
            raise _Undecodable(self.lineno, e) from None


def _undecodable(path: str, line: int | None, e: UnicodeDecodeError, encoding: str) -> InputError:
    return InputError(f"cannot decode byte(s) {e.object[e.start:e.end]!r} at offset {e.start} "
                      f"as {encoding}: {e.reason}", path=path, line=line, reason="undecodable")


# ---------------------------------------------------------------------------------------------
# Per-format record generators.
#
# Each yields either ``(line, text, id_or_None, raw)`` or an InputError (so that reading can go
# on after a bad record), and ends with an "empty_file" error if the file held no records.


@dataclass
class _Options:
    text_fields: tuple[str, ...]
    id_field: str | None
    encoding: str
    batch_size: int
    all_columns: bool = False  # the writer needs every Parquet column


_Item = tuple[int, str, "str | None", Any]


def _empty(src: _Source, what: str = "no records") -> InputError:
    return InputError(f"the file is empty ({what})", path=src.name, reason="empty_file")


def _id_value(v: Any, path: str, line: int, id_field: str) -> str | InputError:
    if isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return InputError(f"an id must be a string or an integer, got {_type_name(v)}", path=path,
                      line=line, field=id_field, reason="bad_id")


def _jsonl_records(src: _Source, opts: _Options,
                   progress: _Progress) -> Iterator[_Item | InputError]:
    name = src.name
    utf8 = _is_utf8(opts.encoding)
    text_fields = opts.text_fields
    id_field = opts.id_field
    single = text_fields[0] if len(text_fields) == 1 else None
    with ExitStack() as stack:
        try:
            raw_f, stream = stack.enter_context(_open_binary(src.path, src.compression))
        except _READ_ERRORS as e:
            yield _open_error(src, e)
            return
        progress.start(src, raw_f.tell)
        lineno = src.first_line
        pos = src.start
        if pos:
            raw_f.seek(pos)  # only uncompressed files are split into ranges
        end = src.end
        records = 0
        while True:
            if end is not None and pos >= end:
                break
            try:
                raw = stream.readline()
            except _READ_ERRORS as e:
                yield _read_error(name, lineno, e)
                return
            if not raw:
                break
            pos += len(raw)
            lineno += 1
            if raw[:1] in b" \t\r\n" and not raw.strip():
                continue  # blank line (raw[:1] is never b"" here)
            records += 1
            data = raw
            if lineno == 1 and utf8 and raw.startswith(codecs.BOM_UTF8):
                data = raw[len(codecs.BOM_UTF8):]
            try:
                if utf8:
                    obj = orjson.loads(data)
                else:
                    obj = orjson.loads(data.decode(opts.encoding))
            except UnicodeDecodeError as e:
                yield _undecodable(name, lineno, e, opts.encoding)
                continue
            except orjson.JSONDecodeError as e:
                if utf8:
                    try:
                        data.decode("utf-8")
                    except UnicodeDecodeError as ue:
                        yield _undecodable(name, lineno, ue, opts.encoding)
                        continue
                yield InputError(f"malformed JSON: {e}: {_snippet(data)}", path=name, line=lineno,
                                 reason="malformed_json")
                continue
            if type(obj) is not dict:
                yield InputError(f"expected a JSON object, got {_type_name(obj)}", path=name,
                                 line=lineno, reason="not_object")
                continue
            if single is not None:
                text = obj.get(single, _MISSING)
                if type(text) is not str:
                    yield _field_error(text, name, lineno, single)
                    continue
            else:
                parts = []
                bad = None
                for f in text_fields:
                    v = obj.get(f, _MISSING)
                    if type(v) is not str:
                        bad = _field_error(v, name, lineno, f)
                        break
                    parts.append(v)
                if bad is not None:
                    yield bad
                    continue
                text = "\n".join(parts)
            rid = None
            if id_field is not None:
                v = obj.get(id_field, _MISSING)
                if v is _MISSING:
                    yield InputError("missing", path=name, line=lineno, field=id_field,
                                     reason="missing_field")
                    continue
                rid = _id_value(v, name, lineno, id_field)
                if isinstance(rid, InputError):
                    yield rid
                    continue
            yield lineno, text, rid, raw
        if records == 0 and src.whole:
            yield _empty(src, "no JSON lines")


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


def _field_error(v: Any, path: str, line: int, f: str) -> InputError:
    if v is _MISSING:
        return InputError("missing", path=path, line=line, field=f, reason="missing_field")
    return InputError(f"expected a string, got {_type_name(v)}", path=path, line=line, field=f,
                      reason="non_string_field")


def _csv_records(src: _Source, opts: _Options,
                 progress: _Progress) -> Iterator[_Item | InputError]:
    """Records of a CSV/TSV file. ``raw`` is the row (a list of str); the header is available
    as ``raw`` of a first pseudo-item ``(0, "", None, ("header", header, line_ending))`` which the
    record stream passes on to the writer only."""
    name = src.name
    delimiter = "\t" if src.fmt == "tsv" else ","
    with ExitStack() as stack:
        try:
            raw_f, stream = stack.enter_context(_open_binary(src.path, src.compression))
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
                yield _undecodable(name, e.lineno, e.exc, opts.encoding)
                reader = csv.reader(lines, delimiter=delimiter)
                if header is None:
                    return  # a header that cannot be decoded: nothing else can be read
                continue
            except csv.Error as e:
                yield InputError(f"malformed CSV: {e}", path=name, line=start, reason="bad_row")
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
                for f in opts.text_fields:
                    if f not in header:
                        yield InputError(f"missing from the header (columns: {header})",
                                         path=name, line=start, field=f, reason="missing_field")
                        return
                    text_idx.append(header.index(f))
                if opts.id_field is not None:
                    if opts.id_field not in header:
                        yield InputError(f"missing from the header (columns: {header})",
                                         path=name, line=start, field=opts.id_field,
                                         reason="missing_field")
                        return
                    id_idx = header.index(opts.id_field)
                yield 0, "", None, ("header", header, lines.first_ending or "\n")
                continue
            records += 1
            if len(row) != ncols:
                yield InputError(f"expected {ncols} fields, found {len(row)}", path=name,
                                 line=start, reason="bad_row")
                continue
            if len(text_idx) == 1:
                text = row[text_idx[0]]
            else:
                text = "\n".join([row[i] for i in text_idx])
            rid = row[id_idx] if id_idx is not None else None
            yield start, text, rid, row
        if records == 0:
            yield _empty(src, "no rows" if header is None else "only a header")


def _parquet_records(src: _Source, opts: _Options,
                     progress: _Progress) -> Iterator[_Item | InputError]:
    """Records of a Parquet file (or of a run of its row groups, ``src.whole=False``, still
    numbered from the file's first row); ``raw`` is ``(batch, row index in the batch)``; the
    first pseudo-item ``(0, "", None, ("schema", schema))`` carries the file's Arrow schema."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    name = src.name
    # a run of row groups (a Dask partition): the file's errors are reported by its first run
    first = src.whole or src.start == 0
    try:
        pf = pq.ParquetFile(src.path)
        schema = pf.schema_arrow
    except (pa.ArrowException, OSError) as e:
        if first:
            yield _open_error(src, e)
        return
    try:
        meta = pf.metadata
        num_rows = meta.num_rows  # to read (of the run of row groups)
        row = 0  # rows of the file before the first one read
        groups = None
        if not src.whole:
            end = meta.num_row_groups if src.end is None else src.end
            groups = list(range(src.start, end))
            sizes = [meta.row_group(k).num_rows for k in range(end)]
            row = sum(sizes[:src.start])
            num_rows = sum(sizes[src.start:])
        done = 0
        progress.start(src, lambda: src.size * done // max(num_rows, 1))
        names = schema.names

        def is_str(t: pa.DataType) -> bool:
            if pa.types.is_dictionary(t):
                t = t.value_type
            return (pa.types.is_string(t) or pa.types.is_large_string(t)
                    or getattr(pa.types, "is_string_view", lambda _t: False)(t))

        def is_int(t: pa.DataType) -> bool:
            if pa.types.is_dictionary(t):
                t = t.value_type
            return pa.types.is_integer(t)

        id_field = opts.id_field

        def bad_columns() -> InputError | None:
            for f in opts.text_fields:
                if f not in names:
                    return InputError(f"no such column (columns: {names})", path=name, field=f,
                                      reason="missing_field")
                t = schema.field(f).type
                if not is_str(t):
                    return InputError(f"expected a string column, got {t}", path=name,
                                      field=f, reason="non_string_field")
            if id_field is not None:
                if id_field not in names:
                    return InputError(f"no such column (columns: {names})", path=name,
                                      field=id_field, reason="missing_field")
                t = schema.field(id_field).type
                if not (is_str(t) or is_int(t)):
                    return InputError(f"an id column must hold strings or integers, got {t}",
                                      path=name, field=id_field, reason="bad_id")
            return None

        bad_file = bad_columns()
        if bad_file is None and meta.num_rows == 0:
            bad_file = _empty(src, "no rows")
        if bad_file is not None:
            if first:
                yield bad_file
            return
        yield 0, "", None, ("schema", schema)
        wanted = list(dict.fromkeys([*opts.text_fields, *([id_field] if id_field else [])]))
        columns = None if opts.all_columns else wanted
        for batch in pf.iter_batches(batch_size=opts.batch_size, row_groups=groups,
                                     columns=columns):
            cols = [batch.column(f).to_pylist() for f in opts.text_fields]
            ids = batch.column(id_field).to_pylist() if id_field is not None else None
            n = batch.num_rows
            for i in range(n):
                row += 1
                parts = []
                bad = None
                for f, col in zip(opts.text_fields, cols, strict=True):
                    v = col[i]
                    if v is None:
                        bad = InputError("expected a string, got null", path=name, line=row,
                                         field=f, reason="non_string_field")
                        break
                    parts.append(v)
                if bad is not None:
                    yield bad
                    continue
                text = parts[0] if len(parts) == 1 else "\n".join(parts)
                rid = None
                if ids is not None:
                    v = ids[i]
                    if v is None:
                        yield InputError("an id must be a string or an integer, got null",
                                         path=name, line=row, field=id_field, reason="bad_id")
                        continue
                    rid = v if isinstance(v, str) else str(v)
                yield row, text, rid, (batch, i)
            done += n
    except (pa.ArrowException, OSError) as e:
        yield InputError(f"cannot read the file: {e}", path=name, reason="unreadable")
        return


def _textdir_records(src: _Source, opts: _Options,
                     progress: _Progress) -> Iterator[_Item | InputError]:
    """One record per file; ``raw`` is the file's path; ``line`` is the file's 1-based position
    in the sorted listing (used only to locate duplicate ids)."""
    assert src.files is not None
    done = 0
    progress.start(src, lambda: done)
    if not src.files:
        yield InputError("the directory holds no (non-hidden) files", path=src.name,
                         reason="empty_file")
        return
    for k, (rel, path, size) in enumerate(src.files, start=1):
        try:
            if src.compression is None:
                _, comp = split_compression(path.name)
            else:  # pragma: no cover
                comp = src.compression
            with _open_binary(path, comp) as (_, stream):
                data = stream.read()
        except _READ_ERRORS as e:
            done += size
            yield InputError(f"cannot read the file: {e}", path=str(path), reason="unreadable")
            continue
        done += size
        if _is_utf8(opts.encoding) and data.startswith(codecs.BOM_UTF8):
            data = data[len(codecs.BOM_UTF8):]
        try:
            text = data.decode(opts.encoding)
        except UnicodeDecodeError as e:
            yield _undecodable(str(path), None, e, opts.encoding)
            continue
        del data
        yield k, text, rel, path


_GENERATORS = {
    "jsonl": _jsonl_records,
    "csv": _csv_records,
    "tsv": _csv_records,
    "parquet": _parquet_records,
    "textdir": _textdir_records,
}


# ---------------------------------------------------------------------------------------------
# The record stream shared by the reader and the writer


@dataclass
class _Record:
    index: int      # global record number (0-based), the index into ``keep``
    id: str
    text: str
    raw: Any
    line: int
    location: int   # (source index << 40) | line


class _RecordStream:
    """Global numbering, duplicate-id detection and error policy over the sources."""

    def __init__(self, sources: list[_Source], opts: _Options, on_error: str,
                 report: SkipReport | None):
        self.sources = sources
        self.opts = opts
        self.fail = on_error == "fail"
        self.report = report if report is not None else SkipReport()
        self.count = 0
        self.progress = _Progress()
        check = opts.id_field is not None or any(s.fmt == "textdir" for s in sources)
        # id -> (source index << 40) | line: one int per id, cheap for millions of ids
        self.seen: dict[str, int] | None = {} if check else None
        self.header: Any = None  # the CSV header / Parquet schema of the current source

    def _handle(self, err: InputError) -> None:
        if self.fail:
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

    def records(self, src: _Source) -> Iterator[_Record]:
        """The valid records of one source, in order."""
        self.header = None
        seen = self.seen
        with closing(_GENERATORS[src.fmt](src, self.opts, self.progress)) as gen:
            for item in gen:
                if isinstance(item, InputError):
                    self._handle(item)
                    continue
                line, text, rid, raw = item
                if line == 0:  # pseudo-item: CSV header or Parquet schema
                    self.header = raw
                    continue
                if rid is None:
                    rid = str(self.count)
                if seen is not None:
                    code = (src.index << 40) | line
                    prev = seen.setdefault(rid, code)
                    if prev != code:
                        where = str(raw) if src.fmt == "textdir" else src.name
                        self._handle(InputError(
                            f"duplicate id {rid!r} (first seen at {self._where(prev)})",
                            path=where, line=None if src.fmt == "textdir" else line,
                            field=self.opts.id_field, reason="duplicate_id"))
                        continue
                rec = _Record(self.count, rid, text, raw, line, (src.index << 40) | line)
                self.count += 1
                yield rec
        self.progress.finish(src)

    def __iter__(self) -> Iterator[_Record]:
        for src in self.sources:
            yield from self.records(src)


@dataclass(frozen=True)
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


def record_stream(paths: str | os.PathLike | Iterable[str | os.PathLike],
                  options: ReadOptions | None = None, report: SkipReport | None = None, *,
                  part: FilePart | None = None, all_columns: bool = False) -> _RecordStream:
    """The records of ``paths`` one by one (``.id``, ``.text``, ``.line``, ``.raw``), with
    the options checked and every path resolved at once (raising before anything is read).

    ``part``: read only that part of the one file given. ``all_columns``: read every Parquet
    column (the corpus writer copies whole rows). Iterating yields the valid records in order;
    bad ones raise or go to ``report`` as ``options.on_error`` says.
    """
    options = options or ReadOptions()
    sources = _resolve_sources(_as_paths(paths), options.format)
    if part is not None:
        if len(sources) != 1:
            raise ConfigError("part: give exactly one input file with it")
        src = sources[0]
        src.start, src.end, src.first_line, src.whole = (part.start, part.end,
                                                          part.first_line, False)
    opts = _Options(options.text_fields, options.id_field, options.encoding,
                    batch_size=max(1, min(options.chunk_size, 65_536)), all_columns=all_columns)
    return _RecordStream(sources, opts, options.on_error, report)


def read_documents(paths: str | os.PathLike | Iterable[str | os.PathLike], *,
                   text_fields: Sequence[str] | str = ("text",), id_field: str | None = None,
                   on_error: str = "fail", chunk_size: int = 10_000, encoding: str = "utf-8",
                   report: SkipReport | None = None, fmt: str | None = None,
                   options: ReadOptions | None = None) -> Iterator[DocChunk]:
    """Read documents from JSONL, CSV, TSV, Parquet files and directories of text files, in
    chunks of at most ``chunk_size`` documents.

    The options (given one by one, or as ``options``, a :class:`ReadOptions`), and the existence
    and format of every path, are checked when this is called (a missing path is an
    :class:`InputError` with reason ``"missing_path"``, a bad option a :class:`ConfigError`);
    the files are read lazily as the returned iterator is consumed. With ``on_error="fail"``
    the first bad record raises :class:`InputError`; with ``"skip"`` it is counted in
    ``report`` and reading goes on.
    """
    if options is None:
        options = ReadOptions(text_fields=text_fields, id_field=id_field, format=fmt,
                              encoding=encoding, on_error=on_error, chunk_size=chunk_size)
    stream = record_stream(paths, options, report)
    return _chunks(stream, options.chunk_size)


def _chunks(stream: _RecordStream, chunk_size: int) -> Iterator[DocChunk]:
    ids: list[str] = []
    texts: list[str] = []
    locs: list[int] = []
    text_bytes = 0
    for rec in stream:
        if len(ids) >= chunk_size:
            # yielded only once the next record exists, so no chunk is ever empty and the
            # last one carries the remaining progress bytes
            yield DocChunk(ids, texts, stream.progress.delta(), text_bytes, locs)
            ids, texts, locs, text_bytes = [], [], [], 0
        ids.append(rec.id)
        texts.append(rec.text)
        locs.append(rec.location)
        text_bytes += utf8_len(rec.text)
    if ids:
        yield DocChunk(ids, texts, stream.progress.delta(), text_bytes, locs)
