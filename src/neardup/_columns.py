"""The text and id columns that the library takes, in the forms users hold them.

Texts: a list or tuple of ``str``; a pyarrow ``string``/``large_string`` array (chunked or not),
read in place; a ``string_view`` array, pandas ``Series``, polars ``Series``, a Hugging Face
``datasets`` column, a NumPy array of strings or anything else that exports the Arrow stream
interface (``__arrow_c_stream__``); any other iterable of strings. A missing text (``None``,
an Arrow or pandas null) is an error that names its position, or with ``on_error="skip"`` the
document is left out and counted.

Ids: strings or integers (``bool`` is not an id), in the same forms; an integer id becomes its
decimal string, as the file readers make it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import ConfigError, InputError, SkipReason
from .text.normalize import is_arrow_strings

#: what the library takes as texts and as ids (see the module's docstring): a sequence of
#: strings, or a column of pyarrow, pandas, polars or Hugging Face datasets
TextColumn = Any
IdColumn = Any

#: how many positions of missing texts an error message names
_SHOW = 5


def _is_arrow(obj: object) -> bool:
    return type(obj).__module__.startswith("pyarrow")


def to_arrow(obj: Any) -> Any | None:
    """``obj`` as a pyarrow Array/ChunkedArray if it is one or converts without a Python loop
    (pandas, polars, the Arrow stream interface); ``None`` otherwise."""
    mod = type(obj).__module__.split(".")[0]
    if _is_arrow(obj):
        return obj
    if (
        mod not in ("pandas", "polars", "datasets")
        and not hasattr(obj, "__arrow_c_stream__")
        and not hasattr(obj, "__arrow_c_array__")
    ):
        return None
    import pyarrow as pa

    if mod == "pandas":
        return pa.Array.from_pandas(obj)
    if mod == "polars" and hasattr(obj, "to_arrow"):
        return obj.to_arrow()
    if mod == "datasets":
        # a Column of a datasets.Dataset: its table's column, without a copy where it can
        source = getattr(obj, "source", None)
        name = getattr(obj, "column_name", None)
        data = getattr(source, "data", None)
        if data is not None and name is not None and getattr(source, "_indices", None) is None:
            return data.column(name)
        return None
    if hasattr(obj, "__arrow_c_stream__"):
        return pa.chunked_array(obj)
    return pa.array(obj)


def text_column(
    texts: Any, on_error: str = "fail", base: int = 0
) -> tuple[Any, np.ndarray | None, int]:
    """``(texts, kept, n)``: the texts as a list of ``str`` or a pyarrow string array, the
    positions kept (``None``: all) and the number of texts given. ``base``: the row number of
    the first text, for messages. Raises :class:`InputError` for a missing or non-string text unless ``on_error="skip"``."""
    arr = to_arrow(texts)
    if arr is not None:
        import pyarrow as pa

        t = arr.type
        is_view = getattr(pa.types, "is_string_view", lambda t: False)
        if pa.types.is_dictionary(t):
            t = t.value_type
        if (
            is_view(t)
            or pa.types.is_null(t)
            or (t != arr.type and (pa.types.is_string(t) or pa.types.is_large_string(t)))
        ):
            arr = arr.cast(pa.large_string())
        if not is_arrow_strings(arr):
            raise InputError(
                f"texts are Arrow {arr.type}, not strings",
                field="texts",
                reason=SkipReason.NON_STRING_FIELD,
            )
        if arr.null_count == 0:
            return arr, None, len(arr)
        valid = np.asarray(arr.is_valid())
        missing = np.flatnonzero(~valid)
        _missing(missing, len(arr), on_error, base)
        return arr.filter(pa.array(valid)), np.flatnonzero(valid), len(arr)
    if isinstance(texts, np.ndarray):
        texts = texts.tolist()
    elif not isinstance(texts, (list, tuple)):
        if isinstance(texts, (str, bytes)):
            raise ConfigError(
                f"texts must be a sequence of strings, not one {type(texts).__name__}"
            )
        texts = list(texts)
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if not bad:
        return texts, None, len(texts)
    wrong = [i for i in bad if texts[i] is not None and not _is_nan(texts[i])]
    if wrong:
        i = wrong[0]
        raise InputError(
            f"text at position {base + i} is {type(texts[i]).__name__}, not str",
            field="texts",
            reason=SkipReason.NON_STRING_FIELD,
        )
    _missing(np.asarray(bad), len(texts), on_error, base)
    keep = np.ones(len(texts), bool)
    keep[bad] = False
    rows = np.flatnonzero(keep)
    return [texts[i] for i in rows.tolist()], rows, len(texts)


def _is_nan(x: object) -> bool:
    return isinstance(x, float) and x != x  # pandas' missing value in an object column


def _missing(rows: np.ndarray, n: int, on_error: str, base: int) -> None:
    if on_error == "skip":
        return
    shown = ", ".join(str(base + int(i)) for i in rows[:_SHOW])
    more = f" and {len(rows) - _SHOW:,} more" if len(rows) > _SHOW else ""
    raise InputError(
        f"{len(rows):,} of {n:,} texts are missing (None or null), at position"
        f"{'s' if len(rows) > 1 else ''} {shown}{more}; fill or drop them, or pass "
        "on_error='skip' to leave those documents out",
        field="texts",
        reason=SkipReason.NON_STRING_FIELD,
    )


def id_column(ids: Any, n: int, base: int = 0) -> list[str]:
    """``ids`` as a list of ``n`` strings; integers become their decimal strings. Raises
    :class:`InputError` naming the first id that is neither."""
    arr = to_arrow(ids)
    if arr is not None:
        values = arr.to_pylist()
    elif isinstance(ids, np.ndarray):
        values = ids.tolist()
    elif isinstance(ids, (str, bytes)):
        raise ConfigError(
            f"ids must be a sequence of strings or integers, not one {type(ids).__name__}"
        )
    else:
        values = list(ids) if not isinstance(ids, list) else ids
    if len(values) != n:
        raise InputError(f"got {n} texts but {len(values)} ids", field="ids")
    if set(map(type, values)) <= {str}:  # the common case, without a Python loop per id
        return values if isinstance(values, list) else list(values)
    out: list[str] | None = None
    for i, x in enumerate(values):
        if type(x) is str:
            if out is not None:
                out.append(x)
            continue
        if out is None:
            out = list(values[:i])
        if isinstance(x, str):
            out.append(str(x))
        elif isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
            out.append(str(int(x)))
        else:
            raise InputError(
                f"id at position {base + i} is {type(x).__name__}, not a string or an integer",
                field="ids",
                reason=SkipReason.BAD_ID,
            )
    if out is None:
        return values if isinstance(values, list) else list(values)
    return out


def select(values: Sequence[Any], rows: np.ndarray | None) -> Sequence[Any]:
    """``values`` at ``rows`` (all of them when ``rows`` is None)."""
    if rows is None:
        return values
    return [values[i] for i in rows.tolist()]


# -- whole tables -----------------------------------------------------------------------------

#: the kinds of table the library takes whole, by (top-level module, class name)
_TABLES = {
    ("pandas", "DataFrame"): "pandas DataFrame",
    ("polars", "DataFrame"): "polars DataFrame",
    ("pyarrow", "Table"): "pyarrow Table",
    ("pyarrow", "RecordBatch"): "pyarrow RecordBatch",
    ("datasets", "Dataset"): "Hugging Face Dataset",
}


def table_kind(obj: object) -> str | None:
    """What kind of table ``obj`` is (a pandas or polars DataFrame, a pyarrow Table or
    RecordBatch, a Hugging Face Dataset), or None if it is none of them."""
    return _TABLES.get((type(obj).__module__.split(".")[0], type(obj).__name__))


def table_names(table: Any) -> list[str]:
    """The names of the columns of a whole table (see :func:`table_kind`)."""
    if type(table).__module__.startswith("pandas"):
        return [str(c) for c in table.columns]
    if hasattr(table, "column_names"):  # pyarrow, datasets
        return list(table.column_names)
    return list(table.columns)  # polars


def _column(table: Any, name: str) -> Any:
    mod = type(table).__module__.split(".")[0]
    if mod == "pandas":
        return table[[c for c in table.columns if str(c) == name][0]]
    if mod == "pyarrow":
        return table.column(name)
    if mod == "datasets":
        data = getattr(table, "data", None)  # its Arrow table, read in place where it can be
        if data is not None and getattr(table, "_indices", None) is None:
            return data.column(name)
        return table[name]
    return table[name]  # polars


def _pick(table: Any, names: list[str], name: str, option: str, kind: str) -> str:
    if name in names:
        return name
    import difflib

    near = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    hint = f"; did you mean {option}={near[0]!r}?" if near else ""
    raise ConfigError(
        f"{option}={name!r}: the {kind} has no such column (its columns: {', '.join(names)}){hint}"
    )


def table_columns(
    texts: Any,
    ids: Any,
    text_field: str | None,
    id_field: str | None,
    *,
    default_id: str | None = "id",
) -> tuple[Any, Any]:
    """``(texts, ids)`` as columns: those of ``texts`` when it is a whole table (the column
    ``text_field``, by default "text"; ``id_field``, by default ``default_id`` where the table
    has such a column), else ``texts`` and ``ids`` as given. A missing column is an error that
    lists the table's columns and suggests the nearest."""
    kind = table_kind(texts)
    if kind is None:
        if text_field is not None or id_field is not None:
            raise ConfigError(
                "text_field and id_field name the columns of a table (a pandas or "
                "polars DataFrame, a pyarrow Table, a Hugging Face Dataset); "
                f"texts is a {type(texts).__name__}"
            )
        return texts, ids
    names = table_names(texts)
    if text_field is None and "text" not in names:
        raise ConfigError(
            f"the {kind} has no column 'text' (its columns: {', '.join(names)}): "
            "name the column of the texts with text_field=..."
        )
    column = _column(texts, _pick(texts, names, text_field or "text", "text_field", kind))
    if ids is not None:
        if id_field is not None:
            raise ConfigError("give ids or id_field, not both")
        return column, ids
    if id_field is not None:
        return column, _column(texts, _pick(texts, names, id_field, "id_field", kind))
    if default_id is not None and default_id in names:
        return column, _column(texts, default_id)
    return column, None
