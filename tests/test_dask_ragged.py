"""Strings as UTF-8 bytes and offsets (the Dask engine's ids in its scratch folder), checked
against plain Python lists."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("distributed")

from neardup.engines.dask.scratch import (  # noqa: E402
    arrow_strs,
    concat_ragged,
    decode_strs,
    encode_strs,
    number_strs,
    ragged_hash,
    take_ragged,
)

strs = st.lists(st.text(max_size=12), max_size=30)


@settings(max_examples=150, deadline=None)
@given(strs, st.data())
def test_take_and_concat_are_list_operations(xs, data):
    v, off = encode_strs(xs)
    idx = data.draw(st.lists(st.integers(0, max(len(xs) - 1, 0)), max_size=40)) if xs else []
    assert decode_strs(*take_ragged(v, off, np.asarray(idx, np.int64))) == [xs[i] for i in idx]
    ys = data.draw(strs)
    assert decode_strs(*concat_ragged([(v, off), encode_strs(ys), (v, off)])) == xs + ys + xs
    assert arrow_strs(v, off).to_pylist() == xs


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 2**62), max_size=30))
def test_number_strs_write_decimal(xs):
    assert decode_strs(*number_strs(np.asarray(xs, np.int64))) == [str(x) for x in xs]


@settings(max_examples=150, deadline=None)
@given(strs)
def test_equal_strings_hash_equal_and_distinct_ones_rarely_collide(xs):
    h = ragged_hash(*encode_strs(xs + xs[::-1]))
    n = len(xs)
    assert h[:n].tolist() == h[n:][::-1].tolist()
    by = {}
    for x, k in zip(xs, h[:n].tolist(), strict=True):
        by.setdefault(k, set()).add(x)
    assert all(len(v) == 1 for v in by.values())  # no collision among a few strings
    # a hash of the bytes: the empty string and prefixes differ
    a, b, c = ragged_hash(*encode_strs(["", "a", "a\x00"])).tolist()
    assert len({a, b, c}) == 3
