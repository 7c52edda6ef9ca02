"""Where scores become duplicates: a trained matcher's :class:`Thresholds` (one for the pairs
where only one offer names a model number, one for the rest) and their tuning on labelled pairs
(:func:`tune_thresholds`)."""

from __future__ import annotations

import numpy as np

from .._records import record
from .features import FEATURES


@record(frozen=True)
class Thresholds:
    """Where a trained matcher's scores become duplicates: pairs scoring at least ``main``,
    and among the pairs where only one offer names a model number (``id_one``) those scoring
    at least ``one_sided`` (``None``: ``main`` for them too; ``inf``: none of them).

    A trained model's scores of one-sided pairs are calibrated on the catalogue it was fitted
    on, where about 1% of such candidates match; a threshold of their own, tuned with the
    other pairs' threshold fixed and the two tuned in turn (:func:`tune_thresholds`), lifted
    the TV study's mean test F1 over four forest states (``docs/products.md``)."""

    main: float
    one_sided: float | None = None

    def keep(self, scores: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Which pairs (``scores``, their feature rows ``x``) are duplicates: at least their
        threshold, and above 0 (0: dropped by :func:`one_per_shop`)."""
        scores = np.asarray(scores, np.float64)
        thr = np.full(len(scores), self.main)
        if self.one_sided is not None:
            thr[x[:, FEATURES.index("id_one")] > 0] = self.one_sided
        return (scores >= thr) & (scores > 0)

    @property
    def one_sided_shown(self) -> float | None:
        """The threshold one-sided pairs meet, as a summary shows it: ``main`` where they
        have none of their own, ``None`` where none of them is kept."""
        one = self.main if self.one_sided is None else self.one_sided
        return None if np.isinf(one) else one


#: :func:`tune_thresholds`: the most rounds of tuning one threshold with the other fixed
TUNE_ROUNDS = 10
#: :func:`tune_thresholds`: the one-sided pairs get a threshold of their own only where their
#: labelled pairs hold at least this many duplicates and this many other pairs. With few
#: non-duplicates the best threshold is the lowest duplicate's score, and the fewer the pairs
#: the higher that minimum lies (a feed of camera pages whose labelled one-sided pairs were
#: 20 duplicates and 1 other: 0.95 against 0.93 for all pairs, and test recall fell)
MIN_GROUP_PAIRS = 20


def tune_thresholds(
    scores: np.ndarray,
    is_true: np.ndarray,
    total_true: int,
    x: np.ndarray,
    min_group: int = MIN_GROUP_PAIRS,
) -> Thresholds:
    """:class:`Thresholds` that maximise F1 on labelled pairs (``scores``: out-of-fold, after
    :func:`one_per_shop`; ``x`` their feature rows; ``total_true`` duplicates exist in all).
    ``main`` starts as the best single threshold of every pair; then, in turn, ``one_sided``
    is tuned on the one-sided pairs with the others kept at ``main``, and ``main`` on the
    others with the one-sided pairs kept at ``one_sided``, until neither moves (F1 never
    falls from one step to the next; at most :data:`TUNE_ROUNDS` rounds). One threshold for
    all (``one_sided`` ``None``) where the one-sided pairs scoring above 0 hold fewer than
    ``min_group`` (:data:`MIN_GROUP_PAIRS`) duplicates or fewer than that many other pairs,
    or none of either."""
    # here, not at the top: `products dedup` loads none of the evaluation modules
    from ..evaluate.bootstrap import tune_threshold

    scores = np.asarray(scores, np.float64)
    is_true = np.asarray(is_true, np.bool_)
    main, _ = tune_threshold(scores, is_true, total_true)
    one = x[:, FEATURES.index("id_one")] > 0
    live = scores > 0  # a pair at 0 is never kept
    side_rows, rest_rows = one & live, ~one & live
    matching = int((side_rows & is_true).sum())
    if np.isinf(main) or min(matching, int(side_rows.sum()) - matching) < min_group:
        return Thresholds(main)

    def tuned(rows: np.ndarray, other: np.ndarray) -> float:
        kept = (int((other & is_true).sum()), int(other.sum()))
        return tune_threshold(scores[rows], is_true[rows], total_true, kept=kept)[0]

    side = None
    for _ in range(TUNE_ROUNDS):
        new_side = tuned(side_rows, rest_rows & (scores >= main))
        new_main = tuned(rest_rows, side_rows & (scores >= new_side))
        if np.isinf(new_main):  # none of the others kept: just above the best of them
            new_main = (
                float(np.nextafter(scores[rest_rows].max(), np.inf)) if rest_rows.any() else main
            )
        if (new_side, new_main) == (side, main):
            break
        side, main = new_side, new_main
    return Thresholds(main, side)
