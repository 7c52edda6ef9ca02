"""Tests of the fast paths of neardup.io.writers against the plain algorithms they replaced.

- the copy of the kept lines of a JSONL input (blocks, newlines found with numpy, one write per
  run of kept lines) against the line-by-line loop it replaced;
- the Arrow arrays of the result tables (built from buffers, without ``pyarrow.array``) against
  ``pyarrow.array``: the Parquet and CSV files must be the same bytes; a table written in
  parts, the same as written whole; JSONL tables put together column by column against one
  ``orjson.dumps`` of a dict a row;
- ``neardup dedup`` end to end with the old writers and the new ones: the same files.
"""

from __future__ import annotations

import errno
import gzip
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import neardup.io.readers.stream as readers_stream
import neardup.io.writers as writers
import neardup.io.writers.arrow as w_arrow
import neardup.io.writers.copying as w_copying
import neardup.io.writers.corpus as w_corpus
import neardup.io.writers.jsonl as w_jsonl
import neardup.io.writers.parquet as w_parquet
import neardup.io.writers.tables as w_tables
from neardup.cli import main
from neardup.errors import ConfigError
from neardup.io import (
    FilePart,
    ReadOptions,
    SkipReport,
    TableStream,
    concat_files,
    read_documents,
    record_stream,
    write_deduplicated,
    write_deduplicated_part,
    write_table,
)
from neardup.io.readers.base import _open_binary

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


def arrow_array_oracle(col):
    """``neardup.io.writers.arrow._arrow_array`` as it was: everything through ``pyarrow.array``."""
    if isinstance(col, np.ndarray):
        if col.dtype == object or col.dtype.kind in "US":
            return pa.array(col, type=pa.string() if len(col) == 0 else None)
        return pa.array(col)
    col = list(col)
    return pa.array(col, type=pa.string() if len(col) == 0 else None)


def old_copy_jsonl(stream, src, staged, keep, lines, spans=None):
    """``neardup.io.writers.copying._copy_jsonl`` as it was (the line-by-line loop)."""
    f = staged.file
    base = stream.count
    if base + len(lines) > keep.n:
        raise ConfigError("keep has fewer flags than the inputs hold records")
    keep.ready()  # flags decided while the corpus is written: all of them
    wanted = iter(lines[keep.array[base : base + len(lines)]].tolist())
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


_PIECES = [
    b'{"text": "a b c"}',
    b'{"text":"\xc3\xa9t\xc3\xa9"}',
    b"",
    b" ",
    b"\t  ",
    b"\r",
    b"broken",
    b'{"id": 7, "text": "x"}',
    b"\xef\xbb\xbf",
    b'"\\n"',
    b"{}",
    b"x" * 50,
]


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


@given(
    data=st.data(),
    body=jsonl_data(),
    block=st.sampled_from([1, 2, 7, 64, 1 << 20]),
    long_line=st.sampled_from([0, 4, 1024, 10**9]),
    compression=st.sampled_from([None, "gz", "zst"]),
)
def test_copy_lines_equals_the_line_by_line_loop(data, body, block, long_line, compression):
    """Blocks of 1 byte to 1 MiB; newlines found with numpy, one by one (``long_line=0``), or
    either as the lines come."""
    wanted = data.draw(wanted_lines(n_lines(body)))
    expected, complete = copy_lines_oracle(body, wanted)
    out = io.BytesIO()
    found = w_copying._copy_lines(
        decompressed(body, compression), out, np.array(wanted, dtype=np.int64), block, long_line
    )
    assert found == complete
    assert out.getvalue() == expected  # when incomplete, what exists (and is thrown away)


def test_copy_lines_edges():
    data = b'\xef\xbb\xbf{}\r\n\n  \n{"a":1}'
    for block in (1, 3, 4, 5, 1 << 20):
        for wanted in ([1], [4], [1, 2, 3, 4], [2, 3], [3, 4], [5], [4, 5]):
            expected, complete = copy_lines_oracle(data, wanted)
            for long_line in (0, 1024):
                out = io.BytesIO()
                assert (
                    w_copying._copy_lines(io.BytesIO(data), out, np.array(wanted), block, long_line)
                    == complete
                )
                assert out.getvalue() == expected
    # a line as long as many blocks, kept and dropped; reading stops after the last wanted
    long = b"z" * 1000 + b"\n"
    data = b"a\n" + long + b"b\n" + long + b"c"
    for wanted in ([2], [1, 3], [2, 3, 4], [5], [1, 2, 3, 4, 5]):
        for block, long_line in ((7, 1024), (7, 0), (64, 16), (1 << 20, 0)):
            out = io.BytesIO()
            assert w_copying._copy_lines(io.BytesIO(data), out, np.array(wanted), block, long_line)
            assert out.getvalue() == copy_lines_oracle(data, wanted)[0]
    stream = io.BytesIO(data)
    w_copying._copy_lines(stream, io.BytesIO(), np.array([1]), 7)
    assert stream.tell() == 7
    # empty data: no line at all
    assert w_copying._copy_lines(io.BytesIO(b""), io.BytesIO(), np.array([1]), 7) is False
    assert w_copying._copy_lines(io.BytesIO(b""), io.BytesIO(), np.array([], np.int64), 7)


def test_writeback_writes_through_and_starts_writing_to_disk(tmp_path, monkeypatch):
    chunks = [bytes([i]) * (i * 7) for i in range(40)]
    path = tmp_path / "out"
    with open(path, "wb", buffering=64) as f:
        wb = w_copying._Writeback(f, every=100)
        if sys.platform.startswith("linux"):
            assert wb.start is not None
        for c in chunks:
            assert wb.write(memoryview(c)) == len(c)
        if sys.platform.startswith("linux"):
            assert wb.start is not None  # every call succeeded
    assert path.read_bytes() == b"".join(chunks)
    calls = []

    def fake(fd, offset, nbytes, flags):
        calls.append((offset, nbytes, flags))
        return -1 if len(calls) == 2 else 0

    monkeypatch.setattr(w_copying, "_sync_file_range_fn", fake)
    with open(path, "wb") as f:
        wb = w_copying._Writeback(f, every=10)
        for c in chunks:
            wb.write(c)
    assert calls == [(0, 0, 2), (0, 0, 2)]  # a failed call: no more
    assert path.read_bytes() == b"".join(chunks)
    buf = io.BytesIO()  # no file descriptor: a plain write
    wb = w_copying._Writeback(buf, every=1)
    wb.write(b"abc")
    assert wb.start is None and buf.getvalue() == b"abc"


