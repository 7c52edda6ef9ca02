"""Whole tables in (pandas and polars DataFrames, pyarrow Tables, Hugging Face Datasets), with
the columns named, and the results back as tables; progress callbacks of long calls."""

from __future__ import annotations

import pytest

import neardup
from neardup.errors import ConfigError

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")

BASE = (
    "Stainless steel electric kettle with a capacity of 1.7 litres, rapid boil and a "
    "removable washable limescale filter, cordless on a 360 degree base"
)
ROWS = {
    "sku": ["k-1", "k-2", "rug", "k-3"],
    "description": [
        BASE,
        BASE + " Free delivery.",
        "A hand woven wool rug in deep blue with a geometric pattern",
        "Free delivery. " + BASE,
    ],
}


def _tables(rows: dict) -> list:
    out = [pd.DataFrame(rows), pl.DataFrame(rows), pa.table(rows), pa.RecordBatch.from_pydict(rows)]
    datasets = pytest.importorskip("datasets")
    return out + [datasets.Dataset.from_dict(rows)]


def _pairs(result) -> list[tuple[str, str, float]]:
    return [(p["id_a"], p["id_b"], round(p["similarity"], 6)) for p in result.pair_records()]


def test_dedup_takes_a_whole_table_with_its_columns_named():
    want = neardup.dedup(ROWS["description"], ROWS["sku"])
    assert len(_pairs(want)) == 3  # the kettles
    for table in _tables(ROWS):
        got = neardup.dedup(table, text_field="description", id_field="sku")
        assert _pairs(got) == _pairs(want), type(table)
        assert got.labels.tolist() == want.labels.tolist()


def test_the_columns_text_and_id_are_taken_by_default():
    rows = {"id": ROWS["sku"], "text": ROWS["description"], "other": [1, 2, 3, 4]}
    want = _pairs(neardup.dedup(ROWS["description"], ROWS["sku"]))
    for table in _tables(rows):
        assert _pairs(neardup.dedup(table)) == want
    # without an id column: row numbers
    no_id = neardup.dedup(pd.DataFrame({"text": ROWS["description"]}))
    assert [p[:2] for p in _pairs(no_id)] == [("0", "1"), ("0", "3"), ("1", "3")]


def test_a_table_without_the_column_is_a_clear_error():
    df = pd.DataFrame(ROWS)
    with pytest.raises(
        ConfigError,
        match=r"no column 'text' \(its columns: sku, description\)"
        r": name the column of the texts with text_field",
    ):
        neardup.dedup(df)
    with pytest.raises(ConfigError, match="did you mean text_field='description'"):
        neardup.dedup(df, text_field="descripton")
    with pytest.raises(ConfigError, match="did you mean id_field='sku'"):
        neardup.dedup(pl.DataFrame(ROWS), text_field="description", id_field="skus")
    with pytest.raises(ConfigError, match="name the columns of a table"):
        neardup.dedup(ROWS["description"], text_field="description")
    with pytest.raises(ConfigError, match="ids or id_field, not both"):
        neardup.dedup(df, ROWS["sku"], text_field="description", id_field="sku")


def test_dedup_reports_its_progress_by_stage():
    calls = []
    texts = ROWS["description"] * 5
    neardup.dedup(texts, chunk_size=6, progress=lambda *a: calls.append(a))
    reads = [c for c in calls if c[0] == "read"]
    assert reads == [("read", 6, 20), ("read", 12, 20), ("read", 18, 20), ("read", 20, 20)]
    stages = [c[0] for c in calls if c[0] != "read"]
    assert stages == ["candidates", "candidates", "verify", "verify", "cluster", "cluster"]
    verify = [c for c in calls if c[0] == "verify"]
    assert verify[0][1] == 0 and verify[1][1] == verify[1][2] > 0
    with pytest.raises(ConfigError, match="progress"):
        neardup.dedup(texts, progress="yes")


def test_index_add_many_takes_a_table_and_reports_progress():
    want = neardup.Index()
    want.add_many(zip(ROWS["sku"], ROWS["description"]))
    for table in _tables(ROWS):
        ix = neardup.Index()
        calls: list = []
        assert (
            ix.add_many(
                table,
                batch_size=3,
                text_field="description",
                id_field="sku",
                progress=lambda *a, seen=calls: seen.append(a),
            )
            == 4
        )
        assert calls == [("add", 3, 4), ("add", 4, 4)]
        assert ix.query(BASE) == want.query(BASE) and len(ix.query(BASE)) == 3
        assert ix.get("rug") == ROWS["description"][2]
    with pytest.raises(ConfigError, match="no column 'id'.*id_field"):
        neardup.Index().add_many(pd.DataFrame(ROWS), text_field="description")
    # pairs from a generator: the total is not known
    calls = []
    neardup.Index().add_many(
        ((f"d{i}", t) for i, t in enumerate(ROWS["description"])),
        batch_size=2,
        progress=lambda *a: calls.append(a),
    )
    assert calls == [("add", 2, None), ("add", 4, None)]


def test_find_reuse_takes_a_table_and_gives_tables():
    copied = " ".join(f"w{i}" for i in range(30))
    rows = {
        "body": [
            "new words " + copied + " end",
            "other text entirely here and now",
            "start " + copied,
        ]
    }
    want = neardup.find_reuse(rows["body"])
    for table in _tables(rows):
        got = neardup.find_reuse(table, text_field="body")
        assert got.pairs == want.pairs and got.passages == want.passages
    pairs = want.to_pandas()
    assert pairs[["a", "b", "passages"]].values.tolist() == [[0, 2, 1]]
    passages = want.to_polars("passages")
    assert passages["words"].to_list() == [30]
    assert want.to_arrow("passages").num_rows == 1
    with pytest.raises(ConfigError, match="'pairs' or 'passages'"):
        want.to_arrow("clusters")
