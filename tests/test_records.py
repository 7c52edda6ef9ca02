"""neardup._records.record against dataclasses.dataclass (the oracle): the same class body
made both ways must behave the same."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._records import record

# a field: (default kind, init, repr, compare); default kind: none, value, factory
_field = st.tuples(
    st.sampled_from(["none", "value", "factory"]), st.booleans(), st.booleans(), st.booleans()
)


def _body(specs) -> dict:
    ns: dict = {"__annotations__": {}, "__doc__": "A test record."}
    defaulted = False
    for i, (kind, init, rep, comp) in enumerate(specs):
        name = f"f{i}"
        ns["__annotations__"][name] = "int"
        if init and kind == "none" and defaulted:
            kind = "value"  # a required field cannot follow a defaulted one
        if not init and kind == "none":
            kind = "value"  # dataclasses leaves such fields unset: not worth comparing
        if kind != "none":
            defaulted = defaulted or init
        if kind == "value":
            ns[name] = dataclasses.field(default=i * 10, init=init, repr=rep, compare=comp)
        elif kind == "factory":
            ns[name] = dataclasses.field(
                default_factory=lambda i=i: [i], init=init, repr=rep, compare=comp
            )
        else:
            ns[name] = dataclasses.field(init=init, repr=rep, compare=comp)
    return ns


def _pair(specs, frozen: bool, post: bool = False):
    ns = _body(specs)
    if post:

        def __post_init__(self):
            self.__dict__["seen"] = len(dataclasses.fields(self))

        ns["__post_init__"] = __post_init__
    a = dataclasses.dataclass(frozen=frozen)(type("R", (), dict(ns)))
    b = record(frozen=frozen)(type("R", (), dict(ns)))
    return a, b


def _outcome(f):
    try:
        return ("ok", f())
    except Exception as e:  # noqa: BLE001 - the kind of error is what is compared
        return ("error", type(e))


def _state(obj):
    return sorted((k, repr(v)) for k, v in vars(obj).items())


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_field, max_size=6),
    st.booleans(),
    st.booleans(),
    st.lists(st.integers(-3, 3), max_size=8),
    st.dictionaries(
        st.sampled_from([f"f{i}" for i in range(7)] + ["zz"]), st.integers(), max_size=4
    ),
)
def test_record_behaves_as_dataclass(specs, frozen, post, args, kwargs):
    a, b = _pair(specs, frozen, post)
    # construction: the same values, or an error of the same kind
    ra, rb = _outcome(lambda: a(*args, **kwargs)), _outcome(lambda: b(*args, **kwargs))
    assert ra[0] == rb[0]
    if ra[0] == "error":
        assert ra[1] is rb[1]
        return
    x, y = ra[1], rb[1]
    # the same signature for help() and inspect (annotations aside)
    sa, sb = inspect.signature(a), inspect.signature(b)
    assert [(p.name, p.kind, repr(p.default)) for p in sa.parameters.values()] == [
        (p.name, p.kind, repr(p.default)) for p in sb.parameters.values()
    ]
    assert _state(x) == _state(y)
    assert repr(x) == repr(y)
    assert [f.name for f in dataclasses.fields(x)] == [f.name for f in dataclasses.fields(y)]
    assert dataclasses.asdict(x) == dataclasses.asdict(y)
    assert dataclasses.is_dataclass(y)
    # equality: with a copy, with a changed copy, and never with another class
    x2, y2 = _outcome(lambda: a(*args, **kwargs))[1], _outcome(lambda: b(*args, **kwargs))[1]
    assert (x == x2) == (y == y2) and (y == y2) is True
    assert (x == y) is False and (y == x) is False
    assert y != object() and y.__eq__(object()) is NotImplemented
    for f in dataclasses.fields(a):
        if f.init:
            cx = _outcome(lambda f=f: dataclasses.replace(x, **{f.name: 12345}))
            cy = _outcome(lambda f=f: dataclasses.replace(y, **{f.name: 12345}))
            assert cx[0] == cy[0]
            if cx[0] == "ok":
                assert _state(cx[1]) == _state(cy[1])
                assert (cx[1] == x) == (cy[1] == y)
    # hashing and assignment
    assert _outcome(lambda: hash(x))[0] == _outcome(lambda: hash(y))[0]
    if frozen:
        if all(not isinstance(v, list) for v in vars(x).values()):
            assert hash(x) == hash(y)
        for f in dataclasses.fields(a):
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(y, f.name, 1)
            with pytest.raises(dataclasses.FrozenInstanceError):
                delattr(y, f.name)
        with pytest.raises(dataclasses.FrozenInstanceError):
            y.other = 1
    else:
        assert type(y).__hash__ is None
        for f in dataclasses.fields(a):
            setattr(x, f.name, 7)
            setattr(y, f.name, 7)
        assert _state(x) == _state(y) and (x == x2) == (y == y2)


def test_defaults_factories_and_errors():
    @record
    class C:
        """C."""

        a: int
        b: list = dataclasses.field(default_factory=list)
        c: int = dataclasses.field(default=3, repr=False, compare=False)
        d: int = dataclasses.field(default=4, init=False)

    x = C(1)
    assert (x.a, x.b, x.c, x.d) == (1, [], 3, 4)
    assert C(1).b is not C(1).b  # a new list each time
    assert repr(C(1, [2])) == "test_defaults_factories_and_errors.<locals>.C(a=1, b=[2], d=4)"
    assert C(1, c=9) == C(1, c=8)  # c is not compared
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'a'"):
        C()
    with pytest.raises(TypeError, match="unexpected keyword argument 'd'"):
        C(1, d=5)
    with pytest.raises(TypeError, match="multiple values for argument 'a'"):
        C(1, a=2)
    with pytest.raises(TypeError, match="takes 4 positional arguments but 5 were given"):
        C(1, [], 3, 4)


def test_frozen_record_hashes_copies_and_pickles():
    x = _Frozen(1, "a")
    assert hash(x) == hash(_Frozen(1, "a")) and x == _Frozen(1, "a") and x != _Frozen(2, "a")
    assert {x: 1}[_Frozen(1, "a")] == 1
    assert pickle.loads(pickle.dumps(x)) == x
    assert copy.deepcopy(x) == x and copy.copy(x) == x
    assert dataclasses.replace(x, b="z") == _Frozen(1, "z")
    assert _Frozen.__dataclass_params__.frozen and _Frozen.__dataclass_params__.eq


def test_recursive_repr_and_post_init():
    @record
    class Node:
        """A node."""

        name: str
        children: list = dataclasses.field(default_factory=list)

        def __post_init__(self):
            self.name = self.name.upper()

    n = Node("a")
    n.children.append(n)
    assert repr(n) == "test_recursive_repr_and_post_init.<locals>.Node(name='A', children=[...])"


def test_a_class_with_its_own_methods_is_refused():
    with pytest.raises(TypeError, match="defines __eq__"):

        @record
        class C:
            """C."""

            a: int

            def __eq__(self, other):
                return True


@record(frozen=True)
class _Frozen:
    """For pickling: a class at module level."""

    a: int
    b: str = "x"
