"""Dataclasses that cost nothing to define: :func:`record`.

``dataclasses.dataclass`` writes the source of each class's ``__init__``, ``__repr__`` and
``__eq__`` (frozen: also ``__setattr__``, ``__delattr__`` and ``__hash__``) and compiles it when
the module is imported: 0.6-1.2 ms a class here, 16-26 ms for the 27 classes that ``neardup
dedup`` imports, a tenth of its start-up. :func:`record` lets ``dataclasses`` find and check the
fields (so :func:`dataclasses.fields`, :func:`~dataclasses.asdict`,
:func:`~dataclasses.replace` and :func:`~dataclasses.is_dataclass` work as for any dataclass)
but gives the class generic methods that read its fields when called, instead of compiled ones:
defining a class takes a few microseconds, making an instance 1-3 microseconds more.

The methods behave as those ``dataclasses`` writes (the tests compare them): positional and
keyword arguments, defaults and ``default_factory``, fields with ``init=False``, ``repr=False``
or ``compare=False``, ``__post_init__``, ``frozen`` (assignment raises
:class:`dataclasses.FrozenInstanceError`, instances hash by their compared fields), and equality
with instances of the same class only. Classes of which many instances are made in a loop (one
per record) keep ``dataclasses.dataclass``.
"""

from __future__ import annotations

import dataclasses
from _thread import get_ident
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:  # type checkers see records as the dataclasses they are
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**kwargs: Any) -> Callable[[Any], Any]:
        return lambda f: f


__all__ = ["record"]

T = TypeVar("T", bound=type)

_MISSING = dataclasses.MISSING


