"""Tests of neardup.io: streaming readers, atomic writers and the deduplicated corpus."""

from __future__ import annotations

import csv
import gzip
import io
import os
from json import dumps as json_dumps
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neardup
from neardup.errors import ConfigError, InputError, SkipReason
from neardup.io import (
    OUTPUT_FORMATS,
    DocChunk,
    ReadOptions,
    SkipReport,
    detect_format,
    read_documents,
    record_stream,
    total_input_bytes,
    write_deduplicated,
    write_json_atomic,
    write_table,
)

DOCS = [
    {"id": "a", "text": "first document", "title": "T1"},
    {"id": "b", "text": "zweites Dokument: äöü ß", "title": "T2"},
    {"id": "c", "text": "", "title": "T3"},
    {"id": "d", "text": 'line one\nline two, with a comma and "quotes"', "title": "T4"},
    {"id": "e", "text": "日本語のテキスト", "title": "T5"},
]
TEXTS = [d["text"] for d in DOCS]
IDS = [d["id"] for d in DOCS]


def compress(data: bytes, compression: str | None) -> bytes:
    if compression == "gz":
        return gzip.compress(data)
    if compression == "zst":
        return zstandard.ZstdCompressor().compress(data)
    return data


def suffix(compression: str | None) -> str:
    return "" if compression is None else "." + compression


def jsonl_bytes(rows) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in rows)


def csv_bytes(rows, delimiter=",", fields=("id", "text", "title")) -> bytes:
    buf = io.StringIO(newline="")
    w = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    w.writerow(fields)
    for r in rows:
        w.writerow([r[f] for f in fields])
    return buf.getvalue().encode("utf-8")


def write_input(
    tmp_path: Path, fmt: str, rows=DOCS, compression: str | None = None, name: str = "docs"
) -> Path:
    if fmt == "parquet":
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({k: [r[k] for r in rows] for k in rows[0]}), path)
        return path
    data = {"jsonl": jsonl_bytes, "csv": csv_bytes, "tsv": lambda r: csv_bytes(r, delimiter="\t")}[
        fmt
    ](rows)
    path = tmp_path / f"{name}.{fmt}{suffix(compression)}"
    path.write_bytes(compress(data, compression))
    return path


def read_all(paths, **kw) -> tuple[list[str], list[str]]:
    ids: list[str] = []
    texts: list[str] = []
    for chunk in read_documents(paths, **kw):
        assert isinstance(chunk, DocChunk) and 0 < len(chunk.ids) == len(chunk.texts)
        ids += chunk.ids
        texts += chunk.texts
    return ids, texts


def error_of(paths, **kw) -> InputError:
    with pytest.raises(InputError) as info:
        read_all(paths, **kw)
    return info.value


# ---------------------------------------------------------------------------------------------
# Reading: round trips


@pytest.mark.parametrize("compression", [None, "gz", "zst"])
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "tsv"])
def test_round_trip_text_formats(tmp_path, fmt, compression):
    path = write_input(tmp_path, fmt, compression=compression)
    assert detect_format(path) == fmt
    assert read_all(path) == ([str(i) for i in range(5)], TEXTS)
    assert read_all([path], id_field="id") == (IDS, TEXTS)


def test_round_trip_parquet(tmp_path):
    path = write_input(tmp_path, "parquet")
    assert detect_format(path) == "parquet"
    assert read_all(path, id_field="id") == (IDS, TEXTS)
    chunks = list(read_documents(path, chunk_size=2))
    assert [c.ids for c in chunks] == [["0", "1"], ["2", "3"], ["4"]]
    assert sum(c.progress_bytes for c in chunks) == path.stat().st_size


def test_nested_directory(tmp_path):
    root = tmp_path / "corpus"
    (root / "b" / "deep").mkdir(parents=True)
    (root / ".hidden_dir").mkdir()
    (root / "z.txt").write_text("zed")
    (root / "a.txt").write_text("alpha\n")
    (root / "b" / "deep" / "c.md").write_text("γ")
    (root / "b" / "d.txt.gz").write_bytes(gzip.compress(b"compressed"))
    (root / "b" / "e.txt.zst").write_bytes(compress(b"zstd", "zst"))
    (root / "b" / "empty.txt").write_bytes(b"")
    (root / ".hidden").write_text("no")
    (root / ".hidden_dir" / "x.txt").write_text("no")
    assert detect_format(root) == "textdir"
    ids, texts = read_all(root, text_fields=("ignored",))
    assert ids == ["a.txt", "b/d.txt.gz", "b/deep/c.md", "b/e.txt.zst", "b/empty.txt", "z.txt"]
    assert texts == ["alpha\n", "compressed", "γ", "zstd", "", "zed"]
    sizes = [(root / i).stat().st_size for i in ids]
    assert total_input_bytes([root]) == sum(sizes)
    chunks = list(read_documents(root, chunk_size=4))
    assert sum(c.progress_bytes for c in chunks) == sum(sizes)
    assert [c.text_bytes for c in chunks] == [6 + 10 + 2 + 4, 0 + 3]


def test_multiple_text_fields_and_global_ids(tmp_path):
    a = write_input(tmp_path, "jsonl", DOCS[:2], name="a")
    b = write_input(tmp_path, "csv", DOCS[2:], name="b")
    ids, texts = read_all([a, str(b)], text_fields=("title", "text"))
    assert ids == ["0", "1", "2", "3", "4"]
    assert texts == [f"{d['title']}\n{d['text']}" for d in DOCS]


