"""JSONL tables: :func:`write_jsonl_table`, one JSON object a line put together column by
column."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, BinaryIO

import numpy as np
import orjson

_JSONL_BATCH = 65_536


def _py_slice(col: Any, start: int, end: int) -> list:
    if isinstance(col, np.ndarray):
        part = col[start:end]
        if part.dtype == np.float32 or part.dtype == np.float16:
            # orjson prints float32 in its shortest form (0.8, not 0.800000011920929); parsing
            # that back gives Python floats which print the same way
            return orjson.loads(
                orjson.dumps(part.astype(np.float32), option=orjson.OPT_SERIALIZE_NUMPY)
            )
        return part.tolist()
    return list(col[start:end])


def _jsonl_values(col: Any, start: int, end: int) -> tuple[list[bytes], bool]:
    """The JSON text of each value of ``col[start:end]`` as ``orjson`` writes it in an object,
    from one ``orjson.dumps`` of the whole list where that can be split back into values (a
    call per value costs ~1 us); ``True`` with texts of strings given without their quotes."""
    values = _py_slice(col, start, end)
    if not values:
        return [], False
    dumps = orjson.dumps
    if isinstance(col, np.ndarray) and col.dtype.kind in "biuf":
        # numbers, true, false and null hold no comma: the list's text split at its commas
        return dumps(values)[1:-1].split(b","), False
    try:
        joined = "".join(values)
    except TypeError:  # not all strings
        joined = '"'
    if '"' not in joined:
        # without a quote in any string, '","' stands only between two of them
        return dumps(values)[2:-2].split(b'","'), True
    opt = orjson.OPT_SERIALIZE_NUMPY
    return [dumps(v, option=opt) for v in values], False


def write_jsonl_table(f: BinaryIO, columns: Mapping[str, Any], n: int) -> None:
    """One JSON object a line, ``{"name":value,...}`` as ``orjson.dumps`` writes the row's
    dict, put together column by column (the text of each column's values, then the rows as
    one join) rather than one dict a row."""
    names = list(columns)
    cols = list(columns.values())
    if not all(type(name) is str for name in names):  # as before: a dict a row
        opt = orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY
        for start in range(0, n, _JSONL_BATCH):
            end = min(start + _JSONL_BATCH, n)
            parts = [_py_slice(c, start, end) for c in cols]
            f.write(
                b"".join(
                    [
                        orjson.dumps(dict(zip(names, row, strict=True)), option=opt)
                        for row in zip(*parts, strict=True)
                    ]
                )
            )
        return
    keys = [orjson.dumps(name) + b":" for name in names]
    k = len(cols)
    for start in range(0, n, _JSONL_BATCH):
        end = min(start + _JSONL_BATCH, n)
        m = end - start
        # per row: before each value the text between it and the previous one (b"{" and its
        # key; b"," and its key; a string's quotes), then b"}\n"
        out: list[bytes] = [b""] * (m * (2 * k + 1))
        quoted = False  # whether the previous value was a string without its quotes
        for j, col in enumerate(cols):
            texts, quotes = _jsonl_values(col, start, end)
            head = (b'",' if quoted else b",") if j else b"{"
            out[2 * j :: 2 * k + 1] = [head + keys[j] + (b'"' if quotes else b"")] * m
            out[2 * j + 1 :: 2 * k + 1] = texts
            quoted = quotes
        out[2 * k :: 2 * k + 1] = [b'"}\n' if quoted else b"}\n"] * m
        f.write(b"".join(out))
