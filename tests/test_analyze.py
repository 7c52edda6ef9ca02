"""`neardup analyze`: the numbers behind each figure against closed forms and plain-Python brute
force, the files each command writes, and the errors of bad options."""

from __future__ import annotations

import argparse
import itertools
import json
from collections import defaultdict

import numpy as np
import pytest

from neardup import ConfigError, InputError, OutputError
from neardup.analyze import (
    bands,
    datasketch_optimal_param,
    distribution,
    grid,
    lsh_areas,
    params,
    recall,
    scurve,
)
from neardup.cli.analyze import add_commands
from neardup.config import SketchConfig
from neardup.sketch import sketch
from neardup.synth import make_corpus
from neardup.text import normalize_text, shingle

# -- plain-Python oracles -----------------------------------------------------------------------


def word_shingles(text: str, k: int = 5) -> frozenset:
    """Word k-shingles of the normalised text; a shorter text is one shingle, as in neardup."""
    toks = normalize_text(text).split()
    if not toks:
        return frozenset()
    if len(toks) < k:
        return frozenset([tuple(toks)])
    return frozenset(tuple(toks[i : i + k]) for i in range(len(toks) - k + 1))


def all_pairs(texts: list[str], k: int = 5) -> dict[tuple[int, int], float]:
    """Exact Jaccard of every pair of non-empty documents (positions in ``texts``)."""
    sets = [word_shingles(t, k) for t in texts]
    keep = [i for i, s in enumerate(sets) if s]
    return {
        (i, j): len(sets[i] & sets[j]) / len(sets[i] | sets[j])
        for i, j in itertools.combinations(keep, 2)
    }


def band_candidates(sig: np.ndarray, b: int, r: int) -> set[tuple[int, int]]:
    """Pairs of rows of ``sig`` equal in all ``r`` values of at least one of ``b`` bands."""
    out: set[tuple[int, int]] = set()
    for band in range(b):
        buckets: dict[tuple, list[int]] = defaultdict(list)
        for i, row in enumerate(sig[:, band * r : (band + 1) * r].tolist()):
            buckets[tuple(row)].append(i)
        for members in buckets.values():
            out.update(itertools.combinations(members, 2))
    return out


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    texts, _ = make_corpus(160, dup_fraction=0.45, seed=11, words=(25, 70))
    return texts + ["", "short text"]  # an empty document, one shorter than a shingle


@pytest.fixture(scope="module")
def truth(corpus) -> dict[tuple[int, int], float]:
    return all_pairs(corpus)


@pytest.fixture(scope="module")
def signatures(corpus) -> np.ndarray:
    """Signatures of the non-empty documents (the analyses leave empty ones out)."""
    kept = [t for t in corpus if normalize_text(t)]
    return sketch(shingle(kept, "word:5"), SketchConfig(num_perm=128, seed=1))


# -- closed forms -------------------------------------------------------------------------------


def test_scurve_matches_closed_form_and_seed_example():
    a = scurve([(20, 5), (16, 8), (9, 13)], points=[0.5, 0.8, 0.95])
    for row in a.rows:
        b, r = row["bands"], row["rows"]
        assert row["threshold_approx"] == pytest.approx((1 / b) ** (1 / r), abs=1e-4)
        for s in (0.5, 0.8, 0.95):
            assert row[f"p@{s:g}"] == pytest.approx(1 - (1 - s**r) ** b, abs=1e-6)
    # seeds 002/003: 20 bands of 5 rows find a pair of similarity 0.8 with probability 0.9996
    assert a.summary["p_20x5_at_0.8"] == pytest.approx(0.99964, abs=1e-5)
    assert a.rows[0]["p@0.8"] == pytest.approx(0.9996, abs=1e-4)
    curve = a.data["p"][0]
    assert np.allclose(curve, 1 - (1 - a.data["s"] ** 5) ** 20)
    assert np.all(np.diff(curve) >= 0)


def _p(s: float, b: int, r: int) -> float:
    return 1 - (1 - s ** float(r)) ** float(b)


def _q(s: float, b: int, r: int) -> float:
    return (1 - s ** float(r)) ** float(b)


