"""The compiled JSONL scanner against ``orjson`` as its oracle, line by line: a line the scanner
reads gives exactly the text and id that ``orjson.loads`` gives (so the line reader's answer),
a line ``orjson`` refuses or reads as anything but a record is never read, and the ordinary
records (any strings, escapes, nesting, numbers, white space) are read, not left to the slow
path. Lines come from a generator of JSON values and from byte-level damage done to them."""

from __future__ import annotations

import json
import re

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from neardup._kernels.jsonl import decode_ids, scan_lines

NO_ID = object()


def oracle(line: bytes, keys: tuple[str, ...], id_key: str | None):
    """What the line reader makes of a line: ``(text, id)``, or None when it is not a record
    (malformed JSON, not an object, a text field missing or not a string, an id missing or
    neither a string nor an integer)."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict:
        return None
    parts = [obj.get(k) for k in keys]
    if any(type(p) is not str for p in parts):
        return None
    rid = NO_ID
    if id_key is not None:
        v = obj.get(id_key, NO_ID)
        if type(v) is str:
            rid = v
        elif type(v) is int:
            rid = str(v)
        else:
            return None
    return "\n".join(parts), rid


def scan(lines: list[bytes], keys: tuple[str, ...], id_key: str | None):
    """Every line through the scanner, restarting after each line it leaves: per line,
    ``(text, id)`` or None (left to the line reader)."""
    block = b"".join(lines)
    lens = np.array([len(x) for x in lines], np.int64)
    ends = np.cumsum(lens)
    starts = ends - lens
    n = len(lines)
    out = np.empty(len(block), np.uint8)
    offsets = np.zeros(n + 1, np.int64)
    id_out = np.empty(len(block), np.uint8)
    id_offsets = np.zeros(n + 1, np.int64)
    scratch = np.empty(max(lens, default=0), np.uint8)
    data = np.frombuffer(block, np.uint8)
    kb = tuple(k.encode() for k in keys)
    ib = None if id_key is None else id_key.encode()
    got: list = []
    pos = 0
    while pos < n:
        stop = scan_lines(
            data, starts, ends, pos, kb, ib, out, offsets, id_out, id_offsets, scratch
        )
        ids = decode_ids(id_out, id_offsets[pos : stop + 1], stop - pos) if ib else None
        for i in range(pos, stop):
            text = out[offsets[i] : offsets[i + 1]].tobytes().decode("utf-8")
            got.append((text, ids[i - pos] if ids is not None else NO_ID))
        if stop < n:
            got.append(None)
            offsets[stop + 1] = offsets[stop]
            id_offsets[stop + 1] = id_offsets[stop]
        pos = stop + 1
    return got


def check(lines: list[bytes], keys=("text",), id_key="id", must_read=False):
    got = scan(lines, keys, id_key)
    assert len(got) == len(lines)
    for line, g in zip(lines, got):
        want = oracle(line, keys, id_key)
        if g is not None:
            assert want == g, line  # read: exactly as orjson reads it
        elif must_read:
            assert want is None, f"an ordinary record left to the line reader: {line!r}"


# -- generated lines ---------------------------------------------------------------------------

strings = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    strings,
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(strings, inner, max_size=4)
    ),
    max_leaves=12,
)


def dumps(obj, draw) -> tuple[bytes, str]:
    """``obj`` as one line of JSON, in one of the ways writers write it, and which."""
    how = draw(st.sampled_from(["orjson", "ascii", "utf8", "spaced"]))
    if how == "orjson":
        try:
            return orjson.dumps(obj), how
        except TypeError:  # an integer past 64 bits: orjson does not write those
            how = "utf8"
    if how == "ascii":
        return json.dumps(obj).encode(), how
    if how == "utf8":
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode(), how
    return json.dumps(obj, ensure_ascii=False, separators=(" , ", " :\t")).encode(), how


def escaped_key(key: str, how: str) -> bool:
    """Whether a writer of kind ``how`` writes ``key`` with an escape."""
    if any(c in '"\\' or ord(c) < 0x20 for c in key):
        return True
    return how == "ascii" and any(not " " <= c <= "~" for c in key)


@st.composite
def record_line(draw) -> tuple[bytes, bool]:
    """An ordinary record (with other fields around the text and id, in any order) and whether
    the scanner must read it: all but a top-level key written with an escape (it could name
    the text field) and a number of three exponent digits (1e-300), left to the line reader."""
    fields = draw(
        st.dictionaries(
            strings.filter(lambda k: k not in ("text", "id", "title")), values, max_size=4
        )
    )
    fields["text"] = draw(strings)
    if draw(st.booleans()):
        fields["title"] = draw(strings)
    fields["id"] = draw(st.one_of(strings, st.integers(-(10**17), 10**17)))
    order = draw(st.permutations(list(fields)))
    line, how = dumps({k: fields[k] for k in order}, draw)
    line = (
        draw(st.sampled_from([b"", b" ", b"\t"]))
        + line
        + draw(st.sampled_from([b"\n", b"\r\n", b" \n", b""]))
    )
    plain = (
        not any(escaped_key(k, how) for k in fields)
        and re.search(rb"[eE][+-]?[0-9]{3}", line) is None
    )
    return line, plain


def damage(line: bytes, draw) -> bytes:
    kind = draw(st.sampled_from(["cut", "flip", "insert", "delete", "swap"]))
    if not line:
        return line
    i = draw(st.integers(0, len(line) - 1))
    if kind == "cut":
        return line[:i]
    if kind == "flip":
        return line[:i] + bytes([draw(st.integers(0, 255))]) + line[i + 1 :]
    if kind == "insert":
        junk = draw(
            st.sampled_from(
                [
                    b'"',
                    b"\\",
                    b",",
                    b"}",
                    b"]",
                    b"{",
                    b"\x00",
                    b"\x1f",
                    b"\xff",
                    b"\xc3",
                    b"\xed\xa0\x80",
                    b"\\u",
                    b"\\ud800",
                    b"-",
                    b"0",
                    b".",
                    b"e",
                    b"nul",
                    b" ",
                ]
            )
        )
        return line[:i] + junk + line[i:]
    if kind == "delete":
        return line[:i] + line[i + 1 :]
    j = draw(st.integers(0, len(line) - 1))
    b = bytearray(line)
    b[i], b[j] = b[j], b[i]
    return bytes(b)


@st.composite
def lines(draw) -> tuple[list[bytes], list[bool]]:
    out, plain = [], []
    for _ in range(draw(st.integers(1, 12))):
        line, ok = draw(record_line())
        if draw(st.integers(0, 3)) == 0:
            line, ok = damage(line, draw), False
        out.append(line)
        plain.append(ok)
    return out, plain


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines())
def test_scanner_reads_lines_as_orjson_does(case):
    data, plain = case
    got = scan(data, ("text",), "id")
    for line, g, ok in zip(data, got, plain):
        want = oracle(line, ("text",), "id")
        if g is not None:
            assert g == want, line
        elif ok:
            assert want is None, f"an ordinary record left to the line reader: {line!r}"


@settings(max_examples=150, deadline=None)
@given(lines())
def test_scanner_joins_text_fields_in_their_order(case):
    data, _ = case
    check(data, keys=("title", "text"), id_key=None)
    check(data, keys=("text",), id_key=None)


# -- hand-checked lines: each thing the scanner leaves to the line reader, and why ---------


@pytest.mark.parametrize(
    "line",
    [
        b'{"text": "a", "text": "b"}',  # a repeated field: orjson keeps the last
        b'{"text": "a", "id": 1, "id": 2}',
        b'{"te\\u0078t": "a"}',  # a key with an escape may name the field
        b'{"text": "x\\ud800"}',  # lone surrogates
        b'{"text": "\\udc00"}',
        b'{"text": "\xed\xa0\x80"}',  # a surrogate written in UTF-8
        b'{"text": "\xc0\xaf"}',  # an overlong form
        b'{"text": "\xf4\x90\x80\x80"}',  # past U+10FFFF
        b'{"text": "a\tb"}',  # raw control characters
        b'{"text": "a\x1fb"}',
        b'{"text": "x\\ud800\\ud800"}',  # a high surrogate after a high one
        b'{"text": "a", "n": 1' + b"0" * 400 + b"}",  # infinity for orjson
        b'{"text": "a", "n": 01}',  # a leading zero
        b'{"text": "a", "n": 1.}',
        b'{"text": "a", "n": 1e400}',  # infinity for orjson
        b'{"text": "a", "n": NaN}',
        b'{"text": "a",}',  # trailing commas
        b'{"text": "a", "v": [1,]}',
        b'{"text": "a"} {"text": "b"}',  # two objects
        b'{"text": "a"}\x0c',  # a form feed is not JSON white space
        b'{"text": null}',
        b'{"text": 3}',
        b"{}",
        b"[]",
        b'"text"',
        b'{"text": "a", "id": 2.0}',  # ids: floats, booleans, null, objects
        b'{"text": "a", "id": true}',
        b'{"text": "a", "id": null}',
        b'{"text": "a", "id": {}}',
        b'{"text": "a", "id": -0}',  # the line reader's id is "0"
        b'{"text": "a", "id": 12345678901234567890}',  # past 18 digits: orjson's own types
        b'{"text": "a", "id": "x"' + b"]" * 1,
        b'{"text": "a", "deep": ' + b"[" * 70 + b"]" * 70 + b', "id": 1}',  # deeper than 64
    ],
)
def test_scanner_leaves_what_it_cannot_read_exactly(line):
    id_key = "id" if b'"id"' in line else None  # else a missing id would be the reason
    assert scan([line], ("text",), id_key) == [None]
    fixed = line.replace(b"\x1f", b" ").replace(b"\t", b" ")
    if fixed != line:  # the same line without its control character is read
        assert scan([fixed], ("text",), id_key) != [None]


@pytest.mark.parametrize(
    "line, text, rid",
    [
        (
            b'{"id": 7, "text": "caf\\u00e9 \\ud83d\\ude00 \\"q\\" \\/ \\b\\f\\n\\r\\t"}\n',
            'café 😀 "q" / \b\f\n\r\t',
            "7",
        ),
        (
            b' { "text" : "x" , "meta" : { "a" : [ 1 , -2.5e-3 , true , false , null ] } , '
            b'"id" : "k\\u0000" } \r\n',
            "x",
            "k\x00",
        ),
        (b'{"text":"","id":-123456789012345678}', "", "-123456789012345678"),
        ('{"text": "ǅ ＡＢＣ مرحبا 🦄", "id": "é"}'.encode(), "ǅ ＡＢＣ مرحبا 🦄", "é"),
        (b'{"text": "a", "deep": ' + b"[" * 60 + b"]" * 60 + b', "id": 0}', "a", "0"),
    ],
)
def test_scanner_reads_records(line, text, rid):
    assert scan([line], ("text",), "id") == [(text, rid)]
    assert oracle(line, ("text",), "id") == (text, rid)


def test_scanner_rejects_buffers_that_do_not_fit():
    block = np.frombuffer(b'{"text": "abc"}\n', np.uint8)
    starts, ends = np.array([0], np.int64), np.array([16], np.int64)
    small = np.empty(4, np.uint8)
    offs = np.zeros(2, np.int64)
    with pytest.raises(ValueError, match="cannot hold"):
        scan_lines(block, starts, ends, 0, (b"text",), None, small, offs, small, offs, small)
    with pytest.raises(ValueError, match="outside the block"):
        scan_lines(
            block,
            starts,
            np.array([17], np.int64),
            0,
            (b"text",),
            None,
            np.empty(32, np.uint8),
            offs,
            small,
            offs.copy(),
            small,
        )


@example(["x" * 9, "y" * 17])
@given(st.lists(strings, max_size=6))
def test_scanner_copies_long_runs_whole(parts):
    """Strings longer than the eight-byte steps, with escapes and non-ASCII at every offset."""
    lines = [orjson.dumps({"text": p, "id": i}) + b"\n" for i, p in enumerate(parts)]
    lines += [json.dumps({"text": p, "id": str(i)}).encode() + b"\n" for i, p in enumerate(parts)]
    assert scan(lines, ("text",), "id") == [oracle(x, ("text",), "id") for x in lines]


# strings of a few hundred bytes: copied 64 bytes at a time until a byte that needs work (a
# quote, a backslash, a control byte, a multi-byte character), which lands at every offset of
# a step; and the same lines damaged (a byte flipped, cut, inserted...)
long_strings = st.builds(
    "".join,
    st.lists(
        st.one_of(
            st.text("abc XYZ09.", min_size=1, max_size=70),
            st.sampled_from(['"', "\\", "\n", "\x01", "é", "✓", "\U0001f600", "/", "\t", "\x7f"]),
        ),
        min_size=1,
        max_size=30,
    ),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(long_strings, min_size=1, max_size=4), st.data())
def test_scanner_reads_long_strings_as_orjson_does(parts, data):
    lines = [orjson.dumps({"id": i, "text": p}) + b"\n" for i, p in enumerate(parts)]
    lines += [json.dumps({"text": p, "id": str(i)}).encode() + b"\n" for i, p in enumerate(parts)]
    lines += [
        json.dumps({"text": p, "id": i}, ensure_ascii=False).encode() + b"\n"
        for i, p in enumerate(parts)
    ]
    lines += [damage(x, data.draw) for x in lines]
    got = scan(lines, ("text",), "id")
    for line, g in zip(lines, got):
        want = oracle(line, ("text",), "id")
        if g is not None:
            assert g == want, line
    # the undamaged lines are ordinary records: the scanner reads every one of them
    assert all(g is not None for g in got[: 3 * len(parts)])
