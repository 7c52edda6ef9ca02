"""JSON arrays: a ``.json`` file holding one array of objects, parsed at once."""

from __future__ import annotations

import codecs
from collections.abc import Generator
from contextlib import ExitStack

import orjson

from ...errors import InputError, SkipReason
from .base import (
    _READ_ERRORS,
    _empty,
    _is_utf8,
    _Item,
    _open_error,
    _open_source,
    _Options,
    _Progress,
    _Source,
    _type_name,
    _undecodable,
)
from .jsonl import _json_object


def _json_records(
    src: _Source, opts: _Options, progress: _Progress
) -> Generator[_Item | InputError, None, None]:
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