def _datasketch_scan(threshold: float, num_perm: int) -> tuple[int, int]:
    """datasketch's _optimal_param as written there: scipy quad, scan b then r, strict '<'."""
    from scipy.integrate import quad

    best, opt = float("inf"), (0, 0)
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp = quad(_p, 0.0, threshold, args=(b, r))[0]
            fn = quad(_q, threshold, 1.0, args=(b, r))[0]
            err = 0.5 * fp + 0.5 * fn
            if err < best:
                best, opt = err, (b, r)
    return opt


def test_datasketch_choice_known_cases_and_brute_force_scan():
    assert datasketch_optimal_param(0.8, 128) == (9, 13)
    assert datasketch_optimal_param(0.9, 128) == (5, 25)  # datasketch's own docstring
    assert datasketch_optimal_param(0.8, 128) == _datasketch_scan(0.8, 128)
    for t, k in ((0.5, 64), (0.7, 48), (0.95, 32)):
        assert datasketch_optimal_param(t, k) == _datasketch_scan(t, k)


def test_lsh_areas_against_quadrature():
    from scipy.integrate import quad

    for b, r, t in ((9, 13, 0.8), (16, 8, 0.8), (42, 3, 0.5), (1, 1, 0.3)):
        fp, fn = lsh_areas(b, r, t)
        assert fp[0] == pytest.approx(quad(_p, 0, t, args=(b, r))[0], abs=1e-10)
        assert fn[0] == pytest.approx(quad(_q, t, 1, args=(b, r))[0], abs=1e-10)


def test_params_neardup_versus_datasketch():
    a = params([0.8, 0.5], num_perm=128)
    assert len(a.rows) == 4
    ours, theirs = a.rows[0], a.rows[1]
    assert (ours["bands"], ours["rows"]) == (16, 8)
    assert (theirs["bands"], theirs["rows"]) == (9, 13)
    assert theirs["recall_at_threshold"] == pytest.approx(1 - (1 - 0.8**13) ** 9, abs=1e-6)
    assert theirs["recall_at_threshold"] < 0.45 <= 0.9 <= ours["recall_at_threshold"]
    assert ours["recall_at_threshold_plus_0.1"] == pytest.approx(1 - (1 - 0.9**8) ** 16, abs=1e-6)
    # datasketch minimises the weighted areas, so its cost is the lower one
    assert theirs["weighted_cost"] <= ours["weighted_cost"]
    assert ours["fn_area"] < theirs["fn_area"]
    assert a.summary["choices"]["0.8"] == {"neardup": "16x8", "datasketch": "9x13"}


# -- corpus analyses against brute force --------------------------------------------------------


