"""Scores of the pairs' feature rows: the trained matcher (:class:`PairModel`, a random forest
fitted on labelled pairs) and, without labels, the fixed :func:`rule_score` and
:func:`unsupervised_score`."""

from __future__ import annotations

import numpy as np

from .features import FEATURES

#: Weights of :func:`rule_score`, the matcher used when no labelled pairs are at hand.
#: ``id_prefix`` has none: a model number that extends another (a suffix for a colour, a
#: region or a revision) names another product as often as the same one (on the shared
#: monitor pages 389 of 593 such candidate pairs are two products, on the TV offers 66 of 75),
#: so only the rest of the evidence may pair them.
RULE_WEIGHTS = {
    "id_share": 0.6,
    "id_conflict": -0.6,
    "brand": 0.1,
    "size": 0.1,
    "units_conflict": -0.15,
    "same_shop": -0.2,
    "title_jac": 0.2,
    "num_idf": 0.3,
    "value_jac": 0.1,
}
#: The threshold on :func:`rule_score` used when none is tuned.
RULE_THRESHOLD = 0.45


#: :func:`rule_score`: what a brand or size conflict costs a pair that shares a model number
#: (without one, a conflict scores 0)
RULE_CONFLICT_PENALTY = 0.2


def rule_score(x: np.ndarray) -> np.ndarray:
    """A training-free score of feature rows: a weighted sum (:data:`RULE_WEIGHTS`), clipped to
    [0, 1]. A brand or size conflict scores 0, unless the two titles share a model number:
    then it costs :data:`RULE_CONFLICT_PENALTY` (a shop's brand field may name a maker's
    other name, or a reseller; a title may state a size another way)."""
    col = {f: i for i, f in enumerate(FEATURES)}
    s = np.zeros(len(x))
    for f, w in RULE_WEIGHTS.items():
        s += w * (np.maximum(x[:, col[f]], 0) if f == "num_idf" else x[:, col[f]])
    conflict = (x[:, col["brand"]] < 0) | (x[:, col["size"]] < 0)
    share = x[:, col["id_share"]] > 0
    s[conflict & share] -= RULE_CONFLICT_PENALTY
    s[conflict & ~share] = 0.0
    return np.clip(s, 0.0, 1.0)


class PairModel:
    """A classifier of feature rows into duplicate / not: a random forest (scikit-learn's
    ``RandomForestClassifier``) fitted on labelled candidate pairs. On the TV data it
    scored 0.777 mean bootstrap test F1 over 15 draws, against 0.766 for gradient-boosted trees
    and 0.705 for logistic regression (``docs/products.md``); with the features of saved-model
    version 3, over the same 10 draws: 0.812, against 0.779 for histogram gradient boosting,
    0.813 for extremely randomised trees and 0.800 with balanced class weights (3 rows a
    leaf), measured before version 4 added ``id_written`` and ``num_idf_sum``.

    ``max_tree_samples``: each tree is grown on a bootstrap sample of at most this many rows
    (all rows below it, as a random forest does by default), so that fitting on the candidates
    of a large catalogue (millions of pairs) costs what fitting on this many does."""

    def __init__(
        self,
        n_estimators: int = 300,
        min_samples_leaf: int = 1,
        random_state: int = 0,
        n_jobs: int = -1,
        max_tree_samples: int = 20_000,
    ):
        from .._extras import require

        require("sklearn", "products", "the trained product matcher")
        self.params = {
            "n_estimators": n_estimators,
            "min_samples_leaf": min_samples_leaf,
            "random_state": random_state,
            "n_jobs": n_jobs,
        }
        self.max_tree_samples = max_tree_samples
        self._clf = self._forest(0)
        self.features = FEATURES

    def _forest(self, rows: int):
        from sklearn.ensemble import RandomForestClassifier

        big = rows > self.max_tree_samples
        return RandomForestClassifier(
            **self.params, max_samples=self.max_tree_samples if big else None
        )

    def fit(self, x: np.ndarray, y: np.ndarray) -> PairModel:
        y = np.asarray(y, np.bool_)
        if y.all() or not y.any():
            raise ValueError(
                "fitting needs both duplicate and non-duplicate pairs "
                f"(got {int(y.sum())} duplicates among {len(y)} pairs)"
            )
        self._clf = self._forest(len(y)).fit(x, y)
        return self

    def score(self, x: np.ndarray) -> np.ndarray:
        """Probability of being a duplicate, per row (:func:`_steady`)."""
        if len(x) == 0:
            return np.zeros(0)
        return _steady(self._clf.predict_proba(x)[:, 1])

    def out_of_fold(self, x: np.ndarray, y: np.ndarray, folds: int = 5) -> np.ndarray:
        """Scores of the training rows from models that did not see them (for tuning a
        threshold without the optimism of in-sample scores)."""
        from sklearn.model_selection import StratifiedKFold

        y = np.asarray(y, np.bool_)
        out = np.zeros(len(y))
        k = int(min(folds, y.sum(), (~y).sum()))
        if k < 2:
            return self.fit(x, y).score(x)
        for tr, te in StratifiedKFold(k, shuffle=True, random_state=0).split(x, y):
            out[te] = _steady(self._forest(len(tr)).fit(x[tr], y[tr]).predict_proba(x[te])[:, 1])
        return out


#: :func:`_steady`: the decimals a forest's probability keeps
SCORE_DECIMALS = 12


def _steady(p: np.ndarray) -> np.ndarray:
    """A forest's probabilities rounded to :data:`SCORE_DECIMALS` decimals. The trees' votes
    are summed by threads in whatever order they finish, so the last bits of a score vary from
    run to run when the machine is busy (leaves of rows with equal features but different
    labels vote fractions); a threshold tuned to one score then keeps or drops its ties by
    chance, and the same study gave different F1."""
    return np.round(p, SCORE_DECIMALS)


def unsupervised_score(
    x: np.ndarray, cosine: np.ndarray, within_clean_shop: np.ndarray | None = None
) -> np.ndarray:
    """The score used without a trained model: the larger of :func:`rule_score` (model
    numbers, brand, sizes, attribute numbers) and the title cosine
    (:func:`.blocking.title_cosine`: shared rare words and model words). The cosine counts 0
    where the evidence speaks against a pair: the titles state conflicting model numbers, or
    one model number extends the other (a variant: the cosine would count their shared stem
    as a match), the brands differ (and no model number is shared), or
    (``within_clean_shop``, ``bool`` per pair) both offers come from one shop that lists each
    product once (:func:`shops_listing_once`). The rule finds duplicates whose
    titles differ but whose specifications agree; the cosine those whose titles agree where a
    rounded size or sparse attributes made the rule give up."""
    col = FEATURES.index
    against = (
        (x[:, col("id_conflict")] > 0)
        | (x[:, col("id_prefix")] > 0)
        | ((x[:, col("brand")] < 0) & (x[:, col("id_share")] <= 0))
    )
    if within_clean_shop is not None:
        against |= np.asarray(within_clean_shop, bool)
    return np.maximum(rule_score(x), np.where(against, 0.0, np.asarray(cosine, np.float64)))
