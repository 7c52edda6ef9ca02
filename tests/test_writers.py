"""Tests of the fast paths of neardup.io.writers against the plain algorithms they replaced.

- the copy of the kept lines of a JSONL input (blocks, newlines found with numpy, one write per
  run of kept lines) against the line-by-line loop it replaced.
"""

from __future__ import annotations

import gzip
import io
import os

import numpy as np
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

import neardup.io.writers as writers
from neardup.errors import ConfigError
from neardup.io import (
    SkipReport,
    read_documents,
    write_deduplicated,
)
from neardup.io.readers import _open_binary

# ---------------------------------------------------------------------------------------------
# Oracles: the algorithms as they were before the fast paths, written plainly


def copy_lines_oracle(data: bytes, wanted: list[int]) -> tuple[bytes, bool]:
    """The kept lines of ``data`` by the old line-by-line loop over the decompressed stream:
    ``(what it wrote, whether every wanted line was found)``."""
    out = io.BytesIO()
    todo = iter(wanted)
    nxt = next(todo, None)
    if nxt is None:
        return b"", True
    for lineno, raw in enumerate(io.BytesIO(data), 1):
        if lineno == nxt:
            out.write(raw)
            nxt = next(todo, None)
            if nxt is None:
                return out.getvalue(), True
    return out.getvalue(), False


def old_copy_jsonl(stream, src, staged, keep, lines):
    """``neardup.io.writers._copy_jsonl`` as it was (the line-by-line loop)."""
    f = staged.file
    base = stream.count
    if base + len(lines) > keep.n:
        raise ConfigError("keep has fewer flags than the inputs hold records")
    wanted = iter(lines[keep.array[base:base + len(lines)]].tolist())
    stream.count += len(lines)
    nxt = next(wanted, None)
    if nxt is None:
        return
    with _open_binary(src.path, src.compression) as (_, data):
        for lineno, raw in enumerate(data, 1):
            if lineno == nxt:
                f.write(raw)
                nxt = next(wanted, None)
                if nxt is None:
                    return
    raise ConfigError(f"{src.name}: has fewer lines than when it was read: it changed meanwhile")


def compress(data: bytes, compression: str | None) -> bytes:
    if compression == "gz":
        return gzip.compress(data)
    if compression == "zst":
        return zstandard.ZstdCompressor().compress(data)
    return data


def decompressed(data: bytes, compression: str | None):
    """A binary stream of ``data`` read through its decompressor, as the writer reads it."""
    raw = io.BytesIO(compress(data, compression))
    if compression == "gz":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if compression == "zst":
        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw))
    return raw


# ---------------------------------------------------------------------------------------------
# Generated JSONL-like bytes


_PIECES = [b'{"text": "a b c"}', b'{"text":"\xc3\xa9t\xc3\xa9"}', b"", b" ", b"\t  ", b"\r",
           b"broken", b'{"id": 7, "text": "x"}', b"\xef\xbb\xbf", b'"\\n"', b"{}", b"x" * 50]


@st.composite
def jsonl_data(draw) -> bytes:
    """Lines of JSON, blank and white-space-only lines, bad lines, CR LF and LF endings, long
    lines (up to 300 bytes, across tiny blocks), with or without a final newline."""
    n = draw(st.integers(0, 25))
    lines = []
    for _ in range(n):
        body = b"".join(draw(st.lists(st.sampled_from(_PIECES), max_size=6)))
        if draw(st.integers(0, 9)) == 0:
            body += b"y" * draw(st.integers(100, 300))
        lines.append(body + draw(st.sampled_from([b"\n", b"\r\n"])))
    if draw(st.booleans()):
        lines.append(b"".join(draw(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=3))))
    return b"".join(lines)


@st.composite
def wanted_lines(draw, n_lines: int) -> list[int]:
    """Line numbers to keep, strictly increasing: all, none, a random subset, and sometimes
    some past the end of the data."""
    how = draw(st.sampled_from(["all", "none", "random", "beyond"]))
    if how == "all":
        return list(range(1, n_lines + 1))
    if how == "none":
        return []
    wanted = sorted(draw(st.sets(st.integers(1, max(n_lines, 1)))))
    if how == "beyond":
        wanted += list(range(n_lines + 1, n_lines + 1 + draw(st.integers(1, 3))))
    return wanted


def n_lines(data: bytes) -> int:
    return data.count(b"\n") + (not data.endswith(b"\n") and len(data) > 0)


# ---------------------------------------------------------------------------------------------
# The line copier


@given(data=st.data(), body=jsonl_data(), block=st.sampled_from([1, 2, 7, 64, 1 << 20]),
       compression=st.sampled_from([None, "gz", "zst"]))
def test_copy_lines_equals_the_line_by_line_loop(data, body, block, compression):
    wanted = data.draw(wanted_lines(n_lines(body)))
    expected, complete = copy_lines_oracle(body, wanted)
    out = io.BytesIO()
    found = writers._copy_lines(decompressed(body, compression), out,
                                np.array(wanted, dtype=np.int64), block)
    assert found == complete
    assert out.getvalue() == expected  # when incomplete, what exists (and is thrown away)


