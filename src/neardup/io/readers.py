"""Streaming readers for JSONL, CSV/TSV, Parquet and directories of text files.

Everything here is built on one record stream (:class:`RecordStream`) that turns inputs into
records ``(index, id, text, raw, line)``. :func:`read_documents` groups them into
:class:`DocChunk` objects; :func:`neardup.io.writers.write_deduplicated` walks the very same
stream a second time and uses ``raw`` to copy the kept records, so both passes agree on which
records exist, which are skipped and how they are numbered. The web service's upload and
``neardup stream`` read through it too: an input is a path (or several), the bytes of a file, or
a binary file object such as ``sys.stdin.buffer`` (read a line at a time, as lines arrive).
Every record or file left out has a :class:`~neardup.errors.SkipReason`.

Line-oriented formats (JSONL, CSV, TSV) are split into lines on the byte ``b"\\n"`` before
decoding, so their ``encoding`` must be ASCII-compatible (UTF-8, Latin-1, cp1252, ...); a UTF-8
byte order mark at the start of a file is ignored.
"""

from __future__ import annotations

import codecs
import contextlib
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

from .._records import record
from ..errors import ConfigError, InputError, SkipReason
from .options import INPUT_FORMATS, ReadOptions

__all__ = [
    "SkipReport",
    "DocChunk",
    "FilePart",
    "Record",
    "RecordStream",
    "Source",
    "detect_format",
    "format_of_name",
    "split_compression",
    "total_input_bytes",
    "read_documents",
    "record_stream",
    "utf8_len",
    "INPUT_FORMATS",
]

# The one place that knows which names and content types stand for which format.
_SUFFIX_FORMATS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_CONTENT_TYPES = {
    "application/jsonl": "jsonl",
    "application/x-jsonlines": "jsonl",
    "application/jsonlines": "jsonl",
    "application/x-ndjson": "jsonl",
    "application/ndjson": "jsonl",
    "application/json": "json",
    "text/csv": "csv",
    "application/csv": "csv",
    "text/comma-separated-values": "csv",
    "text/tab-separated-values": "tsv",
    "application/vnd.apache.parquet": "parquet",
    "application/x-parquet": "parquet",
}
_COMPRESSIONS = {".gz": "gz", ".zst": "zst"}
_SNIFF_SKIP = codecs.BOM_UTF8 + b" \t\r\n"

#: What the readers take: a path or several, the bytes of one file, or one binary file object.
Source = str | os.PathLike | Iterable[str | os.PathLike] | bytes | bytearray | memoryview | BinaryIO
_MAX_EXAMPLES = 20
_MAX_SNIPPET = 160

csv.field_size_limit(sys.maxsize)


# ---------------------------------------------------------------------------------------------
# Public data classes


@record
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
        return {
            "total": self.total,
            "by_reason": dict(sorted(self.counts.items())),
            "examples": list(self.examples),
        }


@record
class IdInfo:
    """Where the ids of a read came from, filled in by the reader as it goes.

    ``field``: the field given (``id_field``) or detected (``detected``: ``detect_id``, taken
    because every record read so far has one). ``missing``: where the first record without
    the detected field was (``"a.jsonl:17"``): from there on, and for every record before it
    (see :meth:`fix`), the ids are row numbers; ``fallback_row``: that record's number.
    ``file_names``: some input is a folder of text files (its ids are the files' paths).
    ``repeat``: with a detected field, the first id that repeats (an error at the end of the
    read unless a record without the field turns the ids into row numbers)."""

    field: str | None = None
    detected: bool = False
    missing: str | None = None
    fallback_row: int | None = None
    file_names: bool = False
    field_inputs: bool = False  # some input has fields (not a folder of text files)
    repeat: tuple[str, str, str, int | None, int] | None = None  # id, first at, again at,
    # its line and row
    textdir_sources: frozenset[int] = frozenset()

    @property
    def from_field(self) -> bool:
        return self.field is not None and self.missing is None

    def fix(self, ids: list[str], locations: Any) -> None:
        """After a detected field gave way to row numbers: the ids given before that record
        (``ids``: all rows in order, ``locations``: their ``(source << 40) | line``), except
        the file names of folders, become row numbers too."""
        if not self.fallback_row:
            return
        import numpy as np

        src = np.asarray(locations[: self.fallback_row], np.int64) >> 40
        rows = np.arange(self.fallback_row)
        if self.textdir_sources:
            rows = rows[~np.isin(src, list(self.textdir_sources))]
        for r in rows.tolist():
            ids[r] = str(r)

    def to_dict(self) -> dict[str, Any]:
        """The ``ids`` section of a summary: ``from`` (``"field"``, ``"row numbers"``, ``"file
        names"``, or two of them joined by ``" and "`` for a folder with other inputs),
        ``field``, ``detected`` and, where a detected field was not used, ``missing``."""
        parts = []
        if self.field_inputs:
            parts.append("field" if self.from_field else "row numbers")
        if self.file_names:
            parts.append("file names")
        field = self.from_field and self.field_inputs
        return {
            "from": " and ".join(parts) or "row numbers",
            "field": self.field if field else None,
            "detected": self.detected and field,
            **(
                {"missing": f"no field {self.field!r} at {self.missing}"}
                if self.detected and self.missing
                else {}
            ),
        }

    def repeat_error(self) -> InputError | None:
        """The error of a repeated id of a detected field, if the ids are that field's."""
        if self.repeat is None or not self.from_field or not self.detected:
            return None
        x, first, again, line, _row = self.repeat
        return repeat_error(self.field, x, first, again, line)


