"""The batch JSONL path (blocks read by the compiled scanner) against the line-by-line reader:
the same records, ids, texts, locations, skipped counts and errors, whatever the lines hold and
wherever the blocks are cut; and Arrow text arrays normalise to the same bytes as Python
strings."""

from __future__ import annotations

import gzip
import io
import os

import numpy as np
import orjson
import pyarrow as pa
import pytest
import zstandard
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from neardup.config import NormalizeConfig
from neardup.errors import InputError
from neardup.io import ReadOptions, SkipReport, read_documents
from neardup.io.readers import jsonl_blocks, stream
from neardup.text.normalize import normalize

# -- generated JSONL lines: good records and every kind of bad line --------------------------

texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
words = st.sampled_from(
    [
        "Alpha beta",
        "gamma  DELTA",
        "\tÉcole ﬁne",
        "straße\u00a0x",
        "",
        " ",
        "a\x00b",
        "ＡＢＣ",
        "İ",
        "same text",
    ]
)


@st.composite
def line(draw, id_kind: str) -> bytes:
    kind = draw(
        st.sampled_from(
            ["good"] * 8
            + [
                "blank",
                "spaces",
                "malformed",
                "array",
                "missing",
                "number",
                "null_text",
                "two_objects",
                "extra_fields",
                "dup_key",
                "surrogate",
                "bad_utf8",
                "id_float",
                "id_null",
                "id_bool",
                "vt_line",
            ]
        )
    )
    text = draw(st.one_of(texts, words))
    rec: dict = {"text": text}
    if id_kind == "str":
        rec["id"] = draw(st.sampled_from(["a", "b", "c", "d", "e", "f", "g"])) + str(
            draw(st.integers(0, 40))
        )
    elif id_kind == "int":
        rec["id"] = draw(st.integers(-5, 60))
    elif id_kind == "mixed":
        rec["id"] = draw(st.one_of(st.integers(0, 30), st.sampled_from(["x", "7", "y1"])))
    good = orjson.dumps(rec)
    crlf = draw(st.booleans())
    end = b"\r\n" if crlf else b"\n"
    if kind == "good":
        return good + end
    if kind == "blank":
        return end
    if kind == "spaces":
        return b"  \t " + end
    if kind == "malformed":
        return good[:-1] + end
    if kind == "array":
        return b"[1, 2]" + end
    if kind == "missing":
        return orjson.dumps({k: v for k, v in rec.items() if k != "text"}) + end
    if kind == "number":
        return orjson.dumps({**rec, "text": 5}) + end
    if kind == "null_text":
        return orjson.dumps({**rec, "text": None}) + end
    if kind == "two_objects":
        return good + b" " + good + end
    if kind == "extra_fields":
        return orjson.dumps({**rec, "meta": {"a": [1, {"b": None}]}, "n": 3.5}) + end
    if kind == "dup_key":
        return b'{"text": "first", ' + good[1:] + end
    if kind == "surrogate":
        return b'{"text": "x\\ud800y"}' + end
    if kind == "bad_utf8":
        return b'{"text": "caf\xe9"}' + end
    if kind == "id_float":
        return orjson.dumps({**rec, "id": 2.5}) + end
    if kind == "id_null":
        return orjson.dumps({**rec, "id": None}) + end
    if kind == "id_bool":
        return orjson.dumps({**rec, "id": True}) + end
    return b" \x0b " + end  # vt_line: blank to bytes.strip(), not to a JSON parser


@st.composite
def corpus(draw) -> tuple[bytes, str]:
    id_kind = draw(st.sampled_from(["none", "str", "int", "mixed"]))
    lines = draw(st.lists(line(id_kind), max_size=40))
    data = b"".join(lines)
    if data and draw(st.booleans()):
        data = data.rstrip(b"\r\n")  # no final newline
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    return data, id_kind


def _read(
    data: bytes, arrow: bool, on_error: str, id_field: str | None, chunk_size: int = 7, **kw
) -> tuple[list, dict]:
    report = SkipReport()
    opts = ReadOptions(id_field=id_field, on_error=on_error, chunk_size=chunk_size, **kw)
    out = []
    for ch in read_documents(data, options=opts, report=report, arrow=arrow, name="in.jsonl"):
        t = ch.texts if isinstance(ch.texts, list) else ch.texts.to_pylist()
        assert len(t) == len(ch.ids) == len(ch.locations) <= chunk_size
        assert ch.text_bytes == sum(len(x.encode("utf-8", "surrogatepass")) for x in t)
        out.extend(zip(ch.ids, t, np.asarray(ch.locations).tolist()))
    return out, report.to_dict()


