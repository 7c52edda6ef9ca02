"""Ground truth of product offers, and scoring against it.

A truth file (matching pairs, entity ids or labelled pairs: :mod:`neardup.evaluate.truth`
describes the shapes and reads them) is read against the loaded offers by :func:`load_truth`
into a :class:`Truth` (:mod:`neardup.evaluate.known`), which may be partial.

Scoring (:func:`score_pairs`, :func:`candidate_quality_known`) looks only at pairs whose truth
is known: predicted pairs of unknown status are counted apart, never as errors.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ..errors import ConfigError
from ..evaluate.known import Truth as Truth
from ..evaluate.truth import ENTITY_NAMES as ENTITY_NAMES
from ..evaluate.truth import LABEL_NAMES as LABEL_NAMES
from ..evaluate.truth import TRUTH_FORMATS as TRUTH_FORMATS
from ..evaluate.truth import load_truth as read_truth
from .offers import Offers


def _positives(
    truth: Truth, sources: Sequence[str] | None, cross_source: bool
) -> tuple[np.ndarray, np.ndarray]:
    pl, pr = truth.positives()
    if cross_source:
        if sources is None:
            raise ValueError("cross_source needs the offers' sources")
        m = _across(pl, pr, sources)
        pl, pr = pl[m], pr[m]
    return pl, pr


def _across(a: np.ndarray, b: np.ndarray, sources: Sequence[str]) -> np.ndarray:
    """``bool`` per pair: its offers come from different sources (compared as codes)."""
    _, codes = np.unique(np.asarray(sources, dtype=object), return_inverse=True)
    return codes[a] != codes[b]


def _distinct(
    left, right, truth: Truth, sources, cross_source: bool
) -> tuple[np.ndarray, np.ndarray, int]:
    """Distinct non-self pairs ``left < right`` (across sources with ``cross_source``), and
    how many within one source were left out."""
    a, b = truth._norm(left, right)
    differ = a != b
    k = a[differ] * truth.n + b[differ] if not differ.all() else a * truth.n + b
    if len(k) > 1 and not (k[1:] > k[:-1]).all():  # candidates often come sorted already
        k = np.sort(k)
        k = k[np.r_[True, k[1:] != k[:-1]]]  # (np.unique: several times slower here)
    a, b = k // truth.n, k % truth.n
    within = 0
    if cross_source:
        if sources is None:
            raise ValueError("cross_source needs the offers' sources")
        m = _across(a, b, sources)
        within = int(len(a) - m.sum())
        a, b = a[m], b[m]
    return a, b, within


def _ratio(x: float, y: int) -> float | None:
    return x / y if y else None


def score_pairs(
    left, right, truth: Truth, *, sources: Sequence[str] | None = None, cross_source: bool = False
) -> dict:
    """Precision, recall and F1 of predicted matching pairs, on known pairs only.

    Precision is over the predicted pairs whose truth is known (``tp + fp``); the predicted
    pairs of unknown status are counted as ``unknown``. Recall is over all known matching
    pairs (with ``cross_source``: those across ``sources``; predicted pairs within one source
    are then left out, counted as ``within_one_source_left_out``). Repeats and either order of
    a pair count once; self pairs are dropped. Undefined ratios are ``None``."""
    a, b, within = _distinct(left, right, truth, sources, cross_source)
    known = truth.is_known(a, b)
    match = truth.is_match(a, b)
    tp = int(match.sum())
    fp = int(known.sum()) - tp
    npos = len(_positives(truth, sources, cross_source)[0])
    p, r = _ratio(tp, tp + fp), _ratio(tp, npos)
    f1 = None if p is None or r is None else (2 * p * r / (p + r) if p + r > 0 else 0.0)
    out = {
        "predicted": len(a),
        "known": tp + fp,
        "unknown": int(len(a) - known.sum()),
        "tp": tp,
        "fp": fp,
        "fn": npos - tp,
        "positives": npos,
        "precision": p,
        "recall": r,
        "f1": f1,
    }
    if cross_source:
        out["within_one_source_left_out"] = within
    return out


def candidate_quality_known(
    left,
    right,
    truth: Truth,
    n_offers: int | None = None,
    *,
    sources: Sequence[str] | None = None,
    cross_source: bool = False,
) -> dict:
    """Blocking quality of candidate pairs on the known truth: pair completeness ``pc``
    (known matching pairs among the candidates / all known matching pairs, across sources
    with ``cross_source``), pair quality ``pq`` (matching / known candidates), ``f1_star``,
    the fraction of all pairs, and the candidate pairs per offer: candidates / offers
    (``per_offer``), and over the labelled offers (``per_labelled_offer``: each labelled offer
    counts half of each of its pairs, so that both measure on one scale): far more per
    labelled offer than per offer means the labelled offers are not typical of the catalogue.
    Undefined ratios are ``None``."""
    n = truth.n if n_offers is None else n_offers
    if n != truth.n:
        raise ValueError(f"the truth is over {truth.n} offers, not {n}")
    a, b, within = _distinct(left, right, truth, sources, cross_source)
    known = int(truth.is_known(a, b).sum())
    found = int(truth.is_match(a, b).sum())
    npos = len(_positives(truth, sources, cross_source)[0])
    pc, pq = _ratio(found, npos), _ratio(found, known)
    f1s = None if pc is None or pq is None else (2 * pc * pq / (pc + pq) if pc + pq > 0 else 0.0)
    nlab = int(truth.labelled.sum())
    ends = int(truth.labelled[a].sum() + truth.labelled[b].sum())
    out = {
        "candidates": len(a),
        "known_candidates": known,
        "positives_found": found,
        "positives": npos,
        "pc": pc,
        "pq": pq,
        "f1_star": f1s,
        "fraction": len(a) / (n * (n - 1) / 2) if n > 1 else 0.0,
        "per_offer": len(a) / n if n else 0.0,
        "per_labelled_offer": _ratio(ends / 2, nlab),
    }
    if cross_source:
        out["within_one_source_left_out"] = within
    return out


def load_truth(
    path: str | os.PathLike,
    offers: Offers,
    *,
    on_error: str = "fail",
    sep: str | None = None,
    format: str = "auto",
) -> Truth:
    """Read a truth file of any shape (:mod:`neardup.evaluate.truth`) against the loaded
    ``offers``.

    ``counts`` of the returned :class:`Truth`: ``rows`` read, ``header`` (0 or 1),
    ``unknown_id`` (rows left out with ``on_error="skip"``), ``bad_rows`` (ditto: a missing
    cell or a label that is not 0/1), ``self_pairs``, ``repeated``, and for pairs
    ``listed_pairs`` and ``closure_pairs`` (matching pairs implied by the listed ones through
    shared offers)."""
    return read_truth(
        path,
        offers.ids,
        id_prefixes=offers.id_prefixes,
        on_error=on_error,
        sep=sep,
        format=format,
    )


def check_truth(truth: Truth, offers: Offers) -> None:
    """A :class:`ConfigError` where ``truth`` was read against other offers."""
    if truth.n != len(offers):
        raise ConfigError(f"the truth is over {truth.n:,} offers, the data has {len(offers):,}")
