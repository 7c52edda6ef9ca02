"""Every public entry point rejects invalid parameter values with one message shape that names
the parameter and the value (``NAME=VALUE is invalid: ...``), booleans included: ``True`` is
an ``int`` to Python but never a valid count, size or threshold here."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import neardup
from neardup import analyze
from neardup.analyze import corpus as acorpus
from neardup.analyze import curves
from neardup.config import (
    ClusterConfig,
    DedupConfig,
    LSHConfig,
    NormalizeConfig,
    ShingleConfig,
    SketchConfig,
    VerifyConfig,
)
from neardup.errors import ConfigError
from neardup.io import OutputOptions, ReadOptions, read_documents, write_table
from neardup.lsh import choose_bands
from neardup.validate import check_bool, check_choice, check_int, check_real, check_str

TEXTS = ["one two three four five six", "one two three four five seven", "other words here"]


def _docs(tmp_path):
    p = tmp_path / "docs.jsonl"
    p.write_text('{"text": "a b c d e f"}\n{"text": "a b c d e g"}\n')
    return p


def _study(**kw):
    from neardup.products.study import StudyConfig

    return StudyConfig(**kw)


# (what is called, the parameter the message must name, the value it must show)
CASES = [
    ("ShingleConfig(k=True)", lambda t: ShingleConfig(k=True), "shingle k", True),
    ("ShingleConfig(k=0)", lambda t: ShingleConfig(k=0), "shingle k", 0),
    ("ShingleConfig(offset=2.0)", lambda t: ShingleConfig(offset=2.0), "shingle offset", 2.0),
    ("ShingleConfig(kind='byte')", lambda t: ShingleConfig(kind="byte"), "shingle kind", "byte"),
    ("SketchConfig(num_perm=True)", lambda t: SketchConfig(num_perm=True), "num_perm", True),
    ("SketchConfig(num_perm=1)", lambda t: SketchConfig(num_perm=1), "num_perm", 1),
    ("SketchConfig(seed=-1)", lambda t: SketchConfig(seed=-1), "seed", -1),
    ("SketchConfig(scheme='x')", lambda t: SketchConfig(scheme="x"), "scheme", "x"),
    ("LSHConfig(threshold=True)", lambda t: LSHConfig(threshold=True), "threshold", True),
    ("LSHConfig(threshold=0)", lambda t: LSHConfig(threshold=0), "threshold", 0),
    (
        "LSHConfig(threshold=nan)",
        lambda t: LSHConfig(threshold=float("nan")),
        "threshold",
        float("nan"),
    ),
    ("LSHConfig(min_recall=1)", lambda t: LSHConfig(min_recall=1), "min_recall", 1),
    ("LSHConfig(bands=False)", lambda t: LSHConfig(bands=False), "bands", False),
    ("LSHConfig(bucket_cap=1)", lambda t: LSHConfig(bucket_cap=1), "bucket_cap", 1),
    ("NormalizeConfig(nfkc=1)", lambda t: NormalizeConfig(nfkc=1), "nfkc", 1),
    ("VerifyConfig('approx')", lambda t: VerifyConfig("approx"), "verify", "approx"),
    ("ClusterConfig(method='x')", lambda t: ClusterConfig(method="x"), "cluster", "x"),
    ("ClusterConfig(keep=1)", lambda t: ClusterConfig(keep=1), "keep", 1),
    (
        "DedupConfig.from_kwargs(num_perm=True)",
        lambda t: DedupConfig.from_kwargs(num_perm=True),
        "num_perm",
        True,
    ),
    ("dedup(threshold=True)", lambda t: neardup.dedup(TEXTS, threshold=True), "threshold", True),
    ("dedup(chunk_size=0)", lambda t: neardup.dedup(TEXTS, chunk_size=0), "chunk_size", 0),
    ("dedup(chunk_size=True)", lambda t: neardup.dedup(TEXTS, chunk_size=True), "chunk_size", True),
    ("Deduplicator(workers=True)", lambda t: neardup.Deduplicator(workers=True), "workers", True),
    ("Index(threshold=True)", lambda t: neardup.Index(threshold=True), "threshold", True),
    (
        "Index.query(top_k=True)",
        lambda t: neardup.Index().query("a b c", top_k=True),
        "top_k",
        True,
    ),
    (
        "Index.query(threshold='0.5')",
        lambda t: neardup.Index().query("a b", threshold="0.5"),
        "threshold",
        "0.5",
    ),
    ("Index.list_ids(limit=True)", lambda t: neardup.Index().list_ids(limit=True), "limit", True),
    ("Index.list_ids(after=3)", lambda t: neardup.Index().list_ids(after=3), "after", 3),
    ("choose_bands(threshold=True)", lambda t: choose_bands(True, 128), "threshold", True),
    ("choose_bands(num_perm=0)", lambda t: choose_bands(0.8, 0), "num_perm", 0),
    ("ReadOptions(chunk_size=True)", lambda t: ReadOptions(chunk_size=True), "chunk_size", True),
    (
        "ReadOptions(on_error='ignore')",
        lambda t: ReadOptions(on_error="ignore"),
        "on_error",
        "ignore",
    ),
    ("ReadOptions(format='xml')", lambda t: ReadOptions(format="xml"), "input_format", "xml"),
    ("ReadOptions(encoding='nope')", lambda t: ReadOptions(encoding="nope"), "encoding", "nope"),
    ("ReadOptions(text_fields=())", lambda t: ReadOptions(text_fields=()), "text_fields", ()),
    ("ReadOptions(id_field='')", lambda t: ReadOptions(id_field=""), "id_field", ""),
    ("OutputOptions('xml')", lambda t: OutputOptions("xml"), "output_format", "xml"),
    ("OutputOptions(write_corpus=1)", lambda t: OutputOptions(write_corpus=1), "write_corpus", 1),
    (
        "read_documents(chunk_size=0)",
        lambda t: read_documents(_docs(t), chunk_size=0),
        "chunk_size",
        0,
    ),
    (
        "read_documents(fmt='xml')",
        lambda t: read_documents(_docs(t), fmt="xml"),
        "input_format",
        "xml",
    ),
    ("write_table(fmt='xml')", lambda t: write_table(t / "x", {"a": [1]}, "xml"), "fmt", "xml"),
    (
        "dedup_files(output_format='xml')",
        lambda t: neardup.dedup_files([_docs(t)], t / "out", output_format="xml"),
        "output_format",
        "xml",
    ),
    (
        "dedup_files(on_error='maybe')",
        lambda t: neardup.dedup_files([_docs(t)], t / "out", on_error="maybe"),
        "on_error",
        "maybe",
    ),
    (
        "dedup_files(chunk_size=True)",
        lambda t: neardup.dedup_files([_docs(t)], t / "out", chunk_size=True),
        "chunk_size",
        True,
    ),
    ("scurve(points=[1.5])", lambda t: curves.scurve(points=[1.5]), "points", 1.5),
    ("params(num_perm=True)", lambda t: curves.params(num_perm=True), "num_perm", True),
    ("params(min_recall=1.0)", lambda t: curves.params(min_recall=1.0), "min_recall", 1.0),
    ("distribution(bins=True)", lambda t: acorpus.distribution(TEXTS, bins=True), "bins", True),
    ("bands(bands_list=[0])", lambda t: acorpus.bands(TEXTS, bands_list=[0]), "bands", 0),
    ("grid(kind='byte')", lambda t: acorpus.grid(TEXTS, kind="byte"), "kind", "byte"),
    ("StudyConfig(bootstraps=True)", lambda t: _study(bootstraps=True), "bootstraps", True),
    ("StudyConfig(max_df=0)", lambda t: _study(max_df=0), "max_df", 0),
    ("StudyConfig(bands=61)", lambda t: _study(bands=61), "bands*rows", "61*4=244"),
    ("StudyConfig(blocking='words')", lambda t: _study(blocking="words"), "blocking", "words"),
    ("StudyConfig(per_offer=0)", lambda t: _study(per_offer=0), "per_offer", 0),
    (
        "DedupConfig.from_kwargs(bands=20, rows=20)",
        lambda t: DedupConfig.from_kwargs(bands=20, rows=20),
        "bands*rows",
        "20*20=400",
    ),
    (
        "sample_corpus(max_docs=True)",
        lambda t: acorpus.sample_corpus(acorpus.Corpus(["a"], ["x"], 1), True),
        "max_docs",
        True,
    ),
]


@pytest.mark.parametrize("call,name,value", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_public_entry_points_reject_invalid_values(tmp_path, call, name, value):
    with pytest.raises(ConfigError) as e:
        result = call(tmp_path)
        if hasattr(result, "__next__"):  # a lazy reader: the options are checked on the call
            pytest.fail("the options were not checked when the reader was created")
    msg = str(e.value)
    shown = value if name == "bands*rows" else repr(value)  # a product, shown as computed
    assert re.search(re.escape(f"{name}={shown}") + " is invalid: ", msg), msg


def test_fca_rejects_booleans():
    from neardup.fca import document_images, fca

    with pytest.raises(ConfigError, match=r"image_size=True is invalid"):
        document_images(TEXTS, image_size=True)
    with pytest.raises(ConfigError, match=r"min_common=True is invalid"):
        fca(TEXTS, [True], image_size=16)


def test_dask_engine_options_are_checked_before_a_cluster_starts(tmp_path):
    pytest.importorskip("distributed")
    from neardup.engines.dask import dedup_dask

    with pytest.raises(ConfigError, match=r"n_workers=True is invalid"):
        dedup_dask([_docs(tmp_path)], tmp_path / "o", n_workers=True)
    with pytest.raises(ConfigError, match=r"partition_docs=0 is invalid"):
        dedup_dask([_docs(tmp_path)], tmp_path / "o", partition_docs=0)
    with pytest.raises(ConfigError, match=r"output_format='xml' is invalid"):
        dedup_dask([_docs(tmp_path)], tmp_path / "o", output_format="xml")
    assert not (tmp_path / "o").exists()


# --- the helper itself, against a plain-Python oracle -----------------------------------------

values = st.one_of(
    st.booleans(),
    st.integers(-10, 10),
    st.floats(allow_nan=True),
    st.text(max_size=3),
    st.none(),
    st.just(np.int64(3)),
    st.just(np.float32(0.5)),
)


@given(values, st.one_of(st.none(), st.integers(-5, 5)), st.one_of(st.none(), st.integers(-5, 5)))
def test_check_int_matches_oracle(v, lo, hi):
    ok = (
        isinstance(v, (int, np.integer))
        and not isinstance(v, bool)
        and (lo is None or v >= lo)
        and (hi is None or v <= hi)
    )
    if ok:
        assert check_int("x", v, lo, hi) == int(v)
        assert type(check_int("x", v, lo, hi)) is int
    else:
        with pytest.raises(ConfigError, match=r"^x=.* is invalid: "):
            check_int("x", v, lo, hi)


@given(values)
def test_check_real_matches_oracle(v):
    ok = (
        isinstance(v, (int, float, np.integer, np.floating))
        and not isinstance(v, bool)
        and np.isfinite(float(v))
        and 0.0 < float(v) <= 1.0
    )
    if ok:
        assert check_real("t", v, 0.0, 1.0, lo_open=True) == float(v)
    else:
        with pytest.raises(ConfigError, match=r"^t=.* is invalid: a number in \(0, 1\]$"):
            check_real("t", v, 0.0, 1.0, lo_open=True)


def test_check_choice_bool_none_str():
    assert check_choice("m", "a", ("a", "b")) == "a"
    with pytest.raises(ConfigError, match=r"m=1 is invalid: use 'a' or 'b'"):
        check_choice("m", 1, ("a", "b"))
    with pytest.raises(ConfigError, match=r"m=True is invalid: one of 1, 2, 3"):
        check_choice("m", True, (1, 2, 3))  # True == 1, but it is not the choice 1
    assert check_choice("m", None, ("a",), none=True) is None
    assert check_bool("b", False) is False
    with pytest.raises(ConfigError, match=r"b=0 is invalid: must be True or False"):
        check_bool("b", 0)
    assert check_str("s", "x") == "x"
    with pytest.raises(ConfigError, match=r"s='' is invalid: a non-empty string"):
        check_str("s", "")
    assert analyze is not None