def test_copy_lines_edges():
    data = b"\xef\xbb\xbf{}\r\n\n  \n{\"a\":1}"
    for block in (1, 3, 4, 5, 1 << 20):
        for wanted in ([1], [4], [1, 2, 3, 4], [2, 3], [3, 4], [5], [4, 5]):
            expected, complete = copy_lines_oracle(data, wanted)
            out = io.BytesIO()
            assert writers._copy_lines(io.BytesIO(data), out, np.array(wanted), block) \
                == complete
            if complete:
                assert out.getvalue() == expected
    # a line as long as many blocks, kept and dropped; reading stops after the last wanted
    long = b"z" * 1000 + b"\n"
    data = b"a\n" + long + b"b\n" + long + b"c"
    for wanted in ([2], [1, 3], [2, 3, 4], [5], [1, 2, 3, 4, 5]):
        out = io.BytesIO()
        stream = io.BytesIO(data)
        assert writers._copy_lines(stream, out, np.array(wanted), 7)
        assert out.getvalue() == copy_lines_oracle(data, wanted)[0]
    stream = io.BytesIO(data)
    writers._copy_lines(stream, io.BytesIO(), np.array([1]), 7)
    assert stream.tell() == 7
    # empty data: no line at all
    assert writers._copy_lines(io.BytesIO(b""), io.BytesIO(), np.array([1]), 7) is False
    assert writers._copy_lines(io.BytesIO(b""), io.BytesIO(), np.array([], np.int64), 7)


def _read_with_locations(paths):
    chunks = list(read_documents(paths, on_error="skip", report=SkipReport(), chunk_size=3))
    return np.array([x for ch in chunks for x in ch.locations], dtype=np.int64)


@given(body=jsonl_data(), block=st.sampled_from([1, 7, 64, 1 << 20]),
       compression=st.sampled_from([None, "gz", "zst"]),
       keep_how=st.sampled_from(["all", "none", "random"]), seed=st.integers(0, 2**16))
def test_write_deduplicated_copy_equals_old_copy(tmp_path_factory, body, block, compression,
                                                 keep_how, seed):
    """Through ``write_deduplicated``: records skipped for bad JSON (gaps in the line numbers),
    blank lines, CR LF, a BOM, no final newline; the new copier (tiny blocks) against the old
    loop and against parsing the input again."""
    tmp = tmp_path_factory.mktemp("copy")
    path = tmp / f"in.jsonl{'' if compression is None else '.' + compression}"
    path.write_bytes(compress(body + b'\n{"text":"last"}\n', compression))
    locations = _read_with_locations([path])
    n = len(locations)
    keep = {"all": np.ones(n, bool), "none": np.zeros(n, bool),
            "random": np.random.default_rng(seed).random(n) < 0.5}[keep_how]
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(writers, "_COPY_BLOCK", block)
        new = write_deduplicated([path], keep, tmp / "new", on_error="skip", locations=locations)
        mp.setattr(writers, "_copy_jsonl", old_copy_jsonl)
        old = write_deduplicated([path], keep, tmp / "old", on_error="skip", locations=locations)
    finally:
        mp.undo()
    reparsed = write_deduplicated([path], keep, tmp / "reparsed", on_error="skip")
    assert new[0].read_bytes() == old[0].read_bytes() == reparsed[0].read_bytes()


@pytest.mark.parametrize("compression", [None, "gz", "zst"])
def test_copy_several_sources_and_errors(tmp_path, compression, monkeypatch):
    monkeypatch.setattr(writers, "_COPY_BLOCK", 16)
    ext = "" if compression is None else "." + compression
    a = tmp_path / f"a.jsonl{ext}"
    a_lines = [b'\xef\xbb\xbf{"text":"0"}\r\n', b"\n", b"broken\n", b'{"text":"1"}\r\n',
               b'{"text":"' + b"2" * 100 + b'"}\n', b"   \n", b'{"text":"3"}']
    a.write_bytes(compress(b"".join(a_lines), compression))
    b = tmp_path / "b.csv"
    b.write_bytes(b"text\nfour\n")
    c = tmp_path / "c.jsonl"
    c.write_bytes(b'{"text":"5"}\n{"text":"6"}\n')
    locations = _read_with_locations([a, b, c])
    assert (locations & ((1 << 40) - 1)).tolist() == [1, 4, 5, 7, 2, 1, 2]
    keep = np.array([True, False, True, True, True, False, True])
    out = write_deduplicated([a, b, c], keep, tmp_path / "out", on_error="skip",
                             locations=locations)
    assert out[0].read_bytes() == a_lines[0] + a_lines[4] + a_lines[6]
    assert out[2].read_bytes() == b'{"text":"6"}\n'
    # the input shortened after it was read: an error, and no output
    a.write_bytes(compress(b"".join(a_lines[:5]), compression))
    with pytest.raises(ConfigError, match="fewer lines"):
        write_deduplicated([a, b, c], keep, tmp_path / "out2", on_error="skip",
                           locations=locations)
    assert os.listdir(tmp_path / "out2") == []
    # locations out of reading order
    a.write_bytes(compress(b"".join(a_lines), compression))
    bad = locations.copy()
    bad[[0, 2]] = bad[[2, 0]]
    with pytest.raises(ConfigError, match="reading order"):
        write_deduplicated([a, b, c], keep, tmp_path / "out3", on_error="skip", locations=bad)
