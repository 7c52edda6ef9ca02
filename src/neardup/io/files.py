"""Whole input files, as the product loaders and the truth readers read them: the bytes of a
file (gzip too), its text decoded (a declared encoding, or ``"auto"``: UTF-8, and latin-1 for
the lines that are not), its lines numbered, JSON documents and JSONL records parsed, CSV
separators checked or sniffed, and CSV rows.

The record stream of :mod:`.readers` reads documents a line at a time; these read a file
whole, for inputs that are read once into memory (a catalogue, a truth file). Every error is
an :class:`~neardup.errors.InputError` naming the file and, where there is one, the line.
Functions that meet bad records yield the error in the record's place, so that the caller
chooses between stopping (raise it) and skipping (count it).
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import pickle
from collections.abc import Iterator

import orjson

from ..errors import ConfigError, InputError

#: the CSV separators :func:`sniff_sep` chooses from
SEPARATORS = (",", ";", "\t", "|", "#")


def read_bytes(path: str | os.PathLike, *, gunzip: bool = True) -> bytes:
    """The bytes of the file at ``path``, decompressed where the name ends in ``.gz`` (with
    ``gunzip``); an :class:`InputError` (``unreadable``) naming the file where it cannot be
    read."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            raw = f.read()
        if gunzip and name.lower().endswith(".gz"):
            raw = gzip.decompress(raw)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise InputError(
            f"cannot read: {getattr(e, 'strerror', None) or e}", path=name, reason="unreadable"
        ) from e
    return raw


def read_text(path: str | os.PathLike) -> str:
    """The text of a UTF-8 file; an :class:`InputError` naming the file where it cannot be read
    (``missing_path``) or is not UTF-8 (``undecodable``, with the byte)."""
    from ..errors import SkipReason

    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise InputError(
            f"cannot read: {e.strerror}", path=name, reason=SkipReason.MISSING_PATH
        ) from e
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"not UTF-8 at byte {e.start}", path=name, reason=SkipReason.UNDECODABLE
        ) from e


def unpickle_file(path: str | os.PathLike) -> object:
    """The object pickled in the file at ``path`` (unpickling runs code: only for files the
    user made). Errors as :func:`open` and :func:`pickle.load` raise them."""
    with open(path, "rb") as f:
        return pickle.load(f)  # noqa: S301 - the caller's own file, as it documents


class LineDecoder:
    """Decodes the lines of the file ``path`` with ``encoding``: a codec name, used strictly,
    or ``"auto"``: each line as UTF-8 (a byte order mark on the first one dropped), else as
    latin-1, such lines counted in ``latin1``."""

    def __init__(self, encoding: str, path: str):
        self.encoding = encoding
        self.path = path
        self.latin1 = 0

    def line(self, raw: bytes, lineno: int) -> str:
        """The text of line ``lineno`` (1-based) of the file."""
        if self.encoding == "auto":
            try:
                return raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError:
                self.latin1 += 1
                return raw.decode("latin-1")
        try:
            return raw.decode(self.encoding)
        except UnicodeDecodeError as e:
            raise InputError(
                f"undecodable bytes for encoding {self.encoding!r} (try "
                "encoding='auto' or 'latin-1')",
                path=self.path,
                line=lineno,
                reason="undecodable",
            ) from e
        except LookupError as e:
            raise ConfigError(f"encoding={self.encoding!r} is not a known codec") from e

    def whole(self, raw: bytes) -> str:
        """The text of the whole file: with a codec, as line 1 is; with ``"auto"``, as UTF-8,
        else all of it as latin-1 (every line of it counted in ``latin1``)."""
        if self.encoding != "auto":
            return self.line(raw, 1)
        try:
            return raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            self.latin1 += raw.count(b"\n") + 1
            return raw.decode("latin-1")


def decode_strictly(raw: bytes, encoding: str, path: str) -> str:
    """The text of a whole file in ``encoding``; an :class:`InputError` (``undecodable``)
    naming the file and the line of the first bytes that are not."""
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise InputError(
            f"undecodable bytes for encoding {encoding!r} (try encoding='latin-1')",
            path=path,
            line=line,
            reason="undecodable",
        ) from e


