"""A ``.json`` file holding one JSON array of objects is read as its items, with the results of
the same records as JSON lines; a ``.json`` file of JSON lines is still read as JSON lines; a bad
item is named by its position."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from neardup import InputError
from neardup.cli import main
from neardup.io import read_documents

ROOT = Path(__file__).resolve().parents[1]
NEWS = ROOT / "examples" / "news.jsonl"


@pytest.fixture(scope="module")
def records():
    return [json.loads(line) for line in NEWS.read_text().splitlines()]


def _docs(source, **kw):
    ids, texts = [], []
    for chunk in read_documents(source, **kw):
        ids.extend(chunk.ids)
        texts.extend(chunk.texts)
    return ids, texts


@pytest.mark.parametrize("layout", ["indented", "one line", "gzip", "bom"])
def test_an_array_reads_as_its_items(tmp_path, records, layout):
    data = json.dumps(records, indent=None if layout == "one line" else 2).encode()
    name = "news.json"
    if layout == "gzip":
        data, name = gzip.compress(data), "news.json.gz"
    elif layout == "bom":
        data = b"\xef\xbb\xbf" + data
    (tmp_path / name).write_bytes(data)
    assert _docs(tmp_path / name, id_field="id") == _docs(NEWS, id_field="id")
    assert _docs(data, name=name, id_field="id") == _docs(NEWS, id_field="id")  # an upload


def test_json_lines_named_json_are_still_json_lines(tmp_path):
    (tmp_path / "lines.json").write_bytes(NEWS.read_bytes())
    assert _docs(tmp_path / "lines.json", id_field="id") == _docs(NEWS, id_field="id")


def test_dedup_of_an_array_equals_dedup_of_its_lines(tmp_path, records):
    (tmp_path / "news.json").write_text(json.dumps(records, indent=1))
    for src, out in ((tmp_path / "news.json", "a"), (NEWS, "l")):
        assert (
            main(["dedup", str(src), "--id-field", "id", "-o", str(tmp_path / out), "--quiet"]) == 0
        )
    for table in ("clusters.parquet", "pairs.parquet"):
        assert pq.read_table(tmp_path / "a" / table).equals(pq.read_table(tmp_path / "l" / table))
    kept = json.loads((tmp_path / "a" / "deduplicated" / "news.json").read_text())
    kept_lines = [
        json.loads(x)
        for x in (tmp_path / "l" / "deduplicated" / "news.jsonl").read_text().splitlines()
    ]
    assert kept == kept_lines and 0 < len(kept) < len(records)


def test_bad_items_are_named_by_position(tmp_path):
    items = [
        {"id": "a", "text": "one two three"},
        [1, 2],
        {"id": "c", "text": None},
        {"id": "d", "text": "four five six"},
    ]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(items))
    with pytest.raises(InputError) as e:
        _docs(path, id_field="id")
    assert str(e.value).startswith(f"{path}:2: item 2 of the array must be an object, not")
    ids, _ = _docs(path, id_field="id", on_error="skip")
    assert ids == ["a", "d"]
    items[1] = {"id": "b", "text": "x"}
    path.write_text(json.dumps(items))
    with pytest.raises(InputError, match=r"bad.json:3: field 'text'"):
        _docs(path, id_field="id")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": "a", "text": "x"', "malformed JSON"),
        ('[{"id": "a", "text": "x"},', "malformed JSON"),
        ("[]", "empty JSON array"),
        ('"just a string"', None),
    ],
)
def test_broken_or_empty_arrays_say_so(tmp_path, content, message):
    path = tmp_path / "x.json"
    path.write_text(content)
    with pytest.raises(InputError) as e:
        _docs(path, id_field="id")
    assert str(e.value).startswith(str(path))
    if message:
        assert message in str(e.value)
