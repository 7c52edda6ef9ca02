"""The library takes texts and ids in the forms users hold them (lists, pyarrow, pandas, polars,
Hugging Face datasets), integer ids, missing texts with a clear error or skipped and counted;
its parameters are explicit, typed keywords; a result converts to Arrow, pandas and polars."""

from __future__ import annotations

import inspect

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import jaccard

import neardup
from neardup import ConfigError, DedupConfig, Deduplicator, InputError
from neardup.config import flat_defaults

BASE = "the quick brown fox jumps over the lazy dog near the river bank today"
TEXTS = [
    BASE,
    BASE + " again",
    "an entirely different text about something else",
    BASE.replace("lazy", "sleepy"),
    "another unrelated sentence with other words",
]
PARAMS = dict(threshold=0.6, shingle="word:2")


def _labels(result) -> list[int]:
    return result.labels.tolist()


@pytest.fixture(scope="module")
def reference():
    return neardup.dedup(TEXTS, **PARAMS)


def test_the_reference_groups_what_brute_force_says(reference):
    """The clusters on which the other forms are compared are right: pairs at or above the
    threshold by brute-force Jaccard of word bigrams share a cluster, the others do not."""

    def bigrams(t):
        w = t.casefold().split()
        return {tuple(w[i : i + 2]) for i in range(len(w) - 1)}

    lab = _labels(reference)
    for i in range(len(TEXTS)):
        for j in range(i + 1, len(TEXTS)):
            near = jaccard(bigrams(TEXTS[i]), bigrams(TEXTS[j])) >= 0.6
            assert (lab[i] == lab[j]) == near, (i, j)
    assert len(set(lab)) < len(lab)


@pytest.mark.parametrize(
    "form",
    [
        "tuple",
        "numpy",
        "generator",
        "arrow",
        "large_arrow",
        "chunked",
        "string_view",
        "dictionary",
        "pandas",
        "pandas_arrow",
        "polars",
        "datasets",
    ],
)
def test_every_column_form_gives_the_same_result(reference, form):
    if form == "tuple":
        texts = tuple(TEXTS)
    elif form == "numpy":
        texts = np.array(TEXTS, dtype=object)
    elif form == "generator":
        texts = (t for t in TEXTS)
    elif form == "arrow":
        texts = pa.array(TEXTS)
    elif form == "large_arrow":
        texts = pa.array(TEXTS, pa.large_string())
    elif form == "chunked":
        texts = pa.chunked_array([TEXTS[:2], TEXTS[2:]])
    elif form == "string_view":
        if not hasattr(pa, "string_view"):
            pytest.skip("this pyarrow has no string_view")
        texts = pa.array(TEXTS, pa.string_view())
    elif form == "dictionary":
        texts = pa.array(TEXTS).dictionary_encode()
    elif form in ("pandas", "pandas_arrow"):
        pd = pytest.importorskip("pandas")
        texts = pd.Series(TEXTS, dtype="string[pyarrow]" if form == "pandas_arrow" else object)
    elif form == "polars":
        pl = pytest.importorskip("polars")
        texts = pl.Series(TEXTS)
    else:
        datasets = pytest.importorskip("datasets")
        texts = datasets.Dataset.from_dict({"text": TEXTS})["text"]
    r = neardup.dedup(texts, **PARAMS)
    assert _labels(r) == _labels(reference)
    assert r.ids == [str(i) for i in range(len(TEXTS))]


def test_integer_ids_become_their_decimal_strings(reference):
    for ids in (
        [10, 11, 12, 13, 14],
        np.arange(10, 15),
        pa.array(range(10, 15)),
        ["10", 11, "12", np.int64(13), 14],
    ):
        r = neardup.dedup(TEXTS, ids, **PARAMS)
        assert r.ids == ["10", "11", "12", "13", "14"]
        assert _labels(r) == _labels(reference)
    with pytest.raises(InputError, match="id at position 2 is bool"):
        neardup.dedup(TEXTS, [1, 2, True, 4, 5], **PARAMS)
    with pytest.raises(InputError, match="id at position 1 is float"):
        neardup.dedup(TEXTS, [1, 2.5, 3, 4, 5], **PARAMS)
    with pytest.raises(InputError, match="duplicate id '1'"):
        neardup.dedup(TEXTS, [1, "1", 3, 4, 5], **PARAMS)


@pytest.mark.parametrize("form", ["list", "arrow", "pandas", "polars"])
def test_missing_texts_are_named_or_skipped_and_counted(reference, form):
    holes = [None, *TEXTS[:3], None, *TEXTS[3:], None]
    if form == "arrow":
        holes = pa.array(holes)
    elif form == "pandas":
        holes = pytest.importorskip("pandas").Series(holes)
    elif form == "polars":
        holes = pytest.importorskip("polars").Series(holes)
    with pytest.raises(InputError) as e:
        neardup.dedup(holes, **PARAMS)
    assert "3 of 8 texts are missing" in str(e.value) and "positions 0, 4, 7" in str(e.value)
    assert "on_error='skip'" in str(e.value)
    r = neardup.dedup(holes, on_error="skip", **PARAMS)
    assert r.ids == ["1", "2", "3", "5", "6"]  # the row numbers of the given texts
    assert _labels(r) == _labels(reference)
    assert r.summary["skipped"] == {"total": 3, "by_reason": {"non_string_field": 3}}
    r = neardup.dedup(holes, list("abcdefgh"), on_error="skip", **PARAMS)
    assert r.ids == list("bcdfg")


