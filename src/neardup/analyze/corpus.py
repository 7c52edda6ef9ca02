"""Corpus analyses: LSH recall against brute force, candidates per number of
bands, duplicates per threshold and shingle size, and the similarity of candidates.

Every analysis shingles the documents as the pipeline does (normalisation, then
:func:`neardup.shingle`) and sketches them with :func:`neardup.sketch`; similarities are exact
Jaccard of the shingle sets. Empty documents (no shingles) are left out and counted. LSH here
sketches every document, exact duplicates included, and caps no bucket, so what is measured is
the banding itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import field
from typing import cast

import numpy as np

from .._kernels import analyze as _k  # type: ignore[attr-defined]  # compiled: no stubs
from .._records import record
from .._threads import parallel
from ..config import SHINGLE_KINDS, LSHConfig, ShingleConfig, SketchConfig, check_threshold
from ..errors import ConfigError, InputError
from ..expand import expand_pairs
from ..lsh import candidate_pairs, lsh_params, s_curve
from ..result import FINGERPRINT
from ..sketch import sketch
from ..text import Shingles, shingle
from ..validate import check_choice, check_int
from ..verify import jaccard_pairs
from .curves import threshold_approx
from .result import Analysis

#: Default similarity bins of the recall analysis: [0.5, 0.6), ..., [0.9, 1.0] (last closed).
DEFAULT_BIN_EDGES: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
#: The all-pairs brute force refuses corpora larger than this unless told to sample.
MAX_BRUTE_FORCE_DOCS = 5000
# the thresholds of the grid analysis: 0.3, 0.4, ..., 0.9
_GRID_THRESHOLDS: tuple[float, ...] = tuple(round(0.3 + 0.1 * i, 1) for i in range(7))


@record
class Corpus:
    """Documents read for an analysis: ``ids``, ``texts`` and what was read and sampled."""

    ids: list[str]
    texts: list[str]
    read: int
    sampled: bool = False
    skipped: dict = field(default_factory=lambda: {"total": 0, "by_reason": {}})


def load_corpus(
    paths: str | os.PathLike | Iterable[str | os.PathLike],
    *,
    text_fields: Sequence[str] | str = ("text",),
    id_field: str | None = None,
    max_docs: int | None = None,
    seed: int = 0,
    **read_options,
) -> Corpus:
    """Read every document of ``paths`` (:func:`neardup.io.read_documents`); with ``max_docs``,
    keep a uniform sample of that many (in input order, drawn with ``seed``)."""
    from ..io import SkipReport, read_documents

    ids: list[str] = []
    texts: list[str] = []
    report = read_options.pop("report", None) or SkipReport()
    for chunk in read_documents(
        paths, text_fields=text_fields, id_field=id_field, report=report, **read_options
    ):
        ids.extend(chunk.ids)
        texts.extend(chunk.texts)
    read = len(ids)
    sk = report.to_dict()
    corpus = Corpus(ids, texts, read, skipped={"total": sk["total"], "by_reason": sk["by_reason"]})
    if max_docs is not None:
        corpus = sample_corpus(corpus, max_docs, seed)
    return corpus


def sample_corpus(corpus: Corpus, max_docs: int, seed: int = 0) -> Corpus:
    """A uniform sample of ``max_docs`` documents in input order (the corpus if it is smaller)."""
    check_int("max_docs", max_docs, 2)
    n = len(corpus.ids)
    if n <= max_docs:
        return corpus
    keep = np.sort(np.random.default_rng(seed).choice(n, size=max_docs, replace=False))
    return Corpus(
        [corpus.ids[i] for i in keep],
        [corpus.texts[i] for i in keep],
        corpus.read,
        sampled=True,
        skipped=corpus.skipped,
    )


def _shingle_cfg(spec: str | ShingleConfig) -> ShingleConfig:
    return spec if isinstance(spec, ShingleConfig) else ShingleConfig.parse(spec)


def prepare(
    texts: Sequence[str],
    shingle_spec: str | ShingleConfig = "word:5",
    num_perm: int | None = 128,
    seed: int = 1,
) -> tuple[np.ndarray, Shingles, np.ndarray | None]:
    """Shingle (and sketch) the non-empty documents of ``texts``.

    Returns ``rows`` (``int64[m]``: the positions in ``texts`` of the non-empty documents),
    their :class:`~neardup.text.Shingles` (sorted unique ``uint64`` hashes) and their MinHash
    signatures (``uint32[m, num_perm]``; ``None`` when ``num_perm`` is None).
    """
    cfg = _shingle_cfg(shingle_spec)
    sh = shingle(list(texts), cfg)
    rows = np.flatnonzero(sh.sizes > 0).astype(np.int64)
    if len(rows) < len(sh):
        hashes = np.concatenate([sh[i] for i in rows]) if len(rows) else np.zeros(0, np.uint64)
        offsets = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(sh.sizes[rows], out=offsets[1:])
        sh = Shingles(hashes, offsets)
    sig = None if num_perm is None else sketch(sh, SketchConfig(num_perm=num_perm, seed=seed))
    return rows, sh, sig


def _jaccard_block(
    hashes: np.ndarray, offsets: np.ndarray, i0: int, i1: int, lo: float
) -> np.ndarray:
    """Exact Jaccard of rows ``i0..i1-1`` with every later row: ``float64[i1-i0, n]``, exact
    where it is >= ``lo``, and some value below ``lo`` (often 0) where it is not."""
    hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    out = np.zeros((i1 - i0, len(offsets) - 1), np.float64)
    parallel(
        lambda r0, r1: _k.jaccard_block(hashes, offsets, i0, lo, out, r0, r1),
        i1 - i0,
        min_weight=16,
    )
    return out


def all_pairs_jaccard(
    sh: Shingles, min_similarity: float, block: int = 64
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of documents with exact Jaccard >= ``min_similarity`` (> 0), by comparing all
    pairs: ``left < right`` (``int64[m]``) and ``similarity`` (``float64[m]``). Quadratic: meant
    for a few thousand documents."""
    check_threshold(min_similarity, "min_similarity")
    hashes = np.ascontiguousarray(sh.hashes)
    offsets = np.ascontiguousarray(sh.offsets, dtype=np.int64)
    n = len(sh)
    parts_l, parts_r, parts_s = [], [], []
    for i0 in range(0, max(n - 1, 0), block):
        i1 = min(i0 + block, n)
        sims = _jaccard_block(hashes, offsets, i0, i1, min_similarity)
        bi, j = np.nonzero(sims >= min_similarity)
        parts_l.append(bi + i0)
        parts_r.append(j)
        parts_s.append(sims[bi, j])
    if not parts_l:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64)
    return (
        np.concatenate(parts_l).astype(np.int64),
        np.concatenate(parts_r).astype(np.int64),
        np.concatenate(parts_s),
    )


