"""Format detection and sources: the format that a file name, a media type or the first bytes
stand for, and the inputs (paths, folders, standard input, bytes, file objects) resolved into
sources before anything is read."""

from __future__ import annotations

import codecs
import io
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, BinaryIO, cast

from ...errors import ConfigError, InputError, SkipReason
from .base import _READ_ERRORS, _decompressed, _open_binary, _Source

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


#: the suffixes of the shards of a folder of Parquet files
PARQUET_SHARD_SUFFIXES = (".parquet", ".parq", ".pq")


def _ignored_in_shards(name: str) -> bool:
    """A file or folder that a folder of Parquet shards may hold besides them and that is not
    read: hidden (``.``), the marks and metadata of Spark and Hadoop (``_SUCCESS``,
    ``_metadata``, ``_temporary/``: a leading ``_``) and checksums (``.crc``)."""
    return name.startswith((".", "_")) or name.lower().endswith(".crc")


def _list_parquet_dir(root: Path) -> list[tuple[str, Path]] | None:
    """The Parquet shards below ``root`` (``*.parquet``, ``*.parq``, ``*.pq``; nested folders
    entered), as ``(relative path with "/", path)`` sorted by relative path; ``None`` when the
    folder holds no Parquet file (a folder of text files). A folder that holds Parquet files
    and other files (besides those :func:`_ignored_in_shards` leaves out) is an
    :class:`InputError` naming the first other file."""
    shards: list[tuple[str, Path]] = []
    others: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not _ignored_in_shards(d)]
        rel_dir = Path(dirpath).relative_to(root)
        for name in filenames:
            if _ignored_in_shards(name):
                continue
            full = Path(dirpath) / name
            if not full.is_file():
                continue
            rel = (rel_dir / name).as_posix()
            if name.lower().endswith(PARQUET_SHARD_SUFFIXES):
                shards.append((rel, full))
            else:
                others.append(rel)
    if not shards:
        return None
    shards.sort(key=lambda item: item[0])
    if others:
        odd = min(others)
        raise InputError(
            f"the folder holds Parquet files ({shards[0][0]}, ...) and other files "
            f"({odd}{', ...' if len(others) > 1 else ''}): a folder is read either as Parquet "
            "shards (every file .parquet, .parq or .pq; _SUCCESS, .crc and hidden files "
            "left out) or as text files, one document each; move the other files out",
            path=str(root / odd),
            reason=SkipReason.UNKNOWN_FORMAT,
            whole_file=True,
        )
    return shards


def parquet_shards(path: str | os.PathLike) -> list[Path] | None:
    """The Parquet shards that the folder ``path`` is read as, in reading order (sorted by
    their path in the folder); ``None`` for a file or a folder of text files. A folder is one
    of Parquet shards when it holds ``*.parquet``, ``*.parq`` or ``*.pq`` files, in it or in
    folders below, and no other files but hidden ones, checksums (``.crc``) and those whose
    name starts with ``_`` (``_SUCCESS``, ``_metadata``; folders such as ``_temporary/`` are
    not entered); Parquet files with other files are an :class:`InputError`."""
    p = Path(path)
    if not p.is_dir():
        return None
    shards = _list_parquet_dir(p)
    return None if shards is None else [f for _, f in shards]


def _folder_sources(start: int, root: Path, fmt: str | None) -> list[_Source]:
    """The sources of the folder ``root`` (numbered from ``start``): one per shard of a folder
    of Parquet files (unless ``fmt`` is ``"textdir"``), else one for its text files."""
    shards = None if fmt == "textdir" else _list_parquet_dir(root)
    if shards is None:
        if fmt == "parquet":
            raise InputError(
                "the folder holds no Parquet file (.parquet, .parq or .pq) to read "
                "as fmt='parquet'",
                path=str(root),
                reason=SkipReason.EMPTY_FILE,
                whole_file=True,
            )
        files = [(rel, f, f.stat().st_size) for rel, f in _list_text_dir(root)]
        return [_Source(start, root, "textdir", None, sum(s for _, _, s in files), files)]
    return [
        _Source(start + k, f, "parquet", None, f.stat().st_size, folder=root, rel=rel)
        for k, (rel, f) in enumerate(shards)
    ]


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
            head = bytes(cast(bytes, source)[:64]) if is_data else None
            fmt = detect_format(name=label, head=head)
    if fmt == "textdir":
        raise InputError(
            "is not a directory (fmt='textdir'): a folder of text files is read from its path",
            path=label,
            reason=SkipReason.NOT_A_DIRECTORY,
            whole_file=True,
        )
    comp = _compression(label, fmt)
    if is_data:
        data = cast("bytes | bytearray | memoryview", source)
        return _Source(0, None, fmt, comp, len(data), data=data, label=label)
    return _Source(0, None, fmt, comp, 0, fileobj=cast(BinaryIO, source), label=label)


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
    sources: list[_Source] = []
    for p in paths:
        i = len(sources)  # a folder of Parquet shards is a source per shard
        if str(p) == "-":
            sources.append(_stdin_source(i, fmt))
            continue
        if p.is_dir():
            sources.extend(_folder_sources(i, p, fmt))
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
            shards = _list_parquet_dir(p)
            files = _list_text_dir(p) if shards is None else shards
            total += sum(f.stat().st_size for _, f in files)
        else:
            total += p.stat().st_size
    return total


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
