"""Bootstrap splits, precision/recall/F1 of duplicate pairs, and threshold tuning.

The design of the product-duplicate studies on the TV data (MSM, MSMP): draw ``n`` items with
replacement; the distinct drawn items (about 63%) are the training part, the items never drawn
the test part. Every threshold is tuned on the training
part only and then applied to the test part.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def bootstrap_split(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(train, test)``: sorted ``int64`` indices; train = distinct items of ``n`` draws with
    replacement, test = the items never drawn."""
    if n < 2:
        raise ValueError(f"a bootstrap needs at least 2 items, got {n}")
    drawn = np.zeros(n, np.bool_)
    drawn[rng.integers(0, n, size=n)] = True
    return np.flatnonzero(drawn).astype(np.int64), np.flatnonzero(~drawn).astype(np.int64)


def _pair_keys(left, right, n: int) -> np.ndarray:
    a = np.minimum(left, right).astype(np.int64)
    b = np.maximum(left, right).astype(np.int64)
    return np.unique(a * n + b)


def pair_metrics(
    left: Sequence[int],
    right: Sequence[int],
    true_left: Sequence[int],
    true_right: Sequence[int],
    n: int,
) -> dict:
    """Precision, recall and F1 of predicted duplicate pairs against the true pairs (both as
    row numbers below ``n``; order within a pair and repeats do not matter)."""
    pred = _pair_keys(np.asarray(left), np.asarray(right), n)
    true = _pair_keys(np.asarray(true_left), np.asarray(true_right), n)
    tp = len(np.intersect1d(pred, true, assume_unique=True))
    p = tp / len(pred) if len(pred) else 0.0
    r = tp / len(true) if len(true) else float("nan")
    f1 = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return {
        "predicted": len(pred),
        "true": len(true),
        "tp": tp,
        "precision": p,
        "recall": r,
        "f1": f1,
    }


def subset_pairs(
    left: np.ndarray, right: np.ndarray, keep: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs with both rows in ``keep`` (indices below ``n``), renumbered to positions in
    the sorted ``keep``; also returns the boolean mask of the pairs kept."""
    keep = np.unique(np.asarray(keep, np.int64))
    pos = np.full(n, -1, np.int64)
    pos[keep] = np.arange(len(keep))
    left = np.asarray(left, np.int64)
    right = np.asarray(right, np.int64)
    mask = (pos[left] >= 0) & (pos[right] >= 0)
    return pos[left[mask]], pos[right[mask]], mask


def tune_threshold(
    scores: np.ndarray, is_true: np.ndarray, total_true: int, kept: tuple[int, int] = (0, 0)
) -> tuple[float, float]:
    """The score threshold (pairs with ``score >= t`` are duplicates) that maximises F1 when the
    scored candidates hold ``is_true`` duplicates and ``total_true`` duplicates exist in all
    (recall counts the ones the candidates missed). Returns ``(threshold, f1)``; with no true
    pair or no candidate, ``(inf, 0.0)``.

    ``kept``: ``(duplicates, pairs)`` that other pairs, decided otherwise, already contribute
    (a threshold for one kind of pair, the others' fixed): F1 counts them too, and keeping
    none of these pairs (``inf``) is a choice when it scores best."""
    scores = np.asarray(scores, np.float64)
    is_true = np.asarray(is_true, np.bool_)
    tp0, k0 = (int(kept[0]), int(kept[1]))
    none = 2 * tp0 / (k0 + total_true) if total_true > 0 else 0.0
    if len(scores) == 0 or total_true == 0 or not is_true.any():
        return float("inf"), none
    order = np.argsort(-scores, kind="stable")
    s = scores[order]
    tp = tp0 + np.cumsum(is_true[order])
    k = k0 + np.arange(1, len(s) + 1)
    # only cut between distinct scores: a threshold keeps every pair with an equal score
    last = np.r_[s[1:] != s[:-1], True]
    f1 = np.where(last, 2 * tp / (k + total_true), -1.0)
    best = int(np.argmax(f1))
    if k0 and none > f1[best]:
        return float("inf"), none
    return float(s[best]), float(f1[best])