def _outcome(data: bytes, arrow: bool, on_error: str, id_field: str | None, **kw):
    try:
        return _read(data, arrow, on_error, id_field, **kw)
    except InputError as e:
        return ("error", str(e), e.reason)


@pytest.fixture
def tiny_blocks(monkeypatch):
    monkeypatch.setattr(stream, "JSONL_BLOCK_BYTES", 97)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    corpus(),
    st.sampled_from(["skip", "fail"]),
    st.sampled_from([97, 300, 1 << 20]),
    st.sampled_from([5, 40, 1 << 20]),
)
# a byte order mark alone on the first line, then two objects on one line: the mark's line once
# counted as a record, so Arrow's two rows passed for the two "records"
@example((b'\xef\xbb\xbf\n{"text":""} {"text":""}\n', "none"), "skip", 97, 1 << 20)
def test_batch_reader_matches_line_reader(monkeypatch, case, on_error, block, first):
    """Whatever the block size, and the first block's (it doubles up to the block size)."""
    monkeypatch.setattr(stream, "JSONL_BLOCK_BYTES", block)
    monkeypatch.setattr(stream, "JSONL_FIRST_BLOCK_BYTES", first)
    data, id_kind = case
    id_field = None if id_kind == "none" else "id"
    expected = _outcome(data, False, on_error, id_field)
    assert _outcome(data, True, on_error, id_field) == expected


def test_batch_reader_uses_arrow_for_clean_input(tiny_blocks):
    """The scanner reads clean lines into Arrow arrays (not one Python string per record)."""
    lines = [orjson.dumps({"text": f"Text number {i} é", "id": f"d{i}"}) for i in range(50)]
    data = b"\n".join(lines) + b"\n"
    chunks = list(
        read_documents(
            data, options=ReadOptions(id_field="id", chunk_size=1000), arrow=True, name="x.jsonl"
        )
    )
    # clean blocks become Arrow arrays, one chunk per block, never joined by copying
    assert all(isinstance(c.texts, (pa.Array, pa.ChunkedArray)) for c in chunks)
    assert [i for c in chunks for i in c.ids] == [f"d{i}" for i in range(50)]
    assert np.concatenate([c.locations for c in chunks]).tolist() == list(range(1, 51))


def test_integer_ids_and_several_text_fields():
    lines = [orjson.dumps({"t": f"a{i}", "u": "b", "id": i * 7 - 3}) for i in range(20)]
    data = b"\n".join(lines)
    kw = dict(text_fields=("t", "u"))
    a = _read(data, True, "fail", "id", chunk_size=6, **kw)
    assert a == _read(data, False, "fail", "id", chunk_size=6, **kw)
    assert a[0][0] == ("-3", "a0\nb", 1)


def test_duplicate_ids_are_named_as_by_the_line_reader(tiny_blocks):
    lines = [orjson.dumps({"text": "x", "id": i % 13}) for i in range(40)]
    data = b"\n".join(lines)
    assert _outcome(data, True, "skip", "id") == _outcome(data, False, "skip", "id")
    err = _outcome(data, True, "fail", "id")
    assert err[0] == "error" and "duplicate id '0'" in err[1] and "in.jsonl:14" in err[1]