def _encode(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    return (left.astype(np.uint64) << np.uint64(32)) | right.astype(np.uint64)


def _candidates(sig: np.ndarray, bands: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """All LSH candidate pairs of the signature rows, no bucket capped."""
    n = len(sig)
    if n < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    left, right, _ = candidate_pairs(sig, bands, rows, bucket_cap=max(n, 2))
    return left, right


def _check_bins(edges: Sequence[float]) -> np.ndarray:
    e = np.asarray(edges, dtype=np.float64)
    if e.ndim != 1 or len(e) < 2 or np.any(np.diff(e) <= 0) or e[0] <= 0 or e[-1] > 1:
        raise ConfigError(
            f"bins={list(edges)!r} are invalid: at least two increasing edges in "
            "(0, 1], e.g. 0.5 0.6 0.7 0.8 0.9 1.0"
        )
    return e


def _bin_index(sim: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin of each similarity: ``[e0, e1), ..., [e_k-1, e_k]`` (last closed); -1 outside."""
    idx = np.searchsorted(edges, sim, side="right") - 1
    idx[sim == edges[-1]] = len(edges) - 2
    idx[(sim < edges[0]) | (sim > edges[-1])] = -1
    return idx


def _settings(
    thresholds: Sequence[float],
    bands_rows: Sequence[tuple[int, int]],
    num_perm: int,
    min_recall: float,
) -> list[dict]:
    out = []
    for t in thresholds:
        check_threshold(t)
        b, r = lsh_params(LSHConfig(threshold=float(t), min_recall=float(min_recall)), num_perm)
        out.append({"setting": f"t={t:g}: {b}x{r}", "threshold": float(t), "bands": b, "rows": r})
    for b, r in bands_rows:
        if b * r > num_perm:
            raise ConfigError(
                f"bands-rows={b}x{r} is invalid: {b}*{r}={b * r} exceeds num_perm={num_perm}"
            )
        out.append({"setting": f"{b}x{r}", "threshold": None, "bands": b, "rows": r})
    if not out:
        raise ConfigError("give at least one threshold or BANDSxROWS setting")
    return out


def _check_docs(texts: Sequence[str], ids: Sequence[str] | None) -> list[str]:
    if ids is not None and len(ids) != len(texts):
        raise InputError(f"got {len(texts)} texts but {len(ids)} ids", field="ids")
    return list(ids) if ids is not None else [str(i) for i in range(len(texts))]


def recall(
    texts: Sequence[str],
    ids: Sequence[str] | None = None,
    *,
    thresholds: Sequence[float] = (0.5, 0.7, 0.8, 0.9),
    bands_rows: Sequence[tuple[int, int]] = (),
    bins: Sequence[float] = DEFAULT_BIN_EDGES,
    shingle: str = "word:5",
    num_perm: int = 128,
    seed: int = 1,
    min_recall: float = 0.9,
    max_docs: int = MAX_BRUTE_FORCE_DOCS,
) -> Analysis:
    """LSH candidates against the brute force: for each LSH setting (neardup's choice
    for each threshold, and each fixed BANDSxROWS) and similarity bin, how many pairs of that
    exact Jaccard exist, how many LSH proposed, and how many the S-curve expects (the mean
    candidate probability of the true pairs in the bin).

    The brute force compares all pairs: more than ``max_docs`` documents is a
    :class:`ConfigError` (sample them first, e.g. with :func:`sample_corpus`).
    """
    ids = _check_docs(texts, ids)
    check_int("num_perm", num_perm, 2, 4096)
    edges = _check_bins(bins)
    settings = _settings(thresholds, bands_rows, num_perm, min_recall)
    if len(texts) > max_docs:
        raise ConfigError(
            f"recall compares all pairs of documents: {len(texts):,} documents is more than "
            f"max_docs={max_docs:,} allows ({len(texts) * (len(texts) - 1) // 2:,} pairs); "
            f"sample them (--max-docs N draws N documents, seeded by --seed) or raise the limit"
        )
    rows_kept, sh, sig = prepare(texts, shingle, num_perm, seed)
    assert sig is not None  # num_perm is an int
    tl, tr, tsim = all_pairs_jaccard(sh, float(edges[0]))
    tbin = _bin_index(tsim, edges)
    true_keys = _encode(tl, tr)
    nb = len(edges) - 1
    true_per_bin = np.bincount(tbin[tbin >= 0], minlength=nb)
    cols = [
        "setting",
        "bands",
        "rows",
        "bin",
        "bin_lo",
        "bin_hi",
        "true_pairs",
        "found",
        "recall",
        "expected_recall",
    ]
    table = []
    per_setting = []
    for st in settings:
        b, r = st["bands"], st["rows"]
        cl, cr = _candidates(sig, b, r)
        found = np.isin(true_keys, _encode(cl, cr), assume_unique=True)
        found_per_bin = np.bincount(tbin[(tbin >= 0) & found], minlength=nb)
        # an array: s_curve gives a float only for a scalar similarity, tsim is 1-D
        p = cast(np.ndarray, s_curve(tsim, b, r)) if len(tsim) else np.zeros(0)
        exp_per_bin = np.bincount(tbin[tbin >= 0], weights=p[tbin >= 0], minlength=nb)
        st_rows = []
        for k in range(nb):
            t_, f_ = int(true_per_bin[k]), int(found_per_bin[k])
            lo, hi = float(edges[k]), float(edges[k + 1])
            st_rows.append(
                {
                    "setting": st["setting"],
                    "bands": b,
                    "rows": r,
                    "bin": f"[{lo:g}, {hi:g}{']' if k == nb - 1 else ')'}",
                    "bin_lo": lo,
                    "bin_hi": hi,
                    "true_pairs": t_,
                    "found": f_,
                    "recall": round(f_ / t_, 4) if t_ else None,
                    "expected_recall": round(float(exp_per_bin[k]) / t_, 4) if t_ else None,
                }
            )
        table.extend(st_rows)
        summ = {"setting": st["setting"], "bands": b, "rows": r, "candidates": len(cl)}
        t = st["threshold"]
        if t is not None:
            above = tsim >= t
            n_true, n_found = int(above.sum()), int((above & found).sum())
            summ.update(
                {
                    "threshold": t,
                    "true_pairs_at_threshold": n_true,
                    "found_at_threshold": n_found,
                    "recall_at_threshold": round(n_found / n_true, 4) if n_true else None,
                    "expected_recall_at_threshold": round(float(p[above].mean()), 4)
                    if n_true
                    else None,
                    "s_curve_at_threshold": round(float(s_curve(t, b, r)), 4),
                }
            )
        top = tbin == nb - 1
        summ["top_bin"] = st_rows[-1]["bin"]
        summ["top_bin_found"] = f"{int((top & found).sum())} of {int(top.sum())}"
        per_setting.append(summ)
    summary = {
        "documents": len(texts),
        "empty_documents": len(texts) - len(rows_kept),
        "pairs_compared": len(rows_kept) * (len(rows_kept) - 1) // 2,
        "shingle": str(_shingle_cfg(shingle)),
        "num_perm": num_perm,
        "seed": seed,
        "min_recall": min_recall,
        "bins": edges.tolist(),
        "true_pairs_per_bin": true_per_bin.tolist(),
        "settings": per_setting,
    }
    return Analysis(
        "recall",
        "LSH recall against brute-force Jaccard",
        cols,
        table,
        summary,
        {"edges": edges, "settings": settings},
    )


def bands(
    texts: Sequence[str],
    *,
    num_perm: int = 128,
    bands_list: Sequence[int] = (2, 4, 5, 8, 9, 10, 16, 20, 32, 64),
    threshold: float = 0.8,
    shingle: str = "word:5",
    seed: int = 1,
) -> Analysis:
    """Candidate pairs against the number of bands for one set of signatures: sketch
    once with ``num_perm`` values, then band them as ``b`` bands of ``num_perm // b`` rows for
    each ``b`` of ``bands_list``; count the candidates and those whose exact Jaccard reaches
    ``threshold`` (true candidates)."""
    check_int("num_perm", num_perm, 2, 4096)
    check_threshold(threshold)
    if not bands_list:
        raise ConfigError("bands-list is empty: give at least one number of bands")
    for b in bands_list:
        check_int("bands", b, 1, num_perm, allowed=f"an integer from 1 to num_perm={num_perm}")
    rows_kept, sh, sig = prepare(texts, shingle, num_perm, seed)
    assert sig is not None  # num_perm is an int
    n = len(rows_kept)
    cols = [
        "bands",
        "rows",
        "values",
        "candidates",
        "true_candidates",
        "false_candidates",
        "precision",
        "fraction_of_all_pairs",
        "threshold_approx",
        "p_at_threshold",
    ]
    table = []
    for b in bands_list:
        r = num_perm // b
        cl, cr = _candidates(sig, b, r)
        sim = jaccard_pairs(sh, cl, cr) if len(cl) else np.zeros(0, np.float32)
        good = int(np.count_nonzero(sim >= np.float32(threshold)))
        table.append(
            {
                "bands": b,
                "rows": r,
                "values": b * r,
                "candidates": len(cl),
                "true_candidates": good,
                "false_candidates": len(cl) - good,
                "precision": round(good / len(cl), 4) if len(cl) else None,
                "fraction_of_all_pairs": (round(len(cl) / (n * (n - 1) / 2), 6) if n > 1 else None),
                "threshold_approx": round(threshold_approx(b, r), 4),
                "p_at_threshold": round(float(s_curve(threshold, b, r)), 4),
            }
        )
    summary = {
        "documents": len(texts),
        "empty_documents": len(texts) - n,
        "all_pairs": n * (n - 1) // 2,
        "shingle": str(_shingle_cfg(shingle)),
        "num_perm": num_perm,
        "seed": seed,
        "threshold": threshold,
    }
    return Analysis(
        "bands", f"Candidate pairs per number of bands ({num_perm} values)", cols, table, summary
    )


def expand_result_pairs(
    result, rows_subset: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The document pairs a :class:`~neardup.Result` stands for, all of them.

    Its compared pairs (exact-duplicate groups as stars around their first documents, verified
    pairs between two groups' first documents) are expanded into every pair of documents
    (``left < right``, ``int64[m]``) with its similarity (``float32[m]``), whatever the run's
    ``pairs`` setting and limit (:func:`neardup.expand.expand_pairs`)."""
    p = result.pairs
    n = len(result.ids)
    edge = ~p.implied
    head = np.arange(n, dtype=np.int64)  # first document of each one's exact group
    fp = edge & (p.method == FINGERPRINT)
    head[p.right[fp]] = p.left[fp]
    near = edge & ~fp
    pairs, _ = expand_pairs(
        head, n, p.left[near], p.right[near], p.similarity[near], 1, "all", max(n, 1)
    )
    return pairs.left, pairs.right, pairs.similarity


def grid(
    texts: Sequence[str],
    ids: Sequence[str] | None = None,
    *,
    thresholds: Sequence[float] = _GRID_THRESHOLDS,
    sizes: Sequence[int] = (3, 5, 7),
    kind: str = "word",
    num_perm: int = 128,
    seed: int = 1,
    min_recall: float = 0.9,
) -> Analysis:
    """For each shingle size and threshold, the number of duplicate
    pairs neardup verifies and of documents with at least one near-duplicate.

    One :func:`neardup.dedup` run per shingle size at the lowest threshold (its LSH setting is
    chosen for that threshold, so higher thresholds are found with at least that recall); the
    verified pairs, expanded to every pair of documents, are then counted per threshold."""
    from ..engines.local import dedup

    ids = _check_docs(texts, ids)
    if not thresholds:
        raise ConfigError("thresholds is empty: give at least one threshold")
    for t in thresholds:
        check_threshold(t)
    check_choice("kind", kind, SHINGLE_KINDS)
    if not sizes:
        raise ConfigError("shingle-sizes is empty: give at least one size")
    for k in sizes:
        check_int("shingle size", k, 1, 64)
    ts = sorted(float(t) for t in thresholds)
    n = len(texts)
    cols = ["kind", "k", "threshold", "pairs", "documents", "document_fraction"]
    table = []
    runs = []
    for k in sizes:
        res = dedup(
            list(texts),
            ids,
            threshold=ts[0],
            shingle=f"{kind}:{k}",
            num_perm=num_perm,
            seed=seed,
            min_recall=min_recall,
        )
        left, right, sim = expand_result_pairs(res)
        lsh = res.summary["lsh"]
        runs.append(
            {
                "k": int(k),
                "bands": lsh["bands"],
                "rows": lsh["rows"],
                "candidates": lsh["candidates"],
            }
        )
        for t in ts:
            ok = sim >= np.float32(t)
            docs = len(np.union1d(left[ok], right[ok]))
            table.append(
                {
                    "kind": kind,
                    "k": int(k),
                    "threshold": t,
                    "pairs": int(ok.sum()),
                    "documents": docs,
                    "document_fraction": round(docs / n, 4) if n else None,
                }
            )
    summary = {
        "documents": n,
        "kind": kind,
        "sizes": [int(k) for k in sizes],
        "thresholds": ts,
        "num_perm": num_perm,
        "seed": seed,
        "min_recall": min_recall,
        "runs": runs,
    }
    return Analysis("grid", "Duplicates per threshold and shingle size", cols, table, summary)


def distribution(
    texts: Sequence[str],
    *,
    threshold: float = 0.8,
    num_perm: int = 128,
    shingle: str = "word:5",
    seed: int = 1,
    min_recall: float = 0.9,
    bands_rows: tuple[int, int] | None = None,
    bins: int = 20,
) -> Analysis:
    """Histogram of the exact Jaccard similarity of all LSH candidate pairs, and of the verified
    ones (>= ``threshold``), for neardup's (bands, rows) at the threshold or ``bands_rows``.

    ``bins`` equal-width bins over [0, 1], the last one closed."""
    check_threshold(threshold)
    check_int("num_perm", num_perm, 2, 4096)
    check_int("bins", bins, 2, 1000)
    if bands_rows is None:
        b, r = lsh_params(
            LSHConfig(threshold=float(threshold), min_recall=float(min_recall)), num_perm
        )
    else:
        b, r = bands_rows
        if b * r > num_perm:
            raise ConfigError(
                f"bands-rows={b}x{r} is invalid: {b}*{r}={b * r} exceeds num_perm={num_perm}"
            )
    rows_kept, sh, sig = prepare(texts, shingle, num_perm, seed)
    assert sig is not None  # num_perm is an int
    cl, cr = _candidates(sig, b, r)
    sim = (jaccard_pairs(sh, cl, cr) if len(cl) else np.zeros(0, np.float32)).astype(np.float64)
    verified = sim >= np.float32(threshold)
    edges = np.linspace(0.0, 1.0, bins + 1)
    idx = np.minimum(np.searchsorted(edges, sim, side="right") - 1, bins - 1)
    cand_hist = np.bincount(idx, minlength=bins)
    ver_hist = np.bincount(idx[verified], minlength=bins)
    cols = ["bin_lo", "bin_hi", "candidates", "verified"]
    table = [
        {
            "bin_lo": round(float(edges[i]), 6),
            "bin_hi": round(float(edges[i + 1]), 6),
            "candidates": int(cand_hist[i]),
            "verified": int(ver_hist[i]),
        }
        for i in range(bins)
    ]
    summary = {
        "documents": len(texts),
        "empty_documents": len(texts) - len(rows_kept),
        "shingle": str(_shingle_cfg(shingle)),
        "num_perm": num_perm,
        "seed": seed,
        "threshold": threshold,
        "bands": b,
        "rows": r,
        "candidates": len(cl),
        "verified": int(verified.sum()),
        "identical_shingle_sets": int(np.count_nonzero(sim >= 1.0)),
        "median_candidate_similarity": round(float(np.median(sim)), 4) if len(sim) else None,
    }
    return Analysis(
        "distribution",
        "Similarity of LSH candidates and verified pairs",
        cols,
        table,
        summary,
        {"edges": edges, "similarity": sim},
    )
