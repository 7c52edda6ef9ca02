"""Bootstrap splits, pair metrics and threshold tuning against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup.evaluate import bootstrap_split, pair_metrics, subset_pairs, tune_threshold


def test_bootstrap_split_partitions_and_keeps_about_63_percent():
    rng = np.random.default_rng(0)
    shares = []
    for _ in range(20):
        train, test = bootstrap_split(1000, rng)
        assert len(np.intersect1d(train, test)) == 0 and len(train) + len(test) == 1000
        assert np.all(np.diff(train) > 0) and np.all(np.diff(test) > 0)
        shares.append(len(train) / 1000)
    assert abs(np.mean(shares) - (1 - np.exp(-1))) < 0.01
    with pytest.raises(ValueError):
        bootstrap_split(1, rng)


def test_pair_metrics_hand_checked():
    m = pair_metrics([0, 2, 3], [1, 1, 4], [1, 0, 5], [0, 6, 3], n=7)  # (0,1) right; 2 wrong
    assert (m["predicted"], m["true"], m["tp"]) == (3, 3, 1)
    assert m["precision"] == pytest.approx(1 / 3) and m["f1"] == pytest.approx(1 / 3)
    assert pair_metrics([], [], [0], [1], 2)["f1"] == 0.0


@given(
    st.lists(st.tuples(st.floats(0, 1, allow_nan=False), st.booleans()), max_size=25),
    st.integers(0, 5),
)
def test_tune_threshold_matches_brute_force(pairs, missed):
    scores = np.array([p[0] for p in pairs])
    truth = np.array([p[1] for p in pairs], bool)
    total = int(truth.sum()) + missed
    t, f1 = tune_threshold(scores, truth, total)
    if total == 0 or not truth.any():
        assert (t, f1) == (float("inf"), 0.0)
        return

    def f1_at(th):
        pred = scores >= th
        tp = int((pred & truth).sum())
        return 2 * tp / (int(pred.sum()) + total)

    best = max(f1_at(th) for th in set(scores.tolist()))
    assert f1 == pytest.approx(best) and f1_at(t) == pytest.approx(best)


@given(
    st.lists(st.tuples(st.floats(0, 1, allow_nan=False), st.booleans()), max_size=25),
    st.integers(0, 5),
    st.integers(0, 6),
    st.integers(0, 6),
)
def test_tune_threshold_with_pairs_kept_otherwise(pairs, missed, kept_true, kept_false):
    """Brute force over every cut and "none of these": the pairs kept otherwise count too."""
    scores = np.array([p[0] for p in pairs])
    truth = np.array([p[1] for p in pairs], bool)
    total = int(truth.sum()) + kept_true + missed
    kept = (kept_true, kept_true + kept_false)
    t, f1 = tune_threshold(scores, truth, total, kept=kept)

    def f1_at(th):
        pred = scores >= th
        tp = int((pred & truth).sum()) + kept[0]
        return 2 * tp / (int(pred.sum()) + kept[1] + total) if total else 0.0

    options = [f1_at(th) for th in set(scores.tolist())] if truth.any() else []
    best = max(options + [f1_at(float("inf"))])
    assert f1 == pytest.approx(best) and f1_at(t) == pytest.approx(best)
    if truth.any() and kept[1] == 0:  # nothing kept otherwise: a cut at a score, as before
        assert t in set(scores.tolist())


def test_subset_pairs_renumbers():
    left, right, mask = subset_pairs(
        np.array([0, 2, 5]), np.array([2, 3, 4]), np.array([4, 0, 2]), n=6
    )
    assert mask.tolist() == [True, False, False]
    assert (left.tolist(), right.tolist()) == ([0], [1])  # rows 0 and 2 are positions 0 and 1
    keep = np.array([1, 3, 4])
    l2, r2, _ = subset_pairs(np.array([1, 3]), np.array([4, 4]), keep, n=5)
    assert list(zip(l2.tolist(), r2.tolist())) == [(0, 2), (1, 2)]
    assert all(a in range(3) for a in itertools.chain(l2.tolist(), r2.tolist()))
