"""The maximal itemset miner (the compiled kernel behind ``neardup fca``) against enumeration of
every itemset, on hand-made and generated databases with multiplicities, and against pyfim's
FPmax where pyfim is installed."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import ConfigError
from neardup.fca import fca_clusters, inverted_table
from neardup.fca.core import document_images
from neardup.fca.itemsets import maximal_itemset_arrays, maximal_itemsets
from neardup.synth import near_duplicate_collection


def oracle(tracts, k):
    """Every itemset of the items, its support counted transaction by transaction; the frequent
    ones of two items or more that no other frequent one contains."""
    sets = [(frozenset(t), w) for t, w in tracts.items()]
    items = sorted(set().union(*(s for s, _ in sets))) if sets else []
    frequent = {}
    for size in range(2, len(items) + 1):
        for combo in itertools.combinations(items, size):
            c = frozenset(combo)
            support = sum(w for s, w in sets if c <= s)
            if support >= k:
                frequent[c] = support
    return sorted(
        (tuple(sorted(c)), n) for c, n in frequent.items() if not any(c < d for d in frequent)
    )


def mine(tracts, k):
    return sorted(maximal_itemsets(tracts, k))


ITEM_IDS = st.lists(st.integers(0, 2**31 - 2), min_size=1, max_size=8, unique=True)


@st.composite
def databases(draw):
    """Transactions over at most 8 items (any numbers), in any order and with repeats, with
    multiplicities from 0; often the same few sets over and over."""
    ids = draw(st.one_of(ITEM_IDS, st.just(list(range(8)))))
    row = st.lists(st.sampled_from(ids), min_size=0, max_size=10)
    rows = draw(st.lists(row, min_size=0, max_size=12))
    if rows and draw(st.booleans()):  # duplicate-heavy: a few sets, repeated
        rows = [draw(st.sampled_from(rows[:3])) for _ in range(draw(st.integers(1, 20)))]
        rows = [draw(st.permutations(r)) for r in rows]
    return {tuple(r): draw(st.integers(0, 6)) for r in rows}


@settings(max_examples=400, deadline=None)
@given(databases(), st.integers(1, 12))
def test_maximal_itemsets_match_enumeration(tracts, k):
    assert mine(tracts, k) == oracle(tracts, k)


@pytest.mark.parametrize(
    ("tracts", "k", "want"),
    [
        ({}, 1, []),
        ({(): 3, (5,): 4}, 1, []),  # no transaction holds two items
        ({(0, 1, 2): 3}, 3, [((0, 1, 2), 3)]),  # one distinct transaction
        ({(0, 1, 2): 3}, 4, []),
        (
            {(2, 0, 1): 1, (0, 1, 2): 2, (1, 2, 0, 0): 4},
            7,
            [((0, 1, 2), 7)],
        ),  # every item everywhere
        ({(0, 1): 2, (1, 2): 2, (0, 2): 2}, 9, []),  # the minimum above every support
        ({(0, 1): 2, (1, 2): 2, (0, 2): 2}, 2, [((0, 1), 2), ((0, 2), 2), ((1, 2), 2)]),
        (
            {(0, 1, 2): 1, (0, 1): 1, (0, 2): 1, (1, 2): 1},
            2,
            [((0, 1), 2), ((0, 2), 2), ((1, 2), 2)],
        ),
        ({(0, 1, 2, 3): 5, (0, 1): 100, (2, 3): 1}, 5, [((0, 1, 2, 3), 5)]),  # (0, 1) is in it
        ({(7, 2**31 - 2): 2, (7,): 5}, 2, [((7, 2**31 - 2), 2)]),
        ({(0, 1): 0, (0, 1, 2): 1}, 1, [((0, 1, 2), 1)]),  # multiplicity 0 counts for nothing
    ],
)
def test_edge_cases(tracts, k, want):
    assert mine(tracts, k) == sorted(want) == oracle(tracts, k)


def test_arrays_and_bad_input():
    members, bounds, supports = maximal_itemset_arrays(
        np.array([3, 1, 1, 3, 2]), np.array([0, 2, 5]), np.array([2, 1]), 2
    )
    assert members.tolist() == [1, 3] and bounds.tolist() == [0, 2] and supports.tolist() == [3]
    with pytest.raises(ValueError, match="items"):
        maximal_itemsets({(-1, 2): 1}, 1)
    with pytest.raises(ValueError, match="non-negative"):
        maximal_itemsets({(1, 2): -1}, 1)
    with pytest.raises(ValueError, match="offsets"):
        maximal_itemset_arrays(np.array([1, 2]), np.array([0, 3]), np.array([1]), 1)
    with pytest.raises(ConfigError, match="min_support"):
        maximal_itemsets({(1, 2): 1}, 0)


def test_fca_clusters_when_every_document_shares_every_hash():
    """pyfim found nothing here without a sentinel transaction; the miner needs none."""
    from neardup.text.shingle import Shingles

    rows = [[5, 6, 7]] * 3
    images = Shingles(np.asarray(sum(rows, []), np.uint64), np.array([0, 3, 6, 9]))
    [c] = fca_clusters(images, 3).clusters
    assert (c.members, c.common) == ((0, 1, 2), 3)
    assert fca_clusters(images, 4).clusters == []


def random_database(rng, n_items, n_tracts):
    """Mostly pairs and short transactions with high multiplicities (near-duplicates), a few
    long ones (common phrases), items drawn unevenly."""
    weights = [1.0 / (1 + i) ** 0.7 for i in range(n_items)]
    out = {}
    for _ in range(n_tracts):
        size = rng.choice([2] * 12 + [3] * 6 + [4, 5, 6, 8, 12, 30])
        t = tuple(sorted(set(rng.choices(range(n_items), weights, k=size))))
        if len(t) >= 1:
            out[t] = out.get(t, 0) + rng.choice([1, 1, 1, 2, 3, 5, 20, 80])
    return out


def pyfim_maximal(fim, tracts, k):
    found = fim.fpgrowth({**tracts, (-1,): 1}, target="m", supp=-k, zmin=2, report="a")
    return sorted((tuple(sorted(int(x) for x in s)), int(n)) for s, n in found)


@pytest.mark.parametrize(
    ("seed", "n_items", "n_tracts"),
    [(0, 40, 200), (1, 100, 1000), (2, 300, 3000), (3, 2000, 3000), (4, 5000, 10000)],
)
def test_same_sets_as_pyfim_on_random_databases(seed, n_items, n_tracts):
    fim = pytest.importorskip("fim")
    tracts = random_database(random.Random(seed), n_items, n_tracts)
    for k in (1, 2, 3, 5, 10, 40, 100):
        assert mine(tracts, k) == pyfim_maximal(fim, tracts, k), k


def test_same_sets_as_pyfim_on_an_inverted_table():
    fim = pytest.importorskip("fim")
    texts, _ = near_duplicate_collection(
        40, 4, edit_rates=(0.02, 0.1, 0.3), seed=3, words=(80, 200)
    )
    tracts, _ = inverted_table(document_images(texts, 3, 1, 64))
    for k in (2, 4, 8, 16, 32, 48):
        got = mine(tracts, k)
        assert got == pyfim_maximal(fim, tracts, k), k
        assert got  # something to compare at every threshold


def test_fca_needs_no_pyfim(monkeypatch):
    import sys

    from neardup.fca import fca

    monkeypatch.setitem(sys.modules, "fim", None)  # import fim now fails
    texts, groups = near_duplicate_collection(3, 2, edit_rates=(0.01,), seed=5, words=(100, 150))
    [r] = fca(texts, 50, length=5, image_size=64)
    assert sorted(c.members for c in r.clusters) == [(0, 1, 2), (3, 4, 5), (6, 7, 8)]
