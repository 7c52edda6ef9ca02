"""The two jobs behind ``neardup products``: find duplicate offers, and evaluate against a truth.

:func:`dedup_offers` writes, into its output directory:

- ``pairs.jsonl``: one line per duplicate pair, best first: both ids, shops and titles, the
  score and the evidence a person checks (:func:`.matcher.evidence`);
- ``clusters.csv``: ``cluster,id,shop,title`` for every offer in a cluster of two or more;
- ``summary.json``: counts (offers, skipped by reason, candidates, pairs, clusters), the
  parameters and the matcher used; given a truth, a ``quality`` block (the pairs' precision,
  recall and F1 on known pairs, the candidates' pair completeness).

:func:`evaluate_offers` runs the bootstrap study (:mod:`.study`) and writes its report
(:mod:`.report`); with ``save_model`` it also fits the matcher on all labelled candidates and
saves it for ``dedup --model``.
"""

from __future__ import annotations

import json
import os
import pickle
import time
from dataclasses import asdict
from typing import TYPE_CHECKING

import numpy as np

from ..config import check_banding
from ..errors import InputError, OutputError
from ..io import prepare_outdir
from ..io.files import unpickle_file
from ..products.blocking import token_blocking
from ..products.candidates import across_sources, lsh_candidates, model_word_sets
from ..products.matcher import (
    FEATURES,
    RULE_THRESHOLD,
    PairModel,
    Thresholds,
    describe,
    evidence,
    offer_clusters,
    one_per_shop,
    pair_features,
    shops_listing_once,
    tune_thresholds,
    unique_mapping,
    unsupervised_score,
)
from ..products.modelwords import UnitMap
from ..products.offers import Offers
from ..validate import check_choice, check_int, check_real

if TYPE_CHECKING:  # the study (and its report) load for evaluate_offers, not for a dedup
    from ..products.study import StudyConfig
    from ..products.truth import Truth

#: the ways :func:`dedup_offers` finds candidate pairs
BLOCKINGS = ("tokens", "lsh")

MODEL_FORMAT = "neardup-offer-pair-model"
#: version 5 carries :class:`.matcher.Thresholds` (version 4, one threshold, is still read)
MODEL_VERSION = 5
_READ_VERSIONS = (4, 5)


#: The thresholds at which :func:`pairs_by_threshold` counts the pairs a run would report.
THRESHOLD_GRID = tuple(round(0.2 + 0.05 * i, 2) for i in range(14))  # 0.20 ... 0.85


def pairs_by_threshold(scores: np.ndarray) -> dict[str, int]:
    """How many of the scored pairs (``0`` for a pair :func:`.matcher.one_per_shop` dropped)
    each threshold of :data:`THRESHOLD_GRID` keeps, before any one-to-one matching: without
    labels, where the count stops falling steeply is where the duplicates' scores begin."""
    scores = np.asarray(scores, np.float64)
    kept = np.sort(scores[scores > 0])
    return {
        f"{t:.2f}": int(len(kept) - np.searchsorted(kept, t, side="left")) for t in THRESHOLD_GRID
    }


def save_model(model: PairModel, thresholds: Thresholds, path: str | os.PathLike) -> None:
    """Save a fitted matcher and its tuned thresholds (a pickle: load only files you made)."""
    try:
        with open(path, "wb") as f:
            pickle.dump(
                {
                    "format": MODEL_FORMAT,
                    "version": MODEL_VERSION,
                    "features": list(FEATURES),
                    "threshold": thresholds.main,
                    "threshold_one_sided": thresholds.one_sided,
                    "model": model,
                },
                f,
            )
    except OSError as e:
        raise OutputError(f"cannot write the model to {os.fspath(path)}: {e.strerror or e}") from e


