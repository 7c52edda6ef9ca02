"""The bootstrap study of product-duplicate detection on the TV data, done with neardup's
candidates and matchers.

For each of ``bootstraps`` draws (:func:`..evaluate.bootstrap.bootstrap_split`), the training
part and the test part are each treated as a catalogue of their own: described, and blocked at
every setting of the sweep. The blocking (:attr:`StudyConfig.blocking`) is either

- ``"tokens"`` (default): token blocking (:func:`.blocking.token_blocking`), the sweep over
  budgets of candidate pairs per offer (:data:`BUDGETS` and the default ``per_offer``), or
- ``"lsh"``: MinHash LSH over title model words (:func:`.candidates.banded_candidates`), the
  sweep over every ``(bands, rows)`` of ``num_perm`` (the default ``bands x rows``).

At each setting, three classifiers of the candidate pairs are compared, each with its threshold
tuned on the training part only:

- ``baseline``: Jaccard of title words and attribute key:value pairs;
- ``rule``: neardup's training-free :func:`.matcher.rule_score`, one listing per shop;
- ``neardup``: a random forest over the pair features (:class:`.matcher.PairModel`),
  fitted on the training part's candidates at the default setting, with out-of-fold scores
  for tuning, one listing per shop.

Rows of the token-blocking sweep carry ``per_offer`` (the budget), rows of the LSH sweep
``bands`` and ``rows``.

The truth labels are read only to fit, tune and score; no feature sees them. The truth is one
label per offer (complete), or a :class:`.truth.Truth` that may be partial (entity ids of some
offers, labelled pairs): the matcher is then fitted and its threshold tuned only on candidate
pairs whose truth is known, and precision, recall and PC count known pairs only (a predicted
pair of unknown status is neither right nor wrong).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import cast

import numpy as np

from .._records import record
from ..config import check_banding
from ..evaluate.bootstrap import bootstrap_split, tune_threshold
from ..validate import check_choice, check_int, check_real
from .blocking import budget_masks, offer_tokens, token_blocking
from .candidates import across_sources, banded_candidates, bandings, model_word_sets
from .descriptions import OfferDescriptions
from .features import _jac
from .matcher import (
    FEATURES,
    PairModel,
    Thresholds,
    code_parts,
    describe,
    offer_parts,
    one_per_shop,
    pair_features,
    rule_score,
    select_parts,
    shops_listing_once,
    tune_thresholds,
)
from .modelwords import UnitMap
from .offers import Offers
from .truth import Truth, candidate_quality_known, score_pairs

METHODS = ("baseline", "rule", "neardup")

#: the ways the study finds candidate pairs (:attr:`StudyConfig.blocking`)
BLOCKINGS = ("tokens", "lsh")

#: budgets of candidate pairs per offer swept with token blocking (and the default
#: :attr:`StudyConfig.per_offer`)
BUDGETS = (0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 40.0)

#: a setting of the sweep: a budget of candidate pairs per offer (token blocking) or a
#: ``(bands, rows)`` banding (LSH)
Key = float | tuple[int, int]


@record
class StudyConfig:
    """Parameters of :func:`run_study`. ``blocking``: ``"tokens"`` (default) or ``"lsh"``.

    Token blocking: the default budget (``per_offer`` candidate pairs per offer) is the one the
    summary reports; the sweep covers the budgets of :data:`BUDGETS` and the default.

    LSH (``num_perm``, ``bands``, ``rows``, ``max_df``): the default banding (``bands x rows``)
    is the one the summary reports; the sweep covers every banding of ``num_perm`` (bandings
    whose buckets hold more than ``max_pairs`` pairs: left out).

    The classifiers are run on the budgets up to the default (larger ones: PC/PQ only), and
    on the bandings whose candidates are at most ``max_fraction`` of all pairs and
    ``max_pairs`` pairs (looser ones: PC/PQ only; the default always). ``link``: only pairs across sources (shops) count, as candidates and as the
    truth (the linkage of catalogues)."""

    bootstraps: int = 5
    seed: int = 0
    blocking: str = "tokens"
    #: token blocking: the default budget of candidate pairs per offer (on average, at most)
    per_offer: float = 10.0
    num_perm: int = 240
    bands: int = 60
    rows: int = 4
    max_df: float = 0.2
    max_fraction: float = 0.1
    #: the classifiers run only on settings with at most this many candidates (the default
    #: always), and LSH bandings whose buckets hold more pairs than this are left out of the
    #: sweep: on a large catalogue the loosest bandings pair nearly everything
    max_pairs: int = 1_000_000
    units: UnitMap | None = None
    link: bool = False
    #: the random state of the matcher's forest (its trees' samples and split features). A
    #: study is the same at every run; but which state it is moves a mean test F1 about as much
    #: as the draws do (on the TV data, four states over 15 draws: 0.831-0.845), so a change to
    #: the matcher is compared over several
    model_seed: int = 0

    def __post_init__(self) -> None:
        check_int("bootstraps", self.bootstraps, 1)
        check_int("seed", self.seed, 0)
        check_int("model_seed", self.model_seed, 0)
        check_choice("blocking", self.blocking, BLOCKINGS)
        check_real("per_offer", self.per_offer, 0.0, None, lo_open=True)
        check_banding(self.num_perm, self.bands, self.rows)
        check_real("max_df", self.max_df, 0.0, 1.0, lo_open=True)
        check_real("max_fraction", self.max_fraction, 0.0, 1.0, lo_open=True)
        check_int("max_pairs", self.max_pairs, 1)

    @property
    def default(self) -> Key:
        """The setting the summary reports: the budget ``per_offer`` (token blocking) or the
        banding ``(bands, rows)`` (LSH)."""
        return float(self.per_offer) if self.blocking == "tokens" else (self.bands, self.rows)

    def sweep(self) -> list[Key]:
        """The settings of the sweep, loosest last for LSH (fewest rows first) and smallest
        budget first for token blocking; the default among them."""
        if self.blocking == "tokens":
            return sorted({float(b) for b in BUDGETS} | {self.default})
        banded: set[tuple[int, int]] = set(bandings(self.num_perm)) | {(self.bands, self.rows)}
        ordered = sorted(banded, key=lambda br: br[1])
        return list(ordered)


def run_key(row: dict) -> Key:
    """The setting of the sweep a row of :attr:`StudyResult.runs` (or of the summary) is at:
    its ``per_offer`` budget (token blocking) or its ``(bands, rows)`` (LSH)."""
    return row["per_offer"] if "per_offer" in row else (row["bands"], row["rows"])


def key_fields(key: Key) -> dict:
    """The fields of a row that name a setting (the inverse of :func:`run_key`)."""
    return {"bands": key[0], "rows": key[1]} if isinstance(key, tuple) else {"per_offer": key}


@record
class StudyResult:
    """Rows of the study: ``runs`` (one per bootstrap, setting of the sweep and method, test
    figures), ``summary`` (mean and standard deviation per method at the default setting),
    ``distributions`` (the baseline's similarity of true pairs and of all candidates, whole data,
    default setting) and ``seconds``."""

    config: StudyConfig
    runs: list[dict] = field(default_factory=list)
    summary: list[dict] = field(default_factory=list)
    distributions: dict[str, np.ndarray] = field(default_factory=dict)
    seconds: float = 0.0
    n_offers: int = 0
    n_true_pairs: int = 0
    #: a partial truth, in words ("" for one label per offer)
    partial_truth: str = ""
    #: LSH bandings of the sweep left out in some bootstrap: their buckets held too many pairs
    #: (:attr:`StudyConfig.max_pairs`; token blocking leaves none out)
    skipped_bandings: set = field(default_factory=set)


def subset(offers: Offers, rows: np.ndarray) -> Offers:
    """The offers at ``rows``, in that order (skip counts are not carried over)."""
    rows = np.asarray(rows).tolist()
    return Offers(
        ids=[offers.ids[i] for i in rows],
        shops=[offers.shops[i] for i in rows],
        titles=[offers.titles[i] for i in rows],
        attributes=[offers.attributes[i] for i in rows],
        sources=[offers.sources[i] for i in rows],
        descriptions=[offers.descriptions[i] for i in rows]
        if len(offers.descriptions) == len(offers)
        else [""] * len(rows),
    )


@record
class _Part:
    truth: Truth
    total_true: int
    n: int
    pairs: dict  # setting -> (left, right)
    x: dict  # setting -> features
    desc: OfferDescriptions
    xall: np.ndarray  # features of every distinct pair of the settings evaluated
    idx: dict  # setting -> rows of xall
    shops: list
    link: bool


def _candidates(part: Offers, d, cfg: StudyConfig, keys: list[Key]) -> dict:
    """The candidate pairs of ``part`` at each setting of ``keys``: ``{key: (left, right)}``
    (LSH: bandings whose buckets hold more than ``max_pairs`` pairs left out, but the default;
    with ``link``, pairs across sources only)."""
    if cfg.blocking == "tokens":
        # one blocking at the largest budget: a smaller budget's pairs are its best-weighted
        # pairs of each offer and then the best overall, a prefix of the same ranking
        budgets = cast("list[float]", keys)  # token blocking: the keys are budgets
        tokens = d.block_tokens if d is not None else offer_tokens(part, cfg.units)
        left, right, w, _ = token_blocking(
            part, per_offer=max(budgets), link=cfg.link, units=cfg.units, tokens=tokens
        )
        masks = budget_masks(left, right, w, len(part), budgets)
        return {budget: (left[m], right[m]) for budget, m in zip(budgets, masks)}
    sets = model_word_sets(part, cfg.units, brands=d.brands, max_df=cfg.max_df)
    pairs = banded_candidates(
        sets,
        cast("list[tuple[int, int]]", keys),  # LSH: the keys are bandings
        cfg.num_perm,
        seed=cfg.seed + 1,
        max_pairs=cfg.max_pairs,
        always=cast("tuple[int, int]", cfg.default),
    )
    if cfg.link:
        pairs = {
            k: (lft[m], rgt[m])
            for k, (lft, rgt) in pairs.items()
            for m in [across_sources(lft, rgt, part.shops)]
        }
    return pairs


def _prepare(
    offers: Offers,
    truth: Truth,
    rows: np.ndarray,
    cfg: StudyConfig,
    keys: list[Key],
    parts: dict | None = None,
) -> _Part:
    """One part of a bootstrap as a catalogue of its own: described, blocked at each setting
    of ``keys``, and the features of the candidates of the default setting and of every
    setting up to ``max_fraction``."""
    part = subset(offers, rows)
    sub = truth.subset(rows)
    d = describe(part, cfg.units, parts=select_parts(parts, rows) if parts is not None else None)
    default = cfg.default
    pairs = _candidates(part, d, cfg, keys)
    x = {}
    cap = min(cfg.max_fraction * len(part) * (len(part) - 1) / 2, cfg.max_pairs)
    # features once per distinct pair: looser settings hold the tighter ones' pairs mostly.
    # Token blocking: the classifiers run up to the default budget (larger ones: PC/PQ only)
    wanted = [
        k
        for k, (left, _) in pairs.items()
        if (len(left) <= cap and (cfg.blocking != "tokens" or k <= default)) or k == default
    ]
    allp: dict[tuple[int, int], int] = {}
    for key in wanted:
        left, right = pairs[key]
        for a, b in zip(left.tolist(), right.tolist()):
            allp.setdefault((a, b), len(allp))
    ab = np.array(list(allp), np.int64).reshape(-1, 2)
    xall = pair_features(d, ab[:, 0], ab[:, 1])
    idxs = {}
    for key in wanted:
        left, right = pairs[key]
        idxs[key] = np.fromiter(
            (allp[(a, b)] for a, b in zip(left.tolist(), right.tolist())), np.int64, len(left)
        )
        x[key] = xall[idxs[key]]
    total = _n_positives(sub, part.shops, cfg.link)
    return _Part(sub, total, len(part), pairs, x, d, xall, idxs, part.shops, cfg.link)


def _n_positives(truth: Truth, shops: Sequence[str], link: bool) -> int:
    """The number of known matching pairs (across sources only, with ``link``)."""
    tl, tr = truth.positives()
    return int(across_sources(tl, tr, shops).sum()) if link else len(tl)


def _metrics(pred_l, pred_r, part: _Part) -> dict:
    """Precision, recall and F1 on the known pairs (no prediction: precision 0; no known
    matching pair: recall NaN, as :func:`..evaluate.bootstrap.pair_metrics` has them)."""
    m = score_pairs(pred_l, pred_r, part.truth, sources=part.shops, cross_source=part.link)
    p = m["precision"] if m["precision"] is not None else 0.0
    r = m["recall"] if m["recall"] is not None else float("nan")
    f1 = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return {
        "precision": p,
        "recall": r,
        "f1": f1,
        "predicted": m["predicted"],
        "unknown": m["unknown"],
    }


def _candidate_quality(left, right, part: _Part) -> dict:
    """PC, PQ, F1* and the fraction of the candidates (PC of the known matching pairs across
    sources only, with ``link``: pairs within one source are never candidates)."""
    q = candidate_quality_known(
        left, right, part.truth, part.n, sources=part.shops, cross_source=part.link
    )
    pc = q["pc"] if q["pc"] is not None else float("nan")
    pq = q["pq"] if q["pq"] is not None else 0.0
    f1s = 2 * pc * pq / (pc + pq) if pc + pq > 0 else 0.0
    return {
        "candidates": q["candidates"],
        "fraction": q["fraction"],
        "pc": pc,
        "pq": pq,
        "f1_star": f1s,
    }


def run_study(
    offers: Offers,
    labels: Sequence[str] | Truth,
    cfg: StudyConfig | None = None,
    progress: Callable[[str], None] | None = None,
) -> StudyResult:
    """Run the bootstrap study (module docstring) and return its rows. ``labels``: one label
    per offer, or a :class:`.truth.Truth` of the offers."""
    cfg = cfg or StudyConfig()
    truth = labels if isinstance(labels, Truth) else Truth.from_labels(labels)
    if truth.n != len(offers):
        raise ValueError(f"{truth.n} labels for {len(offers)} offers")
    if cfg.bootstraps < 1:
        raise ValueError(f"bootstraps={cfg.bootstraps}: at least 1")
    default = cfg.default
    sweep = cfg.sweep()
    t0 = time.perf_counter()
    rng = np.random.default_rng(cfg.seed)
    res = StudyResult(
        cfg, n_offers=len(offers), n_true_pairs=_n_positives(truth, offers.shops, cfg.link)
    )
    lab = int(truth.labelled.sum())
    if truth.negatives == "listed":
        res.partial_truth = (
            f"labelled pairs among {lab:,} offers: only the listed pairs are fitted on and scored"
        )
    elif lab < len(offers):
        res.partial_truth = (
            f"{lab:,} offers labelled: only pairs of two labelled offers are fitted on and scored"
        )
    sj = FEATURES.index("seed_jac")
    parts = code_parts(offer_parts(offers, cfg.units))  # what each offer is on its own, made once
    for b in range(cfg.bootstraps):
        train_rows, test_rows = bootstrap_split(len(offers), rng)
        tr = _prepare(offers, truth, train_rows, cfg, sweep, parts)
        te = _prepare(offers, truth, test_rows, cfg, sweep, parts)
        # the model: fitted on the training candidates of known truth at the default setting
        xl, xr = tr.pairs[default]
        known = tr.truth.is_known(xl, xr)
        y = tr.truth.is_match(xl, xr)[known]
        fitted = PairModel(random_state=cfg.model_seed)
        model: PairModel | None = None
        if y.any() and not y.all():
            oof = fitted.out_of_fold(tr.x[default][known], y)
            fitted.fit(tr.x[default][known], y)
            model = fitted
        else:  # nothing to learn from: the model finds no duplicates
            oof = np.zeros(len(y))
        # the model's scores of every pair once; the training pairs it was fitted on get
        # their out-of-fold scores instead
        model_tr = model.score(tr.xall) if model is not None else np.zeros(len(tr.xall))
        model_tr[tr.idx[default][known]] = oof
        model_te = model.score(te.xall) if model is not None else np.zeros(len(te.xall))
        otr, ote = shops_listing_once(tr.desc), shops_listing_once(te.desc)
        for key in sweep:
            if key not in tr.pairs or key not in te.pairs:  # too many pairs: not run
                res.skipped_bandings.add(key)
                continue
            tl, trr = tr.pairs[key]
            el, er = te.pairs[key]
            q = _candidate_quality(el, er, te)
            base = {
                "bootstrap": b,
                **key_fields(key),
                "fraction": q["fraction"],
                "pc": q["pc"],
                "pq": q["pq"],
                "f1_star": q["f1_star"],
                "candidates": q["candidates"],
            }
            if key not in tr.x or key not in te.x:  # the blocking's figures only
                res.runs.append({**base, "method": cfg.blocking})
                continue
            xtr, xte = tr.x[key], te.x[key]
            ktr = tr.truth.is_known(tl, trr)  # tuned on the pairs of known truth
            ytr = tr.truth.is_match(tl, trr)[ktr]
            s_model_tr = model_tr[tr.idx[key]]
            s_model_te = model_te[te.idx[key]]
            scores = {
                "baseline": (xtr[:, sj], xte[:, sj]),
                "rule": (
                    one_per_shop(tl, trr, rule_score(xtr), tr.desc, xtr, otr),
                    one_per_shop(el, er, rule_score(xte), te.desc, xte, ote),
                ),
                "neardup": (
                    one_per_shop(tl, trr, s_model_tr, tr.desc, xtr, otr),
                    one_per_shop(el, er, s_model_te, te.desc, xte, ote),
                ),
            }
            for method, (s_tr, s_te) in scores.items():
                extra = {}
                if method == "neardup":  # the trained matcher: a threshold for one-sided pairs
                    t = tune_thresholds(s_tr[ktr], ytr, tr.total_true, xtr[ktr])
                    extra["threshold_one_sided"] = t.one_sided_shown
                else:
                    t = Thresholds(tune_threshold(s_tr[ktr], ytr, tr.total_true)[0])
                # 0: not this offer's best listing in that shop (the baseline has no such rule)
                keep = t.keep(s_te, xte) if method != "baseline" else s_te >= t.main
                m = _metrics(el[keep], er[keep], te)
                res.runs.append(
                    {
                        **base,
                        "method": method,
                        "threshold": t.main,
                        **extra,
                        "precision": m["precision"],
                        "recall": m["recall"],
                        "f1": m["f1"],
                        "predicted": m["predicted"],
                        "unknown": m["unknown"],
                    }
                )
        if progress is not None:
            last = [
                r
                for r in res.runs
                if r["bootstrap"] == b and run_key(r) == default and r["method"] == "neardup"
            ]
            progress(
                f"bootstrap {b + 1}/{cfg.bootstraps}: test F1 {last[0]['f1']:.3f} at "
                f"fraction {last[0]['fraction']:.4f} ({time.perf_counter() - t0:.1f} s)"
            )
    res.summary = summarise(res.runs, default)
    # the baseline's similarity of the true pairs and of all candidates, whole data
    # the baseline's similarity of the candidates (whole data, default setting): only it
    seeds = parts["seed_sets"]
    d = describe(offers, cfg.units) if cfg.blocking == "lsh" else None
    wl, wr = _candidates(offers, d, cfg, [default])[default]
    sim = np.fromiter(
        (_jac(seeds[a], seeds[b]) for a, b in zip(wl.tolist(), wr.tolist())), np.float64, len(wl)
    )
    res.distributions = {"candidates": sim, "true_pairs": sim[truth.is_match(wl, wr)]}
    res.seconds = time.perf_counter() - t0
    return res


def summarise(runs: list[dict], key: Key) -> list[dict]:
    """Mean and standard deviation over the bootstraps of each method at the setting ``key``
    (a ``(bands, rows)`` banding or a budget of candidate pairs per offer)."""
    out = []
    for method in METHODS:
        rows = [r for r in runs if r["method"] == method and run_key(r) == key]
        if not rows:
            continue
        row = {"method": method, **key_fields(key), "bootstraps": len(rows)}
        for k in (
            "fraction",
            "pc",
            "pq",
            "f1_star",
            "precision",
            "recall",
            "f1",
            "threshold",
            "threshold_one_sided",
        ):
            if not any(k in r for r in rows):  # the trained matcher's rows only
                continue
            # a one-sided threshold of None: that draw kept no one-sided pair
            v = np.array([r[k] for r in rows if r.get(k) is not None], np.float64)
            row[k] = float(v.mean()) if len(v) else None
            row[k + "_sd"] = float(v.std(ddof=1)) if len(v) > 1 else 0.0
        out.append(row)
    return out