def decoded_lines(raw: bytes, dec: LineDecoder) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of every line of ``raw`` (split on ``\\n``, a ``\\r`` before it
    dropped), numbered from 1."""
    for i, line in enumerate(raw.split(b"\n"), 1):
        yield i, dec.line(line.rstrip(b"\r"), i)


def decoded_text(raw: bytes, dec: LineDecoder) -> str:
    """The text of ``raw`` decoded a line at a time (:func:`decoded_lines`), lines joined with
    ``\\n``."""
    return "\n".join(t for _, t in decoded_lines(raw, dec))


def is_jsonl_name(path: str) -> bool:
    """Whether the file name says JSONL (``.jsonl`` or ``.ndjson``, optionally ``.gz``)."""
    return path.lower().removesuffix(".gz").endswith((".jsonl", ".ndjson"))


def parse_json(text: str | bytes, path: str) -> object:
    """One JSON document; an :class:`InputError` (``malformed_json``) naming the file and the
    line where it is malformed."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as e:
        raise InputError(
            f"malformed JSON: {e}",
            path=path,
            line=getattr(e, "lineno", None),
            reason="malformed_json",
        ) from e


def jsonl_records(raw: bytes, dec: LineDecoder, path: str) -> Iterator[tuple[int, object]]:
    """``(line, value)`` of every non-blank line of a JSONL file; a malformed line's value is
    an :class:`InputError` (``malformed_json``) naming the file and line, for the caller to
    raise or count (the parser's error is its ``__context__``)."""
    for i, text in decoded_lines(raw, dec):
        if not text.strip():
            continue
        try:
            rec = orjson.loads(text)
        except orjson.JSONDecodeError as e:
            err = InputError(f"malformed JSON: {e}", path=path, line=i, reason="malformed_json")
            err.__context__ = e
            yield i, err
            continue
        yield i, rec


def check_sep(sep: str | None) -> None:
    """A :class:`ConfigError` unless ``sep`` is ``None`` (sniff it) or one character that is
    not a quote or a line break."""
    if sep is not None and (not isinstance(sep, str) or len(sep) != 1 or sep in '"\r\n'):
        raise ConfigError(
            f"sep={sep!r} is invalid: one character (such as ',', ';', '|', "
            "'#' or a TAB), not a quote or a line break"
        )


def sniff_sep(text: str, path: str) -> str:
    """The separator of a CSV text: TAB for a ``.tsv`` file, else the one of
    :data:`SEPARATORS` that the header line holds most often outside quotes (``,`` if none)."""
    if path.lower().removesuffix(".gz").endswith(".tsv"):
        return "\t"
    head = text.split("\n", 1)[0]
    outside, quoted = [], False
    for ch in head:
        if ch == '"':
            quoted = not quoted
        elif not quoted:
            outside.append(ch)
    counts = {c: outside.count(c) for c in SEPARATORS}
    best = max(SEPARATORS, key=lambda c: counts[c])
    return best if counts[best] else ","


def csv_rows(text: str, sep: str, path: str) -> Iterator[tuple[int, list[str] | InputError]]:
    """``(line, cells)`` of every row of a CSV text (blank rows too: ``[]``), the line being
    where the row ends; a malformed row's cells are an :class:`InputError`
    (``malformed_csv``) naming the file and line, for the caller to raise or count (reading
    goes on after it; the parser's error is its ``__context__``)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            err = InputError(
                f"malformed CSV: {e}", path=path, line=reader.line_num, reason="malformed_csv"
            )
            err.__context__ = e
            yield reader.line_num, err
            continue
        yield reader.line_num, row


def csv_records(text: str) -> list[tuple[int, dict[str, str]]]:
    """The rows of a comma-separated text with a header row, as ``(n, {column: cell})``, ``n``
    counting from 2 (the header is row 1)."""
    return list(enumerate(csv.DictReader(io.StringIO(text)), start=2))


def jsonl_objects(text: str, path: str) -> list[tuple[int, dict]]:
    """``(line, object)`` of every non-blank line of a JSONL text (lines as
    :meth:`str.splitlines` finds them); an :class:`InputError` naming the file and line where
    a line is malformed or not an object."""
    from ..errors import SkipReason

    rows: list[tuple[int, dict]] = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            raise InputError(
                f"malformed JSON: {e}", path=path, line=i, reason=SkipReason.MALFORMED_JSON
            ) from e
        if not isinstance(rec, dict):
            raise InputError(
                "expected a JSON object", path=path, line=i, reason=SkipReason.NOT_OBJECT
            )
        rows.append((i, rec))
    return rows