def _read_with_locations(paths):
    chunks = list(read_documents(paths, on_error="skip", report=SkipReport(), chunk_size=3))
    return np.array([x for ch in chunks for x in ch.locations], dtype=np.int64)


def _read_with_spans(paths):
    """Locations and byte spans as the pipeline reads them (Arrow batches, line by line where a
    block does not parse)."""
    chunks = list(
        read_documents(paths, on_error="skip", report=SkipReport(), chunk_size=3, arrow=True)
    )
    return (
        np.concatenate([ch.locations for ch in chunks]),
        np.concatenate([ch.spans for ch in chunks]),
    )


@given(
    body=jsonl_data(),
    cuts=st.lists(st.integers(0, 1000), max_size=4),
    seed=st.integers(0, 2**16),
    with_lines=st.booleans(),
)
def test_parts_of_a_jsonl_file_concatenate_to_its_output(
    tmp_path_factory, body, cuts, seed, with_lines
):
    """The kept lines of line-aligned byte ranges of a file (as the Dask engine writes them,
    copied by line number or read again), joined by concat_files: the bytes that
    write_deduplicated writes for the whole file (bad lines skipped, blank lines, CR LF, a BOM,
    no final newline)."""
    tmp = tmp_path_factory.mktemp("parts")
    path = tmp / "in.jsonl"
    path.write_bytes(body + b'\n{"text":"last"}')
    data = path.read_bytes()
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 10]
    bounds = sorted({starts[c % len(starts)] for c in cuts} | {0, len(data)})
    opts = ReadOptions(on_error="skip")
    n = sum(1 for _ in record_stream([path], opts))
    keep = np.random.default_rng(seed).random(n) < 0.5
    whole = write_deduplicated([path], keep, tmp / "whole", on_error="skip")[0]
    parts, done = [], 0
    for j, (a, b) in enumerate(zip(bounds, bounds[1:])):
        part = FilePart(a, b, data[:a].count(b"\n"))
        lines = [r.line for r in record_stream([path], opts, part=part)]
        flags = keep[done : done + len(lines)]
        done += len(lines)
        parts.append(
            write_deduplicated_part(
                path,
                flags,
                tmp / f"part-{j}.jsonl",
                options=opts,
                part=part,
                lines=lines if with_lines else None,
            )
        )
    assert done == n
    joined = concat_files(parts, tmp / "joined.jsonl", "jsonl")
    assert joined.read_bytes() == whole.read_bytes()


def test_parts_of_a_parquet_file_and_one_csv_part(tmp_path):
    """Runs of row groups of a Parquet file written as parts (all columns, the schema and its
    metadata) and joined: the table write_deduplicated writes; a CSV file as one part: the same
    bytes; an input with nothing readable: no part."""
    path = tmp_path / "in.parquet"
    table = pa.table(
        {
            "id": [f"r{i}" for i in range(50)],
            "text": [f"t {i}" for i in range(50)],
            "x": [i * 0.5 for i in range(50)],
        }
    ).replace_schema_metadata({"k": "v"})
    pq.write_table(table, path, row_group_size=7)
    keep = np.arange(50) % 3 != 1
    whole = write_deduplicated([path], keep, tmp_path / "whole")[0]
    opts = ReadOptions()
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 8
    parts, done = [], 0
    for j, (a, b) in enumerate([(0, 2), (2, 3), (3, None)]):
        rows = sum(meta.row_group(g).num_rows for g in range(a, 8 if b is None else b))
        part = FilePart(a, b, row_groups=True)
        flags = keep[done : done + rows]
        done += rows
        parts.append(
            write_deduplicated_part(
                path, flags, tmp_path / f"p{j}.parquet", options=opts, part=part
            )
        )
    joined = concat_files(parts, tmp_path / "joined.parquet", "parquet")
    assert pq.read_table(joined).equals(pq.read_table(whole), check_metadata=True)
    assert pq.read_table(joined).column("x").to_pylist() == [i * 0.5 for i in range(50) if keep[i]]

    csv_path = tmp_path / "in.csv"
    csv_path.write_bytes(b'id,text,n\r\n1,"a, b",3\r\n2,c,4\r\n3,"d ""e""",5\r\n')
    keep = np.array([True, False, True])
    whole = write_deduplicated([csv_path], keep, tmp_path / "whole", id_field="id")[0]
    part = write_deduplicated_part(
        csv_path, keep, tmp_path / "p.csv", options=ReadOptions(id_field="id")
    )
    assert (
        part.read_bytes() == whole.read_bytes() == b'id,text,n\r\n1,"a, b",3\r\n3,"d ""e""",5\r\n'
    )
    with pytest.raises(ConfigError, match="keep has 2 flags but"):
        write_deduplicated_part(
            csv_path, keep[:2], tmp_path / "p2.csv", options=ReadOptions(id_field="id")
        )
    assert not (tmp_path / "p2.csv").exists()
    with pytest.raises(ConfigError, match="header each"):
        concat_files([part, part], tmp_path / "two.csv", "csv")

    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet")
    assert (
        write_deduplicated_part(
            broken, np.zeros(0, bool), tmp_path / "b.parquet", options=ReadOptions(on_error="skip")
        )
        is None
    )
    assert not (tmp_path / "b.parquet").exists()


