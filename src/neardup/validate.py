"""One way to check a parameter, for every public function and parameter class.

Each check returns the value (ints as ``int``, reals as ``float``) or raises
:class:`~neardup.ConfigError` with one message shape: ``NAME=VALUE is invalid: WHAT IS
ALLOWED``. Booleans are never accepted where a number is expected (``True`` is an ``int`` to
Python, but ``k=True`` is a mistake, not ``k=1``); numpy integer and floating scalars are.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any, Literal, overload

from .errors import ConfigError

__all__ = ["check_int", "check_real", "check_choice", "check_bool", "check_str", "fail"]


def fail(name: str, value: Any, allowed: str) -> ConfigError:
    """The error for parameter ``name`` holding ``value``; ``allowed`` says what is allowed."""
    return ConfigError(f"{name}={value!r} is invalid: {allowed}")


def _int_range(lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f"an integer from {lo} to {hi}"
    if lo == 1:
        return "a positive integer"
    if lo == 0:
        return "a non-negative integer"
    if lo is not None:
        return f"an integer >= {lo}"
    if hi is not None:
        return f"an integer <= {hi}"
    return "an integer"


@overload
def check_int(
    name: str,
    value: Any,
    lo: int | None = None,
    hi: int | None = None,
    *,
    none: Literal[False] = False,
    allowed: str | None = None,
) -> int: ...


@overload
def check_int(
    name: str,
    value: Any,
    lo: int | None = None,
    hi: int | None = None,
    *,
    none: bool,
    allowed: str | None = None,
) -> int | None: ...


def check_int(
    name: str,
    value: Any,
    lo: int | None = None,
    hi: int | None = None,
    *,
    none: bool = False,
    allowed: str | None = None,
) -> int | None:
    """``value`` as an ``int`` in ``[lo, hi]`` (either bound may be open-ended with ``None``);
    ``none=True`` also lets ``None`` through. ``allowed`` replaces the generated description."""
    if value is None and none:
        return None
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if ok:
        v = int(value)
        ok = (lo is None or v >= lo) and (hi is None or v <= hi)
    if not ok:
        what = allowed or _int_range(lo, hi)
        raise fail(name, value, what + (" or None" if none and allowed is None else ""))
    return v


@overload
def check_real(
    name: str,
    value: Any,
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
    none: Literal[False] = False,
    allowed: str | None = None,
) -> float: ...


@overload
def check_real(
    name: str,
    value: Any,
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
    none: bool,
    allowed: str | None = None,
) -> float | None: ...


def check_real(
    name: str,
    value: Any,
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
    none: bool = False,
    allowed: str | None = None,
) -> float | None:
    """``value`` as a finite ``float`` between ``lo`` and ``hi`` (``lo_open``/``hi_open``
    exclude the bound); integers are accepted, booleans and NaN are not."""
    if value is None and none:
        return None
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if ok:
        v = float(value)
        ok = math.isfinite(v)
        if ok and lo is not None:
            ok = v > lo if lo_open else v >= lo
        if ok and hi is not None:
            ok = v < hi if hi_open else v <= hi
    if not ok:
        if allowed is None:
            if lo is not None and hi is not None:
                allowed = (
                    f"a number in {'(' if lo_open else '['}{_num(lo)}, {_num(hi)}"
                    f"{')' if hi_open else ']'}"
                )
            elif lo is not None:
                allowed = f"a number {'>' if lo_open else '>='} {_num(lo)}"
            elif hi is not None:
                allowed = f"a number {'<' if hi_open else '<='} {_num(hi)}"
            else:
                allowed = "a finite number"
            if none:
                allowed += " or None"
        raise fail(name, value, allowed)
    return v


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def check_choice(
    name: str, value: Any, choices: Iterable[Any], *, none: bool = False, allowed: str | None = None
) -> Any:
    """``value`` if it is one of ``choices`` (compared by type and value, so ``True`` is not
    ``1``); ``none=True`` also lets ``None`` through."""
    choices = tuple(choices)
    if value is None and none:
        return None
    if not any(type(value) is type(c) and value == c for c in choices):
        if allowed is None:
            names = [repr(c) for c in choices]
            allowed = (
                "use " + " or ".join(names) if len(names) == 2 else "one of " + ", ".join(names)
            )
            if none:
                allowed += " or None"
        raise fail(name, value, allowed)
    return value


def check_bool(name: str, value: Any) -> bool:
    """``value`` if it is ``True`` or ``False`` (not 0, 1, "yes", ...)."""
    if not isinstance(value, bool):
        raise fail(name, value, "must be True or False")
    return value


def check_str(
    name: str, value: Any, *, none: bool = False, empty: bool = False, allowed: str | None = None
) -> str | None:
    """``value`` if it is a string (non-empty unless ``empty=True``); ``none=True`` also lets
    ``None`` through."""
    if value is None and none:
        return None
    if not isinstance(value, str) or (not empty and not value):
        what = allowed or ("a string" if empty else "a non-empty string")
        raise fail(name, value, what + (" or None" if none and allowed is None else ""))
    return value
