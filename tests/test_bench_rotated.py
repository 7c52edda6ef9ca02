"""Tests of the rotated benchmark corpus (benchmarks/rotated_corpus.py) on tiny inputs."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest

import neardup
from neardup.synth import make_corpus

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "rotated_corpus.py"


def _load_module():
    spec = importlib.util.spec_from_file_location("neardup_bench_rotated", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


rot = _load_module()


def _write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))


def _read_jsonl(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_rotation_shifts_latin_letters_only():
    assert rot.rotate("abc xyz", 1) == "bcd yza"
    assert rot.rotate("Hello, World! Zz", 3) == "Khoor, Zruog! Cc"
    assert rot.rotate("Hello", 0) == "Hello"
    assert rot.rotate("Hello", 26) == "Hello"
    # accented, Greek and Cyrillic letters, digits and punctuation are left as they are
    assert rot.rotate("café ß Ωμέγα Привет 42 é", 2) == "eché ß Ωμέγα Привет 42 é"


def test_jsonl_copies_ids_and_truth(tmp_path):
    src = tmp_path / "c.jsonl"
    _write_jsonl(
        src,
        [
            {"id": "d0", "text": "Abc xyz ünï"},
            {"id": 7, "text": 'Zebra\n"quote"'},
        ],
    )
    Path(f"{src}.truth.jsonl").write_bytes(
        orjson.dumps({"id": 7, "source": "d0", "kind": "exact", "edit_rate": 0.0}) + b"\n"
    )
    out = tmp_path / "r.jsonl"
    report = rot.write_rotated(src, out, copies=3)
    assert report["documents"] == 6 and report["bytes"] == out.stat().st_size
    got = _read_jsonl(out)
    assert [r["id"] for r in got] == ["0:d0", "0:7", "1:d0", "1:7", "2:d0", "2:7"]
    assert [r["text"] for r in got] == [
        "Abc xyz ünï",
        'Zebra\n"quote"',
        "Bcd yza üoï",
        'Afcsb\n"rvpuf"',
        "Cde zab üpï",
        'Bgdtc\n"swqvg"',
    ]
    truth = _read_jsonl(Path(f"{out}.truth.jsonl"))
    assert [(t["id"], t["source"], t["kind"]) for t in truth] == [
        ("0:7", "0:d0", "exact"),
        ("1:7", "1:d0", "exact"),
        ("2:7", "2:d0", "exact"),
    ]
    assert report["truth_records"] == 3


def test_parquet_shards_of_the_given_size(tmp_path):
    src = tmp_path / "c.jsonl"
    _write_jsonl(src, [{"id": f"d{i}", "text": f"text number {i}"} for i in range(7)])
    out = tmp_path / "shards"
    report = rot.write_rotated(
        src, out, copies=4, fmt="parquet", shard_docs=10, row_group=4, chunk_docs=3
    )
    shards = sorted(out.glob("*.parquet"))
    assert [s.name for s in shards] == [f"part-0000{i}.parquet" for i in range(3)]
    assert report["documents"] == 28 and report["files"] == 3
    sizes = [pq.ParquetFile(s).metadata.num_rows for s in shards]
    assert sizes == [10, 10, 8]
    assert all(
        pq.ParquetFile(s).metadata.row_group(g).num_rows <= 4
        for s in shards
        for g in range(pq.ParquetFile(s).metadata.num_row_groups)
    )
    rows = [r for s in shards for r in pq.read_table(s).to_pylist()]
    assert [r["id"] for r in rows] == [f"{k}:d{i}" for k in range(4) for i in range(7)]
    assert rows[7 * 3 + 2]["text"] == rot.rotate("text number 2", 3)
    assert pq.read_schema(shards[0]).names == ["id", "text"]


def test_dedup_finds_k_times_the_pairs(tmp_path):
    texts, _ = make_corpus(300, dup_fraction=0.3, seed=3)
    src = tmp_path / "c.jsonl"
    _write_jsonl(src, [{"id": f"d{i}", "text": t} for i, t in enumerate(texts)])
    base = neardup.dedup(texts, [f"d{i}" for i in range(len(texts))])
    base_pairs = {(a, b) for a, b in zip(*_pair_ids(base), strict=True)}
    assert base_pairs
    k = 4
    out = tmp_path / "r.jsonl"
    rot.write_rotated(src, out, copies=k)
    rows = _read_jsonl(out)
    result = neardup.dedup([r["text"] for r in rows], [r["id"] for r in rows])
    pairs = {(a, b) for a, b in zip(*_pair_ids(result), strict=True)}
    assert len(pairs) == k * len(base_pairs)
    want = {tuple(sorted((f"{c}:{a}", f"{c}:{b}"))) for c in range(k) for a, b in base_pairs}
    assert {tuple(sorted(p)) for p in pairs} == want


def _pair_ids(result):
    ids = result.ids
    left, right = result.pairs.left.tolist(), result.pairs.right.tolist()
    return [ids[i] for i in left], [ids[j] for j in right]


def test_command_line_reports_and_rejects_bad_input(tmp_path):
    src = tmp_path / "c.jsonl"
    src.write_bytes(b'{"id": "a", "text": "x"}\n{"id": "b"}\n')
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(src), "--out", str(tmp_path / "o.jsonl")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert f"{src}, line 2: expected an object with id and text" in proc.stderr
    src.write_bytes(b'{"id": "a", "text": "x"}\n')
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            str(src),
            "--out",
            str(tmp_path / "o.jsonl"),
            "--copies",
            "2",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    report = orjson.loads(proc.stdout)
    assert report["documents"] == 2 and report["copies"] == 2 and "seconds" in report
    with pytest.raises(ValueError, match="copies must be in 1..26"):
        rot.write_rotated(src, tmp_path / "x.jsonl", copies=27)