def test_integer_ids_and_bad_ids(tmp_path):
    path = tmp_path / "ints.jsonl"
    path.write_bytes(jsonl_bytes([{"id": 7, "text": "x"}, {"id": "7b", "text": "y"}]))
    assert read_all(path, id_field="id") == (["7", "7b"], ["x", "y"])
    path.write_bytes(jsonl_bytes([{"id": 1.5, "text": "x"}, {"id": True, "text": "y"}]))
    err = error_of(path, id_field="id")
    assert (err.reason, err.line, err.field) == ("bad_id", 1, "id")
    report = SkipReport()
    assert read_all(path, id_field="id", on_error="skip", report=report) == ([], [])
    assert report.counts == {"bad_id": 2}
    pq.write_table(pa.table({"id": [10, 20], "text": ["x", "y"]}), tmp_path / "i.parquet")
    assert read_all(tmp_path / "i.parquet", id_field="id") == (["10", "20"], ["x", "y"])


def test_chunking_does_not_change_records(tmp_path):
    rows = [{"id": f"r{i}", "text": f"text {i}", "title": "t"} for i in range(10)]
    paths = [
        write_input(tmp_path, "jsonl", rows, name="a"),
        write_input(
            tmp_path, "csv", rows[:0] + [dict(r, id=r["id"] + "c") for r in rows], name="b"
        ),
    ]
    small = list(read_documents(paths, chunk_size=3, id_field="id"))
    assert [len(c.ids) for c in small] == [3, 3, 3, 3, 3, 3, 2]
    big = list(read_documents(paths, chunk_size=1000, id_field="id"))
    assert len(big) == 1
    assert [i for c in small for i in c.ids] == big[0].ids
    assert [t for c in small for t in c.texts] == big[0].texts
    assert (
        sum(c.text_bytes for c in small)
        == big[0].text_bytes
        == sum(len(r["text"]) for r in rows) * 2
    )
    assert sum(c.progress_bytes for c in small) == total_input_bytes(paths)


def test_latin1_and_blank_lines(tmp_path):
    path = tmp_path / "l1.jsonl"
    path.write_bytes('\n{"text": "café"}\n  \n{"text": "naïve"}\n'.encode("latin-1"))
    assert read_all(path, encoding="latin-1") == (["0", "1"], ["café", "naïve"])
    assert error_of(path).reason == "undecodable"
    csv_path = tmp_path / "l1.csv"
    csv_path.write_bytes("text\ncafé\n".encode("latin-1"))
    assert read_all(csv_path, encoding="latin-1") == (["0"], ["café"])


def test_big_documents(tmp_path):
    big = "x" * (50 * 1024 * 1024 - 7) + 'é,"\n'
    jpath = tmp_path / "big.jsonl"
    jpath.write_bytes(jsonl_bytes([{"text": "small"}, {"text": big}]))
    cpath = tmp_path / "big.csv"
    cpath.write_bytes(csv_bytes([{"id": "1", "text": big, "title": "t"}]))
    try:
        for path in (jpath, cpath):
            ids, texts = read_all(path)
            assert texts[-1] == big
            del texts
    finally:
        jpath.unlink()
        cpath.unlink()


# ---------------------------------------------------------------------------------------------
# Reading: errors


