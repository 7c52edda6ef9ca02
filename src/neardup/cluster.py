"""Clusters from verified pairs.

- :func:`connected_components`: union-find over the pairs. Transitive: a chain of slightly
  different texts ends up in one cluster even when its two ends share little.
- :func:`strict_clusters`: greedy star clustering. Documents are visited in order of preference
  (``rank``); an unassigned document becomes a representative and takes every still-unassigned
  document it has a verified pair with. Every member is then verified against its cluster's
  representative (similarity >= threshold), so chains cannot merge unrelated texts.

Both return ``rep: int64[n]``, the row of each document's representative (a document that is its
own representative is a singleton or a cluster head).
"""

from __future__ import annotations

import numpy as np

from ._arrays import check_pairs
from ._kernels import cluster as _k  # type: ignore[attr-defined]  # compiled: no stubs


def preference_rank(
    n: int,
    keep: str = "first",
    lengths: np.ndarray | None = None,
    tiebreak: np.ndarray | None = None,
) -> np.ndarray:
    """Rank of each document as a representative (0 = most preferred): ``int64[n]``.

    ``keep="first"``: input order. ``keep="longest"``: longest first, then by ``tiebreak`` (a
    content fingerprint, so the choice does not depend on input order), then input order.
    """
    rows = np.arange(n, dtype=np.int64)
    if keep == "first":
        return rows
    if lengths is None:
        raise ValueError("keep='longest' needs lengths")
    keys = [rows] + ([tiebreak] if tiebreak is not None else []) + [-np.asarray(lengths, np.int64)]
    order = np.lexsort(keys)
    rank = np.empty(n, np.int64)
    rank[order] = rows
    return rank


def connected_components(
    n: int, left: np.ndarray, right: np.ndarray, rank: np.ndarray | None = None
) -> np.ndarray:
    """Representative row of each of ``n`` documents: the lowest-``rank`` member of its
    connected component (``rank`` defaults to input order)."""
    rank = _rank(n, rank)
    left, right = _int64(left), _int64(right)
    check_pairs(n, left, right)
    rep = np.empty(n, np.int64)
    _k.components(left, right, rank, rep)
    return rep


def strict_clusters(
    n: int, left: np.ndarray, right: np.ndarray, rank: np.ndarray | None = None
) -> np.ndarray:
    """Representative row of each document under greedy star clustering (see module doc).

    Only pairs that are given link documents, so pass only pairs at or above the threshold.
    """
    rank = _rank(n, rank)
    left, right = _int64(left), _int64(right)
    check_pairs(n, left, right)
    rep = np.empty(n, np.int64)
    _k.stars(left, right, _int64(np.argsort(rank, kind="stable")), rep)
    return rep


def _int64(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64).reshape(-1)


def _rank(n: int, rank: np.ndarray | None) -> np.ndarray:
    if rank is None:
        return np.arange(n, dtype=np.int64)
    rank = _int64(rank)
    if len(rank) != n:
        raise ValueError(f"rank has {len(rank)} values for {n} documents")
    return rank


def labels_from_reps(rep: np.ndarray) -> np.ndarray:
    """Dense cluster labels ``0..C-1`` numbered by first appearance of the representative.

    ``rep``: ``int64[n]``; representatives are rows (``0 <= rep[i] < n``) as the clustering
    functions return them, which takes one linear pass; other values take a sort.
    """
    rep = np.ascontiguousarray(rep, dtype=np.int64).ravel()
    n = len(rep)
    if n == 0 or (rep.min() >= 0 and rep.max() < n):
        out = np.empty(n, np.int64)
        _k.labels_by_first_appearance(rep, out)
        return out
    # any other integers: by sorting (np.unique's hash path is slow on large arrays)
    order = np.argsort(rep, kind="stable")
    srt = rep[order]
    start = np.concatenate(([True], srt[1:] != srt[:-1]))
    group = np.cumsum(start) - 1  # group of each sorted position
    first = order[start]  # first row of each group (stable sort)
    relabel = np.empty(len(first), np.int64)
    relabel[np.argsort(first, kind="stable")] = np.arange(len(first))
    out = np.empty(n, np.int64)
    out[order] = relabel[group]
    return out


def cluster_representatives(
    n: int, left: np.ndarray, right: np.ndarray, method: str, rank: np.ndarray | None = None
) -> np.ndarray:
    """Representative row of each document for a :class:`~neardup.ClusterConfig` method:
    ``"components"`` (:func:`connected_components`) or ``"strict"`` (:func:`strict_clusters`)."""
    if method == "strict":
        return strict_clusters(n, left, right, rank)
    return connected_components(n, left, right, rank)