def test_a_text_of_another_type_is_an_error_even_when_skipping():
    with pytest.raises(InputError, match="text at position 1 is int"):
        neardup.dedup(["a b c", 5, "d e f"], on_error="skip")
    with pytest.raises(InputError, match="Arrow int64, not strings"):
        neardup.dedup(pa.array([1, 2, 3]))
    with pytest.raises(ConfigError, match="not one str"):
        neardup.dedup("one text")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.one_of(st.none(), st.sampled_from(TEXTS)), max_size=14), st.integers(1, 5))
def test_skipping_in_chunks_numbers_rows_as_given(texts, chunk):
    """Row-number ids count the skipped texts, whatever the chunking; the documents kept
    cluster as the same texts given without the holes."""
    d = Deduplicator(on_error="skip", **PARAMS)
    for s in range(0, len(texts), chunk):
        d.add(texts[s : s + chunk])
    if not texts:
        d.add([])
    r = d.finish()
    given_rows = [i for i, t in enumerate(texts) if t is not None]
    assert r.ids == [str(i) for i in given_rows]
    plain = neardup.dedup([texts[i] for i in given_rows], **PARAMS)
    assert _labels(r) == _labels(plain)
    skipped = len(texts) - len(given_rows)
    assert r.summary.get("skipped", {"total": 0})["total"] == skipped


def test_keywords_are_explicit_and_their_defaults_are_the_configs():
    defaults = flat_defaults()
    for fn in (neardup.dedup, Deduplicator.__init__):
        sig = inspect.signature(fn)
        named = {k: p.default for k, p in sig.parameters.items() if k in defaults}
        assert named == defaults, fn
        assert not any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    sig = inspect.signature(neardup.Index.__init__)
    # an index writes no pairs table: every other parameter
    assert set(defaults) - {"pairs", "pairs_max_group"} <= set(sig.parameters)
    assert not any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())


def test_config_or_keywords_not_both():
    cfg = DedupConfig.from_kwargs(threshold=0.6, shingle="word:2")
    assert _labels(neardup.dedup(TEXTS, config=cfg)) == _labels(neardup.dedup(TEXTS, **PARAMS))
    with pytest.raises(ConfigError, match="given: config and threshold"):
        neardup.dedup(TEXTS, config=cfg, threshold=0.7)
    with pytest.raises(ConfigError, match="given: config and shingle"):
        Deduplicator(cfg, shingle="char:5")
    with pytest.raises(ConfigError, match="given: config and num_perm"):
        neardup.Index(config=cfg, num_perm=64)
    with pytest.raises(ConfigError, match="unknown parameter|unexpected keyword"):
        DedupConfig.from_kwargs(treshold=0.5)
    with pytest.raises(TypeError):
        neardup.dedup(TEXTS, treshold=0.5)  # a typo is caught by Python itself now


def test_result_tables_in_arrow_pandas_and_polars(reference):
    r = reference
    clusters = r.to_arrow()
    assert clusters.column_names == ["id", "cluster", "representative", "similarity", "keep"]
    assert clusters.num_rows == len(TEXTS)
    assert clusters.column("id").to_pylist() == r.ids
    assert clusters.column("keep").to_pylist() == r.keep.tolist()
    assert clusters.column("representative").to_pylist() == [r.ids[i] for i in r.representative]
    pairs = r.to_arrow("pairs")
    assert pairs.column_names == ["id_a", "id_b", "similarity", "method", "implied"]
    assert sorted(
        zip(pairs.column("id_a").to_pylist(), pairs.column("id_b").to_pylist())
    ) == sorted((p["id_a"], p["id_b"]) for p in r.pair_records())
    pd = pytest.importorskip("pandas")
    df = r.to_pandas("pairs")
    assert isinstance(df, pd.DataFrame) and len(df) == len(r.pairs)
    assert df["similarity"].tolist() == pytest.approx(r.pairs.similarity.tolist())
    pl = pytest.importorskip("polars")
    cl = r.to_polars()
    assert isinstance(cl, pl.DataFrame) and cl["cluster"].to_list() == r.labels.tolist()
    with pytest.raises(ConfigError, match="'clusters' or 'pairs'"):
        r.to_arrow("edges")


def test_the_package_declares_its_types():
    from pathlib import Path

    assert (Path(neardup.__file__).parent / "py.typed").exists()


def test_the_library_logs_what_a_run_did_and_skipped(caplog):
    import logging

    with caplog.at_level(logging.INFO, logger="neardup"):
        neardup.dedup([*TEXTS, None], on_error="skip", **PARAMS)
    records = [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    assert (
        "neardup.engines.local",
        "INFO",
        "5 documents: 5 distinct texts, 1 clusters of near-duplicates, 2 removed",
    ) == (records[0][0], records[0][1], records[0][2].rsplit(" (", 1)[0])
    assert records[1][1:] == (
        "WARNING",
        "1 documents with a missing text were left out (on_error='skip')",
    )


@pytest.mark.parametrize("target", [None, "sqlite"])
def test_the_index_takes_integer_ids(tmp_path, target):
    ix = neardup.Index(None if target is None else tmp_path / "ix.db", **PARAMS)
    ix.add(5, TEXTS[0])
    ix.add_many([(6, TEXTS[2]), (np.int64(7), TEXTS[4])])
    assert 5 in ix and "5" in ix and np.int64(7) in ix and 8 not in ix
    assert ix.get(5) == TEXTS[0] == ix.get("5")
    assert [m.id for m in ix.query_id(5)] == []  # itself left out
    assert [m.id for m in ix.check_and_add(9, TEXTS[1])] == ["5"]
    assert [m.id for m in ix.query(TEXTS[3])] == ["5"]
    assert ix.remove(6) and 6 not in ix and len(ix) == 2
    with pytest.raises(InputError, match="a non-empty string or an integer"):
        ix.add(True, "x y z")
    with pytest.raises(neardup.DuplicateIdError):
        ix.add("5", TEXTS[4])
    ix.close()