def test_malformed_and_non_object_json(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"text": "ok"}\n\n{"text": "unterminated\n[1, 2]\n')
    err = error_of(path)
    assert (err.reason, err.line) == ("malformed_json", 3)
    assert str(err).startswith(f"{path}:3: malformed JSON")
    path.write_bytes(b'{"text": "ok"}\n[1, 2]\n')
    err = error_of(path)
    assert (err.reason, err.line) == ("not_object", 2)
    assert f"{path.name}:2:" in str(err)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_missing_and_non_string_fields(tmp_path, fmt):
    rows = [{"text": "ok", "n": 1}, {"text": "ok2", "n": 2}, {"text": None, "n": 3}]
    path = write_input(tmp_path, fmt, rows)
    err = error_of(path)
    assert (err.reason, err.line, err.field) == ("non_string_field", 3, "text")
    assert str(err) == f"{path}:3: field 'text' is null, not a string"
    err = error_of(path, text_fields=("text", "title"))
    assert (err.reason, err.field) == ("missing_field", "title")
    assert "'title'" in str(err) and path.name in str(err)
    err = error_of(path, text_fields=("n",))
    assert (err.reason, err.field) == ("non_string_field", "n")
    if fmt == "jsonl":
        assert str(err) == f"{path}:1: field 'n' is a number, not a string"
        assert err.line == 1


def test_invalid_utf8_line_3(tmp_path):
    for name, data in [
        ("u.jsonl", b'{"text":"a"}\n{"text":"b"}\n{"text":"\xff\xfe"}\n'),
        ("u.csv", b'text\na\n"b\xc3\x28"\nc\n'),
    ]:
        path = tmp_path / name
        path.write_bytes(data)
        err = error_of(path)
        assert (err.reason, err.line) == ("undecodable", 3)
        assert str(err).startswith(f"{path}:3: ")
        report = SkipReport()
        assert read_all(path, on_error="skip", report=report)[1] == (
            ["a", "b"] if name.endswith("jsonl") else ["a", "c"]
        )
        assert report.counts == {"undecodable": 1}
    d = tmp_path / "dir"
    d.mkdir()
    (d / "bad.txt").write_bytes(b"ok\n\xff")
    err = error_of(d)
    assert (err.reason, err.line, err.path) == ("undecodable", None, str(d / "bad.txt"))


def test_duplicate_ids(tmp_path):
    a = write_input(tmp_path, "jsonl", DOCS[:2], name="a")
    b = write_input(tmp_path, "csv", DOCS[1:3], name="b")
    err = error_of([a, b], id_field="id")
    assert (err.reason, err.line, err.field) == ("duplicate_id", 2, "id")
    assert str(err) == f"{b}:2: field 'id': duplicate id 'b' (first seen at {a}:2)"
    report = SkipReport()
    assert read_all([a, b], id_field="id", on_error="skip", report=report) == (
        ["a", "b", "c"],
        TEXTS[:3],
    )
    assert report.to_dict() == {
        "total": 1,
        "by_reason": {"duplicate_id": 1},
        "examples": [str(err)],
    }


def test_empty_files_and_missing_paths(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n  \n")
    header_only = tmp_path / "h.csv"
    header_only.write_bytes(b"id,text\n")
    zero = tmp_path / "zero.parquet"
    pq.write_table(pa.table({"text": pa.array([], pa.string())}), zero)
    empty_dir = tmp_path / "emptydir"
    empty_dir.mkdir()
    good = write_input(tmp_path, "jsonl", DOCS[:1], name="good")
    for path in (empty, header_only, zero, empty_dir, tmp_path / "z.csv.gz"):
        if path.name == "z.csv.gz":
            path.write_bytes(gzip.compress(b""))
        err = error_of([good, path])
        assert (err.reason, err.path, err.line) == ("empty_file", str(path), None)
    report = SkipReport()
    paths = [empty, good, header_only, zero, empty_dir]
    assert read_all(paths, on_error="skip", report=report) == (["0"], TEXTS[:1])
    assert report.counts == {"empty_file": 4} and report.total == 4
    missing = tmp_path / "nope.jsonl"
    for on_error in ("fail", "skip"):
        with pytest.raises(InputError) as info:
            read_documents([good, missing], on_error=on_error)  # raised before iterating
        assert info.value.reason == "missing_path" and str(missing) in str(info.value)
    with pytest.raises(InputError):
        total_input_bytes([missing])


def test_csv_bad_rows(tmp_path):
    path = tmp_path / "rows.tsv"
    path.write_bytes(b"id\ttext\n1\tone\n2\ttwo\textra\n3\n\n4\tfour\n")
    err = error_of(path)
    assert (err.reason, err.line) == ("bad_row", 3)
    assert str(err) == f"{path}:3: expected 2 fields, found 3"
    report = SkipReport()
    assert read_all(path, id_field="id", on_error="skip", report=report) == (
        ["1", "4"],
        ["one", "four"],
    )
    assert report.counts == {"bad_row": 2}
    assert report.examples[1] == f"{path}:4: expected 2 fields, found 1"
    multi = tmp_path / "multi.csv"
    multi.write_bytes(b'text,n\n"a\nb\nc",1\nbad\n')
    err = error_of(multi)
    assert (err.reason, err.line) == ("bad_row", 5)
    nofield = tmp_path / "nofield.csv"
    nofield.write_bytes(b"body\nx\n")
    err = error_of(nofield)
    assert (err.reason, err.line, err.field) == ("missing_field", 1, "text")


def test_skip_mixed_errors_and_config(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b'{"text":"a"}\nnot json\n{"text":1}\n{"x":"y"}\n{"text":"b"}\n"s"\n')
    report = SkipReport()
    assert read_all(path, on_error="skip", report=report) == (["0", "1"], ["a", "b"])
    assert report.counts == {
        "malformed_json": 1,
        "non_string_field": 1,
        "missing_field": 1,
        "not_object": 1,
    }
    assert [e.split(": ")[0] for e in report.examples] == [f"{path}:{n}" for n in (2, 3, 4, 6)]
    with pytest.raises(ConfigError):
        read_documents(path, on_error="ignore")
    with pytest.raises(ConfigError):
        read_documents(path, chunk_size=0)
    with pytest.raises(ConfigError):
        read_documents(path, fmt="xml")
    with pytest.raises(InputError) as info:
        detect_format(tmp_path / "a.txt")
    assert info.value.reason == "unknown_format"
    assert detect_format("x.ndjson.zst") == "jsonl" and detect_format("x.pq") == "parquet"
    assert read_all(path.rename(tmp_path / "m.log"), fmt="jsonl", on_error="skip")[1] == ["a", "b"]


def test_determinism(tmp_path):
    paths = [write_input(tmp_path, f, name=f"d{f}") for f in ("jsonl", "csv", "parquet")]
    assert read_all(paths) == read_all(paths)
    assert read_all(paths)[1] == TEXTS * 3


# ---------------------------------------------------------------------------------------------
# write_table and write_json_atomic


def table_columns(n: int) -> dict:
    rng = np.random.default_rng(0)
    return {
        "id": np.asarray([f"doc{i}" for i in range(n)], dtype=object),
        "cluster": np.arange(n, dtype=np.int64) // 2,
        "similarity": rng.random(n).astype(np.float64),
        "flag": np.arange(n) % 3 == 0,
        "method": [("exact", "estimate")[i % 2] for i in range(n)],
    }


@pytest.mark.parametrize("n", [0, 5])
@pytest.mark.parametrize("fmt", OUTPUT_FORMATS)
def test_write_table(tmp_path, fmt, n):
    cols = table_columns(n)
    path = write_table(tmp_path / "out" / "clusters", cols, fmt)
    assert path == tmp_path / "out" / f"clusters.{fmt}"
    assert sorted(os.listdir(path.parent)) == [path.name]
    expect = [
        dict(zip(cols, row, strict=True))
        for row in zip(
            *[c.tolist() if isinstance(c, np.ndarray) else c for c in cols.values()], strict=True
        )
    ]
    if fmt == "parquet":
        table = pq.read_table(path)
        assert table.column_names == list(cols)
        assert table.schema.field("cluster").type == pa.int64()
        assert table.schema.field("id").type == pa.string()
        assert table.to_pylist() == expect
    elif fmt == "jsonl":
        lines = path.read_bytes().splitlines()
        assert [orjson.loads(x) for x in lines] == expect
    else:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        assert rows[0] == list(cols)
        assert rows[1:] == [
            [str(v).lower() if isinstance(v, bool) else str(v) for v in r.values()] for r in expect
        ]


def test_write_table_float32_jsonl(tmp_path):
    path = write_table(tmp_path / "p", {"s": np.array([0.8, 1.0], dtype=np.float32)}, "jsonl")
    assert path.read_bytes() == b'{"s":0.8}\n{"s":1.0}\n'


@pytest.mark.parametrize("fmt", OUTPUT_FORMATS)
def test_write_table_is_atomic(tmp_path, fmt):
    n = 150_000
    bad = ["fine"] * n
    bad[-1] = object()  # fails only after the first JSONL batches were written
    with pytest.raises(Exception):  # noqa: B017 - whatever the serialiser raises
        write_table(tmp_path / "t", {"x": np.arange(n), "y": bad}, fmt)
    assert os.listdir(tmp_path) == []
    (tmp_path / f"t.{fmt}").write_bytes(b"old")
    with pytest.raises(ConfigError):
        write_table(tmp_path / "t", {"x": np.arange(3), "y": ["a"]}, fmt)
    assert os.listdir(tmp_path) == [f"t.{fmt}"]
    assert (tmp_path / f"t.{fmt}").read_bytes() == b"old"


def test_write_json_atomic(tmp_path):
    path = write_json_atomic(
        tmp_path / "summary.json", {"a": np.int64(3), "p": tmp_path, "xs": [1.5, None]}
    )
    assert path.read_text() == (
        f'{{\n  "a": 3,\n  "p": "{tmp_path}",\n  "xs": [\n    1.5,\n    null\n  ]\n}}\n'
    )
    assert os.listdir(tmp_path) == ["summary.json"]


# ---------------------------------------------------------------------------------------------
# write_deduplicated


KEEP = np.array([True, False, True, False, True])


@pytest.mark.parametrize("compression", [None, "gz", "zst"])
def test_dedup_jsonl_byte_identical(tmp_path, compression):
    raw_lines = [
        b'{"text": "first",  "extra": [1, 2]}\r\n',
        b"\n",
        b'{"text":"second"}\n',
        b'{"text":"third"}\n',
        b'{ "text" : "fourth" }\n',
        b'{"text":"fifth"}',
    ]
    path = tmp_path / f"in.jsonl{suffix(compression)}"
    path.write_bytes(compress(b"".join(raw_lines), compression))
    out = write_deduplicated([path], KEEP, tmp_path / "out")
    assert out == [tmp_path / "out" / "in.jsonl"]
    assert out[0].read_bytes() == raw_lines[0] + raw_lines[3] + raw_lines[5]
    assert sorted(os.listdir(tmp_path / "out")) == ["in.jsonl"]


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_dedup_csv(tmp_path, fmt):
    path = write_input(tmp_path, fmt, compression="gz")
    out = write_deduplicated(path, KEEP, tmp_path / "out", id_field="id")
    assert out == [tmp_path / "out" / f"docs.{fmt}"]
    assert read_all(out, id_field="id") == (["a", "c", "e"], [TEXTS[0], TEXTS[2], TEXTS[4]])
    assert out[0].read_bytes() == csv_bytes(
        [DOCS[0], DOCS[2], DOCS[4]], delimiter="\t" if fmt == "tsv" else ","
    )


def test_dedup_parquet(tmp_path):
    rows = [dict(d, n=i) for i, d in enumerate(DOCS)] * 3
    rows = [dict(r, id=f"{r['id']}{i}") for i, r in enumerate(rows)]
    path = write_input(tmp_path, "parquet", rows)
    keep = np.arange(15) % 4 != 1
    out = write_deduplicated([path], keep, tmp_path / "out", chunk_size=4)
    table = pq.read_table(out[0])
    assert table.schema.equals(pq.read_schema(path), check_metadata=False)
    assert table.to_pylist() == [r for r, k in zip(rows, keep, strict=True) if k]


def test_dedup_directory_and_name_clash(tmp_path):
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    for name, text in [("a.txt", "A"), ("sub/b.txt", "B"), ("sub/c.txt", "C"), ("d.txt", "D")]:
        (root / name).write_text(text)
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    j1 = write_input(tmp_path / "x", "jsonl", DOCS[:2], name="same")
    j2 = write_input(tmp_path / "y", "jsonl", DOCS[2:4], name="same", compression="gz")
    keep = np.array([True, False, True, False, True, True, False, True])
    out = write_deduplicated([root, j1, j2], keep, tmp_path / "out")
    assert out == [tmp_path / "out" / n for n in ("corpus", "2-same.jsonl", "3-same.jsonl")]
    files = sorted(p.relative_to(out[0]).as_posix() for p in out[0].rglob("*") if p.is_file())
    assert files == ["a.txt", "sub/b.txt"]  # sorted: a.txt, d.txt, sub/b.txt, sub/c.txt
    assert (out[0] / "sub" / "b.txt").read_text() == "B"
    assert out[1].read_bytes() == jsonl_bytes(DOCS[:2])
    assert out[2].read_bytes() == jsonl_bytes(DOCS[3:4])
    assert sorted(os.listdir(tmp_path / "out")) == ["2-same.jsonl", "3-same.jsonl", "corpus"]
    # writing again replaces the directory
    out = write_deduplicated([root, j1, j2], ~keep, tmp_path / "out")
    files = sorted(p.relative_to(out[0]).as_posix() for p in out[0].rglob("*") if p.is_file())
    assert files == ["d.txt", "sub/c.txt"]
    assert sorted(os.listdir(tmp_path / "out")) == ["2-same.jsonl", "3-same.jsonl", "corpus"]


def test_dedup_skip_alignment_and_length_check(tmp_path):
    a = tmp_path / "a.jsonl"
    a.write_bytes(b'{"text":"0"}\nbroken\n{"text":"1"}\n{"text":null}\n{"text":"2"}\n')
    b = tmp_path / "b.csv"
    b.write_bytes(b"text,n\nthree,3\nbad\nfour,4\n")
    report = SkipReport()
    ids, texts = read_all([a, b], on_error="skip", report=report)
    assert (ids, texts) == (["0", "1", "2", "3", "4"], ["0", "1", "2", "three", "four"])
    assert report.total == 3
    keep = np.array([False, True, True, False, True])
    out = write_deduplicated([a, b], keep, tmp_path / "out", on_error="skip")
    assert out[0].read_bytes() == b'{"text":"1"}\n{"text":"2"}\n'
    assert out[1].read_bytes() == b"text,n\nfour,4\n"
    for wrong in (keep[:4], np.ones(6, dtype=bool)):
        with pytest.raises(ConfigError):
            write_deduplicated([a, b], wrong, tmp_path / "out2", on_error="skip")
        assert os.listdir(tmp_path / "out2") == []
    with pytest.raises(InputError):
        write_deduplicated([a, b], keep, tmp_path / "out3")  # on_error="fail"
    assert os.listdir(tmp_path / "out3") == []
    with pytest.raises(ConfigError):
        write_deduplicated([a, b], np.ones(5, dtype=np.int64), tmp_path / "out4")


def test_corrupt_compressed_input(tmp_path):
    data = gzip.compress(b'{"text":"a"}\n' * 10_000)
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    err = error_of(path)
    assert (err.reason, err.path) == ("unreadable", str(path))
    report = SkipReport()
    ids, _ = read_all(path, on_error="skip", report=report)
    assert report.counts == {"unreadable": 1} and len(ids) < 10_000


@pytest.mark.parametrize("compression", [None, "gz", "zst"])
def test_dedup_jsonl_copy_with_locations_equals_reparse(tmp_path, compression):
    """The fast path (kept JSONL lines copied by the line numbers of the first reading) writes
    exactly what parsing everything again writes: blank lines, a BOM, skipped bad lines, several
    sources, other formats in between."""
    a = tmp_path / f"a.jsonl{suffix(compression)}"
    a.write_bytes(
        compress(
            b'\xef\xbb\xbf{"text":"0"}\n\nbroken\n{"text":"1"}\r\n'
            b'{"text":null}\n{"text":"2"}\n\n{"text":"3"}',
            compression,
        )
    )
    b = tmp_path / "b.csv"
    b.write_bytes(b"text,n\nfour,4\nbad\nfive,5\n")
    c = tmp_path / "c.jsonl"
    c.write_bytes(b'{"text":"6"}\n{"text":"7"}\n{"text":"8"}\n')
    chunks = list(read_documents([a, b, c], on_error="skip", report=SkipReport(), chunk_size=2))
    locations = [x for ch in chunks for x in ch.locations]
    assert [x >> 40 for x in locations] == [0] * 4 + [1] * 2 + [2] * 3
    assert [x & ((1 << 40) - 1) for x in locations[:4]] == [1, 4, 6, 8]
    rng = np.random.default_rng(7)
    for _ in range(6):
        keep = rng.random(len(locations)) < 0.5
        slow = write_deduplicated([a, b, c], keep, tmp_path / "slow", on_error="skip")
        fast = write_deduplicated(
            [a, b, c], keep, tmp_path / "fast", on_error="skip", locations=np.array(locations)
        )
        assert [p.read_bytes() for p in fast] == [p.read_bytes() for p in slow]
    with pytest.raises(ConfigError, match="locations"):
        write_deduplicated(
            [a, b, c], keep, tmp_path / "bad", on_error="skip", locations=np.array(locations[:-1])
        )


# ---------------------------------------------------------------------------------------------
# One record path: paths, bytes and file objects; skip reasons; streams


def outcome(stream) -> list[tuple]:
    """Every record and error of a stream, in order, as comparable tuples."""
    out = []
    for item in stream.with_errors():
        if isinstance(item, InputError):
            out.append(
                ("error", str(item.reason), item.line, item.field, str(item), item.whole_file)
            )
        else:
            out.append(("record", item.index, item.id, item.text, item.line, item.raw))
    return out


def three_ways(tmp_path: Path, name: str, data: bytes, options: ReadOptions) -> list:
    """What a path, the bytes and a file object of the same file give (named alike)."""
    path = tmp_path / name
    path.write_bytes(data)
    got = []
    for source in (path, data, bytearray(data), memoryview(data), io.BytesIO(data)):
        report = SkipReport()
        items = outcome(
            record_stream(source, options, report, name=None if source is path else str(path))
        )
        got.append((items, report.to_dict()))
    with open(path, "rb") as f:
        report = SkipReport()
        got.append((outcome(record_stream(f, options, report)), report.to_dict()))
    return got


json_value = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False)
    | st.text(max_size=3)
)
text_st = st.text(st.sampled_from('ab é\t,"\n'), max_size=6)
id_st = st.sampled_from(["a", "b", "", "c"]) | st.integers(0, 3) | json_value
jsonl_line = st.one_of(
    st.builds(lambda i, t: orjson.dumps({"id": i, "text": t}), id_st, text_st),
    st.builds(lambda t: orjson.dumps({"text": t}), text_st),  # no id
    st.builds(lambda i: orjson.dumps({"id": i}), id_st),  # no text
    st.builds(lambda v: orjson.dumps({"id": "x", "text": v}), json_value),
    st.builds(lambda v: orjson.dumps(v), json_value | st.lists(json_value, max_size=2)),
    st.sampled_from(
        [
            b"",
            b"  ",
            b"{broken",
            b'{"text": "caf\xe9"}',
            b"\xef\xbb\xbf{}",
            b'{"text": "\\ud800"}',
            b'{"text": "ok"}\r',
        ]
    ),
)
option_st = st.builds(
    lambda id_field, skip_empty, limit, default: ReadOptions(
        id_field=id_field,
        on_error="skip",
        skip_empty=skip_empty,
        max_text_bytes=limit,
        default_id=default,
    ),
    st.sampled_from([None, "id"]),
    st.booleans(),
    st.sampled_from([None, 1, 4]),
    st.sampled_from([None, "{line}", "{name}#{line}"]),
)
same_sources = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@same_sources
@given(st.lists(jsonl_line, max_size=8), option_st, st.booleans())
def test_jsonl_same_from_path_bytes_and_file_object(tmp_path, lines, options, final_newline):
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    got = three_ways(tmp_path, "in.jsonl", data, options)
    assert all(g == got[0] for g in got[1:])
    items, report = got[0]
    assert report["total"] == sum(1 for x in items if x[0] == "error")
    assert set(report["by_reason"]) <= set(SkipReason)


