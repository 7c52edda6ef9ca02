"""Where a run's ids come from: the field ``id`` when every record has one, row numbers
otherwise, a folder's file names, or the field given; the same in ``dedup_files``, the Dask
engine and ``neardup index add``, on JSONL (both read paths), CSV, Parquet, folders and mixed
inputs."""

from __future__ import annotations

import json

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neardup.cli import main
from neardup.errors import InputError
from neardup.io import IdInfo, ReadOptions, read_documents
from neardup.jobs.dedup import dedup_files

TEXTS = [f"post number {i} about the harbour and the new cycle path" for i in range(12)]


def _jsonl(path, records):
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _csv(path, rows, header):
    lines = [",".join(header)] + [",".join(str(x) for x in r) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def _parquet(path, cols):
    pq.write_table(pa.table(cols), path)
    return path


def _folder(path, n):
    path.mkdir()
    for i in range(n):
        (path / f"f{i}.txt").write_text(TEXTS[i])
    return path


def _ids(out):
    return pq.read_table(out / "clusters.parquet").column("id").to_pylist()


def _run(paths, out, **kw):
    s = dedup_files(paths, out, **kw)
    return s, _ids(out)


def _read(paths, arrow, **kw):
    info = IdInfo()
    ids = []
    for chunk in read_documents(
        paths, options=ReadOptions(**kw), arrow=arrow, ids=info, chunk_size=5
    ):
        ids += chunk.ids
    return ids, info


@pytest.mark.parametrize("arrow", [False, True])
def test_jsonl_every_record_has_an_id(tmp_path, arrow):
    p = _jsonl(tmp_path / "a.jsonl", [{"id": f"d{i}", "text": t} for i, t in enumerate(TEXTS)])
    ids, info = _read([p], arrow, detect_id="id")
    assert ids == [f"d{i}" for i in range(12)]
    assert info.to_dict() == {"from": "field", "field": "id", "detected": True}
    s, got = _run([p], tmp_path / "out")
    assert got == ids and s["ids"]["from"] == "field" and s["ids"]["detected"]


@pytest.mark.parametrize("arrow", [False, True])
@pytest.mark.parametrize("where", [0, 7, 11])
def test_jsonl_a_record_without_id_means_row_numbers(tmp_path, arrow, where):
    recs = [{"id": i * 10, "text": t} for i, t in enumerate(TEXTS)]
    del recs[where]["id"]
    p = _jsonl(tmp_path / "a.jsonl", recs)
    ids, info = _read([p], arrow, detect_id="id")
    # the ids given before the record without one become row numbers as well
    info.fix(ids, [1 << 40 | k for k in range(len(ids))])
    assert ids == [str(i) for i in range(12)]
    assert info.to_dict() == {
        "from": "row numbers",
        "field": None,
        "detected": False,
        "missing": f"no field 'id' at {p}:{where + 1}",
    }
    s, got = _run([p], tmp_path / "out")
    assert got == [str(i) for i in range(12)]
    assert s["ids"]["missing"] == f"no field 'id' at {p}:{where + 1}"


@pytest.mark.parametrize("bad", [None, 1.5, True, ["x"]])
def test_an_id_that_is_no_id_means_row_numbers(tmp_path, bad):
    recs = [{"id": f"d{i}", "text": t} for i, t in enumerate(TEXTS)]
    recs[4]["id"] = bad
    p = _jsonl(tmp_path / "a.jsonl", recs)
    s, got = _run([p], tmp_path / "out")
    assert got == [str(i) for i in range(12)] and s["ids"]["from"] == "row numbers"
    # given explicitly, the same field is an error naming the line
    with pytest.raises(InputError, match=r"a\.jsonl:5"):
        dedup_files([p], tmp_path / "out2", id_field="id")


def test_repeated_detected_ids_are_an_error(tmp_path):
    recs = [{"id": f"d{i % 9}", "text": t} for i, t in enumerate(TEXTS)]
    p = _jsonl(tmp_path / "a.jsonl", recs)
    for on_error in ("fail", "skip"):
        with pytest.raises(InputError) as e:
            dedup_files([p], tmp_path / "out", on_error=on_error)
        msg = str(e.value)
        assert f"{p}:10" in msg and f"first at {p}:1" in msg and "'d0'" in msg
        assert "--id-field ''" in msg
        assert not (tmp_path / "out" / "summary.json").exists()
    # row numbers on request; a repeat followed by a record without the field: row numbers
    s, got = _run([p], tmp_path / "rows", id_field="")
    assert got == [str(i) for i in range(12)] and s["ids"]["from"] == "row numbers"
    q = _jsonl(tmp_path / "b.jsonl", recs + [{"text": "no id here at all, a post"}])
    s, got = _run([q], tmp_path / "fallback")
    assert got == [str(i) for i in range(13)]


def test_explicit_field_and_row_numbers(tmp_path):
    p = _jsonl(
        tmp_path / "a.jsonl",
        [{"id": f"d{i}", "key": f"k{i}", "text": t} for i, t in enumerate(TEXTS)],
    )
    s, got = _run([p], tmp_path / "key", id_field="key")
    assert got == [f"k{i}" for i in range(12)]
    assert s["ids"] == {"from": "field", "field": "key", "detected": False}
    s, got = _run([p], tmp_path / "rows", id_field="")
    assert got == [str(i) for i in range(12)]
    assert s["ids"] == {"from": "row numbers", "field": None, "detected": False}


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_csv_and_parquet(tmp_path, kind):
    def make(name, with_id, nulls=False):
        if kind == "csv":
            header = ["id", "text"] if with_id else ["text"]
            rows = [([f"r{i}"] if with_id else []) + [t] for i, t in enumerate(TEXTS)]
            return _csv(tmp_path / f"{name}.csv", rows, header)
        cols = {"text": TEXTS}
        if with_id:
            cols["id"] = [None if nulls and i == 3 else i + 100 for i in range(12)]
        return _parquet(tmp_path / f"{name}.parquet", cols)

    s, got = _run([make("a", True)], tmp_path / "a")
    want = [f"r{i}" for i in range(12)] if kind == "csv" else [str(i + 100) for i in range(12)]
    assert got == want and s["ids"]["from"] == "field"
    s, got = _run([make("b", False)], tmp_path / "b")
    assert got == [str(i) for i in range(12)] and s["ids"]["from"] == "row numbers"
    # two files, the second without the column: row numbers for both
    s, got = _run([make("c", True), make("d", False)], tmp_path / "cd")
    assert got == [str(i) for i in range(24)]
    if kind == "parquet":
        s, got = _run([make("e", True, nulls=True)], tmp_path / "e")
        assert got == [str(i) for i in range(12)]
        assert s["ids"]["missing"] == f"no field 'id' at {tmp_path / 'e.parquet'}: row 4"


def test_a_parquet_id_column_of_floats_is_no_id(tmp_path):
    p = _parquet(tmp_path / "a.parquet", {"text": TEXTS, "id": [float(i) for i in range(12)]})
    s, got = _run([p], tmp_path / "out")
    assert got == [str(i) for i in range(12)] and s["ids"]["from"] == "row numbers"


def test_folders_keep_file_names(tmp_path):
    d = _folder(tmp_path / "pages", 3)
    s, got = _run([d], tmp_path / "out")
    assert got == ["f0.txt", "f1.txt", "f2.txt"]
    assert s["ids"] == {"from": "file names", "field": None, "detected": False}
    with_ids = _jsonl(
        tmp_path / "a.jsonl", [{"id": f"d{i}", "text": t} for i, t in enumerate(TEXTS[3:])]
    )
    s, got = _run([with_ids, d], tmp_path / "mixed")
    assert got[:9] == [f"d{i}" for i in range(9)] and got[9:] == [f"f{i}.txt" for i in range(3)]
    assert s["ids"] == {"from": "field and file names", "field": "id", "detected": True}
    without = _jsonl(tmp_path / "b.jsonl", [{"text": t} for t in TEXTS[3:]])
    s, got = _run([d, without], tmp_path / "mixed2")
    assert got[:3] == [f"f{i}.txt" for i in range(3)] and got[3:] == [str(i) for i in range(3, 12)]
    assert s["ids"] == {
        "from": "row numbers and file names",
        "field": None,
        "detected": False,
        "missing": f"no field 'id' at {without}:1",
    }


def test_a_fallback_after_ids_keeps_file_names(tmp_path):
    d = _folder(tmp_path / "pages", 2)
    recs = [{"id": f"d{i}", "text": t} for i, t in enumerate(TEXTS[2:])]
    del recs[5]["id"]
    p = _jsonl(tmp_path / "a.jsonl", recs)
    _, got = _run([p, d], tmp_path / "out")
    assert got == [str(i) for i in range(10)] + ["f0.txt", "f1.txt"]


def test_summary_says_which_ids(tmp_path, capsys):
    p = _jsonl(tmp_path / "a.jsonl", [{"id": f"d{i}", "text": t} for i, t in enumerate(TEXTS)])
    assert main(["dedup", str(p), "-o", str(tmp_path / "out")]) == 0
    assert "field 'id' (found in every record)" in capsys.readouterr().out
    assert main(["dedup", str(p), "-o", str(tmp_path / "out2"), "--id-field", ""]) == 0
    out = capsys.readouterr().out
    assert "row numbers" in out and "found in every record" not in out


def test_index_add_detects_ids(tmp_path, capsys):
    p = _jsonl(tmp_path / "a.jsonl", [{"id": f"d{i}", "text": t} for i, t in enumerate(TEXTS)])
    db = tmp_path / "i.db"
    assert main(["index", "create", str(db), "--quiet"]) == 0
    assert main(["index", "add", str(db), str(p), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ids"] == {"from": "field", "field": "id", "detected": True}
    from neardup import Index

    with Index(db) as idx:
        assert idx.query(TEXTS[3], 0.99)[0].id == "d3"
    # records with ids, then one without: stopped, naming the record
    recs = [{"id": f"e{i}", "text": t + " again"} for i, t in enumerate(TEXTS)]
    del recs[8]["id"]
    q = _jsonl(tmp_path / "b.jsonl", recs)
    assert main(["index", "add", str(db), str(q), "--batch-size", "100"]) == 3
    err = capsys.readouterr().err
    assert f"no field 'id' at {q}:9" in err and "--id-field ''" in err