class _Factory:
    """The default a signature shows for a field with a ``default_factory``."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


@overload
def record(cls: T, /) -> T: ...


@overload
def record(*, frozen: bool = False) -> Callable[[T], T]: ...


@dataclass_transform()
def record(cls: T | None = None, /, *, frozen: bool = False) -> Any:
    """``@record`` or ``@record(frozen=True)``: the class as a dataclass (module docstring)."""
    if cls is None:
        return lambda c: _make(c, frozen)
    return _make(cls, frozen)


def _make(cls: T, frozen: bool) -> T:
    for name in ("__init__", "__repr__", "__eq__", "__setattr__", "__delattr__", "__hash__"):
        if name in cls.__dict__ and not (name == "__hash__" and cls.__dict__[name] is None):
            raise TypeError(f"{cls.__qualname__} defines {name}: use dataclasses.dataclass")
    if cls.__doc__ is None:
        cls.__doc__ = cls.__name__  # dataclasses would build one from the signature
    dataclasses.dataclass(cls, init=False, repr=False, eq=False)
    # the parameters dataclasses reports are those asked for
    params = cls.__dict__["__dataclass_params__"]
    params.init = params.repr = params.eq = True
    params.frozen = frozen
    fields = dataclasses.fields(cls)
    for base in cls.__mro__[1:]:
        p = base.__dict__.get("__dataclass_params__")
        if p is not None and p.frozen != frozen:
            raise TypeError(
                "cannot inherit frozen dataclass from a non-frozen one"
                if not frozen
                else "cannot inherit non-frozen dataclass from a frozen one"
            )
    cls.__init__ = _init(cls, fields, frozen)  # type: ignore[misc]
    cls.__repr__ = _repr(cls, fields)  # type: ignore[assignment]
    cls.__eq__ = _eq(fields)  # type: ignore[assignment]
    if frozen:
        cls.__setattr__, cls.__delattr__ = _frozen(cls, fields)  # type: ignore[assignment]
        cls.__hash__ = _hash(fields)  # type: ignore[assignment]
    else:
        cls.__hash__ = None  # type: ignore[assignment]  # as dataclasses: eq without frozen
    return cls


def _init(cls: type, fields: tuple[dataclasses.Field, ...], frozen: bool) -> Callable:
    params = [f for f in fields if f.init]
    names = tuple(f.name for f in params)
    index = {n: i for i, n in enumerate(names)}
    # per parameter: (True, factory) or (False, default); _MISSING: required
    fills: tuple[tuple[bool, Any], ...] = tuple(
        (True, f.default_factory) if f.default_factory is not _MISSING else (False, f.default)
        for f in params
    )
    for i in range(1, len(params)):
        if fills[i - 1][1] is not _MISSING and fills[i][1] is _MISSING:
            raise TypeError(f"non-default argument {names[i]!r} follows default argument")
    # fields left out of __init__ with a default_factory: made by __init__ (those with a
    # default are the class's attribute, which instances read as dataclasses leaves them)
    extra = tuple(
        (f.name, f.default_factory)
        for f in fields
        if not f.init and f.default_factory is not _MISSING
    )
    order = tuple(f.name for f in fields if f.init or f.default_factory is not _MISSING)
    post = getattr(cls, "__post_init__", None) is not None
    qual = cls.__qualname__
    count = len(names)
    setter = object.__setattr__ if frozen else setattr

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > count:
            raise TypeError(
                f"{qual}.__init__() takes {count + 1} positional arguments but "
                f"{len(args) + 1} were given"
            )
        values = list(args)
        values.extend([_MISSING] * (count - len(args)))
        for k, v in kwargs.items():
            i = index.get(k)
            if i is None:
                raise TypeError(f"{qual}.__init__() got an unexpected keyword argument {k!r}")
            if i < len(args):
                raise TypeError(f"{qual}.__init__() got multiple values for argument {k!r}")
            values[i] = v
        missing = []
        for i in range(len(args), count):
            if values[i] is _MISSING:
                factory, v = fills[i]
                if v is _MISSING:
                    missing.append(names[i])
                else:
                    values[i] = v() if factory else v
        if missing:
            listed = (
                " and ".join(repr(m) for m in missing)
                if len(missing) < 3
                else (", ".join(repr(m) for m in missing[:-1]) + f", and {missing[-1]!r}")
            )
            raise TypeError(
                f"{qual}.__init__() missing {len(missing)} required positional "
                f"argument{'s' if len(missing) > 1 else ''}: {listed}"
            )
        got = dict(zip(names, values))
        for name, make in extra:
            got[name] = make()
        for name in order:
            setter(self, name, got[name])
        if post:
            self.__post_init__()

    __init__.__qualname__ = f"{qual}.__init__"
    # what inspect.signature() and help() show: the parameters, as for a dataclass
    import inspect  # imported by dataclasses already

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    __init__.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", kind)]
        + [
            inspect.Parameter(
                f.name,
                kind,
                annotation=f.type,
                default=(
                    _FACTORY
                    if f.default_factory is not _MISSING
                    else inspect.Parameter.empty
                    if f.default is _MISSING
                    else f.default
                ),
            )
            for f in params
        ],
        return_annotation=None,
    )
    return __init__


def _repr(cls: type, fields: tuple[dataclasses.Field, ...]) -> Callable:
    shown = tuple(f.name for f in fields if f.repr)
    active: set[tuple[int, int]] = set()  # (id, thread) of the instances being shown

    def __repr__(self: Any) -> str:
        key = (id(self), get_ident())
        if key in active:
            return "..."
        active.add(key)
        try:
            inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in shown)
        finally:
            active.discard(key)
        return f"{type(self).__qualname__}({inner})"

    __repr__.__qualname__ = f"{cls.__qualname__}.__repr__"
    return __repr__


def _eq(fields: tuple[dataclasses.Field, ...]) -> Callable:
    compared = tuple(f.name for f in fields if f.compare)

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        if self is other:
            return True
        return tuple(getattr(self, n) for n in compared) == tuple(
            getattr(other, n) for n in compared
        )

    return __eq__


def _hash(fields: tuple[dataclasses.Field, ...]) -> Callable:
    hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))

    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, n) for n in hashed))

    return __hash__


def _frozen(cls: type[Any], fields: tuple[dataclasses.Field, ...]) -> tuple[Callable, Callable]:
    """``__setattr__`` and ``__delattr__`` of a frozen class."""
    names = frozenset(f.name for f in fields)

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __setattr__, __delattr__