csv_cell = st.text(st.sampled_from('ab é,"\n\t'), max_size=5)
csv_line = st.one_of(
    st.builds(lambda c: ("row", c), st.tuples(csv_cell, csv_cell)),
    st.builds(lambda c: ("row", c), st.lists(csv_cell, min_size=1, max_size=3).map(tuple)),
    st.sampled_from(
        [("raw", b""), ("raw", b"a\xff,b"), ("raw", b'"open,quote'), ("raw", b"x,y\r")]
    ),
)


def csv_data(header: list[str], lines: list, delimiter: str) -> bytes:
    out = []
    for kind, value in [("row", tuple(header))] + lines:
        if kind == "raw":
            out.append(value + b"\n")
        else:
            buf = io.StringIO()
            csv.writer(buf, delimiter=delimiter, lineterminator="\n").writerow(value)
            out.append(buf.getvalue().encode("utf-8"))
    return b"".join(out)


@same_sources
@given(
    st.sampled_from([["id", "text"], ["text", "id"], ["title"], ["text"]]),
    st.lists(csv_line, max_size=8),
    option_st,
    st.sampled_from(["csv", "tsv"]),
)
def test_csv_same_from_path_bytes_and_file_object(tmp_path, header, lines, options, fmt):
    data = csv_data(header, lines, "\t" if fmt == "tsv" else ",")
    got = three_ways(tmp_path, f"in.{fmt}", data, options)
    assert all(g == got[0] for g in got[1:])