@pytest.mark.parametrize("compression", ["gz", "zst"])
def test_compressed_and_damaged_inputs(tmp_path, compression, tiny_blocks):
    lines = [orjson.dumps({"text": f"line {i} text"}) for i in range(300)]
    raw = b"\n".join(lines) + b"\n"
    packed = gzip.compress(raw) if compression == "gz" else zstandard.compress(raw)
    path = tmp_path / f"c.jsonl.{compression}"
    path.write_bytes(packed)
    opts = ReadOptions(on_error="skip", chunk_size=50)

    def read(arrow):
        report = SkipReport()
        got = [
            (i, t)
            for ch in read_documents([path], options=opts, report=report, arrow=arrow)
            for i, t in zip(
                ch.ids, ch.texts if isinstance(ch.texts, list) else ch.texts.to_pylist()
            )
        ]
        return got, report.to_dict()

    assert read(True) == read(False)
    assert len(read(True)[0]) == 300
    # damaged in the middle: every line before the damage is read, then one error
    path.write_bytes(packed[: len(packed) // 2] + b"\x00garbage" * 5 + packed[len(packed) // 2 :])
    got_arrow, got_line = read(True), read(False)
    assert got_arrow == got_line
    assert got_line[1]["total"] >= 1


def test_a_file_object_is_read_line_by_line():
    # a file object is read as its lines arrive (a pipe), never by blocks
    data = b'{"text": "a"}\n{"text": "b"}\n'
    chunks = list(
        read_documents(
            io.BytesIO(data), options=ReadOptions(format="jsonl"), arrow=True, name="<stdin>"
        )
    )
    assert isinstance(chunks[0].texts, list) and chunks[0].texts == ["a", "b"]


# -- normalisation of Arrow arrays ------------------------------------------------------------

any_text = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(any_text, words), max_size=30),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.integers(0, 5),
)
def test_normalize_arrow_matches_python_strings(items, nfkc, casefold, large, offset):
    cfg = NormalizeConfig(nfkc=nfkc, casefold=casefold)
    arr = pa.array(["pad"] * offset + items, pa.large_string() if large else pa.string())
    arr = arr.slice(offset)  # a slice: offsets that do not start at 0
    a, b = normalize(arr, cfg), normalize(items, cfg)
    assert a.data.tobytes() == b.data.tobytes()
    assert a.offsets.tolist() == b.offsets.tolist()
    assert a.lengths.tolist() == b.lengths.tolist()
    # pieces read one after another into one batch, an empty piece among them
    third = len(items) // 3
    chunked = pa.chunked_array(
        [arr.slice(0, third), arr.slice(third, 0), arr.slice(third, third), arr.slice(2 * third)],
        arr.type,
    )
    c = normalize(chunked, cfg)
    assert c.data.tobytes() == b.data.tobytes()
    assert c.offsets.tolist() == b.offsets.tolist()
    assert c.lengths.tolist() == b.lengths.tolist()


def test_normalize_arrow_with_regex_steps_and_nulls():
    cfg = NormalizeConfig(strip_html=True, strip_punctuation=True)
    items = ["<b>Hello</b>, World!", "x &amp; y"]
    assert normalize(pa.array(items), cfg).data.tobytes() == normalize(items, cfg).data.tobytes()
    with pytest.raises(InputError, match="position 1 is null"):
        normalize(pa.array(["a", None]))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 80_000), st.integers(0, 40)), min_size=1, max_size=6),
    st.binary(min_size=1, max_size=300),
)
def test_block_lines_are_where_the_newlines_are(runs, tail):
    """The lines of a block, found by memchr into a buffer that grows as the newlines come
    (dense blocks make it grow): the same as looking at every byte."""
    from neardup.io.readers.jsonl_blocks import _BlockLines

    block = b"".join(b"x" * a + b"\n" * b for a, b in runs) + tail
    nl = [i + 1 for i, c in enumerate(block) if c == 10]
    ends = nl + ([len(block)] if block[-1] != 10 else [])
    lines = _BlockLines(block)
    assert lines.ends.tolist() == ends and lines.starts.tolist() == [0, *ends[:-1]]
    assert lines.n == len(ends)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 400_000), st.lists(st.integers(0, 399_999), max_size=5), st.integers(0, 1000))
def test_after_last_newline_is_found_from_the_end(size, newlines, start):
    """``_after_last_newline`` against ``bytes.rfind`` (newlines anywhere in up to 400 KB, so
    that the search from the end takes several pieces)."""
    data = bytearray(b"x" * size)
    for p in newlines:
        if p < size:
            data[p] = 10
    start = min(start, size)
    expected = bytes(data).rfind(b"\n", start) + 1
    assert jsonl_blocks._after_last_newline(memoryview(data), start) == expected


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3000), st.booleans()), max_size=40),
    st.sampled_from([1, 7, 64, 4096]),
    st.sampled_from([1, 100, 5000, 1 << 16]),
)
def test_mapped_blocks_are_cut_as_read_blocks(tmp_path_factory, lines, first, block):
    """A regular file's blocks come from a memory map: the same blocks, cut at the same
    places, as those read into buffers (long lines, a last line without its newline)."""
    data = b"".join(b"x" * n + (b"\n" if nl else b"") for n, nl in lines)
    path = tmp_path_factory.mktemp("map") / "in.jsonl"
    path.write_bytes(data)
    block = max(block, first)
    with open(path, "rb") as f:
        read = [bytes(b) for b in jsonl_blocks._read_blocks(f, first, block)]
    with open(path, "rb") as f:
        assert jsonl_blocks._MappedBlocks.usable(f)
        mapped = jsonl_blocks._MappedBlocks(f, first, block)
        got = []
        for b in mapped:
            got.append(bytes(b))
            assert mapped.position == sum(map(len, got))
    assert got == read
    assert b"".join(got) == data
    # bytes in memory (a memory map's view of a part of a file): views with the same cuts
    viewed = jsonl_blocks.DataBlocks(memoryview(data), first, block)
    got = []
    for b in viewed:
        got.append(bytes(b))
        assert viewed.position == sum(map(len, got))
    assert got == read


