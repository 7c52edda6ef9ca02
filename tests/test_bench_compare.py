"""Tests of the comparison benchmark (benchmarks/compare.py) and its exact ground truth
(benchmarks/groundtruth.py) on small generated data.

Neither ../shared nor the peers (datasketch, rensa) nor the network is needed: tests that run a
peer are skipped when it is not installed.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson
import pytest

from neardup.synth import make_corpus

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"


def _load_module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


gt = _load_module("neardup_bench_groundtruth", BENCH / "groundtruth.py")
compare = _load_module("neardup_bench_compare", BENCH / "compare.py")


def _plain_shingles(text: str) -> set[str]:
    words = text.lower().split()
    if not words:
        return set()
    if len(words) < 5:
        return {" ".join(words)}
    return {" ".join(words[i : i + 5]) for i in range(len(words) - 4)}


def _brute_force(texts: list[str], threshold: float) -> list[tuple[int, int, float]]:
    sets = [_plain_shingles(t) for t in texts]
    out = []
    for i, j in itertools.combinations(range(len(texts)), 2):
        a, b = sets[i], sets[j]
        if a and b:
            jac = len(a & b) / len(a | b)
            if jac >= threshold:
                out.append((i, j, jac))
    return out


@pytest.fixture(scope="module")
def texts() -> list[str]:
    """~330 documents: synthetic originals and planted variants (some of a few words only),
    plus hand-made short, empty and whitespace-only documents and their copies."""
    long, _ = make_corpus(260, dup_fraction=0.45, seed=11, words=(20, 120), max_edit_rate=0.12)
    short, _ = make_corpus(50, dup_fraction=0.4, seed=12, words=(1, 6), max_edit_rate=0.3)
    extra = [
        "",
        "   ",
        "\n\t",
        "a b",
        "A  b",
        "a b c d",
        "a b c d e",
        "a b c d e f",
        "A B C D E F",
        "x x x x x x x x",
        "x x x x x",
        "Straße été un deux trois",
        "STRASSE été un deux trois",
        "one",
        "ONE\n",
    ]
    docs = long + short + extra
    # deterministic interleaving, so planted pairs are not all adjacent
    order = np.random.default_rng(5).permutation(len(docs))
    return [docs[i] for i in order]


def test_word_shingles_hand_checked() -> None:
    ws = gt.word_shingles
    assert ws("") == set()
    assert ws(" \n\t ") == set()
    assert ws("Hello") == {"hello"}
    assert ws("A b  C\td") == {"a b c d"}
    assert ws("a b c d e") == {"a b c d e"}
    assert ws("a b c d e f") == {"a b c d e", "b c d e f"}
    assert ws("x x x x x x x") == {"x x x x x"}
    assert ws("The  CAT\nsat on the mat") == {"the cat sat on the", "cat sat on the mat"}
    assert ws("Straße ÉTÉ a\u00a0b c") == {"straße été a b c"}  # NBSP is whitespace
    assert compare.word_shingles("The  CAT\nsat on the mat") == ws("The  CAT\nsat on the mat")


def test_ground_truth_equals_double_loop(texts: list[str]) -> None:
    for threshold in (0.8, 0.5):
        want = _brute_force(texts, threshold)
        a, b, j = gt.jaccard_pairs_at_least(texts, threshold, block_rows=64)
        got = list(zip(a.tolist(), b.tolist(), j.tolist()))
        assert [(x, y) for x, y, _ in got] == [(x, y) for x, y, _ in want]
        assert np.allclose([v for *_, v in got], [v for *_, v in want], rtol=0, atol=1e-12)
        assert (a < b).all() and a.dtype == np.int64 and b.dtype == np.int64
    # the data exercise the corner cases: planted pairs, short and empty documents
    pairs08 = _brute_force(texts, 0.8)
    assert len(pairs08) > 40
    short = {i for i, t in enumerate(texts) if 0 < len(t.split()) < 5}
    assert any(x in short and y in short for x, y, _ in pairs08)
    assert any(v == 1.0 for *_, v in pairs08) and any(v < 1.0 for *_, v in pairs08)


def test_shingle_matrix_sizes(texts: list[str]) -> None:
    x = gt.shingle_matrix(texts)
    assert x.shape[0] == len(texts)
    assert np.diff(x.indptr).tolist() == [len(_plain_shingles(t)) for t in texts]
    assert set(np.unique(x.data).tolist()) <= {1}


def test_number_rows_fallback_to_lexsort() -> None:
    rng = np.random.default_rng(0)
    cols = [rng.integers(1, 4, 500), rng.integers(1, 4, 500), rng.integers(1, 3, 500)]
    rows = np.stack(cols, axis=1)
    _, want = np.unique(rows, axis=0, return_inverse=True)
    for bits in (2, 30):  # 30 bits a word: too wide to pack the prefix ids, so lexsort
        got = gt._number_rows([c.astype(np.int64) for c in cols], [1, 1, 1], bits)
        assert np.array_equal(got, want.reshape(-1))


def test_ground_truth_empty_and_trivial() -> None:
    a, b, j = gt.jaccard_pairs_at_least([], 0.8)
    assert len(a) == len(b) == len(j) == 0
    a, b, j = gt.jaccard_pairs_at_least(["", "  ", "one two"], 0.8)
    assert len(a) == 0
    a, b, j = gt.jaccard_pairs_at_least(["one two", "ONE two", ""], 0.8)
    assert a.tolist() == [0] and b.tolist() == [1] and j.tolist() == [1.0]
    with pytest.raises(ValueError):
        gt.jaccard_pairs_at_least(["a"], 0.0)


def test_cached_truth(tmp_path: Path) -> None:
    docs = ["a b c d e f g", "a b c d e f g h", "z y x"]
    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes(
        b"".join(orjson.dumps({"id": str(i), "text": t}) + b"\n" for i, t in enumerate(docs))
    )
    cache = tmp_path / "truth.npz"
    a, b, j = gt.cached_truth(corpus, 0.5, cache)
    assert cache.exists() and a.tolist() == [0] and b.tolist() == [1]
    assert j[0] == pytest.approx(3 / 4)
    again = gt.cached_truth(corpus, 0.5, cache)
    assert all(np.array_equal(x, y) for x, y in zip((a, b, j), again))
    assert len(gt.cached_truth(corpus, 0.9, cache)[0]) == 0  # another threshold: recomputed


def test_union_find_and_pairs() -> None:
    labels = compare.union_find_labels(7, [5, 1, 3], [6, 2, 2])
    assert labels.tolist() == [0, 1, 1, 1, 4, 5, 5]
    assert compare.union_find_labels(3, [], []).tolist() == [0, 1, 2]
    a, b = compare.normalize_pairs([3, 1, 2, 0, 4], [1, 3, 2, 4, 0])
    assert a.tolist() == [0, 1] and b.tolist() == [4, 3]
    a, b = compare.normalize_pairs([], [])
    assert len(a) == 0


def test_recall_and_precision_hand_checked() -> None:
    # ground truth: (0,1) J=.9, (0,2) J=.81, (1,2) J=.82, (3,4) J=1.0
    ta = np.array([0, 0, 1, 3])
    tb = np.array([1, 2, 2, 4])
    tj = np.array([0.9, 0.81, 0.82, 1.0])
    labels = np.array([0, 0, 2, 3, 3, 5])  # 2 was not put with 0 and 1
    assert compare.recall(labels, ta, tb, tj, 0.85) == 1.0  # (0,1), (3,4)
    assert compare.recall(labels, ta, tb, tj, 0.80) == 0.5  # 2 of 4
    assert compare.recall(labels, ta, tb, tj, 0.95) == 1.0  # (3,4) only
    assert compare.recall(labels, ta[:0], tb[:0], tj[:0], 0.8) is None
    # reported: (0,1) twice in both orders, (3,4), (2,5) false, a self pair ignored
    left, right = [1, 0, 3, 2, 0], [0, 1, 4, 5, 0]
    assert compare.precision(left, right, ta, tb, 6) == pytest.approx(2 / 3)
    assert compare.precision([], [], ta, tb, 6) is None
    fa, fb = compare.false_pairs(left, right, ta, tb, 6)
    assert fa.tolist() == [2] and fb.tolist() == [5]
    ma, mb, mj = compare.missed_pairs(labels, ta, tb, tj, 0.8)
    assert ma.tolist() == [0, 1] and mb.tolist() == [2, 2] and mj.tolist() == [0.81, 0.82]


def _write_corpus(path: Path, docs: list[str]) -> Path:
    path.write_bytes(
        b"".join(orjson.dumps({"id": f"d{i}", "text": t}) + b"\n" for i, t in enumerate(docs))
    )
    return path


def _run_worker(name: str, corpus: Path, tmp_path: Path, truth) -> dict:
    out = tmp_path / name
    assert compare.worker(name, corpus, out) == 0
    info = json.loads(out.with_suffix(".json").read_text())
    with np.load(out.with_suffix(".npz")) as z:
        a, b, labels = z["a"], z["b"], z["labels"]
    assert a.dtype == b.dtype == labels.dtype == np.int64
    assert len(labels) == info["documents"] and (a < b).all() and len(a) == info["pairs"]
    entry = dict(info)
    compare.evaluate(entry, out.with_suffix(".npz"), truth)
    return entry


@pytest.mark.parametrize("name", ["neardup", "neardup-estimate", "datasketch", "rensa"])
def test_worker_end_to_end(name: str, texts: list[str], tmp_path: Path) -> None:
    if name in compare.PEERS:
        pytest.importorskip(compare.PEERS[name])
    corpus = _write_corpus(tmp_path / "c.jsonl", texts)
    truth = gt.jaccard_pairs_at_least(texts, 0.8)
    e = _run_worker(name, corpus, tmp_path, truth)
    assert e["documents"] == len(texts) and e["wall_s"] > 0 and e["rss_after_load_mb"] > 0
    assert e["recall_085"] >= 0.9 and e["recall_080"] >= 0.8
    if name == "neardup":
        # Exact verification reports nothing below the threshold, except where neardup's
        # normalisation (NFKC, case folding: "ß" -> "ss") differs from str.lower().
        pairs = {tuple(sorted(texts[i].split()[0] for i in p)) for p in e["false_pair_examples"]}
        assert e["false_pairs"] == len(pairs) == 1 and pairs == {("STRASSE", "Straße")}
        assert e["params"]["verify"] == "exact"
    if name in compare.PEERS:
        assert e["empty_documents"] == sum(not t.split() for t in texts)
        assert set(e["stages"]) == {"shingle", "minhash", "lsh_insert", "lsh_query", "union_find"}


@pytest.mark.parametrize("name", ["datasketch", "rensa"])
def test_user_pipeline_writes_what_neardup_dedup_writes(
    name: str, texts: list[str], tmp_path: Path
) -> None:
    """The whole-process mode's peer script: every document in clusters.jsonl, the pairs, and
    the deduplicated corpus = the first line of each cluster, as it was in the input."""
    pytest.importorskip(compare.PEERS[name])
    corpus = _write_corpus(tmp_path / "c.jsonl", texts)
    out = tmp_path / "out"
    cmd = compare.whole_process_cmd(name, corpus, out)
    assert subprocess.run(cmd, capture_output=True, text=True).returncode == 0
    clusters = [json.loads(x) for x in (out / "clusters.jsonl").read_text().splitlines()]
    assert [c["id"] for c in clusters] == [str(i) for i in range(len(texts))]
    pairs = [json.loads(x) for x in (out / "pairs.jsonl").read_text().splitlines()]
    label = {c["id"]: c["cluster"] for c in clusters}
    assert pairs and all(label[p["id_a"]] == label[p["id_b"]] for p in pairs)
    lines = corpus.read_bytes().splitlines(keepends=True)
    firsts = sorted({c["cluster"]: int(c["id"]) for c in reversed(clusters)}.values())
    assert (out / "deduplicated.jsonl").read_bytes() == b"".join(lines[i] for i in firsts)
    assert compare.whole_process_cmd("neardup", corpus, out)[1:4] == ["-m", "neardup.cli", "dedup"]


def test_render_with_runs_not_run_and_no_truth(tmp_path: Path) -> None:
    ok = {
        "size": 1000,
        "contender": "neardup",
        "status": "ok",
        "documents": 1000,
        "wall_s": 0.5,
        "neardup_speedup": 1.0,
        "docs_per_s": 2000.0,
        "mb_per_s": 4.0,
        "peak_rss_mb": 200.0,
        "rss_after_load_mb": 50.0,
        "pairs": 10,
        "recall_085": None,
        "recall_080": None,
        "precision": None,
        "stages": {"lsh": 0.1},
        "load_s": 0.01,
        "params": {"bands": 16, "rows": 8, "verify": "exact"},
    }
    report = {
        "machine": "test machine",
        "threshold": 0.8,
        "num_perm": 128,
        "truth": {},
        "results": [{"size": 1000, "contender": "rensa", "status": "not installed (rensa)"}, ok],
        "whole_process": [
            {"size": 1000, "contender": "rensa", "status": "failed (exit 1)", "runs_s": []},
            {
                "size": 1000,
                "contender": "neardup",
                "status": "ok",
                "wall_s": 0.8,
                "runs_s": [0.9, 0.8],
                "neardup_speedup": 1.0,
                "peak_rss_mb": 300.0,
            },
        ],
        "micro": None,
    }
    text = compare.render(report)
    assert "| 1,000 | rensa | not installed (rensa) |" in text
    assert "| 1,000 | neardup | 0.50 | 0.50 | 1.0 |" in text and "n/a" in text
    assert "| 200 | 50 | 150 | 10 |" in text  # peak, after load, added by the pipeline
    assert "| 1,000 | neardup | 0.80 | 0.90, 0.80 | 1.0 | 300 |" in text  # whole process
    assert "| 1,000 | rensa | failed (exit 1) |" in text
    rows = [line for line in text.splitlines() if line.startswith("| 1,000 |")][:2]
    assert len({line.count("|") for line in rows}) == 1  # same number of columns
    compare.write_report(report, tmp_path)
    assert (tmp_path / "compare.md").read_text() == text
    assert json.loads((tmp_path / "compare.json").read_text())["machine"] == "test machine"


def test_scaling_rows_pair_the_two_sizes_of_each_contender() -> None:
    def run(name, size, wall, peak=1000.0, load=400.0):
        return {
            "contender": name,
            "size": size,
            "status": "ok",
            "wall_s": wall,
            "peak_rss_mb": peak,
            "rss_after_load_mb": load,
        }

    results = [
        run("a", 100_000, 2.0),
        run("a", 1_000_000, 22.0, 3000.0, 1000.0),
        run("b", 100_000, 5.0),
        {"contender": "b", "size": 1_000_000, "status": "failed"},
    ]
    rows = compare.scaling_rows(results)
    assert rows == [
        {
            "contender": "a",
            "wall_100k": 2.0,
            "wall_1m": 22.0,
            "ratio": 11.0,
            "peak_rss_mb_1m": 3000.0,
            "added_mb_1m": 2000.0,
        }
    ]


def test_parse_caps() -> None:
    assert compare.parse_caps(["datasketch=100000", "rensa=30000"]) == {
        "datasketch": 100_000,
        "rensa": 30_000,
    }
    with pytest.raises(SystemExit):
        compare.parse_caps(["nobody=10"])
    with pytest.raises(SystemExit):
        compare.parse_caps(["datasketch=lots"])


def test_missing_archive_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere" / "20news-bydate.tar.gz"
    rc = compare.main(
        [
            "--sizes",
            "1000",
            "--archive",
            str(missing),
            "--data-dir",
            str(tmp_path / "data"),
            "--results",
            str(tmp_path / "results"),
        ]
    )
    assert rc == 2
    err = capsys.readouterr().err
    assert str(missing) in err and "../shared/data/README.md" in err
    assert not (tmp_path / "results").exists()


def test_neardup_does_not_import_peers() -> None:
    code = (
        "import sys, neardup; neardup.dedup(['a b c d e f', 'a b c d e f g'], threshold=0.5);"
        "sys.exit(int(any(m in sys.modules for m in ('datasketch', 'rensa'))))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