def test_three_sources_known_errors(tmp_path):
    data = (
        b'{"id": "a", "text": "one"}\n{"id": "b", "text": \n[1]\n{"id": "a", "text": "x"}\n'
        b'{"text": 3, "id": "c"}\n{"id": "d", "text": "caf\xe9"}\n\n{"id": "e", "text": " "}\n'
    )
    options = ReadOptions(id_field="id", on_error="skip", skip_empty=True)
    for items, report in three_ways(tmp_path, "k.jsonl", data, options):
        assert [(x[1], x[2]) for x in items if x[0] == "error"] == [
            ("malformed_json", 2),
            ("not_object", 3),
            ("duplicate_id", 4),
            ("non_string_field", 5),
            ("undecodable", 6),
            ("empty_text", 8),
        ]
        assert [x[2] for x in items if x[0] == "record"] == ["a"]
        assert report["by_reason"] == {
            "duplicate_id": 1,
            "empty_text": 1,
            "malformed_json": 1,
            "non_string_field": 1,
            "not_object": 1,
            "undecodable": 1,
        }
    data = b'id,text\n1,"a\nb"\n2\n3,c\n'
    for items, report in three_ways(
        tmp_path, "k.csv", data, ReadOptions(id_field="id", on_error="skip", default_id="{line}")
    ):
        assert [x[1:5] for x in items if x[0] == "record"] == [
            (0, "1", "a\nb", 2),
            (1, "3", "c", 5),
        ]
        assert report["by_reason"] == {"bad_row": 1}


