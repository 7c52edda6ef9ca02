"""What reading every product file shares (offers, catalogues, truth files): whole files read
(gzip too), their text decoded (a declared or detected encoding), lines numbered, CSV
separators checked or sniffed, and the rows of a truth file.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Iterator

import orjson

from ..errors import ConfigError, InputError


def _read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            raw = f.read()
        if path.lower().endswith(".gz"):
            raw = gzip.decompress(raw)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise InputError(
            f"cannot read: {getattr(e, 'strerror', None) or e}", path=path, reason="unreadable"
        ) from e
    return raw


class _Decoder:
    def __init__(self, encoding: str, path: str):
        self.encoding = encoding
        self.path = path
        self.latin1 = 0

    def line(self, raw: bytes, lineno: int) -> str:
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


def _lines(raw: bytes, dec: _Decoder) -> Iterator[tuple[int, str]]:
    for i, line in enumerate(raw.split(b"\n"), 1):
        yield i, dec.line(line.rstrip(b"\r"), i)


SEPARATORS = (",", ";", "\t", "|", "#")


def _check_sep(sep: str | None) -> None:
    if sep is not None and (not isinstance(sep, str) or len(sep) != 1 or sep in '"\r\n'):
        raise ConfigError(
            f"sep={sep!r} is invalid: one character (such as ',', ';', '|', "
            "'#' or a TAB), not a quote or a line break"
        )


def _sniff_sep(text: str, path: str) -> str:
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


def _read_rows(name: str, sep: str | None) -> tuple[list[tuple[int, list]], bool, str]:
    """Rows ``(line, cells)`` of a truth file, whether it is JSONL (cells of a JSON object:
    ``[dict]``), and the separator used."""
    raw = _read_bytes(name)
    dec = _Decoder("auto", name)
    rows: list[tuple[int, list]] = []
    if name.lower().removesuffix(".gz").endswith((".jsonl", ".ndjson")):
        for i, text in _lines(raw, dec):
            if not text.strip():
                continue
            try:
                rec = orjson.loads(text)
            except orjson.JSONDecodeError as e:
                raise InputError(
                    f"malformed JSON: {e}", path=name, line=i, reason="malformed_json"
                ) from e
            if isinstance(rec, dict):
                rows.append((i, [rec]))
            elif isinstance(rec, list):
                rows.append((i, rec))
            else:
                raise InputError(
                    f"expected an object or a list, got {type(rec).__name__}",
                    path=name,
                    line=i,
                    reason="bad_pair",
                )
        return rows, True, ""
    text = "\n".join(t for _, t in _lines(raw, dec))
    delim = sep or _sniff_sep(text, name)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            raise InputError(
                f"malformed CSV: {e}", path=name, line=reader.line_num, reason="malformed_csv"
            ) from e
        if row and row != [""]:
            rows.append((reader.line_num, row))
    return rows, False, delim
