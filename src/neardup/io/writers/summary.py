"""JSON summaries: :func:`write_json_atomic` (pretty JSON, written atomically)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from .staged import _write_atomic


def _json_default(obj: Any) -> Any:
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__} to JSON")


def write_json_atomic(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as pretty JSON (indent 2, trailing newline), atomically; return the path."""
    data = orjson.dumps(
        obj,
        default=_json_default,
        option=orjson.OPT_INDENT_2
        | orjson.OPT_SERIALIZE_NUMPY
        | orjson.OPT_NON_STR_KEYS
        | orjson.OPT_APPEND_NEWLINE,
    )
    return _write_atomic(Path(path), lambda f: f.write(data))