def test_parquet_from_bytes_and_file_object(tmp_path):
    path = write_input(tmp_path, "parquet")
    data = path.read_bytes()
    want = read_all(path, id_field="id")
    assert read_all(data, id_field="id", fmt="parquet") == want
    assert read_all(data, id_field="id", name="x.parquet") == want
    with open(path, "rb") as f:
        assert read_all(f, id_field="id") == want
    err = error_of(b"not parquet", fmt="parquet", name="broken")
    assert (err.reason, err.path, err.whole_file) == ("unreadable", "broken", True)


def test_bytes_and_file_object_names_and_formats(tmp_path):
    data = b'{"text": "a"}\n{"text": 1}\n'
    err = error_of(data)  # found a JSON line by its first bytes; named <bytes>
    assert str(err) == "<bytes>:2: field 'text' is a number, not a string"
    err = error_of(io.BytesIO(data), fmt="jsonl")
    assert str(err).startswith("<stream>:2: ")
    err = error_of(io.BytesIO(data), fmt="jsonl", name="<stdin>")
    assert str(err).startswith("<stdin>:2: ")
    assert read_all(gzip.compress(data), name="up.jsonl.gz", on_error="skip")[1] == ["a"]
    with pytest.raises(InputError) as info:
        read_documents(b"a,b\n", name="upload")  # no suffix, and not a JSON line
    assert info.value.reason == "unknown_format"
    with pytest.raises(InputError) as info:
        read_documents(b"x", fmt="textdir")
    assert info.value.reason == "not_a_directory"
    with pytest.raises(ConfigError, match="binary file object"):
        read_documents(io.StringIO("{}"), fmt="jsonl")
    with pytest.raises(ConfigError, match="name="):
        read_documents(tmp_path / "a.jsonl", name="a")
    err = error_of(b"", fmt="csv")
    assert (err.reason, err.whole_file) == ("empty_file", True)