@given(
    body=jsonl_data(),
    block=st.sampled_from([1, 48, 1 << 20]),
    keep_how=st.sampled_from(["all", "none", "random"]),
    seed=st.integers(0, 2**16),
    system_copy=st.booleans(),
)
def test_write_deduplicated_by_spans_equals_old_copy(
    tmp_path_factory, body, block, keep_how, seed, system_copy
):
    """The kept lines copied by byte ranges (the system's copy, or pread and write) against the
    old loop: blocks parsed by Arrow and blocks read line by line (bad JSON), blank lines,
    CR LF, a BOM, no final newline."""
    tmp = tmp_path_factory.mktemp("spans")
    path = tmp / "in.jsonl"
    path.write_bytes(body + b'\n{"text":"last"}\n')
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(readers_stream, "JSONL_BLOCK_BYTES", block)
        locations, spans = _read_with_spans([path])
        if not system_copy:
            mp.delattr(os, "copy_file_range", raising=False)
        assert (spans[:, 0] >= 0).all()  # an uncompressed file: every span is known
        n = len(locations)
        keep = {
            "all": np.ones(n, bool),
            "none": np.zeros(n, bool),
            "random": np.random.default_rng(seed).random(n) < 0.5,
        }[keep_how]
        calls = []
        copy_ranges = w_copying._copy_ranges
        mp.setattr(w_copying, "_copy_ranges", lambda *a: calls.append(1) or copy_ranges(*a))
        new = write_deduplicated(
            [path], keep, tmp / "new", on_error="skip", locations=locations, spans=spans
        )
        assert calls == ([1] if keep.any() else [])
        mp.setattr(w_corpus, "_copy_jsonl", old_copy_jsonl)
        old = write_deduplicated([path], keep, tmp / "old", on_error="skip", locations=locations)
    finally:
        mp.undo()
    assert new[0].read_bytes() == old[0].read_bytes()


@given(
    data=st.binary(min_size=1, max_size=400),
    cuts=st.lists(st.integers(0, 400), max_size=30),
    threads=st.integers(1, 4),
    prefix=st.binary(max_size=20),
    system_copy=st.booleans(),
)
# a share's cut rounded down to a block boundary before the output's start (after a prefix)
@example(data=bytes(17), cuts=[1, 2], threads=2, prefix=b"\x00", system_copy=False)
def test_copy_ranges_in_parallel_equals_slices(
    tmp_path_factory, data, cuts, threads, prefix, system_copy
):
    """Ranges copied by several threads at their precomputed places land exactly where one
    sequential copy puts them, after what the output already held."""
    tmp = tmp_path_factory.mktemp("ranges")
    src = tmp / "src"
    src.write_bytes(data)
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    pairs = [(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=False)]
    chosen = [p for i, p in enumerate(pairs) if (i * 7 + len(data)) % 3 != 0] or pairs
    starts = np.array([a for a, _ in chosen], np.int64)
    ends = np.array([b for _, b in chosen], np.int64)
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(w_copying, "_PARALLEL_COPY", 1)  # split even a few bytes into shares
        if not system_copy:
            mp.delattr(os, "copy_file_range", raising=False)
        with open(tmp / "out", "wb") as f:
            f.write(prefix)
            assert w_copying._copy_ranges(src, f, starts, ends, threads=threads)
            f.write(b"!")  # the file object writes on after the copied bytes
    finally:
        mp.undo()
    expected = prefix + b"".join(data[a:b] for a, b in chosen) + b"!"
    assert (tmp / "out").read_bytes() == expected