def test_recall_bins_equal_brute_force(corpus, truth, signatures):
    edges = [0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    a = recall(corpus, thresholds=[0.8], bands_rows=[(20, 5)], bins=edges)
    expected = [0] * 5
    for s in truth.values():
        if s >= 0.5:
            expected[min(int(np.searchsorted(edges, s, side="right")) - 1, 4)] += 1
    assert a.summary["true_pairs_per_bin"] == expected
    assert sum(expected) > 20  # the corpus has near-duplicates at every level
    assert a.summary["empty_documents"] == 1
    # found: true pairs that share a band key, counted independently
    kept = [i for i, t in enumerate(corpus) if normalize_text(t)]
    row_of = {d: i for i, d in enumerate(kept)}
    for setting, (b, r) in (("t=0.8: 16x8", (16, 8)), ("20x5", (20, 5))):
        cands = band_candidates(signatures, b, r)
        rows = [x for x in a.rows if x["setting"] == setting]
        assert [x["true_pairs"] for x in rows] == expected
        found = [0] * 5
        for (i, j), s in truth.items():
            if s >= 0.5 and (row_of[i], row_of[j]) in cands:
                found[min(int(np.searchsorted(edges, s, side="right")) - 1, 4)] += 1
        assert [x["found"] for x in rows] == found
        for x in rows:
            assert 0.0 <= x["expected_recall"] <= 1.0
    s80 = a.summary["settings"][0]
    assert s80["true_pairs_at_threshold"] == sum(1 for s in truth.values() if s >= 0.8)


def test_recall_refuses_too_many_documents(corpus):
    with pytest.raises(ConfigError, match="max_docs"):
        recall(corpus, max_docs=50)


def test_bands_counts_equal_plain_python(corpus, truth, signatures):
    kept = [i for i, t in enumerate(corpus) if normalize_text(t)]
    a = bands(corpus, num_perm=128, bands_list=[2, 8, 16, 32], threshold=0.8)
    for row in a.rows:
        b, r = row["bands"], row["rows"]
        assert r == 128 // b
        cands = band_candidates(signatures, b, r)
        assert row["candidates"] == len(cands)
        good = sum(1 for i, j in cands if truth[(kept[i], kept[j])] >= 0.8)
        assert row["true_candidates"] == good
        assert row["false_candidates"] == len(cands) - good
    assert [r["candidates"] for r in a.rows] == sorted(r["candidates"] for r in a.rows)


def test_grid_counts_equal_brute_force(corpus, truth):
    thresholds = [0.3, 0.5, 0.7, 0.9]
    # a recall floor of 0.9999 makes LSH miss nothing here, so the counts are the brute force's
    a = grid(corpus, thresholds=thresholds, sizes=[5], min_recall=0.9999)
    for row in a.rows:
        t = row["threshold"]
        pairs = [p for p, s in truth.items() if s >= t]
        assert row["pairs"] == len(pairs), t
        assert row["documents"] == len({d for p in pairs for d in p}), t
    # at the default recall floor LSH may miss a few, never invent any
    b = grid(corpus, thresholds=thresholds, sizes=[3, 5])
    k5 = [r for r in b.rows if r["k"] == 5]
    for row, exact in zip(k5, a.rows):
        assert row["pairs"] <= exact["pairs"]
        assert row["documents"] <= exact["documents"]
    truth3 = all_pairs(corpus, 3)
    for row in (r for r in b.rows if r["k"] == 3):
        assert row["pairs"] <= sum(1 for s in truth3.values() if s >= row["threshold"])


def test_distribution_sums(corpus, truth):
    a = distribution(corpus, threshold=0.6, bands_rows=(20, 5), bins=20)
    cand = sum(r["candidates"] for r in a.rows)
    ver = sum(r["verified"] for r in a.rows)
    assert cand == a.summary["candidates"] and ver == a.summary["verified"]
    assert cand == len(a.data["similarity"])
    assert ver == int(np.count_nonzero(a.data["similarity"] >= np.float32(0.6)))
    assert ver <= sum(1 for s in truth.values() if s >= 0.6)
    assert all(r["verified"] == 0 for r in a.rows if r["bin_hi"] <= 0.6)


# -- the command line ---------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="neardup")
    add_commands(p.add_subparsers(dest="command", required=True))
    return p


def _run(argv: list[str]) -> int:
    a = _parser().parse_args(argv)
    return a.func(a)


@pytest.fixture(scope="module")
def jsonl(tmp_path_factory, corpus):
    path = tmp_path_factory.mktemp("analyze") / "docs.jsonl"
    with open(path, "w") as f:
        for i, t in enumerate(corpus[:120]):
            f.write(json.dumps({"doc": f"d{i}", "body": t}) + "\n")
    return path


CORPUS = ["--text-field", "body", "--id-field", "doc"]
COMMANDS = [
    ("scurve", ["--bands-rows", "20x5", "16x8", "9x13"]),
    ("params", ["--thresholds", "0.8", "0.9"]),
    ("recall", ["--bands-rows", "20x5", "--thresholds", "0.8"]),
    ("bands", ["--bands-list", "4", "16", "32"]),
    ("grid", ["--shingle-sizes", "3", "5", "--thresholds", "0.5", "0.8"]),
    ("distribution", ["--threshold", "0.7"]),
]


@pytest.mark.parametrize("name,args", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_command_writes_png_csv_md(name, args, jsonl, tmp_path, capsys):
    out = tmp_path / "out" / "nested"
    inputs = [str(jsonl), *CORPUS] if name not in ("scurve", "params") else []
    assert _run(["analyze", name, *inputs, *args, "-o", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["analysis"] == name and data["rows"]
    for ext in ("png", "csv", "md"):
        f = out / f"{name}.{ext}"
        assert f.exists() and f.stat().st_size > 0, f
    assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / f"{name}.md").read_text().startswith("# ")
    header = (out / f"{name}.csv").read_text().splitlines()[0]
    assert header.split(",")[0] == next(iter(data["rows"][0]))
    assert _run(["analyze", name, *inputs, *args, "-o", str(out), "--quiet"]) == 0
    assert capsys.readouterr().out == ""


def test_recall_max_docs_samples_with_seed(jsonl, tmp_path, capsys):
    argv = [
        "analyze",
        "recall",
        str(jsonl),
        *CORPUS,
        "--thresholds",
        "0.8",
        "--max-docs",
        "40",
        "--seed",
        "3",
        "-o",
        str(tmp_path),
        "--json",
    ]
    assert _run(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["summary"]["documents"] == 40 and first["summary"]["sampled"] is True
    assert _run(argv) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == first["rows"]


def test_recall_refuses_large_corpus_without_max_docs(tmp_path, monkeypatch, jsonl):
    import neardup.analyze.corpus as corpus_mod

    monkeypatch.setattr(corpus_mod, "MAX_BRUTE_FORCE_DOCS", 50)
    with pytest.raises(ConfigError, match="--max-docs"):
        _run(["analyze", "recall", str(jsonl), *CORPUS, "-o", str(tmp_path)])


@pytest.mark.parametrize(
    "argv,error,match",
    [
        (["scurve", "--bands-rows", "20by5"], ConfigError, "BANDSxROWS"),
        (["scurve", "--bands-rows", "0x5"], ConfigError, ">= 1"),
        (["params", "--thresholds", "1.5"], ConfigError, "threshold"),
        (["params", "--num-perm", "1"], ConfigError, "num_perm"),
        (["params", "--weights", "0", "0"], ConfigError, "weights"),
        (["params", "--min-recall", "1.0"], ConfigError, "min_recall"),
    ],
)
def test_bad_options_are_clear_errors(argv, error, match, tmp_path):
    with pytest.raises(error, match=match):
        _run(["analyze", *argv, "-o", str(tmp_path)])


@pytest.mark.parametrize(
    "args,error,match",
    [
        (["recall", "--bins", "0.9", "0.5"], ConfigError, "bins"),
        (["recall", "--bands-rows", "20x7"], ConfigError, "exceeds num_perm"),
        (["bands", "--bands-list", "0"], ConfigError, "bands=0"),
        (["grid", "--shingle-sizes", "0"], ConfigError, "shingle size"),
        (["distribution", "--bins", "1"], ConfigError, "bins"),
        (["distribution", "--max-docs", "1"], ConfigError, "max-docs"),
    ],
)
def test_bad_corpus_options(args, error, match, jsonl, tmp_path):
    with pytest.raises(error, match=match):
        _run(["analyze", args[0], str(jsonl), *CORPUS, *args[1:], "-o", str(tmp_path)])


def test_missing_input_and_bad_outdir(tmp_path, jsonl):
    with pytest.raises(InputError):
        _run(["analyze", "bands", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path)])
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match="not a directory"):
        _run(["analyze", "scurve", "-o", str(blocker)])
    with pytest.raises(OutputError, match="cannot create"):
        _run(["analyze", "scurve", "-o", str(blocker / "sub")])


def test_skipped_records_are_counted(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a b c d e f g"}\nnot json\n{"text": "a b c d e f h"}\n{"nope": 1}\n')
    assert (
        _run(
            [
                "analyze",
                "distribution",
                str(bad),
                "--on-error",
                "skip",
                "-o",
                str(tmp_path / "o"),
                "--json",
            ]
        )
        == 0
    )
    s = json.loads(capsys.readouterr().out)["summary"]
    assert s["documents_read"] == 2 and s["skipped"] == 2
    assert s["skipped_by_reason"] == {"malformed_json": 1, "missing_field": 1}
    with pytest.raises(InputError, match="bad.jsonl:2"):
        _run(["analyze", "distribution", str(bad), "-o", str(tmp_path / "o")])