def load_model(path: str | os.PathLike) -> tuple[PairModel, Thresholds]:
    """``(model, thresholds)`` saved by :func:`save_model` (or by a neardup whose model files
    held one threshold: it holds for every pair); a clear error for anything else."""
    from .._extras import require

    require("sklearn", "products", "a trained product matcher (--model)")
    name = os.fspath(path)
    try:
        obj = unpickle_file(path)  # the user's own model file, as documented
    except OSError as e:
        raise InputError(
            f"cannot read the model: {e.strerror or e}", path=name, reason="unreadable"
        ) from e
    except Exception as e:
        raise InputError(
            f"not a neardup offer model ({type(e).__name__})", path=name, reason="bad_model"
        ) from e
    if not isinstance(obj, dict) or obj.get("format") != MODEL_FORMAT:
        raise InputError("not a neardup offer model", path=name, reason="bad_model")
    if obj.get("version") not in _READ_VERSIONS or obj.get("features") != list(FEATURES):
        raise InputError(
            f"model version {obj.get('version')} with other features than this "
            f"neardup's; make it again with `neardup products eval --save-model`",
            path=name,
            reason="bad_model",
        )
    one = obj.get("threshold_one_sided")
    return obj["model"], Thresholds(float(obj["threshold"]), None if one is None else float(one))