@settings(max_examples=40, deadline=None)
@given(
    data=st.binary(min_size=1, max_size=3000),
    lines=st.integers(1, 200),
    cuts=st.lists(st.integers(0, 60_000), max_size=60),
    threads=st.integers(1, 3),
    prefix=st.sampled_from([b"", b"[header]"]),
)
def test_copy_past_the_page_cache_equals_slices(
    tmp_path_factory, data, lines, cuts, threads, prefix
):
    """The copy through aligned blocks (``O_DIRECT`` where the file system takes it) gives
    the same bytes as slicing, over many blocks and shares, each share's runs cut at its
    block-aligned bounds; after a prefix that leaves the output unaligned the blocks go
    through the page cache."""
    from neardup._kernels import copyout

    tmp = tmp_path_factory.mktemp("direct")
    src = tmp / "src"
    body = (data * (60_000 // len(data) + 1))[:60_000]
    src.write_bytes(body)
    bounds = sorted({0, len(body)} | set(cuts) | set(range(0, len(body), len(body) // lines)))
    pairs = list(zip(bounds[:-1], bounds[1:], strict=False))
    chosen = [p for i, p in enumerate(pairs) if (i * 5 + lines) % 4 != 0] or pairs
    starts = np.array([a for a, _ in chosen], np.int64)
    ends = np.array([b for _, b in chosen], np.int64)
    calls = []
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(w_copying, "_DIRECT_COPY", 1)
        mp.setattr(w_copying, "_DIRECT_BLOCK", 4096)
        mp.setattr(w_copying, "_PARALLEL_COPY", 1)
        packed = copyout.copy_packed
        mp.setattr(copyout, "copy_packed", lambda *a: calls.append(a) or packed(*a))
        fd = os.open(tmp / "out", os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "wb") as f:  # as the staged outputs open theirs: no name
            f.write(prefix)
            assert w_copying._copy_ranges(src, f, starts, ends, threads=threads)
            f.write(b"!")
    finally:
        mp.undo()
    assert (tmp / "out").read_bytes() == prefix + b"".join(body[a:b] for a, b in chosen) + b"!"
    direct = [a[9] for a in calls]  # the last share of a direct copy pads its last block
    assert any(direct) == (not prefix and hasattr(os, "O_DIRECT") and _takes_direct(tmp))


def _takes_direct(folder) -> bool:
    try:
        os.close(os.open(folder / "probe", os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not hasattr(os, "O_DIRECT"), reason="no O_DIRECT here")
def test_copy_past_the_page_cache_falls_back_notices_changes_and_raises(tmp_path, monkeypatch):
    from neardup._kernels import copyout

    src = tmp_path / "src"
    src.write_bytes(bytes(range(256)) * 400)
    starts, ends = np.array([0, 5000, 90_000], np.int64), np.array([4000, 60_000, 102_400])
    want = b"".join(src.read_bytes()[a:b] for a, b in zip(starts, ends, strict=True))
    monkeypatch.setattr(w_copying, "_DIRECT_COPY", 1)
    monkeypatch.setattr(w_copying, "_DIRECT_BLOCK", 8192)
    packed = copyout.copy_packed
    # a file system that refuses direct writes (EINVAL): copied the usual way, same bytes
    import fcntl

    def refuse_direct(*a):
        if fcntl.fcntl(a[1], fcntl.F_GETFL) & os.O_DIRECT:
            packed(*a)  # what it wrote before failing is written again
            return errno.EINVAL
        return packed(*a)

    monkeypatch.setattr(copyout, "copy_packed", refuse_direct)
    with open(tmp_path / "out", "wb") as f:
        assert w_copying._copy_ranges(src, f, starts, ends, threads=2)
    assert (tmp_path / "out").read_bytes() == want
    # a full disk: the error is raised, not a partial file called done
    monkeypatch.setattr(copyout, "copy_packed", lambda *a: errno.ENOSPC)
    with open(tmp_path / "out2", "wb") as f, pytest.raises(OSError, match="space"):
        w_copying._copy_ranges(src, f, starts, ends, threads=1)
    monkeypatch.setattr(copyout, "copy_packed", packed)
    with open(tmp_path / "out3", "wb") as f:  # the source shorter than the ranges say
        assert not w_copying._copy_ranges(src, f, starts, ends + np.array([0, 0, 1]), threads=1)
    src.write_bytes(src.read_bytes()[:100_000])  # the source shrank after the size check
    monkeypatch.setattr(os, "fstat", lambda fd: os.stat_result((0,) * 6 + (10**9,) + (0,) * 3))
    with open(tmp_path / "out4", "wb") as f:
        assert not w_copying._copy_ranges(src, f, starts, ends, threads=1)


def test_copy_by_spans_notices_a_shorter_file(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"text":"a"}\n{"text":"b"}\n{"text":"c"}\n')
    locations, spans = _read_with_spans([path])
    assert spans.tolist() == [[0, 13], [13, 26], [26, 39]]
    path.write_bytes(b'{"text":"a"}\n')
    with pytest.raises(ConfigError, match="shorter than when it was read"):
        write_deduplicated(
            [path],
            np.array([True, False, True]),
            tmp_path / "out",
            locations=locations,
            spans=spans,
        )
    assert not (tmp_path / "out" / "in.jsonl").exists()
    with pytest.raises(ConfigError, match="spans has shape"):
        write_deduplicated(
            [path], np.ones(3, bool), tmp_path / "out", locations=locations, spans=spans[:2]
        )


def test_compressed_sources_have_no_spans(tmp_path):
    path = tmp_path / "in.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"text":"a"}\n{"text":"b"}\n'))
    _, spans = _read_with_spans([path])
    assert spans.tolist() == [[-1, -1], [-1, -1]]


@given(
    body=jsonl_data(),
    block=st.sampled_from([1, 7, 64, 1 << 20]),
    long_line=st.sampled_from([0, 1024]),
    compression=st.sampled_from([None, "gz", "zst"]),
    keep_how=st.sampled_from(["all", "none", "random"]),
    seed=st.integers(0, 2**16),
)
def test_write_deduplicated_copy_equals_old_copy(
    tmp_path_factory, body, block, long_line, compression, keep_how, seed
):
    """Through ``write_deduplicated``: records skipped for bad JSON (gaps in the line numbers),
    blank lines, CR LF, a BOM, no final newline; the new copier (tiny blocks) against the old
    loop and against parsing the input again."""
    tmp = tmp_path_factory.mktemp("copy")
    path = tmp / f"in.jsonl{'' if compression is None else '.' + compression}"
    path.write_bytes(compress(body + b'\n{"text":"last"}\n', compression))
    locations = _read_with_locations([path])
    n = len(locations)
    keep = {
        "all": np.ones(n, bool),
        "none": np.zeros(n, bool),
        "random": np.random.default_rng(seed).random(n) < 0.5,
    }[keep_how]
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(w_copying, "_COPY_BLOCK", block)
        mp.setattr(w_copying, "_LONG_LINE", long_line)
        new = write_deduplicated([path], keep, tmp / "new", on_error="skip", locations=locations)
        mp.setattr(w_corpus, "_copy_jsonl", old_copy_jsonl)
        old = write_deduplicated([path], keep, tmp / "old", on_error="skip", locations=locations)
    finally:
        mp.undo()
    reparsed = write_deduplicated([path], keep, tmp / "reparsed", on_error="skip")
    assert new[0].read_bytes() == old[0].read_bytes() == reparsed[0].read_bytes()


@pytest.mark.parametrize("compression", [None, "gz", "zst"])
def test_copy_several_sources_and_errors(tmp_path, compression, monkeypatch):
    monkeypatch.setattr(w_copying, "_COPY_BLOCK", 16)
    ext = "" if compression is None else "." + compression
    a = tmp_path / f"a.jsonl{ext}"
    a_lines = [
        b'\xef\xbb\xbf{"text":"0"}\r\n',
        b"\n",
        b"broken\n",
        b'{"text":"1"}\r\n',
        b'{"text":"' + b"2" * 100 + b'"}\n',
        b"   \n",
        b'{"text":"3"}',
    ]
    a.write_bytes(compress(b"".join(a_lines), compression))
    b = tmp_path / "b.csv"
    b.write_bytes(b"text\nfour\n")
    c = tmp_path / "c.jsonl"
    c.write_bytes(b'{"text":"5"}\n{"text":"6"}\n')
    locations = _read_with_locations([a, b, c])
    assert (locations & ((1 << 40) - 1)).tolist() == [1, 4, 5, 7, 2, 1, 2]
    keep = np.array([True, False, True, True, True, False, True])
    out = write_deduplicated(
        [a, b, c], keep, tmp_path / "out", on_error="skip", locations=locations
    )
    assert out[0].read_bytes() == a_lines[0] + a_lines[4] + a_lines[6]
    assert out[2].read_bytes() == b'{"text":"6"}\n'
    # the input shortened after it was read: an error, and no output
    a.write_bytes(compress(b"".join(a_lines[:5]), compression))
    with pytest.raises(ConfigError, match="fewer lines"):
        write_deduplicated([a, b, c], keep, tmp_path / "out2", on_error="skip", locations=locations)
    assert os.listdir(tmp_path / "out2") == []
    # locations out of reading order
    a.write_bytes(compress(b"".join(a_lines), compression))
    bad = locations.copy()
    bad[[0, 2]] = bad[[2, 0]]
    with pytest.raises(ConfigError, match="reading order"):
        write_deduplicated([a, b, c], keep, tmp_path / "out3", on_error="skip", locations=bad)


# ---------------------------------------------------------------------------------------------
# Arrow arrays of the result tables


def built(make, col):
    """``make(col)``, or the type of the exception it raises."""
    try:
        return make(col)
    except Exception as e:  # noqa: BLE001
        return type(e)


def same_array(a, b) -> bool:
    if isinstance(a, type) or isinstance(b, type):
        return a is b
    if a.type != b.type or len(a) != len(b) or a.null_count != b.null_count:
        return False
    if pa.types.is_floating(a.type):  # NaN is not equal to itself in Array.equals
        return np.array_equal(
            a.to_numpy(zero_copy_only=False).view(np.uint8),
            b.to_numpy(zero_copy_only=False).view(np.uint8),
        )
    return a.equals(b)


def _file_bytes(table, fmt: str) -> bytes:
    buf = io.BytesIO()
    if fmt == "parquet":
        pq.write_table(table, buf)
    else:
        pcsv.write_csv(table, buf)
    return buf.getvalue()


_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
_NUMERIC = [
    np.int64,
    np.int32,
    np.int16,
    np.int8,
    np.uint64,
    np.uint32,
    np.uint8,
    np.float64,
    np.float32,
    np.bool_,
]


@st.composite
def columns(draw) -> dict:
    n = draw(st.integers(0, 30))
    cols: dict = {}
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["str", "ascii", "list", "numeric"]))
        if kind == "numeric":
            dtype = np.dtype(draw(st.sampled_from(_NUMERIC)))
            raw = draw(
                st.lists(
                    st.integers(0, 255), min_size=n * dtype.itemsize, max_size=n * dtype.itemsize
                )
            )
            col = (
                np.frombuffer(bytes(raw), dtype=dtype).copy()
                if dtype != np.bool_
                else np.array([x % 2 == 1 for x in raw], dtype=bool)
            )
            if draw(st.booleans()) and n > 1:
                col = np.concatenate([col, col])[::2]  # a strided view
        else:
            alphabet = st.text("abc -_09", max_size=10) if kind == "ascii" else _TEXT
            values = draw(st.lists(alphabet, min_size=n, max_size=n))
            col = values if kind == "list" else np.asarray(values + [""], dtype=object)[:-1]
        cols[f"c{i}"] = col
    return cols


@pytest.fixture
def own_strings(monkeypatch):
    """Strings built by ``_string_array`` even where pandas is loaded (as in this process)."""
    monkeypatch.setattr(w_arrow, "_pyarrow_strings_faster", lambda n: False)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(cols=columns())
def test_arrow_table_equals_pyarrow_array(own_strings, cols):
    table = w_arrow.arrow_table(cols)
    oracle = pa.table({k: arrow_array_oracle(v) for k, v in cols.items()})
    assert table.schema == oracle.schema
    for name in cols:
        assert same_array(table[name].combine_chunks(), oracle[name].combine_chunks())
    for fmt in ("parquet", "csv"):
        assert _file_bytes(table, fmt) == _file_bytes(oracle, fmt)


def test_arrow_array_fallbacks_are_pyarrow_array(own_strings):
    """Columns the fast path does not take give what ``pyarrow.array`` gives."""
    cases = [
        np.array(["a", None, "c"], dtype=object),
        ["a", None],
        np.array([1, "x"], dtype=object),
        np.array(["ab", "c"]),  # numpy unicode
        np.array([b"ab", b"c"]),  # numpy bytes: binary
        np.ma.masked_array([1, 2, 3], mask=[False, True, False]),
        np.array([1, 2, 3], dtype=">i4"),
        np.array([np.datetime64("2024-01-01")]),
        [],
        np.array([], dtype=object),
        np.array([], dtype=np.int64),
        np.array([np.nan, 1.0, -0.0, np.inf]),
        [f"\U0001f600{i}é" for i in range(5)],
        ["ok", "\ud800"],  # a lone surrogate: pyarrow.array's error
        np.array(["ok", "\udfff"], dtype=object),
    ]
    for col in cases:
        assert same_array(built(w_arrow._arrow_array, col), built(arrow_array_oracle, col)), col


def test_strings_left_to_pyarrow_when_faster(monkeypatch):
    assert w_arrow._pyarrow_strings_faster(w_arrow._PYARROW_STRINGS)
    monkeypatch.setattr(w_arrow, "_PYARROW_STRINGS", 3)
    monkeypatch.delitem(sys.modules, "pandas", raising=False)
    assert not w_arrow._pyarrow_strings_faster(2) and w_arrow._pyarrow_strings_faster(3)
    for col in (["a", "é"], np.array(["a", "b", "\U0001f600"], dtype=object)):
        assert same_array(w_arrow._arrow_array(col), arrow_array_oracle(col))


def test_result_tables_do_not_import_pandas(tmp_path):
    """``pyarrow.array`` imports pandas (a fifth of a second) for every column; the result
    tables are written without it."""
    code = (
        "import sys, numpy as np\n"
        "from neardup.io import write_table\n"
        "ids = np.array(['a', 'b', 'é'], dtype=object)\n"
        "for fmt in ('parquet', 'csv', 'jsonl'):\n"
        f"    write_table({str(tmp_path / 't')!r}, {{'id': ids, 'n': np.arange(3),\n"
        "                'f': np.ones(3, np.float32), 'b': np.ones(3, bool)}, fmt)\n"
        "print('pandas' in sys.modules)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "False"


def write_jsonl_table_oracle(f, columns, n):
    """``neardup.io.writers.jsonl.write_jsonl_table`` as it was: one ``orjson.dumps`` of a dict a
    row."""
    names = list(columns)
    opt = orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY
    for start in range(0, n, 4):
        end = min(start + 4, n)
        parts = [w_jsonl._py_slice(c, start, end) for c in columns.values()]
        f.write(
            b"".join(
                [
                    orjson.dumps(dict(zip(names, row, strict=True)), option=opt)
                    for row in zip(*parts, strict=True)
                ]
            )
        )


_JSON_TEXT = st.lists(
    st.sampled_from(['"', ",", "\\", "a", "é", "\n", "\x00", "\U0001f600", '",', "/", " ", '\\"']),
    max_size=6,
).map("".join)
_ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(),
    _JSON_TEXT,
    st.lists(st.integers(0, 3), max_size=2),
)


@st.composite
def json_columns(draw) -> tuple[dict, int]:
    n = draw(st.integers(0, 12))
    cols: dict = {}
    for i in range(draw(st.integers(1, 4))):
        kind = draw(
            st.sampled_from(["str", "list", "any", "int", "uint", "f64", "f32", "f16", "bool"])
        )
        if kind in ("str", "list", "any"):
            values = draw(st.lists(_ANY if kind == "any" else _JSON_TEXT, min_size=n, max_size=n))
            col = values if kind == "list" else np.asarray(values + [None], dtype=object)[:-1]
        elif kind == "bool":
            col = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
        elif kind in ("int", "uint"):
            lo, hi = (-(2**63), 2**63 - 1) if kind == "int" else (0, 2**64 - 1)
            col = np.array(
                draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)),
                dtype=np.int64 if kind == "int" else np.uint64,
            )
        else:
            dtype = {"f64": np.float64, "f32": np.float32, "f16": np.float16}[kind]
            values = draw(
                st.lists(
                    st.floats(width=16 if kind == "f16" else 32)
                    | st.sampled_from([1e300, -0.0, 5e-324]),
                    min_size=n,
                    max_size=n,
                )
            )
            with np.errstate(over="ignore"):
                col = np.array(values, dtype=dtype)
        cols[draw(st.sampled_from(["id", "a,b", 'q"', "é", ""])) + str(i)] = col
    return cols, n


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=json_columns(), batch=st.sampled_from([1, 3, 65_536]))
def test_write_jsonl_table_equals_a_dict_a_row(monkeypatch, case, batch):
    """Columns of strings with quotes, commas, backslashes, control characters and ``",``;
    None, numbers, lists; ints, uint64, float64/32/16 with NaN and infinities, bools: the same
    text as one ``orjson.dumps`` of a dict a row, whatever the batch size."""
    cols, n = case
    monkeypatch.setattr(w_jsonl, "_JSONL_BATCH", batch)
    new, old = io.BytesIO(), io.BytesIO()
    w_jsonl.write_jsonl_table(new, cols, n)
    write_jsonl_table_oracle(old, cols, n)
    assert new.getvalue() == old.getvalue()
    assert len(new.getvalue().splitlines()) == n


def test_write_jsonl_table_errors_as_before():
    for cols in (
        {"a": np.array([1 + 2j])},
        {"a": [object()]},
        {1: np.arange(2)},
        {"a": ["ok", "\udc80"]},
        {"a": np.array(['"', "\udc80"], dtype=object)},
    ):
        n = len(next(iter(cols.values())))
        with pytest.raises(TypeError) as new:
            w_jsonl.write_jsonl_table(io.BytesIO(), cols, n)
        with pytest.raises(TypeError) as old:
            write_jsonl_table_oracle(io.BytesIO(), cols, n)
        assert type(new.value) is type(old.value)


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_table_stream_in_parts_equals_write_table(tmp_path, fmt):
    ids = np.array([f"d{i}é" for i in range(10)], dtype=object)
    cols = {"id": ids, "cluster": np.arange(10) // 3, "similarity": np.linspace(0, 1, 10)}
    whole = write_table(tmp_path / "whole", cols, fmt)
    ts = TableStream(tmp_path / "parts", fmt)
    for lo, hi in ((0, 4), (4, 4), (4, 10)):
        ts.write({k: v[lo:hi] for k, v in cols.items()})
    parts = Path(ts.commit())
    if fmt == "parquet":
        assert pq.read_table(parts).equals(pq.read_table(whole))
    else:
        assert parts.read_bytes() == whole.read_bytes()


@pytest.mark.parametrize("rows", [0, 1, 1000])
def test_parquet_writer_writes_the_bytes_of_pyarrow_parquet(rows):
    rng = np.random.default_rng(rows)
    table = pa.table(
        {
            "id": pa.array([f"d{i}é" for i in range(rows)], type=pa.string()),
            "cluster": rng.integers(0, 50, rows),
            "similarity": rng.random(rows).astype(np.float32),
            "exact": pa.array(rng.random(rows) < 0.5, type=pa.bool_()),
            "members": pa.array([[i, i + 1] for i in range(rows)], type=pa.list_(pa.int64())),
        }
    )
    want = io.BytesIO()
    pq.write_table(table, want)
    for parts in ([table], [table.slice(0, rows // 3), table.slice(rows // 3)]):
        got = io.BytesIO()
        w = w_parquet.parquet_writer(got, table.schema)
        for part in parts:
            w.write_table(part)
        w.close()
        if len(parts) == 1:
            assert got.getvalue() == want.getvalue()
        assert pq.read_table(io.BytesIO(got.getvalue())).equals(table)


def test_parquet_writer_falls_back_to_pyarrow_parquet(monkeypatch):
    # a pyarrow release whose writer class no longer takes one of the options
    monkeypatch.setitem(w_parquet._PARQUET_DEFAULTS, "no_such_option", 1)
    table = pa.table({"a": [1, 2, 3]})
    got = io.BytesIO()
    w = w_parquet.parquet_writer(got, table.schema)
    assert isinstance(w, pq.ParquetWriter)
    w.write_table(table)
    w.close()
    assert pq.read_table(io.BytesIO(got.getvalue())).equals(table)


def test_dedup_writes_parquet_without_pyarrow_file_systems(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"text": "one two three four five six"}\n' * 2)
    code = (
        "import sys\nfrom neardup.cli import main\n"
        f"assert main(['dedup', {str(corpus)!r}, '-o', {str(tmp_path / 'out')!r}, '--quiet'])"
        " == 0\nprint(sorted(m for m in ('pyarrow.parquet', 'pyarrow.fs', 'ssl')"
        " if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[]"]
    assert pq.read_table(tmp_path / "out" / "clusters.parquet").num_rows == 2  # a row a member
    assert pq.read_table(tmp_path / "out" / "pairs.parquet").num_rows == 1


# ---------------------------------------------------------------------------------------------
# neardup dedup end to end: the old writers and the new ones write the same bytes


def _corpus(path: Path) -> None:
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(300)] + ["été", "naïve", "日本", "\U0001f600"]
    lines = []
    base_docs = [" ".join(rng.choice(words, 60)) for _ in range(60)]
    for i in range(400):
        text = base_docs[i % 60] if i % 3 else " ".join(rng.choice(words, 60))
        if i % 7 == 0:
            text = text.replace("w1", "w2", 1)
        rid = f"doc-{i}" if i % 5 else f"dóc-\U0001f600-{i}"
        line = f'{{"id": "{rid}", "text": "{text}"}}'
        ending = "\r\n" if i % 11 == 0 else "\n"
        lines.append(line + ending)
        if i % 37 == 0:
            lines.append("\n")
        if i % 53 == 0:
            lines.append("not json\n")
    path.write_bytes(("\ufeff" + "".join(lines)).encode()[:-1])  # a BOM, no final newline


@pytest.mark.parametrize(
    "fmt,streamed", [("parquet", False), ("csv", False), ("jsonl", False), ("jsonl", True)]
)
def test_dedup_outputs_same_as_old_writers(tmp_path, fmt, streamed, own_strings, monkeypatch):
    """``streamed``: the corpus copied while its keep flags are decided, as large inputs are
    (a byte order mark, CR LF endings, blank and malformed lines in between)."""
    src = tmp_path / "corpus.jsonl"
    _corpus(src)
    args = [
        "dedup",
        str(src),
        "--id-field",
        "id",
        "--on-error",
        "skip",
        "--quiet",
        "--output-format",
        fmt,
    ]
    calls = []
    if streamed:
        monkeypatch.setattr(w_copying, "_DIRECT_COPY", 0)
        streaming = w_copying._copy_streaming
        monkeypatch.setattr(
            w_copying, "_copy_streaming", lambda *a, **k: calls.append(1) or streaming(*a, **k)
        )
    assert main([*args, "-o", str(tmp_path / "new")]) == 0
    assert len(calls) == streamed
    monkeypatch.setattr(w_arrow, "_arrow_array", arrow_array_oracle)
    monkeypatch.setattr(w_corpus, "_copy_jsonl", old_copy_jsonl)
    monkeypatch.setattr(w_tables, "write_jsonl_table", write_jsonl_table_oracle)
    assert main([*args, "-o", str(tmp_path / "old")]) == 0
    for name in (f"clusters.{fmt}", f"pairs.{fmt}", "deduplicated/corpus.jsonl"):
        new, old = (tmp_path / "new" / name).read_bytes(), (tmp_path / "old" / name).read_bytes()
        assert new == old, name
    if fmt == "parquet":  # near duplicates found, with ids beyond ASCII
        pairs = pq.read_table(tmp_path / "new" / "pairs.parquet")
        assert pairs.num_rows > 50 and any(not i.isascii() for i in pairs["id_a"].to_pylist())
    kept = (tmp_path / "new" / "deduplicated" / "corpus.jsonl").read_bytes()
    assert kept.startswith(b"\xef\xbb\xbf") and b"\r\n" in kept
    assert 0 < kept.count(b"\n") < 400


@pytest.mark.parametrize("kind", ["jsonl", "textdir"])
def test_a_writer_without_parents_never_brings_back_a_removed_folder(tmp_path, kind):
    """A worker still writing a part when its run was discarded (its folder removed) fails
    instead of creating the folder again (parents=False)."""
    import shutil

    from neardup.errors import OutputError
    from neardup.io import ReadOptions, write_deduplicated_part

    if kind == "jsonl":
        src = tmp_path / "in.jsonl"
        src.write_text('{"text": "a"}\n{"text": "b"}\n')
    else:
        src = tmp_path / "docs"
        (src / "sub").mkdir(parents=True)
        (src / "sub" / "a.txt").write_text("a")
        (src / "b.txt").write_text("b")
    run = tmp_path / "run"
    dest = run / "deduplicated" / src.name
    dest.parent.mkdir(parents=True)
    assert (
        write_deduplicated_part(src, [True, True], dest, options=ReadOptions(), parents=False)
        == dest
    )
    shutil.rmtree(run)
    with pytest.raises(OutputError):
        write_deduplicated_part(src, [True, True], dest, options=ReadOptions(), parents=False)
    assert not run.exists()
    with pytest.raises(OutputError):
        writers.Staged(dest, parents=False)
    assert not run.exists()
    if kind == "jsonl":
        with pytest.raises(OutputError):
            writers.concat_files([src, src], dest, "jsonl", parents=False)
        assert not run.exists()


def _feed(stream, flags, steps, delay=0.0):
    """Decide ``flags`` on ``stream`` in ``steps`` pieces, from another thread."""
    import threading
    import time

    cuts = sorted({0, len(flags), *steps})

    def run():
        for a, b in zip(cuts[:-1], cuts[1:]):
            time.sleep(delay)
            stream.decide(flags[a:b])

    t = threading.Thread(target=run)
    t.start()
    return t


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lengths=st.lists(st.integers(1, 9000), min_size=1, max_size=60),
    seed=st.integers(0, 2**16),
    steps=st.lists(st.integers(0, 60), max_size=6),
    fail_direct=st.booleans(),
)
def test_kept_lines_are_copied_as_their_flags_are_decided(
    tmp_path_factory, monkeypatch, lengths, seed, steps, fail_direct
):
    """A JSONL file whose keep flags arrive in pieces: each piece's kept lines are copied as it
    comes (past the page cache in whole blocks, the last one padded and cut; or through it
    where direct writes are refused), and the output is the kept lines, byte for byte."""
    from neardup._kernels import copyout
    from neardup.io.writers import KeepStream

    tmp = tmp_path_factory.mktemp("stream")
    rng = np.random.default_rng(seed)
    lines = [orjson.dumps({"text": "x" * (n - 13)}) + b"\n" for n in lengths]
    path = tmp / "in.jsonl"
    path.write_bytes(b"".join(lines))
    locations, spans = _read_with_spans([path])
    flags = rng.random(len(lines)) < 0.7
    monkeypatch.setattr(w_copying, "_DIRECT_COPY", 0)  # small files take the streaming copy too
    monkeypatch.setattr(w_copying, "_PARALLEL_COPY", 4096)  # and two threads
    calls = []
    packed = copyout.copy_packed

    def copy_packed(*a):
        calls.append(a[-1])  # writeback: through the page cache
        if fail_direct and not a[-1]:
            return errno.EINVAL
        return packed(*a)

    monkeypatch.setattr(copyout, "copy_packed", copy_packed)
    stream = KeepStream(len(lines))
    feeder = _feed(stream, flags, steps)
    written = write_deduplicated([path], stream, tmp / "out", locations=locations, spans=spans)
    feeder.join()
    expect = b"".join(x for x, k in zip(lines, flags) if k)
    assert written == [tmp / "out" / "in.jsonl"]
    assert written[0].read_bytes() == expect
    if flags.any():
        assert calls  # the streaming copy ran (by blocks of this process)
    if fail_direct and calls:
        assert calls[-1] is True


def test_a_failed_decision_stops_the_copy_and_leaves_nothing(tmp_path, monkeypatch):
    """The deciding side fails after deciding some flags: the copy stops with a clear error and
    its temporary output is removed; a file that shrank meanwhile is named."""
    from neardup.io.writers import KeepStream

    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(b'{"text":"%05d"}\n' % i for i in range(2000)))
    locations, spans = _read_with_spans([path])
    monkeypatch.setattr(w_copying, "_DIRECT_COPY", 0)
    stream = KeepStream(2000)
    stream.decide(np.ones(500, bool))
    stream.fail(MemoryError())
    with pytest.raises(ConfigError, match="stopped before it decided"):
        write_deduplicated([path], stream, tmp_path / "out", locations=locations, spans=spans)
    assert list((tmp_path / "out").iterdir()) == []
    stream = KeepStream(2000)
    stream.decide(np.ones(2000, bool))
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(ConfigError, match="shorter than when it was read"):
        write_deduplicated([path], stream, tmp_path / "out", locations=locations, spans=spans)
    assert list((tmp_path / "out").iterdir()) == []


def test_other_inputs_wait_for_every_flag(tmp_path):
    """A CSV file (rows rewritten, not copied by bytes): written once every flag is decided,
    from another thread meanwhile, with the same rows as from a plain array."""
    from neardup.io.writers import KeepStream

    path = tmp_path / "in.csv"
    path.write_text("id,text\n" + "".join(f"{i},text {i}\n" for i in range(40)))
    flags = np.arange(40) % 4 != 1
    stream = KeepStream(40)
    feeder = _feed(stream, flags, [5, 17, 30], delay=0.05)
    out = write_deduplicated([path], stream, tmp_path / "a")
    feeder.join()
    write_deduplicated([path], flags, tmp_path / "b")
    assert out[0].read_bytes() == (tmp_path / "b" / "in.csv").read_bytes()
    with pytest.raises(ValueError, match="41 flags decided for 40"):
        stream.decide(np.ones(1, bool))


@given(values=st.lists(st.text(max_size=6), max_size=30), data=st.data())
def test_take_strings_gathers_rows_like_python(values, data):
    """:func:`writers.take_strings`: the rows of an Arrow string array (a slice of one too),
    gathered from its buffers, are Python's indexing of the same strings."""
    values = [
        v for v in values if v.encode("utf-8", "surrogatepass").decode("utf-8", "ignore") == v
    ]  # Arrow strings hold no lone surrogates
    start = data.draw(st.integers(0, len(values)))
    arr = pa.array(values, type=pa.string())[start:]
    part = values[start:]
    rows = data.draw(st.lists(st.integers(0, max(len(part) - 1, 0)), max_size=40 if part else 0))
    got = writers.take_strings(arr, np.array(rows, dtype=np.int64))
    assert got.type == pa.string() and got.to_pylist() == [part[r] for r in rows]
    assert writers.take_strings(pa.array(["a", None]), np.array([0])) is None
    assert writers.take_strings(pa.array(["a"], type=pa.large_string()), np.array([0])) is None
