"""JSON lines (JSONL), read line by line: one object per line; and the record of one JSON
object, which JSON arrays share. The batch path, blocks read by the compiled scanner, is in
:mod:`.jsonl_blocks` and :meth:`.stream.RecordStream.jsonl_batches`."""

from __future__ import annotations

import codecs
from collections.abc import Generator
from contextlib import ExitStack
from typing import Any

import orjson

from ...errors import InputError, SkipReason
from .base import (
    _MISSING,
    _READ_ERRORS,
    _empty,
    _field_error,
    _id_value,
    _is_utf8,
    _Item,
    _open_error,
    _open_source,
    _Options,
    _Progress,
    _read_error,
    _snippet,
    _Source,
    _type_name,
    _undecodable,
)


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
    rid: str | None = None
    id_field = opts.id_field
    if id_field is not None:
        v = obj.get(id_field, _MISSING)
        if v is _MISSING:
            if opts.default_id is None and not opts.id_optional:
                return _field_error(v, name, lineno, id_field)
        else:
            got = _id_value(v, name, lineno, id_field)
            if not isinstance(got, InputError):
                rid = got
            elif not opts.id_optional:
                return got
            # else: a detected field that is no id here: row numbers
    return lineno, text, rid, raw


def _is_blank(raw: bytes) -> bool:
    return raw[:1] in b" \t\r\n" and not raw.strip()  # (raw[:1] is never b"" here)


def _jsonl_records(
    src: _Source, opts: _Options, progress: _Progress
) -> Generator[_Item | InputError, None, None]:
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