def dedup_offers(
    offers: Offers,
    outdir: str | os.PathLike,
    *,
    model: str | None = None,
    threshold: float | None = None,
    num_perm: int = 240,
    bands: int = 60,
    rows: int = 4,
    max_df: float = 0.2,
    units: UnitMap | None = None,
    seed: int = 1,
    link: bool = False,
    one_to_one: bool = False,
    blocking: str = "tokens",
    per_offer: float = 10.0,
    truth: Truth | None = None,
) -> dict:
    """Find duplicate offers (candidates by LSH, scored, one listing per shop, thresholded,
    clustered) and write the outputs listed in the module docstring. ``model``: a file saved
    by ``neardup products eval --save-model`` (default: the training-free rule score).
    ``threshold``: one threshold for every pair, in place of the model's tuned ones (or of
    :data:`.matcher.RULE_THRESHOLD`).

    ``blocking``: how candidate pairs are found: ``"tokens"`` (default: title tokens, a budget
    of ``per_offer`` pairs per offer, :mod:`.blocking`) or ``"lsh"`` (MinHash LSH over model
    words with ``num_perm``, ``bands``, ``rows`` and ``max_df``, :mod:`.candidates`).

    ``link``: pairs only across sources (shops: two catalogues, or a feed against a master
    catalogue), candidates within one source are not scored; ``one_to_one``: each offer
    matches at most one offer of each other source (clean sources), best scores first.

    ``truth``: a :class:`.truth.Truth` of these offers; the summary then has a ``quality``
    block (:func:`_quality`)."""
    check_choice("blocking", blocking, BLOCKINGS)
    check_banding(num_perm, bands, rows)
    check_real("max_df", max_df, 0.0, 1.0, lo_open=True)
    check_int("seed", seed, 0)
    check_real("threshold", threshold, 0.0, 1.0, none=True, allowed="a score between 0 and 1")
    t0 = time.perf_counter()
    out = prepare_outdir(outdir)
    fitted, thr = load_model(model) if model else (None, Thresholds(RULE_THRESHOLD))
    if threshold is not None:
        thr = Thresholds(threshold)
    d = describe(offers, units)
    within = 0
    block_stats = None
    tokens = d.block_tokens  # the blocking tokens of each offer (offer_tokens)
    if blocking == "tokens":
        left, right, _, block_stats = token_blocking(
            offers, per_offer=per_offer, link=link, units=units, tokens=tokens
        )
    else:
        sets = model_word_sets(offers, units, brands=d.brands, max_df=max_df)
        left, right = lsh_candidates(sets, bands, rows, num_perm=num_perm, seed=seed)
    if link and blocking == "lsh":
        cross = across_sources(left, right, offers.shops)
        within = int(len(left) - cross.sum())
        left, right = left[cross], right[cross]
    candidate_quality = _blocking(left, right, truth, offers, link)
    x = pair_features(d, left, right)
    once = shops_listing_once(d)
    if fitted is not None:
        raw = fitted.score(x)
    else:
        shop = np.asarray(offers.shops, dtype=object)
        clean = np.fromiter((s in once for s in shop[left]), bool, len(left))
        raw = unsupervised_score(
            x, x[:, FEATURES.index("title_cos")], (shop[left] == shop[right]) & clean
        )
    scores = one_per_shop(left, right, raw, d, x, once)
    keep = thr.keep(scores, x)
    if one_to_one:
        picked = np.flatnonzero(keep)
        keep[picked] = unique_mapping(left[picked], right[picked], scores[picked], offers.shops)
    pl, pr, ps = left[keep], right[keep], scores[keep]
    labels = offer_clusters(len(offers), pl, pr, ps, offers.shops, once, d.ids)
    quality = _quality(pl, pr, truth, offers, link, candidate_quality, labels)
    order = np.argsort(-ps, kind="stable")
    with open(out / "pairs.jsonl", "w") as f:
        for k in order.tolist():
            a, b = int(pl[k]), int(pr[k])
            f.write(
                json.dumps(
                    {
                        "id_a": offers.ids[a],
                        "id_b": offers.ids[b],
                        "shop_a": offers.shops[a],
                        "shop_b": offers.shops[b],
                        "title_a": offers.titles[a],
                        "title_b": offers.titles[b],
                        "score": round(float(ps[k]), 4),
                        "evidence": evidence(d, offers, a, b),
                    }
                )
                + "\n"
            )
    sizes = np.bincount(labels)
    in_cluster = sizes[labels] >= 2
    with open(out / "clusters.csv", "w", newline="") as f:
        import csv

        w = csv.writer(f)
        w.writerow(["cluster", "id", "shop", "title"])
        for i in np.flatnonzero(in_cluster)[np.argsort(labels[in_cluster], kind="stable")]:
            w.writerow([int(labels[i]), offers.ids[i], offers.shops[i], offers.titles[i]])
    n = len(offers)
    summary = {
        "offers": n,
        "skipped": offers.skipped.to_dict(),
        "unused_fields": dict(sorted(offers.unused_fields.items())),
        "decoded_latin1": getattr(offers, "decoded_latin1", 0),
        "shops": dict(sorted({s: offers.shops.count(s) for s in set(offers.shops)}.items())),
        "mode": "link" if link else "dedup",
        "one_to_one": bool(one_to_one),
        "candidates": int(len(left)),
        **({"candidates_within_one_source_left_out": within} if link and blocking == "lsh" else {}),
        "fraction_of_comparisons": len(left) / (n * (n - 1) / 2) if n > 1 else 0.0,
        "duplicate_pairs": int(keep.sum()),
        "clusters": int((sizes >= 2).sum()),
        "offers_in_clusters": int(in_cluster.sum()),
        "largest_cluster": int(sizes.max()) if len(sizes) else 0,
        "matcher": "model:" + os.fspath(model) if model else "unsupervised",
        "threshold": thr.main,
        **({"threshold_one_sided": thr.one_sided_shown} if thr.one_sided is not None else {}),
        "pairs_by_threshold": pairs_by_threshold(scores),
        "shops_listing_products_more_than_once": sorted(set(offers.shops) - once),
        "blocking": (
            {"method": "tokens", **block_stats.to_dict()}
            if block_stats is not None
            else {
                "method": "lsh",
                "num_perm": num_perm,
                "bands": bands,
                "rows": rows,
                "max_df": max_df,
            }
        ),
        "brand": {"learned_vocabulary": len(set(d.brands))},
        "main_unit": d.main_unit,
        "seconds": round(time.perf_counter() - t0, 3),
        "outputs": {k: str(out / k) for k in ("pairs.jsonl", "clusters.csv", "summary.json")},
        **({"quality": quality} if quality is not None else {}),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _blocking(
    left: np.ndarray, right: np.ndarray, truth: Truth | None, offers: Offers, link: bool
) -> dict | None:
    """The candidates' quality on the known truth (``None`` without a truth)."""
    if truth is None:
        return None
    from ..products.truth import candidate_quality_known, check_truth

    check_truth(truth, offers)
    return candidate_quality_known(
        left, right, truth, len(offers), sources=offers.shops, cross_source=link
    )


#: :func:`_quality`: clusters whose pairs number more than this are not scored
MAX_CLUSTER_PAIRS = 5_000_000


def _quality(
    pl: np.ndarray,
    pr: np.ndarray,
    truth: Truth | None,
    offers: Offers,
    link: bool,
    blocking: dict | None,
    labels: np.ndarray | None = None,
) -> dict | None:
    """The summary's ``quality`` block: the kept pairs scored on known pairs only (across
    shops only with ``link``), the pairs the clusters imply (every two offers of one cluster)
    scored the same way, the candidates' blocking quality, and the truth's counts."""
    if truth is None:
        return None
    from ..products.truth import score_pairs

    pairs = score_pairs(pl, pr, truth, sources=offers.shops, cross_source=link)
    out = {
        "pairs": pairs,
        "blocking": blocking,
        "truth": truth.summary(),
        "scope": "pairs across shops" if link else "all pairs",
    }
    if labels is not None:
        cl, cr = _cluster_pairs(labels)
        out["clusters"] = (
            score_pairs(cl, cr, truth, sources=offers.shops, cross_source=link)
            if cl is not None
            else {"not_scored": f"the clusters imply more than {MAX_CLUSTER_PAIRS:,} pairs"}
        )
    return out


def _cluster_pairs(labels: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Every pair of offers within one cluster (``None, None`` above
    :data:`MAX_CLUSTER_PAIRS`)."""
    sizes = np.bincount(labels)
    if int((sizes * (sizes - 1) // 2).sum()) > MAX_CLUSTER_PAIRS:
        return None, None
    order = np.argsort(labels, kind="stable")
    starts = np.r_[0, np.cumsum(sizes)]
    left, right = [], []
    for c in np.flatnonzero(sizes >= 2).tolist():
        members = order[starts[c] : starts[c + 1]]
        i, j = np.triu_indices(len(members), 1)
        left.append(members[i])
        right.append(members[j])
    if not left:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(left), np.concatenate(right)


def evaluate_offers(
    offers: Offers,
    labels: list[str] | Truth,
    outdir: str | os.PathLike,
    cfg: StudyConfig | None = None,
    save_model_to: str | None = None,
    progress=None,
) -> dict:
    """Run the bootstrap study, write its report into ``outdir``, and return a summary.
    ``labels``: one per offer, or a :class:`.truth.Truth` (possibly partial: only known pairs
    are fitted on and scored). ``save_model_to``: also fit the matcher on all candidates of
    known truth of the study's blocking at its default setting (``cfg.blocking``: token
    blocking at ``per_offer``, or LSH at ``bands x rows``; threshold tuned out of fold) and save
    it there."""
    from .._extras import require

    require("sklearn", "products", "neardup products eval (its trained matcher)")
    from ..products.report import write_report
    from ..products.study import StudyConfig, run_study
    from ..products.truth import Truth, check_truth

    cfg = cfg or StudyConfig()
    truth = labels if isinstance(labels, Truth) else Truth.from_labels(labels)
    check_truth(truth, offers)
    out = prepare_outdir(outdir)
    res = run_study(offers, truth, cfg, progress=progress)
    paths = write_report(
        res, out, title="neardup products eval", published=offers.formats == {"tv"}
    )
    summary = {
        "offers": len(offers),
        "skipped": offers.skipped.to_dict(),
        "unused_fields": dict(sorted(offers.unused_fields.items())),
        "true_pairs": res.n_true_pairs,
        "config": {k: v for k, v in asdict(cfg).items() if k != "units"},
        "summary": res.summary,
        "seconds": round(res.seconds, 2),
        "outputs": paths,
        "bandings_left_out": [
            f"{b}x{r}" for b, r in sorted(res.skipped_bandings, key=lambda br: br[1])
        ],
    }
    if isinstance(labels, Truth):
        summary["truth"] = truth.summary()
    if save_model_to:
        d = describe(offers, cfg.units)
        if cfg.blocking == "tokens":
            left, right, _, _ = token_blocking(
                offers, per_offer=cfg.per_offer, link=cfg.link, units=cfg.units
            )
        else:
            sets = model_word_sets(offers, cfg.units, brands=d.brands, max_df=cfg.max_df)
            left, right = lsh_candidates(
                sets, cfg.bands, cfg.rows, num_perm=cfg.num_perm, seed=cfg.seed + 1
            )
        x = pair_features(d, left, right)
        known = truth.is_known(left, right)  # fitted and tuned on the pairs of known truth
        y = truth.is_match(left, right)[known]
        model = PairModel(random_state=cfg.model_seed)
        oof = model.out_of_fold(x[known], y)
        model.fit(x[known], y)
        raw = model.score(x) if not known.all() else oof
        raw[known] = oof
        oof = one_per_shop(left, right, raw, d, x, shops_listing_once(d))[known]
        total = len(truth.positives()[0])
        if cfg.link:  # only pairs across sources are candidates, and count
            total = int(across_sources(*truth.positives(), offers.shops).sum())
        thr = tune_thresholds(oof, y, total, x[known])
        save_model(model, thr, save_model_to)
        summary["model"] = {
            "path": save_model_to,
            "threshold": thr.main,
            "threshold_one_sided": thr.one_sided_shown,
        }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=float))
    return summary