def test_a_file_larger_than_memory_is_dropped_from_the_cache_as_read(tmp_path, monkeypatch):
    """A file too large to stay cached: the pages read are dropped from the page cache behind
    the reader (asked of the system for each stretch read, once), the blocks unchanged."""
    if not hasattr(os, "posix_fadvise"):
        pytest.skip("no posix_fadvise")
    data = b"".join(b"y" * (i % 5000) + b"\n" for i in range(3000))
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    dropped = []
    real = os.posix_fadvise

    def fadvise(fd, offset, length, advice):
        dropped.append((offset, length, advice))
        return real(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", fadvise)
    monkeypatch.setattr(jsonl_blocks, "_physical_memory", lambda: len(data))
    with open(path, "rb") as f:
        got = [bytes(b) for b in jsonl_blocks._MappedBlocks(f, 4096, 1 << 16)]
    assert b"".join(got) == data
    assert dropped and all(a == os.POSIX_FADV_DONTNEED for _, _, a in dropped)
    assert [o for o, _, _ in dropped] == sorted(o for o, _, _ in dropped)
    for (o, n, _), (o2, _, _) in zip(dropped, dropped[1:]):
        assert o + n == o2  # one stretch after another, none twice
    monkeypatch.setattr(jsonl_blocks, "_physical_memory", lambda: 4 * len(data))
    dropped.clear()
    with open(path, "rb") as f:
        assert b"".join(bytes(b) for b in jsonl_blocks._MappedBlocks(f, 4096, 1 << 16)) == data
    assert dropped == []  # a file that fits stays cached (a corpus copy reads it again)


def test_file_read_through_the_map_equals_its_bytes(tmp_path, tiny_blocks):
    """The batch path over a file (mapped) gives what it gives over the same bytes in memory."""
    rows = [{"id": f"r{i}", "text": f"text {i} " + "w" * (i % 50)} for i in range(300)]
    rows[40] = {"id": "r40", "text": 5}  # a line for the line reader
    data = b"".join(orjson.dumps(r) + b"\n" for r in rows) + b'{"id": "last", "text": "end"}'
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    opts = ReadOptions(id_field="id", on_error="skip", chunk_size=50)

    def read(source, **kw):
        report = SkipReport()
        out = []
        for ch in read_documents(source, options=opts, report=report, arrow=True, **kw):
            t = ch.texts if isinstance(ch.texts, list) else ch.texts.to_pylist()
            out.extend(zip(ch.ids, t, np.asarray(ch.locations).tolist()))
        return out, report.to_dict()

    from_file = read([path])
    assert from_file == read(data, name=str(path))
    assert len(from_file[0]) == 300 and from_file[1]["total"] == 1


def test_file_cut_short_while_read_is_read_on_line_by_line(tmp_path, monkeypatch):
    """A file truncated between two blocks: the map is left before the bytes gone are touched
    (which would stop the process) and the rest is read line by line, as after a read error."""
    monkeypatch.setattr(stream, "JSONL_BLOCK_BYTES", 4096)
    monkeypatch.setattr(stream, "JSONL_FIRST_BLOCK_BYTES", 4096)
    line = orjson.dumps({"text": "some words " * 8}) + b"\n"
    path = tmp_path / "in.jsonl"
    path.write_bytes(line * 2000)
    keep_lines = 150
    got = 0
    opts = ReadOptions(chunk_size=50)
    for i, ch in enumerate(read_documents([path], options=opts, report=SkipReport(), arrow=True)):
        if i == 0:
            assert not isinstance(ch.texts, list)  # read by blocks
            with open(path, "r+b") as f:
                f.truncate(len(line) * keep_lines)
        got += len(ch)
    assert got == keep_lines
