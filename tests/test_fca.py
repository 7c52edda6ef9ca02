"""FCA clusters (seed 001) against brute force: images, inverted table and maximal sets."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracles import normalize as ref_normalize
from oracles import shingle_hashes

from neardup import ConfigError
from neardup.fca import document_images, fca, fca_clusters, inverted_table
from neardup.synth import near_duplicate_collection


def ref_images(texts, length, offset, n):
    return [shingle_hashes(ref_normalize(t), "word", length, offset)[:n] for t in texts]


def ref_maximal(images, k):
    """Every maximal set of >= 2 documents whose images share >= k hashes, by enumeration."""
    sets = [set(x) for x in images]
    n = len(sets)
    frequent = []
    for size in range(2, n + 1):
        for combo in itertools.combinations(range(n), size):
            common = set.intersection(*(sets[i] for i in combo))
            if len(common) >= k:
                frequent.append((frozenset(combo), len(common)))
    maximal = [(s, c) for s, c in frequent if not any(s < t for t, _ in frequent)]
    return sorted((tuple(sorted(s)), c) for s, c in maximal)


def test_images_are_the_smallest_hashes():
    texts = ["a b c d e f g h i j k l", "a b c d e f g x y z", "one two", ""]
    img = document_images(texts, length=3, offset=2, image_size=3)
    want = ref_images(texts, 3, 2, 3)
    assert [img[i].tolist() for i in range(len(texts))] == want
    assert img.sizes.tolist() == [3, 3, 1, 0]


def test_hand_checked_clusters():
    base = " ".join(f"w{i}" for i in range(40))
    texts = [base, base.replace("w30", "zz"), base.replace("w5", "yy"), "unrelated words only " * 5]
    [r] = fca(texts, 20, length=3, image_size=38)
    img = document_images(texts, 3, 1, 38)
    assert [(c.members, c.common) for c in r.clusters] == ref_maximal(
        [img[i].tolist() for i in range(4)], 20
    )
    assert r.clusters[0].members == (0, 1, 2)
    assert r.pairs() == {(0, 1), (0, 2), (1, 2)}


@given(
    st.lists(st.lists(st.integers(0, 12), min_size=0, max_size=10), min_size=2, max_size=7),
    st.integers(1, 4),
)
def test_maximal_sets_match_enumeration(sets, k):
    from neardup.text.shingle import Shingles

    rows = [np.unique(np.asarray(s, np.uint64)) for s in sets]
    off = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=off[1:])
    images = Shingles(np.concatenate(rows).astype(np.uint64), off)
    got = sorted((c.members, c.common) for c in fca_clusters(images, k).clusters)
    assert got == ref_maximal([r.tolist() for r in rows], k)


def test_inverted_table_merges_identical_transactions():
    from neardup.text.shingle import Shingles

    rows = [[1, 2, 3, 9], [1, 2, 3], [3, 4], [4, 9, 10]]
    off = np.cumsum([0] + [len(r) for r in rows])
    images = Shingles(np.asarray(sum(rows, []), np.uint64), off.astype(np.int64))
    tracts, stats = inverted_table(images)
    assert tracts == {(0, 1): 2, (0, 1, 2): 1, (2, 3): 1, (0, 3): 1}
    assert stats == {"hashes": 6, "shared_hashes": 5, "capped_hashes": 0, "transactions": 4}
    capped, st2 = inverted_table(images, max_doc_freq=2)
    assert (0, 1, 2) not in capped and st2["capped_hashes"] == 1


def test_generated_collection_recovers_its_groups():
    texts, groups = near_duplicate_collection(
        6, 3, edit_rates=(0.01, 0.03), seed=2, words=(200, 300)
    )
    assert len(texts) == 6 * 4 and len(set(groups)) == 6
    [r] = fca(texts, 60, length=5, image_size=128)
    truth = {
        (a, b) for a, b in itertools.combinations(range(len(texts)), 2) if groups[a] == groups[b]
    }
    assert r.pairs() == truth


def test_bad_parameters():
    with pytest.raises(ConfigError, match="image_size"):
        fca(["a b"], 1, image_size=0)
    with pytest.raises(ConfigError, match="min_common"):
        fca(["a b"], 500, image_size=256)
    with pytest.raises(ConfigError, match="min_common"):
        fca(["a b"], [])


def test_fca_command_with_reference_and_baseline(tmp_path, capsys):
    import json

    from neardup.cli import main

    texts, groups = near_duplicate_collection(
        8, 2, edit_rates=(0.01, 0.04), seed=4, words=(150, 250)
    )
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        "".join(json.dumps({"id": f"t{i}", "text": t}) + "\n" for i, t in enumerate(texts))
    )
    truth = tmp_path / "truth.csv"  # one link per variant to its original: closure pairs them
    truth.write_text(
        "id,source_id\n"
        + "".join(
            f"t{i},t{groups.index(g)}\n" for i, g in enumerate(groups) if groups.index(g) != i
        )
        + "t0,unknown\n"
    )
    code = main(
        [
            "fca",
            str(docs),
            "--id-field",
            "id",
            "-o",
            str(tmp_path / "out"),
            "--shingle",
            "word:5",
            "--image-size",
            "128",
            "--min-common",
            "100",
            "40",
            "--truth",
            str(truth),
            "--baseline-clusters",
            "8",
            "--json",
        ]
    )
    s = json.loads(capsys.readouterr().out)
    assert code == 0 and s["reference"]["pairs"] == 8 * 3 and s["reference"]["unknown_id"] == 1
    by = {(r["method"], r.get("threshold")): r for r in s["results"]}
    assert by[("fpmax", 40)]["f1"] == 1.0  # every variant found, nothing else
    assert by[("fpmax", 100)]["precision"] == 1.0 and by[("fpmax", 100)]["recall"] < 1.0
    km = by[("bisecting-kmeans", None)]
    assert km["requested_clusters"] == 8 and 0 <= km["f1"] <= 1
    first = json.loads((tmp_path / "out" / "clusters-k40.jsonl").read_text().splitlines()[0])
    assert first["size"] == 3 and first["common"] >= 40
    for name in ("evaluation.csv", "evaluation.md", "evaluation.png", "summary.json"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    # errors: a reference without usable columns, a baseline without a reference
    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\n1,2\n")
    assert (
        main(
            ["fca", str(docs), "-o", str(tmp_path / "o2"), "--min-common", "5", "--truth", str(bad)]
        )
        == 3
    )
    assert "name no pair of documents" in capsys.readouterr().err
    assert (
        main(
            [
                "fca",
                str(docs),
                "-o",
                str(tmp_path / "o3"),
                "--min-common",
                "5",
                "--baseline-clusters",
                "3",
            ]
        )
        == 2
    )


def _pair_texts(j: float, m: int, rng, base: int) -> tuple[str, str]:
    """Two texts of ``m`` distinct words each whose word sets have Jaccard ``j``."""
    c = round(2 * j * m / (1 + j))
    common = [f"t{base}x{i}" for i in range(c)]
    a = common + [f"a{base}x{i}" for i in range(m - c)]
    b = common + [f"b{base}x{i}" for i in range(m - c)]
    rng.shuffle(a)
    rng.shuffle(b)
    return " ".join(a), " ".join(b)


@pytest.mark.parametrize("image_size", [64, 128])
def test_default_min_common_finds_pairs_at_0_8(image_size):
    """The default K clusters about 95% of pairs at Jaccard 0.8 and few at 0.6 (200 random
    pairs of 300-1,500 words, single-word shingles: the Jaccard is exact)."""
    import random

    from neardup.fca import default_min_common

    k = default_min_common(image_size)
    assert k == {64: 52, 128: 107}[image_size]
    rng = random.Random(image_size)
    found = {}
    for j in (0.8, 0.6):
        texts: list[str] = []
        for p in range(200):
            texts += _pair_texts(j, rng.randint(300, 1500), rng, p)
        pairs = fca(texts, k, length=1, image_size=image_size)[0].pairs()
        found[j] = sum((2 * i, 2 * i + 1) in pairs for i in range(200)) / 200
    assert found[0.8] >= 0.9 and found[0.6] <= 0.1, found


def test_fca_command_without_min_common(tmp_path, capsys):
    import orjson

    from neardup.cli import main
    from neardup.fca import default_min_common

    texts, _ = near_duplicate_collection(40, 3, seed=2)
    docs = tmp_path / "docs.jsonl"
    docs.write_bytes(
        b"".join(orjson.dumps({"id": f"d{i}", "text": t}) + b"\n" for i, t in enumerate(texts))
    )
    assert (
        main(["fca", str(docs), "-o", str(tmp_path / "out"), "--image-size", "64", "--json"]) == 0
    )
    s = orjson.loads(capsys.readouterr().out)
    k = default_min_common(64)
    assert [r["threshold"] for r in s["results"]] == [k]
    assert (tmp_path / "out" / f"clusters-k{k}.jsonl").exists()


def test_fca_with_its_defaults_finds_the_clusters_of_the_bundled_examples(tmp_path, capsys):
    """Short texts have fewer shingles than an image holds: the default K comes from the
    images' median size, so that a first run on the examples finds their near-duplicates."""
    import json
    from pathlib import Path

    from neardup.cli import main

    root = Path(__file__).resolve().parents[1]
    code = main(
        [
            "fca",
            str(root / "examples" / "news.jsonl"),
            "-o",
            str(tmp_path / "out"),
            "--truth",
            str(root / "examples" / "news.truth.jsonl"),
            "--json",
        ]
    )
    s = json.loads(capsys.readouterr().out)
    (r,) = s["results"]
    assert code == 0 and s["ids"]["field"] == "id" and s["parameters"]["shingle_length"] == 5
    assert r["clusters"] > 30 and r["precision"] > 0.95 and r["recall"] > 0.6
