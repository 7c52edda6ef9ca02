"""The pairs table holds every pair of documents whose similarity is known to be at or above the
threshold: the verified pairs and those implied by exact-duplicate groups, checked against a
brute-force Jaccard of every pair (exact groups of 1, 2 and 50 documents, groups above the
limit, and random corpora)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_dedup import brute_force_jaccard

import neardup
from neardup.expand import cross_pairs, group_layout, ranges, within_pairs

VOCAB = [f"w{i}" for i in range(400)]
# LSH that finds every pair above 0.5 (the chance of missing one at 0.7 is 0.3^128): the
# tests check what is written for the pairs found, not LSH's recall
EXHAUSTIVE = {"bands": 128, "rows": 1}


def _variant(words: list[str], rng: random.Random, changes: int) -> list[str]:
    w = list(words)
    for _ in range(changes):
        w[rng.randrange(len(w))] = rng.choice(VOCAB)
    return w


def _corpus(group_sizes: list[int], seed: int) -> list[str]:
    """Texts of 60 words: for each entry of ``group_sizes`` a new text (a fresh one, or a
    variant with 1-3 words changed of the previous text) repeated that many times, shuffled."""
    rng = random.Random(seed)
    texts, prev = [], None
    for g in group_sizes:
        if prev is None or rng.random() < 0.3:
            words = [rng.choice(VOCAB) for _ in range(60)]
        else:
            words = _variant(prev, rng, rng.randint(1, 3))
        prev = words
        text = " ".join(words)
        # copies differ in case and spacing only: the same normalised text
        texts += [text.upper() if k % 2 else text.replace(" ", "  ", 3) for k in range(g)]
    rng.shuffle(texts)
    return texts


def _key(text: str) -> str:
    """The normalised text of the corpora above (case and spacing only differ)."""
    return " ".join(text.lower().split())


def _truth(texts: list[str], t: float) -> dict[tuple[int, int], float]:
    left, right, jac = brute_force_jaccard(texts)
    return {(int(a), int(b)): float(j) for a, b, j in zip(left, right, jac) if j >= t - 1e-9}


def _check_all_pairs(texts: list[str], t: float, max_group: int = 1000) -> neardup.Result:
    """Every pair at or above ``t`` is listed once, with its similarity, and nothing else (when
    no exact group is above ``max_group``); the rows not implied are the edges output."""
    truth = _truth(texts, t)
    # pairs too close to the threshold for float32 to decide are left out of the comparison
    near = {k for k, j in truth.items() if abs(j - t) < 1e-4}
    r = neardup.dedup(texts, threshold=t, pairs_max_group=max_group, **EXHAUSTIVE)
    p = r.pairs
    got = {
        (int(a), int(b)): (float(s), int(m), bool(i))
        for a, b, s, m, i in zip(p.left, p.right, p.similarity, p.method, p.implied)
    }
    assert len(got) == len(p), "a pair is listed twice"
    assert all(a < b for a, b in got)
    s = r.summary["pairs"]
    if s["groups_over_max"] == 0:
        assert set(got) - near == set(truth) - near
        assert s["left_out"] == 0
    else:
        assert set(got) - near <= set(truth) - near
        assert s["rows"] + s["left_out"] == len(truth)
    for k, (sim, method, _) in got.items():
        if method == 0:  # fingerprint: identical normalised texts
            assert sim == 1.0 and truth[k] == pytest.approx(1.0)
        else:
            assert sim == pytest.approx(truth[k], abs=2e-3)
    assert s["rows"] == len(p)
    assert s["implied"] == sum(i for _, _, i in got.values())
    # the three counts of the summary are disjoint and add up to the rows
    assert s["identical"] == sum(m == 0 and not i for _, m, i in got.values())
    assert s["verified"] == sum(m != 0 and not i for _, m, i in got.values())
    assert s["verified"] + s["identical"] + s["implied"] == s["rows"]
    # the edges output is exactly the rows not implied
    e = neardup.dedup(texts, threshold=t, pairs="edges", **EXHAUSTIVE)
    edges = {(int(a), int(b)) for a, b in zip(e.pairs.left, e.pairs.right)}
    assert edges == {k for k, (_, _, i) in got.items() if not i}
    assert not e.pairs.implied.any()
    es = e.summary["pairs"]
    assert es["mode"] == "edges" and es["rows"] == len(edges)
    assert es["rows"] + es["left_out"] == s["rows"] + s["left_out"]
    # the clusters do not depend on which pairs are written
    assert np.array_equal(e.labels, r.labels)
    return r


@pytest.mark.parametrize(
    "sizes",
    [
        [1, 1, 1, 1],  # no exact copies
        [2, 1, 2, 1, 1],  # pairs of copies, their near-duplicates
        [50, 1, 2, 3],  # a group of 50 and its near-duplicates
        [50, 50, 1],  # two groups of 50 near each other: 2,500 implied pairs
    ],
)
def test_every_pair_at_the_threshold_is_listed(sizes):
    texts = _corpus(sizes * 3, seed=sum(sizes))
    texts += ["", "   "]  # empty texts are no one's duplicates
    r = _check_all_pairs(texts, 0.7)
    assert r.summary["pairs"]["largest_exact_group"] == max(sizes)


def test_group_above_the_limit_is_written_as_edges():
    texts = _corpus([60, 2, 1, 3], seed=5)
    r = _check_all_pairs(texts, 0.7, max_group=50)
    s = r.summary["pairs"]
    assert s["groups_over_max"] == 1 and s["max_group"] == 50
    assert s["left_out"] >= 60 * 59 // 2 - 59
    # the big group: each copy with its first document, nothing more
    norm = [_key(t) for t in texts]
    big = [i for i, w in enumerate(norm) if norm.count(w) == 60]
    assert len(big) == 60
    inside = [
        (a, b)
        for a, b in zip(r.pairs.left.tolist(), r.pairs.right.tolist())
        if a in big and b in big
    ]
    assert len(inside) == 59 and {a for a, _ in inside} == {min(big)}


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(1, 6), min_size=1, max_size=12),
    st.integers(0, 10_000),
    st.sampled_from([0.6, 0.7, 0.8]),
)
def test_random_groups_against_brute_force(sizes, seed, t):
    _check_all_pairs(_corpus(sizes, seed), t)


def test_estimate_mode_implies_the_estimate():
    texts = _corpus([3, 2, 1] * 2, seed=3)
    r = neardup.dedup(texts, threshold=0.7, verify="estimate", **EXHAUSTIVE)
    p = r.pairs
    near = p.method != 0
    assert (p.method[near] == 2).all() and p.implied[near].any()
    # an implied pair carries the estimate of the compared pair of its two groups
    fp = {_key(t): i for i, t in reversed(list(enumerate(texts)))}
    first = np.array([fp[_key(t)] for t in texts])
    est = {
        (min(first[a], first[b]), max(first[a], first[b])): s
        for a, b, s, i in zip(p.left, p.right, p.similarity, p.implied)
        if not i
    }
    for a, b, s, m in zip(p.left, p.right, p.similarity, p.method):
        if m == 2:
            assert s == est[(min(first[a], first[b]), max(first[a], first[b]))]


# -- the array functions, against plain Python ---------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 7), min_size=1, max_size=8),
    st.integers(1, 8),
    st.sampled_from(["all", "edges"]),
    st.data(),
)
def test_within_and_cross_pairs_against_loops(sizes, max_group, mode, data):
    group = np.concatenate([np.full(s, g) for g, s in enumerate(sizes)])
    group = np.asarray(data.draw(st.permutations(group.tolist())), np.int64)
    members, starts, gs = group_layout(group, len(sizes))
    rows = {g: sorted(np.flatnonzero(group == g).tolist()) for g in range(len(sizes))}
    for g in range(len(sizes)):
        assert members[starts[g] : starts[g] + gs[g]].tolist() == rows[g]
    wl, wr, wimp, wc = within_pairs(members, starts, gs, mode, max_group)
    want = set()
    for r in rows.values():
        full = mode == "all" and len(r) <= max_group
        want |= {(a, b) for i, a in enumerate(r) for b in r[i + 1 :] if full or a == r[0]}
    got = list(zip(members[wl].tolist(), members[wr].tolist()))
    assert sorted(got) == sorted(want)
    assert [a != rows[group[a]][0] for a, _ in got] == wimp.tolist()
    total = sum(len(r) * (len(r) - 1) // 2 for r in rows.values())
    assert wc.fingerprint + wc.left_out == total
    edges = data.draw(
        st.lists(
            st.tuples(st.integers(0, len(sizes) - 1), st.integers(0, len(sizes) - 1)).filter(
                lambda e: e[0] != e[1]
            ),
            max_size=5,
        )
    )
    eu = np.array([u for u, _ in edges], np.int64)
    ev = np.array([v for _, v in edges], np.int64)
    a, b, edge, imp, cc = cross_pairs(members, starts, gs, eu, ev, mode, max_group)
    want_c = []
    for k, (u, v) in enumerate(edges):
        full = mode == "all" and len(rows[u]) <= max_group and len(rows[v]) <= max_group
        want_c += [
            (x, y, k, (x, y) != (rows[u][0], rows[v][0]))
            for x in rows[u]
            for y in rows[v]
            if full or (x, y) == (rows[u][0], rows[v][0])
        ]
    got_c = list(zip(members[a].tolist(), members[b].tolist(), edge.tolist(), imp.tolist()))
    assert sorted(got_c) == sorted(want_c)
    assert cc.verified + cc.implied_near + cc.left_out == sum(
        len(rows[u]) * len(rows[v]) for u, v in edges
    )


def test_ranges():
    assert ranges(np.array([5, 0, 9]), np.array([2, 0, 3])).tolist() == [5, 6, 9, 10, 11]
    assert ranges(np.zeros(0, np.int64), np.zeros(0, np.int64)).tolist() == []