def repeat_error(field: str, x: str, first: str, path: str, line: int | None) -> InputError:
    """A detected id field whose id ``x`` repeats at ``path``/``line``, first seen at
    ``first``: an error whatever ``on_error`` says (the field may be no id at all)."""
    return InputError(
        f"id {x!r} repeats (first at {first}): the ids are taken from the field {field!r}, "
        f"which every record has, and must be distinct; give --id-field '' (id_field='') for "
        f"row numbers, or --id-field FIELD for another field",
        path=path,
        line=line,
        field=field,
        reason=SkipReason.DUPLICATE_ID,
    )


def ids_text(ids: dict[str, Any]) -> str:
    """The ``ids`` section of a summary in words, for the command line."""
    f = ids.get("field")
    text = ids["from"].replace("field", f"field {f!r}" if f else "field")
    if ids.get("detected"):
        text += " (found in every record)"
    if ids.get("missing"):
        text += f" ({ids['missing']})"
    return text


@record
class DocChunk:
    """Up to ``chunk_size`` documents, with progress figures.

    ``texts``: Python strings, or (when read with ``arrow=True`` from JSONL) a pyarrow string
    array. ``locations``: ``int64``, where each record came from, ``(source index << 40) |
    line`` (the line in the decompressed file, or the row or file number);
    :func:`write_deduplicated` uses them to copy the kept JSONL lines without parsing them
    again. ``spans``: ``int64[n, 2]``, the bytes ``[start, end)`` of each record's line in its
    uncompressed JSONL file (``-1`` where not known: other formats, compressed files, records
    of the line reader), so that the kept lines can be copied without reading the file again.
    """

    ids: list[str]
    texts: Any
    progress_bytes: int
    text_bytes: int
    locations: Any = None
    spans: Any = None

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


def detect_format(
    path: str | os.PathLike | None = None,
    *,
    name: str | None = None,
    content_type: str | None = None,
    head: bytes | None = None,
) -> str:
    """The format of an input: ``"jsonl"``, ``"csv"``, ``"tsv"``, ``"parquet"`` or ``"textdir"``.

    Looked for in this order: ``path`` is a directory (``"textdir"``); the suffix of the file
    name (``name``, else ``path``'s name) after removing ``.gz``/``.zst``; the media type of
    ``content_type`` (an HTTP ``Content-Type``, parameters ignored); the first bytes ``head``
    when the name has no suffix at all (``{`` after white space and a byte order mark: JSONL).
    A ``.json`` name (or a JSON media type) is ``"json"`` (one array of objects) when the
    content starts with ``[``, ``"jsonl"`` otherwise (the file at ``path`` is read for this, or
    ``head``); with neither, ``"json"``.
    An input none of these tell is an :class:`InputError` with reason ``unknown_format``.
    """
    where = None
    if path is not None:
        p = Path(path)
        if p.is_dir():
            return "textdir"
        where = str(path)
        if name is None:
            name = p.name
    fmt = format_of_name(name) if name else None
    if fmt is None:
        media = (content_type or "").split(";")[0].strip().lower()
        fmt = _CONTENT_TYPES.get(media)
    if fmt == "json":  # a JSON array, or JSON lines under a .json name: the content tells
        if path is not None:
            return _json_or_jsonl(Path(path), split_compression(str(path))[1])
        if head is not None:
            return _json_kind(head)
    if fmt is not None:
        return fmt
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    if head and "." not in base and head.lstrip(_SNIFF_SKIP)[:1] == b"{":
        return "jsonl"
    told = "the file name" if content_type is None else "the file name or content type"
    raise InputError(
        f"cannot tell the input format from {told} (known suffixes: "
        f"{', '.join(_SUFFIX_FORMATS)}, optionally + .gz/.zst); "
        "give the format explicitly",
        path=where or name or None,
        reason=SkipReason.UNKNOWN_FORMAT,
        whole_file=True,
    )


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


@record
class _Source:
    index: int
    path: Path | None  # None: ``data`` or ``fileobj``, named ``label``
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
    data: bytes | bytearray | memoryview | None = None  # the bytes of the file
    fileobj: BinaryIO | None = None  # a binary file object, read from where it stands
    label: str | None = None  # the name of ``data`` or ``fileobj`` in messages

    @property
    def name(self) -> str:
        return self.label if self.path is None else str(self.path)


def _check_missing(paths: Sequence[Path]) -> None:
    for p in paths:
        if not p.exists():
            raise InputError(
                "no such file or directory",
                path=str(p),
                reason=SkipReason.MISSING_PATH,
                whole_file=True,
            )