def test_detect_format_one_place(tmp_path):
    assert detect_format(tmp_path) == "textdir"
    assert detect_format(tmp_path / "a.CSV.gz") == "csv"
    assert detect_format(name="a.json") == "json"
    assert detect_format(name="a.json", head=b' \n{"a": 1}') == "jsonl"
    assert detect_format(name="a.json", head=b'\xef\xbb\xbf [{"a": 1}]') == "json"
    (tmp_path / "l.json").write_text('{"a": 1}\n')
    (tmp_path / "a.json.gz").write_bytes(__import__("gzip").compress(b'[{"a": 1}]'))
    assert detect_format(tmp_path / "l.json") == "jsonl"
    assert detect_format(tmp_path / "a.json.gz") == "json"
    assert detect_format(name="../x/up.ndjson", content_type="text/csv") == "jsonl"
    assert detect_format(name="up", content_type="text/csv; charset=utf-8") == "csv"
    assert detect_format(name="up", content_type="application/x-ndjson") == "jsonl"
    assert detect_format(name="up", head=b'\xef\xbb\xbf \n{"a": 1}') == "jsonl"
    assert detect_format(name="", head=b"{") == "jsonl"
    for kwargs in (
        {"name": "up.txt", "head": b"{"},
        {"name": "up", "head": b"a,b"},
        {"name": "up", "content_type": "application/pdf"},
        {},
    ):
        with pytest.raises(InputError) as info:
            detect_format(**kwargs)
        assert info.value.reason == "unknown_format"


