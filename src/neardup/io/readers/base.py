"""What every reader shares: the source it reads (:class:`_Source`) and the options it reads
with (:class:`_Options`); opening and decompressing, progress, decoding; and the errors that
name the file, line and field."""

from __future__ import annotations

import codecs
import gzip
import io
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, cast

import orjson

from ..._records import record
from ...errors import InputError, SkipReason

_MAX_SNIPPET = 160


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
    # A shard of a folder of Parquet files: the folder given and the shard's path in it ("/")
    folder: Path | None = None
    rel: str | None = None

    @property
    def name(self) -> str:
        return cast(str, self.label) if self.path is None else str(self.path)


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
