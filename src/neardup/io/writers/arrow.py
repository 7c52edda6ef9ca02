"""Arrow arrays and tables of the result columns: numpy arrays shared, strings built from one
UTF-8 buffer (without ``pyarrow.array``, which imports pandas), and :func:`take_strings`."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import ConfigError

#: From this many values on, a column of strings goes to ``pyarrow.array`` (see below)
_PYARROW_STRINGS = 2_000_000


def _pyarrow_strings_faster(n: int) -> bool:
    """Whether ``pyarrow.array`` makes ``n`` strings faster than :func:`_string_array`: it
    imports pandas the first time (0.15-0.2 s) and then takes 25 ns a value where
    :func:`_string_array` takes 40-60 ns (ASCII) or 150 ns; so once pandas is loaded, or for
    millions of values."""
    return "pandas" in sys.modules or n >= _PYARROW_STRINGS


def _string_array(values: list) -> Any:
    """``values`` (all ``str``) as an Arrow string array, built from one UTF-8 buffer and its
    offsets, as ``pyarrow.array`` builds it (without importing pandas); ``None`` when they are
    not all strings, hold a lone surrogate or need more than 2 GiB (``pyarrow.array`` takes
    those, with its own errors)."""
    import pyarrow as pa

    try:
        joined = "".join(values)
    except TypeError:
        return None
    n = len(values)
    ends = np.empty(n + 1, dtype=np.int64)  # character offsets of the values in ``joined``
    ends[0] = 0
    np.cumsum(np.fromiter(map(len, values), dtype=np.int64, count=n), out=ends[1:])
    if joined.isascii():
        data = joined.encode("ascii")
    else:
        try:
            data = joined.encode("utf-8")
        except UnicodeEncodeError:
            return None
        # the byte offset of every character (a byte that does not continue a UTF-8 sequence
        # starts one), and of the end
        u8 = np.frombuffer(data, dtype=np.uint8)
        starts = np.flatnonzero((u8 & 0xC0) != 0x80)
        ends = np.append(starts, len(data))[ends]
    if len(data) > np.iinfo(np.int32).max:
        return None
    offsets = ends.astype(np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def arrow_array(col: Any) -> Any:
    """One column as :func:`write_table` makes it an Arrow array (numpy arrays of numbers or
    bools shared, strings built from one UTF-8 buffer; an Arrow array as it is)."""
    return _arrow_array(col)


def take_strings(arr: Any, rows: np.ndarray) -> Any:
    """``arr[rows]`` for an Arrow string array without nulls (``rows``: integers), gathered from
    its buffers with numpy: what ``arr.take(rows)`` gives, without loading ``pyarrow.compute``
    (0.14 s) or making Python strings; ``None`` for another array (nulls, large strings, more
    than 2 GiB of text)."""
    import pyarrow as pa

    if not isinstance(arr, pa.Array) or arr.type != pa.string() or arr.null_count:
        return None
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    _, off_buf, data_buf = arr.buffers()
    off = np.frombuffer(off_buf, np.int32, len(arr) + 1, arr.offset * 4).astype(np.int64)
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    starts = off[:-1][rows]
    lens = (off[1:] - off[:-1])[rows]
    ends = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lens, out=ends[1:])
    if ends[-1] > np.iinfo(np.int32).max:
        return None
    # byte j of the output is byte j - ends[i] + starts[i] of the input, for its row i
    out = data[np.arange(ends[-1], dtype=np.int64) + np.repeat(starts - ends[:-1], lens)]
    return pa.Array.from_buffers(
        pa.string(), len(rows), [None, pa.py_buffer(ends.astype(np.int32)), pa.py_buffer(out)]
    )


def _arrow_array(col: Any) -> Any:
    import pyarrow as pa

    if isinstance(col, pa.Array):
        return col
    if isinstance(col, np.ndarray):
        if col.ndim != 1:
            raise ConfigError(f"a column must be one-dimensional, got shape {col.shape}")
        plain = type(col) is np.ndarray  # not a masked array, whose mask means nulls
        if plain and col.dtype == object and not _pyarrow_strings_faster(len(col)):
            arr = _string_array(col.tolist())
            if arr is not None:
                return arr
        if plain and col.dtype.kind in "biuf" and col.dtype.isnative:
            # the array's own memory, as pyarrow.array shares it, without importing pandas
            col = np.ascontiguousarray(col)
            if col.dtype == np.bool_:
                bits = np.packbits(col, bitorder="little")
                return pa.Array.from_buffers(pa.bool_(), len(col), [None, pa.py_buffer(bits)])
            return pa.Array.from_buffers(
                pa.from_numpy_dtype(col.dtype), len(col), [None, pa.py_buffer(col)]
            )
        if col.dtype == object or col.dtype.kind in "US":
            return pa.array(col, type=pa.string() if len(col) == 0 else None)
        return pa.array(col)
    col = list(col)
    arr = None if _pyarrow_strings_faster(len(col)) else _string_array(col)
    if arr is not None:
        return arr
    return pa.array(col, type=pa.string() if len(col) == 0 else None)


def arrow_table(columns: Mapping[str, Any]) -> Any:
    import pyarrow as pa

    return pa.table({name: _arrow_array(col) for name, col in columns.items()})