def _as_paths(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        return [Path(paths)]
    return [Path(p) for p in paths]


def _in_memory(source: Source) -> bool:
    """Whether ``source`` is the bytes of a file or a file object (not paths)."""
    return isinstance(source, (bytes, bytearray, memoryview)) or (
        hasattr(source, "read") and not isinstance(source, (str, os.PathLike))
    )


def _compression(name: str, fmt: str) -> str | None:
    """The compression of an input named ``name`` in format ``fmt`` (not for Parquet)."""
    _, comp = split_compression(name)
    if fmt == "parquet" and comp is not None:
        raise InputError(
            "compressed Parquet files are not supported (Parquet compresses internally)",
            path=name,
            reason=SkipReason.UNKNOWN_FORMAT,
            whole_file=True,
        )
    return comp


def _memory_source(source: Source, name: str | None, fmt: str | None) -> _Source:
    """The one source of ``bytes``/``bytearray``/``memoryview`` or a binary file object."""
    is_data = isinstance(source, (bytes, bytearray, memoryview))
    if isinstance(source, memoryview):
        source = source.cast("B")  # sized and sliced in bytes
    if not is_data:
        if isinstance(source, io.TextIOBase) or not callable(getattr(source, "readline", None)):
            raise ConfigError(
                f"source={source!r} is invalid: paths, bytes or a binary file "
                "object with read and readline (open(path, 'rb'), "
                "sys.stdin.buffer, io.BytesIO(data))"
            )
    if name is None:
        own = None if is_data else getattr(source, "name", None)
        name = own if isinstance(own, str) and own else ("<bytes>" if is_data else "<stream>")
    label = name
    if fmt is None:
        if format_of_name(label) == "json":  # an array, or JSON lines under a .json name
            fmt = _json_or_jsonl_head(source, is_data, split_compression(label)[1])
        else:
            fmt = detect_format(name=label, head=bytes(source[:64]) if is_data else None)
    if fmt == "textdir":
        raise InputError(
            "is not a directory (fmt='textdir'): a folder of text files is read from its path",
            path=label,
            reason=SkipReason.NOT_A_DIRECTORY,
            whole_file=True,
        )
    comp = _compression(label, fmt)
    if is_data:
        return _Source(0, None, fmt, comp, len(source), data=source, label=label)
    return _Source(0, None, fmt, comp, 0, fileobj=source, label=label)


def _stdin_source(index: int, fmt: str | None) -> _Source:
    """Standard input (``-`` among the inputs), read once as it arrives: its format is the one
    given, else JSON lines when its first byte is ``{``; gzip and Zstandard are told by their
    magic bytes."""
    stdin: Any = sys.stdin.buffer
    head = stdin.peek(64)[:64] if hasattr(stdin, "peek") else b""
    comp = (
        "gz"
        if head.startswith(b"\x1f\x8b")
        else ("zst" if head.startswith(b"\x28\xb5\x2f\xfd") else None)
    )
    if fmt is None:
        if comp is None and head.lstrip(_SNIFF_SKIP)[:1] != b"{":
            raise InputError(
                "cannot tell the format of standard input from its first bytes "
                "(not JSON lines); give the input format",
                path="<stdin>",
                reason=SkipReason.UNKNOWN_FORMAT,
                whole_file=True,
            )
        fmt = "jsonl"
    if fmt in ("parquet", "textdir"):
        raise InputError(
            f"standard input cannot be read as {fmt}; give a file",
            path="<stdin>",
            reason=SkipReason.UNKNOWN_FORMAT,
            whole_file=True,
        )
    return _Source(index, None, fmt, comp, 0, fileobj=stdin, label="<stdin>")


def _resolve_sources(paths: list[Path], fmt: str | None) -> list[_Source]:
    if not paths:
        raise ConfigError("paths is empty: give at least one input file or directory")
    if sum(str(p) == "-" for p in paths) > 1:
        raise ConfigError("standard input (-) is given more than once")
    _check_missing([p for p in paths if str(p) != "-"])
    sources = []
    for i, p in enumerate(paths):
        if str(p) == "-":
            sources.append(_stdin_source(i, fmt))
            continue
        if p.is_dir():
            files = [(rel, f, f.stat().st_size) for rel, f in _list_text_dir(p)]
            sources.append(_Source(i, p, "textdir", None, sum(s for _, _, s in files), files))
            continue
        if fmt == "textdir":
            raise InputError(
                "is not a directory (fmt='textdir')",
                path=str(p),
                reason=SkipReason.NOT_A_DIRECTORY,
                whole_file=True,
            )
        f = fmt or detect_format(p)
        comp = _compression(str(p), f)
        sources.append(_Source(i, p, f, comp, p.stat().st_size))
    return sources


def total_input_bytes(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> int:
    """Sum of the on-disk sizes of the inputs (for a directory: of the files that are read)."""
    plist = [p for p in _as_paths(paths) if str(p) != "-"]  # standard input: size unknown
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
    try:
        with _decompressed(raw, compression, str(path)) as stream:
            yield raw, stream
    finally:
        raw.close()


@contextmanager
def _decompressed(raw: BinaryIO, compression: str | None, name: str) -> Iterator[BinaryIO]:
    """``raw`` read through its decompressor (left open: the caller closes ``raw``)."""
    stream: Any = raw
    try:
        if compression == "gz":
            stream = gzip.GzipFile(fileobj=raw, mode="rb")
        elif compression == "zst":
            if zstandard is None:  # pragma: no cover
                raise InputError(
                    "zstandard is not installed",
                    path=name,
                    reason=SkipReason.UNREADABLE,
                    whole_file=True,
                )
            reader = zstandard.ZstdDecompressor().stream_reader(
                raw, read_across_frames=True, closefd=False
            )
            stream = io.BufferedReader(reader, buffer_size=1 << 16)  # type: ignore[arg-type]
        yield stream
    finally:
        if stream is not raw:
            stream.close()


@contextmanager
def _open_source(src: _Source) -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """``(raw, decompressed stream)`` of a source: its file opened (and closed at the end), its
    bytes, or its file object (read from where it stands, left open)."""
    if src.path is not None:
        with _open_binary(src.path, src.compression) as pair:
            yield pair
        return
    raw: Any = io.BytesIO(src.data) if src.data is not None else src.fileobj
    with _decompressed(raw, src.compression, src.name) as stream:
        yield raw, stream


def _open_error(src: _Source, exc: BaseException) -> InputError:
    return InputError(
        f"cannot read the file: {exc}", path=src.name, reason=SkipReason.UNREADABLE, whole_file=True
    )


def _read_error(name: str, lineno: int, exc: BaseException) -> InputError:
    """A corrupt/truncated compressed stream or an I/O error after ``lineno`` good lines."""
    if lineno == 0:
        return InputError(
            f"cannot read the file: {exc}", path=name, reason=SkipReason.UNREADABLE, whole_file=True
        )
    return InputError(
        f"cannot read the file after line {lineno}: {exc}",
        path=name,
        reason=SkipReason.UNREADABLE,
        whole_file=True,
    )


def _snippet(data: bytes | str) -> str:
    if isinstance(data, bytes):
        data = data[:_MAX_SNIPPET].decode("utf-8", "replace")
    s = data[:_MAX_SNIPPET].strip()
    return repr(s) if len(s) < _MAX_SNIPPET else repr(s) + "..."


_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    type(None): "null",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    str: "a string",
}


def _type_name(v: Any) -> str:
    """What a parsed JSON value (or a Parquet cell) is, in JSON's words: "a number", "null"."""
    return _JSON_TYPES.get(type(v), type(v).__name__)


def _nearest(name: str, names: Sequence[str]) -> str:
    """ ", did you mean 'X'" for the name of ``names`` nearest to ``name``, if one is near."""
    import difflib

    near = difflib.get_close_matches(name, [str(n) for n in names], n=1, cutoff=0.5)
    return f", did you mean {near[0]!r}?" if near else ""


def _record_error(
    message: str, path: str, line: int | None, field: str | None, reason: SkipReason
) -> InputError:
    """An error about a field of one record, whose ``message`` names the field itself."""
    err = InputError(message, path=path, line=line, reason=reason)
    err.field = field
    return err


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
                raw = raw[len(codecs.BOM_UTF8) :]
            self.first_ending = "\r\n" if raw.endswith(b"\r\n") else "\n"
        try:
            return raw.decode(self.encoding)
        except UnicodeDecodeError as e:
            raise _Undecodable(self.lineno, e) from None


def _undecodable(
    path: str,
    line: int | None,
    e: UnicodeDecodeError,
    encoding: str,
    *,
    unit: str = "line",
    what: str | None = None,
) -> InputError:
    """``not valid UTF-8 (byte 7 of the line: b'\\xe9', invalid continuation byte)``; ``what``
    (e.g. "the CSV header") is an error about the whole file."""
    enc = "UTF-8" if _is_utf8(encoding) else encoding
    message = (
        f"not valid {enc} (byte {e.start + 1} of the {unit}: "
        f"{e.object[e.start : e.end]!r}, {e.reason})"
    )
    if what is not None:
        message = f"{what} is {message}"
    return InputError(
        message, path=path, line=line, reason=SkipReason.UNDECODABLE, whole_file=what is not None
    )


# ---------------------------------------------------------------------------------------------
# Per-format record generators.
#
# Each yields either ``(line, text, id_or_None, raw)`` or an InputError (so that reading can go
# on after a bad record), and ends with an "empty_file" error if the file held no records.


@record
class _Options:
    text_fields: tuple[str, ...]
    id_field: str | None
    encoding: str
    batch_size: int
    all_columns: bool = False  # the writer needs every Parquet column
    skip_empty: bool = False
    max_text_bytes: int | None = None
    default_id: str | None = None
    unique_ids: bool = True
    id_optional: bool = False  # ``id_field`` is detected: a record may lack it (rid None)


_Item = tuple[int, str, "str | None", Any]


def _empty(src: _Source, what: str = "no records") -> InputError:
    return InputError(
        f"the file is empty ({what})", path=src.name, reason=SkipReason.EMPTY_FILE, whole_file=True
    )


def _bad_id(v: Any, path: str, line: int, id_field: str) -> InputError:
    what = _type_name(v)
    if isinstance(v, (bool, float)):
        what += f" ({orjson.dumps(v).decode()})"
    return _record_error(
        f"field {id_field!r} is {what}; an id is a string or an integer",
        path,
        line,
        id_field,
        SkipReason.BAD_ID,
    )


def _id_value(v: Any, path: str, line: int, id_field: str) -> str | InputError:
    if isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return _bad_id(v, path, line, id_field)


def _jsonl_line(
    data: bytes, name: str, lineno: int, opts: _Options, utf8: bool, single: str | None
) -> _Item | InputError:
    """One non-blank JSONL line (``data``, its ``\\n`` included) as a record item or its
    error."""
    raw = data
    if lineno == 1 and utf8 and data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        if utf8:
            obj = orjson.loads(data)
        else:
            obj = orjson.loads(data.decode(opts.encoding))
    except UnicodeDecodeError as e:
        return _undecodable(name, lineno, e, opts.encoding)
    except orjson.JSONDecodeError as e:
        if utf8:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as ue:
                return _undecodable(name, lineno, ue, opts.encoding)
        return InputError(
            f"malformed JSON: {e.msg} (character {e.pos + 1}): {_snippet(data)}",
            path=name,
            line=lineno,
            reason=SkipReason.MALFORMED_JSON,
        )
    if type(obj) is not dict:
        return InputError(
            f"a JSON line must be an object, not {_type_name(obj)}",
            path=name,
            line=lineno,
            reason=SkipReason.NOT_OBJECT,
        )
    return _json_object(obj, name, lineno, opts, single, raw)


def _json_object(
    obj: dict, name: str, lineno: int, opts: _Options, single: str | None, raw: Any
) -> _Item | InputError:
    """A JSON object (a line of JSONL, an item of a JSON array) as a record item or its
    error; ``raw``: what the writer copies for it."""
    if single is not None:
        text = obj.get(single, _MISSING)
        if type(text) is not str:
            return _field_error(text, name, lineno, single)
    else:
        parts = []
        for f in opts.text_fields:
            v = obj.get(f, _MISSING)
            if type(v) is not str:
                return _field_error(v, name, lineno, f)
            parts.append(v)
        text = "\n".join(parts)
    rid = None
    id_field = opts.id_field
    if id_field is not None:
        v = obj.get(id_field, _MISSING)
        if v is _MISSING:
            if opts.default_id is None and not opts.id_optional:
                return _field_error(v, name, lineno, id_field)
        else:
            rid = _id_value(v, name, lineno, id_field)
            if isinstance(rid, InputError):
                if not opts.id_optional:
                    return rid
                rid = None  # a detected field that is no id here: row numbers
    return lineno, text, rid, raw


def _is_blank(raw: bytes) -> bool:
    return raw[:1] in b" \t\r\n" and not raw.strip()  # (raw[:1] is never b"" here)


def _jsonl_records(
    src: _Source, opts: _Options, progress: _Progress
) -> Iterator[_Item | InputError]:
    name = src.name
    utf8 = _is_utf8(opts.encoding)
    single = opts.text_fields[0] if len(opts.text_fields) == 1 else None
    with ExitStack() as stack:
        try:
            raw_f, stream = stack.enter_context(_open_source(src))
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
            if _is_blank(raw) or (
                lineno == 1
                and utf8
                and raw.startswith(codecs.BOM_UTF8)
                and _is_blank(raw[len(codecs.BOM_UTF8) :])
            ):
                continue  # a blank line (a byte order mark alone on the first line too)
            records += 1
            yield _jsonl_line(raw, name, lineno, opts, utf8, single)
        if records == 0 and src.whole:
            yield _empty(src, "no JSON lines")


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


def _field_error(v: Any, path: str, line: int, f: str) -> InputError:
    if v is _MISSING:
        return _record_error(f"no field {f!r}", path, line, f, SkipReason.MISSING_FIELD)
    return _record_error(
        f"field {f!r} is {_type_name(v)}, not a string", path, line, f, SkipReason.NON_STRING_FIELD
    )


def _csv_records(src: _Source, opts: _Options, progress: _Progress) -> Iterator[_Item | InputError]:
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


def _parquet_records(
    src: _Source, opts: _Options, progress: _Progress
) -> Iterator[_Item | InputError]:
    """Records of a Parquet file (or of a run of its row groups, ``src.whole=False``, still
    numbered from the file's first row); ``raw`` is ``(batch, row index in the batch)``; the
    first pseudo-item ``(0, "", None, ("schema", schema))`` carries the file's Arrow schema."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    name = src.name
    # a run of row groups (a Dask partition): the file's errors are reported by its first run
    first = src.whole or src.start == 0
    try:
        if src.path is not None:
            pf = pq.ParquetFile(src.path)
        elif src.data is not None:
            pf = pq.ParquetFile(pa.BufferReader(src.data))
        else:
            pf = pq.ParquetFile(src.fileobj)
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
            row = sum(sizes[: src.start])
            num_rows = sum(sizes[src.start :])
        done = 0
        progress.start(src, lambda: src.size * done // max(num_rows, 1))
        names = schema.names

        def is_str(t: pa.DataType) -> bool:
            if pa.types.is_dictionary(t):
                t = t.value_type
            return (
                pa.types.is_string(t)
                or pa.types.is_large_string(t)
                or getattr(pa.types, "is_string_view", lambda _t: False)(t)
            )

        def is_int(t: pa.DataType) -> bool:
            if pa.types.is_dictionary(t):
                t = t.value_type
            return pa.types.is_integer(t)

        id_field = opts.id_field
        if (
            opts.id_optional
            and id_field is not None
            and (
                id_field not in names
                or not (is_str(schema.field(id_field).type) or is_int(schema.field(id_field).type))
            )
        ):
            id_field = None  # a detected id column that this file lacks, or holds no ids

        def bad_columns() -> InputError | None:
            for f in [*opts.text_fields, *([id_field] if id_field is not None else [])]:
                if f not in names:
                    err = _record_error(
                        f"{f!r} is not a column of the Parquet file (columns: "
                        f"{', '.join(names)}){_nearest(f, names)}",
                        name,
                        None,
                        f,
                        SkipReason.MISSING_FIELD,
                    )
                    err.whole_file = True
                    return err
            for f in opts.text_fields:
                t = schema.field(f).type
                if not is_str(t):
                    return InputError(
                        f"expected a string column, got {t}",
                        path=name,
                        field=f,
                        reason=SkipReason.NON_STRING_FIELD,
                        whole_file=True,
                    )
            if id_field is not None:
                t = schema.field(id_field).type
                if not (is_str(t) or is_int(t)):
                    return InputError(
                        f"an id column must hold strings or integers, got {t}",
                        path=name,
                        field=id_field,
                        reason=SkipReason.BAD_ID,
                        whole_file=True,
                    )
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
        for batch in pf.iter_batches(
            batch_size=opts.batch_size, row_groups=groups, columns=columns
        ):
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
                        bad = _field_error(v, name, row, f)
                        break
                    parts.append(v)
                if bad is not None:
                    yield bad
                    continue
                text = parts[0] if len(parts) == 1 else "\n".join(parts)
                rid = None
                if ids is not None:
                    v = ids[i]
                    if v is None and opts.id_optional:
                        yield row, text, None, (batch, i)
                        continue
                    if v is None:
                        yield _bad_id(v, name, row, id_field)
                        continue
                    rid = v if isinstance(v, str) else str(v)
                yield row, text, rid, (batch, i)
            done += n
    except (pa.ArrowException, OSError) as e:
        yield InputError(
            f"cannot read the file: {e}", path=name, reason=SkipReason.UNREADABLE, whole_file=True
        )
        return


def _textdir_records(
    src: _Source, opts: _Options, progress: _Progress
) -> Iterator[_Item | InputError]:
    """One record per file; ``raw`` is the file's path; ``line`` is the file's 1-based position
    in the sorted listing (used only to locate duplicate ids)."""
    assert src.files is not None
    done = 0
    progress.start(src, lambda: done)
    if not src.files:
        yield InputError(
            "the directory holds no (non-hidden) files",
            path=src.name,
            reason=SkipReason.EMPTY_FILE,
            whole_file=True,
        )
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
            yield InputError(
                f"cannot read the file: {e}", path=str(path), reason=SkipReason.UNREADABLE
            )
            continue
        done += size
        if _is_utf8(opts.encoding) and data.startswith(codecs.BOM_UTF8):
            data = data[len(codecs.BOM_UTF8) :]
        try:
            text = data.decode(opts.encoding)
        except UnicodeDecodeError as e:
            yield _undecodable(str(path), None, e, opts.encoding, unit="file")
            continue
        del data
        yield k, text, rel, path


def _json_records(
    src: _Source, opts: _Options, progress: _Progress
) -> Iterator[_Item | InputError]:
    """The items of a JSON file holding one array of objects (a ``.json`` file that starts
    with ``[``). The whole file is parsed at once (a JSON array has no record boundaries to
    stream by); an item's "line" in messages and record numbers is its 1-based position in
    the array, and its raw value is the parsed object, which the writer serialises again."""
    name = src.name
    utf8 = _is_utf8(opts.encoding)
    single = opts.text_fields[0] if len(opts.text_fields) == 1 else None
    with ExitStack() as stack:
        try:
            raw_f, stream = stack.enter_context(_open_source(src))
            progress.start(src, raw_f.tell)
            data = stream.read()
        except _READ_ERRORS as e:
            yield _open_error(src, e)
            return
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        arr = orjson.loads(data if utf8 else data.decode(opts.encoding))
    except UnicodeDecodeError as e:
        yield _undecodable(name, 0, e, opts.encoding)
        return
    except orjson.JSONDecodeError as e:
        line = data.count(b"\n", 0, e.pos) + 1 if isinstance(e.pos, int) else None
        yield InputError(
            f"malformed JSON: {e.msg} (line {line})",
            path=name,
            reason=SkipReason.MALFORMED_JSON,
            whole_file=True,
        )
        return
    if type(arr) is not list:
        yield InputError(
            f"a .json input holds one array of objects, not {_type_name(arr)} "
            "(JSON lines go in a .jsonl file)",
            path=name,
            reason=SkipReason.NOT_OBJECT,
            whole_file=True,
        )
        return
    if not arr and src.whole:
        yield _empty(src, "an empty JSON array")
        return
    for i, obj in enumerate(arr, 1):
        if type(obj) is not dict:
            yield InputError(
                f"item {i} of the array must be an object, not {_type_name(obj)}",
                path=name,
                line=i,
                reason=SkipReason.NOT_OBJECT,
            )
            continue
        yield _json_object(obj, name, i, opts, single, obj)


def _json_kind(head: bytes) -> str:
    """``"json"`` for content that starts with ``[`` (after white space and a byte order mark):
    one array of objects; ``"jsonl"`` otherwise (JSON lines under a ``.json`` name)."""
    return "json" if head.lstrip(_SNIFF_SKIP)[:1] == b"[" else "jsonl"


def _json_or_jsonl_head(source: Any, is_data: bool, compression: str | None) -> str:
    """:func:`_json_or_jsonl` of the bytes of a file, or of a file object that can peek."""
    if is_data:
        try:
            with _decompressed(io.BytesIO(source), compression, "") as stream:
                head = stream.read(256)
        except _READ_ERRORS:
            return "jsonl"
    elif compression is None and hasattr(source, "peek"):
        head = source.peek(256)[:256]
    else:
        return "jsonl"
    return _json_kind(head)


def _json_or_jsonl(path: Path, compression: str | None) -> str:
    """``"json"`` for a ``.json`` file that holds a JSON array (its first character after
    white space and a byte order mark is ``[``), else ``"jsonl"`` (JSON lines named
    ``.json``)."""
    try:
        with _open_binary(path, compression) as (_, stream):
            head = stream.read(256)
    except _READ_ERRORS:
        return "jsonl"  # the reader says what is wrong with it
    return _json_kind(head)


_GENERATORS = {
    "json": _json_records,
    "jsonl": _jsonl_records,
    "csv": _csv_records,
    "tsv": _csv_records,
    "parquet": _parquet_records,
    "textdir": _textdir_records,
}


# ---------------------------------------------------------------------------------------------
# The record stream shared by the reader and the writer


# Bytes of JSONL scanned at a time by the batch path; a line longer than this makes its block
# larger. The first block of a file is smaller (JSONL_FIRST_BLOCK_BYTES, doubling up to the full
# size), so that normalisation starts after a millisecond of reading, not after 8 MB of it.
JSONL_BLOCK_BYTES = 8 << 20
JSONL_FIRST_BLOCK_BYTES = 1 << 20


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
        got = stream.readinto(memoryview(buf)[len(tail) :])  # type: ignore[attr-defined]
        size = min(2 * size, block_size)
        if got:
            end = len(tail) + got
            view = memoryview(buf)[:end]
            cut = _after_last_newline(view, len(tail))
            if cut == 0:
                tail = buf[:end]
                continue
            tail = buf[cut:end]
            yield view[:cut]
        elif len(tail):
            yield memoryview(tail)
            return
        else:
            return


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
            self._released = end

    def __iter__(self) -> Iterator[memoryview]:
        if self._map is None:
            return
        view = memoryview(self._map)
        # ``hi``: where _read_blocks would have read to (each read ``size`` bytes on from the
        # last, ``size`` doubling up to the block size), so that the cuts are the same
        total, pos, hi, size = self.total, 0, 0, self._size
        try:
            while True:
                self._release(pos)
                if os.fstat(self._fd).st_size < total:  # before any of its bytes is touched
                    raise OSError(f"the file became shorter while it was read (at byte {pos})")
                lo, hi = hi, min(hi + size, total)
                size = min(2 * size, self._block_size)
                if lo == hi:  # the end: the last line, without its newline
                    if pos < total:
                        self.position = total
                        yield view[pos:total]
                    return
                cut = _after_last_newline(view[:hi], lo)  # [pos, lo) holds no newline
                if cut:
                    self.position = cut
                    yield view[pos:cut]
                    pos = cut
        finally:
            view.release()
            with contextlib.suppress(BufferError):  # a block still held: closed when let go
                self._map.close()


class _BlockLines:
    """The lines of a block of JSONL (whole lines; the last may lack its ``\\n``): where each
    starts and ends (``\\n`` included), the blank ones (skipped, as the line reader skips
    them) and the others, the records: ``rec``, their line numbers in the block (0-based),
    ``rec_starts``/``rec_ends``, their bytes."""

    def __init__(self, block: bytes | memoryview):
        import numpy as np

        from .._kernels.jsonl import line_ends

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

        from .._kernels.jsonl import decode_ids, scan_lines

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
            from .._kernels.exact import IdTable

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
        self, src: _Source, items: Iterator[_Item | InputError]
    ) -> Iterator[_Item | InputError]:
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
                    if type(part) is int:  # a line for the line reader
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
        sources = _resolve_sources(_as_paths(source), options.format)
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


def read_documents(
    source: Source,
    *,
    text_fields: Sequence[str] | str = ("text",),
    id_field: str | None = None,
    on_error: str = "fail",
    chunk_size: int = 10_000,
    encoding: str = "utf-8",
    report: SkipReport | None = None,
    fmt: str | None = None,
    options: ReadOptions | None = None,
    name: str | None = None,
    arrow: bool = False,
    ids: IdInfo | None = None,
) -> Iterator[DocChunk]:
    """Read documents from JSONL, CSV, TSV, Parquet files and directories of text files, in
    chunks of at most ``chunk_size`` documents.

    ``source``: paths, the bytes of one file or a binary file object, as for
    :func:`record_stream` (``name``: what messages call bytes or a file object). The options
    (given one by one, or as ``options``, a :class:`ReadOptions`), and the existence and format
    of every path, are checked when this is called (a missing path is an :class:`InputError`
    with reason ``"missing_path"``, a bad option a :class:`ConfigError`); the inputs are read
    lazily as the returned iterator is consumed. With ``on_error="fail"`` the first bad record
    raises :class:`InputError`; with ``"skip"`` it is counted in ``report`` and reading goes on.

    ``arrow``: read JSONL files (and bytes) by blocks with the compiled scanner where the
    options allow it, the chunks' texts then pyarrow string arrays (the same records, ids,
    errors and order; several times faster, and the texts' UTF-8 is never copied into Python
    strings).

    ``ids``: an :class:`IdInfo` that the read fills in (where the ids came from; with
    ``options.detect_id``, call :meth:`IdInfo.fix` on the ids read if it fell back to row
    numbers).
    """
    if options is None:
        options = ReadOptions(
            text_fields=text_fields,
            id_field=id_field,
            format=fmt,
            encoding=encoding,
            on_error=on_error,
            chunk_size=chunk_size,
        )
    stream = record_stream(source, options, report, name=name)
    if ids is not None:  # the caller's, filled in as the read goes
        ids.__dict__.update(stream.ids.__dict__)
        stream.ids = ids
    return _chunks(stream, options.chunk_size, arrow)


def read_all(
    paths: Sequence[str | os.PathLike],
    *,
    text_fields: Sequence[str] = ("text",),
    id_field: str | None = None,
    on_error: str = "fail",
    encoding: str = "utf-8",
    fmt: str | None = None,
    report: SkipReport | None = None,
) -> tuple[list[str], list[str], IdInfo]:
    """Every document of ``paths`` in memory, as the file jobs that need them all at once
    (``neardup fca``, ``neardup reuse``) read them: ``(ids, texts, ids_info)``. Ids as
    ``neardup dedup`` takes them: the field ``id_field``, or (None) the field ``id`` where every
    record has one, else row numbers; ``""``: row numbers (:func:`~neardup.io.id_options`)."""
    from .options import id_options

    ids: list[str] = []
    texts: list[str] = []
    info = IdInfo()
    locations = []
    options = ReadOptions(
        text_fields=tuple(text_fields),
        on_error=on_error,
        encoding=encoding,
        format=fmt,
        **id_options(id_field),
    )
    for chunk in read_documents(
        [p if str(p) == "-" else Path(p) for p in paths], report=report, options=options, ids=info
    ):
        ids.extend(chunk.ids)
        texts.extend(chunk.texts)
        locations.append(chunk.locations)
    if locations:
        import numpy as np

        info.fix(ids, np.concatenate(locations))
    return ids, texts, info


_NO_SPAN = (-1, -1)


class _ChunkBuilder:
    """Gathers records and Arrow batches into :class:`DocChunk` objects of ``size`` documents
    (the last one smaller). A chunk's texts are a pyarrow array when all of it came from
    Arrow batches, else Python strings."""

    def __init__(self, stream: RecordStream, size: int):
        self.stream = stream
        self.size = size
        self._reset()

    def _reset(self) -> None:
        self.ids: list[str] = []
        self.parts: list[Any] = []  # pyarrow arrays and lists of Python strings, in order
        self.locs: list[Any] = []  # lists of ints and int64 arrays
        self.spans: list[Any] = []  # lists of (start, end) and int64[m, 2] arrays
        self.n = 0
        self.text_bytes = 0

    def add_record(self, rec: Record) -> Iterator[DocChunk]:
        if self.n >= self.size:
            yield self.flush()
        if not self.parts or type(self.parts[-1]) is not list:
            self.parts.append([])
            self.locs.append([])
            self.spans.append([])
        self.parts[-1].append(rec.text)
        self.locs[-1].append(rec.location)
        self.spans[-1].append(rec.span or _NO_SPAN)
        self.ids.append(rec.id)
        self.n += 1
        self.text_bytes += utf8_len(rec.text)

    def add_batch(self, batch: ArrowBatch) -> Iterator[DocChunk]:
        """Add the records of ``batch``: a chunk never joins two batches (that would copy
        their texts; chunks hold *up to* ``size`` documents)."""
        ids = batch.id_list()
        texts = batch.texts
        locs = batch.locations
        spans = batch.spans
        pos = 0
        if self.n:
            yield self.flush()
        while pos < len(ids):
            if self.n >= self.size:
                yield self.flush()
            take = min(self.size - self.n, len(ids) - pos)
            part = texts.slice(pos, take)
            self.parts.append(part)
            self.locs.append(locs[pos : pos + take])
            self.spans.append(spans[pos : pos + take] if spans is not None else [_NO_SPAN] * take)
            self.ids.extend(ids[pos : pos + take])
            self.n += take
            self.text_bytes += batch.text_bytes if take == len(ids) else arrow_text_bytes(part)
            pos += take

    def flush(self) -> DocChunk:
        import numpy as np

        parts = self.parts
        if all(type(p) is not list for p in parts):
            import pyarrow as pa

            texts: Any = (
                parts[0]
                if len(parts) == 1
                else pa.chunked_array(
                    [
                        c
                        for p in parts
                        for c in (p.chunks if isinstance(p, pa.ChunkedArray) else [p])
                    ]
                )
            )
        else:
            texts = []
            for p in parts:
                texts.extend(p if type(p) is list else p.to_pylist())
        locs = np.concatenate([np.asarray(x, np.int64) for x in self.locs])
        spans = np.concatenate([np.asarray(x, np.int64).reshape(-1, 2) for x in self.spans])
        chunk = DocChunk(
            self.ids, texts, self.stream.progress.delta(), self.text_bytes, locs, spans
        )
        self._reset()
        return chunk


def arrow_text_bytes(arr: Any) -> int:
    """The UTF-8 bytes of a pyarrow string array without nulls (chunked or not), from its
    offsets: no pass over the data, and no import of pyarrow.compute (25 ms)."""
    import numpy as np
    import pyarrow as pa

    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    total = 0
    for c in chunks:
        if len(c):
            dt = np.int64 if pa.types.is_large_string(c.type) else np.int32
            off = np.frombuffer(c.buffers()[1], dt)
            total += int(off[c.offset + len(c)]) - int(off[c.offset])
    return total


def _chunks(stream: RecordStream, chunk_size: int, arrow: bool = False) -> Iterator[DocChunk]:
    """The records of ``stream`` in chunks of ``chunk_size``; with ``arrow``, JSONL sources
    that allow it are read by blocks (:meth:`RecordStream.jsonl_batches`) and their chunks
    carry pyarrow text arrays."""
    b = _ChunkBuilder(stream, chunk_size)
    for src in stream.sources:
        if arrow and stream.batchable(src):
            for item in stream.jsonl_batches(src):
                if type(item) is Record:
                    yield from b.add_record(item)
                else:
                    yield from b.add_batch(item)  # type: ignore[arg-type]
        else:
            for rec in stream.records(src):
                yield from b.add_record(rec)
    stream.finish_ids()
    if b.n:
        yield b.flush()
