"""A folder of Parquet shards (as Spark and ``datasets`` write them) read as its shards in path
order, and its deduplicated corpus written as shards of the same layout."""

from __future__ import annotations

import os

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neardup.cli import main
from neardup.errors import ConfigError, InputError
from neardup.io import ReadOptions, record_stream, total_input_bytes, write_deduplicated
from neardup.io.readers import parquet_shards
from neardup.io.writers import deduplicated_names, write_deduplicated_part
from neardup.synth import make_corpus

# the shards of the folder in reading order (sorted by path), with the rows each holds
LAYOUT = [
    ("part-00000.parquet", 0, 90),
    ("part-00001.parq", 90, 170),
    ("year=2024/part-0.pq", 170, 240),
]


@pytest.fixture
def shards(tmp_path):
    texts, _ = make_corpus(240, dup_fraction=0.35, seed=5)
    ids = [f"doc{i}" for i in range(len(texts))]
    root = tmp_path / "corpus"
    for rel, a, b in LAYOUT:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        table = pa.table(
            {"id": ids[a:b], "text": texts[a:b], "n": pa.array(range(a, b), pa.int32())}
        )
        pq.write_table(table, root / rel, row_group_size=32)
    # what Spark and Hadoop leave next to the shards
    (root / "_SUCCESS").write_bytes(b"")
    (root / ".part-00000.parquet.crc").write_bytes(b"\x00\x01")
    (root / "_temporary" / "0").mkdir(parents=True)
    (root / "_temporary" / "0" / "part-9.parquet").write_bytes(b"not parquet")
    jsonl = tmp_path / "all.jsonl"
    jsonl.write_bytes(
        b"".join(
            orjson.dumps({"id": i, "text": t, "n": k}) + b"\n"
            for k, (i, t) in enumerate(zip(ids, texts, strict=True))
        )
    )
    return root, jsonl, ids


def test_a_folder_of_shards_is_read_as_its_shards_in_order(shards):
    root, _, ids = shards
    assert parquet_shards(root) == [root / rel for rel, _, _ in LAYOUT]
    stream = record_stream(root, ReadOptions(id_field="id"))
    assert [s.fmt for s in stream.sources] == ["parquet"] * 3
    assert [r.id for r in stream] == ids
    assert total_input_bytes(root) == sum((root / rel).stat().st_size for rel, _, _ in LAYOUT)
    names = deduplicated_names(root)
    assert names == [(f"corpus/{rel}", "parquet") for rel, _, _ in LAYOUT]
    # given as the format, or a folder of text files, as before
    assert [r.id for r in record_stream(root, ReadOptions(format="parquet", id_field="id"))] == ids
    assert parquet_shards(root / "part-00000.parquet") is None


def test_a_folder_of_text_files_is_unchanged(tmp_path):
    root = tmp_path / "texts"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha")
    (root / "_SUCCESS").write_text("read as a text as before")
    (root / "sub" / "b.txt").write_text("beta")
    assert parquet_shards(root) is None
    stream = record_stream(root)
    assert [s.fmt for s in stream.sources] == ["textdir"]
    assert [(r.id, r.text) for r in stream] == [
        ("_SUCCESS", "read as a text as before"),
        ("a.txt", "alpha"),
        ("sub/b.txt", "beta"),
    ]
    with pytest.raises(InputError, match="no Parquet file"):
        record_stream(root, ReadOptions(format="parquet"))


def test_parquet_and_other_files_in_one_folder_is_an_error(shards):
    root, _, _ = shards
    (root / "year=2024" / "notes.txt").write_text("odd")
    with pytest.raises(InputError) as e:
        record_stream(root)
    assert str(root / "year=2024" / "notes.txt") in str(e.value)
    assert "Parquet shards" in str(e.value)
    # read as text files when asked to
    assert record_stream(root, ReadOptions(format="textdir")).sources[0].fmt == "textdir"


def test_dedup_of_the_shards_is_that_of_the_same_records_in_one_file(shards, tmp_path):
    root, jsonl, ids = shards
    assert main(["dedup", str(root), "-o", str(tmp_path / "a"), "--quiet"]) == 0
    assert main(["dedup", str(jsonl), "-o", str(tmp_path / "b"), "--quiet"]) == 0
    for table in ("clusters", "pairs"):
        a = pq.read_table(tmp_path / "a" / f"{table}.parquet")
        b = pq.read_table(tmp_path / "b" / f"{table}.parquet")
        assert a.equals(b), table
    assert pq.read_table(tmp_path / "a" / "pairs.parquet").num_rows > 0
    clusters = pq.read_table(tmp_path / "a" / "clusters.parquet").to_pylist()
    kept = {c["id"] for c in clusters if c["id"] == c["representative"]}
    out = tmp_path / "a" / "deduplicated" / "corpus"
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert written == sorted(rel for rel, _, _ in LAYOUT)
    kept_jsonl = [
        orjson.loads(x)
        for x in (tmp_path / "b" / "deduplicated" / "all.jsonl").read_bytes().splitlines()
    ]
    assert 0 < len(kept_jsonl) < len(ids)
    rows = []
    for rel, a, b in LAYOUT:
        t = pq.read_table(out / rel)
        assert t.schema.equals(pq.read_schema(root / rel), check_metadata=False)
        assert all(a <= r["n"] < b for r in t.to_pylist())  # each record in its own shard
        rows.extend(t.to_pylist())
    assert rows == kept_jsonl
    assert {r["id"] for r in rows} == kept
    summary = orjson.loads((tmp_path / "a" / "summary.json").read_bytes())
    assert summary["outputs"]["deduplicated"] == [str(out / rel) for rel, _, _ in LAYOUT]
    # run again: the shards are replaced
    assert main(["dedup", str(root), "-o", str(tmp_path / "a"), "--quiet"]) == 0
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == written


def test_write_deduplicated_names_shards_and_clashes(shards, tmp_path):
    root, jsonl, _ = shards
    other = tmp_path / "x" / "corpus"
    other.mkdir(parents=True)
    pq.write_table(
        pa.table({"id": ["z1", "z2"], "text": ["one text", "another"]}), other / "p.parquet"
    )
    keep = np.ones(240 + 2 + 240, dtype=bool)
    keep[::3] = False
    out = write_deduplicated([root, other, jsonl], keep, tmp_path / "out")
    assert out == [
        tmp_path / "out" / n
        for n in (
            "1-corpus/part-00000.parquet",
            "1-corpus/part-00001.parq",
            "1-corpus/year=2024/part-0.pq",
            "2-corpus/p.parquet",
            "all.jsonl",
        )
    ]
    assert [r["id"] for r in pq.read_table(out[3]).to_pylist()] == ["z2"]
    assert sorted(os.listdir(tmp_path / "out")) == ["1-corpus", "2-corpus", "all.jsonl"]
    with pytest.raises(ConfigError, match="folder of 3 Parquet shards"):
        write_deduplicated_part(root, keep[:240], tmp_path / "part", options=ReadOptions())