def test_text_rules_and_default_ids(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(
        b'{"text": "  "}\n{"text": "\xc3\xa9\xc3\xa9"}\n{"text": "abc", "id": 7}\n{"text": "ok"}\n'
    )
    # defaults: every record, running numbers; a JSON line without the id field is bad
    assert read_all(path) == (["0", "1", "2", "3"], ["  ", "éé", "abc", "ok"])
    assert error_of(path, id_field="id").reason == "missing_field"
    # empty texts are left out (and counted) even with on_error="fail"; a long one fails
    report = SkipReport()
    opts = ReadOptions(skip_empty=True, max_text_bytes=3, default_id="{line}")
    with pytest.raises(InputError) as info:
        list(record_stream(path, opts, report))
    assert (info.value.reason, info.value.line, str(info.value)) == (
        "text_too_large",
        2,
        f"{path}:2: field 'text' is 4 bytes; the limit is 3",
    )
    assert report.counts == {"empty_text": 1}
    opts = ReadOptions(
        id_field="id", skip_empty=True, max_text_bytes=3, on_error="skip", default_id="r{line}"
    )
    report = SkipReport()
    assert [(r.id, r.text) for r in record_stream(path, opts, report)] == [
        ("7", "abc"),
        ("r4", "ok"),
    ]
    assert report.counts == {"empty_text": 1, "text_too_large": 1}
    # several text fields: the message speaks of the text
    two = tmp_path / "two.jsonl"
    two.write_bytes(b'{"a": " ", "b": ""}\n')
    report = SkipReport()
    assert read_all(
        two, options=ReadOptions(text_fields=("a", "b"), skip_empty=True), report=report
    ) == ([], [])
    assert report.examples == [f"{two}:1: the text is empty"]
    # template ids take part in the duplicate check unless unique_ids=False
    dup = tmp_path / "dup.jsonl"
    dup.write_bytes(b'{"text": "a"}\n{"text": "b", "id": "1"}\n')
    err = error_of(dup, options=ReadOptions(id_field="id", default_id="{line}"))
    assert err.reason == "duplicate_id"
    assert read_all(dup, options=ReadOptions(id_field="id", default_id="{line}", unique_ids=False))[
        0
    ] == ["1", "1"]
    for bad in (
        {"skip_empty": 1},
        {"max_text_bytes": 0},
        {"max_text_bytes": True},
        {"default_id": "x"},
        {"default_id": "{line}{other}"},
        {"unique_ids": None},
    ):
        with pytest.raises(ConfigError):
            ReadOptions(**bad)


def test_folder_text_rules(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_text("alpha")
    (root / "b.txt").write_text(" \n")
    report = SkipReport()
    assert read_all(root, options=ReadOptions(skip_empty=True, on_error="skip"), report=report) == (
        ["a.txt"],
        ["alpha"],
    )
    assert report.examples == [f"{root / 'b.txt'}: the text is empty"]


def test_stream_from_a_pipe_yields_each_line_as_it_arrives():
    """Like ``neardup stream`` on stdin: a record comes out before the writer has written the
    next line (let alone closed the pipe); bad lines come out as errors in place."""
    import threading

    r, w = os.pipe()
    first_seen = threading.Event()
    written_after = []

    def writer() -> None:
        with os.fdopen(w, "wb", buffering=0) as f:
            f.write(b'{"text": "one"}\n')
            # wait for the reader to yield the first record before writing anything else
            written_after.append(first_seen.wait(timeout=20))
            f.write(b'not json\n{"id": 5, "text": "two"}\n\n{"text": 3}\n')

    t = threading.Thread(target=writer)
    t.start()
    options = ReadOptions(
        format="jsonl", id_field="id", on_error="skip", default_id="stdin:{line}", unique_ids=False
    )
    got = []
    with os.fdopen(r, "rb") as stdin:
        stream = record_stream(stdin, options, name="<stdin>")
        for item in stream.with_errors():
            if not got:
                first_seen.set()
            got.append(
                (str(item.reason), str(item))
                if isinstance(item, InputError)
                else (item.id, item.text)
            )
    t.join()
    assert written_after == [True]
    assert got == [
        ("stdin:1", "one"),
        ("malformed_json", got[1][1]),
        ("5", "two"),
        ("non_string_field", "<stdin>:5: field 'text' is a number, not a string"),
    ]
    assert got[1][1].startswith("<stdin>:2: malformed JSON")
    # an empty stream is an empty file, an error the caller may ignore
    r, w = os.pipe()
    os.close(w)
    with os.fdopen(r, "rb") as stdin:
        items = list(record_stream(stdin, options, name="<stdin>").with_errors())
    assert [(e.reason, e.whole_file) for e in items] == [("empty_file", True)]


def test_skip_reason():
    assert SkipReason.MALFORMED_JSON == "malformed_json"
    assert f"{SkipReason.BAD_ROW}" == str(SkipReason.BAD_ROW) == "bad_row"
    assert orjson.dumps({"r": SkipReason.BAD_ID}) == b'{"r":"bad_id"}'
    assert json_dumps(SkipReason.BAD_ID) == '"bad_id"'
    assert all(r.description and r.value == r for r in SkipReason)
    assert len({r.value for r in SkipReason}) == len(SkipReason)
    err = InputError("x", reason="not_object")
    assert err.reason is SkipReason.NOT_OBJECT
    assert InputError("x", reason="bad_title").reason == "bad_title"  # offers keep their own
    assert InputError("x", reason=SkipReason.BAD_ID, path="f", line=2).detail == "x"
    report = SkipReport()
    report.add(err)
    assert type(next(iter(report.counts))) is str  # JSON writers want plain strings


def reasons_used(path: Path) -> tuple[list[str], list[str]]:
    """In a source file: every ``reason=`` of a call and every ``x.reason is/== ...`` (as
    source text), and every ``SkipReason.NAME`` named anywhere."""
    import ast

    given, named = [], []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            given += [ast.unparse(k.value) for k in node.keywords if k.arg == "reason"]
        elif (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Attribute)
            and node.left.attr == "reason"
        ):
            given += [ast.unparse(c) for c in node.comparators]
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "SkipReason"
        ):
            named.append(node.attr)
    return given, named


def test_every_reason_of_io_and_the_service_is_a_skip_reason():
    src = Path(neardup.__file__).parent
    # every module but the product offers' loaders, their job and the readers of their files
    # and truth, which have reasons of their own (bad_title, malformed_csv, bad_pair...)
    own = {src / "io" / "files.py", src / "evaluate" / "truth.py", src / "jobs" / "products.py"}
    files = sorted(f for f in src.rglob("*.py") if "products" not in f.parts and f not in own)
    members = set(SkipReason.__members__)
    seen = set()
    for f in files:
        given, named = reasons_used(f)
        for expr in given:  # a member, or a helper's parameter passed on
            assert expr == "reason" or expr.removeprefix("SkipReason.") in members, (f, expr)
        assert set(named) <= members, (f, set(named) - members)
        seen |= set(named)
    # every reason the readers and the service give, but the path checks of the job
    assert members - seen == set()
