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

from ._jit import njit


@njit(cache=True)
def _find(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@njit(cache=True)
def _components_kernel(n, left, right, rank):
    parent = np.arange(n)
    for p in range(len(left)):
        a = _find(parent, left[p])
        b = _find(parent, right[p])
        if a != b:
            # the root is always the preferred document (lowest rank), so it is the representative
            if rank[a] < rank[b]:
                parent[b] = a
            else:
                parent[a] = b
    rep = np.empty(n, np.int64)
    for i in range(n):
        rep[i] = _find(parent, i)
    return rep


@njit(cache=True)
def _strict_kernel(n, left, right, rank_order):
    # adjacency in CSR form, both directions
    deg = np.zeros(n + 1, np.int64)
    for p in range(len(left)):
        deg[left[p] + 1] += 1
        deg[right[p] + 1] += 1
    off = np.cumsum(deg)
    fill = off[:-1].copy()
    nbr = np.empty(off[n], np.int64)
    for p in range(len(left)):
        a, b = left[p], right[p]
        nbr[fill[a]] = b
        fill[a] += 1
        nbr[fill[b]] = a
        fill[b] += 1
    rep = np.full(n, -1, np.int64)
    for i in rank_order:
        if rep[i] >= 0:
            continue
        rep[i] = i
        for q in range(off[i], off[i + 1]):
            j = nbr[q]
            if rep[j] < 0:
                rep[j] = i
    return rep


def preference_rank(n: int, keep: str = "first", lengths: np.ndarray | None = None,
                    tiebreak: np.ndarray | None = None) -> np.ndarray:
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


def connected_components(n: int, left: np.ndarray, right: np.ndarray,
                         rank: np.ndarray | None = None) -> np.ndarray:
    """Representative row of each of ``n`` documents: the lowest-``rank`` member of its
    connected component (``rank`` defaults to input order)."""
    rank = np.arange(n, dtype=np.int64) if rank is None else np.asarray(rank, np.int64)
    return _components_kernel(n, np.asarray(left, np.int64), np.asarray(right, np.int64), rank)


def strict_clusters(n: int, left: np.ndarray, right: np.ndarray,
                    rank: np.ndarray | None = None) -> np.ndarray:
    """Representative row of each document under greedy star clustering (see module doc).

    Only pairs that are given link documents, so pass only pairs at or above the threshold.
    """
    rank = np.arange(n, dtype=np.int64) if rank is None else np.asarray(rank, np.int64)
    order = np.argsort(rank, kind="stable")
    return _strict_kernel(n, np.asarray(left, np.int64), np.asarray(right, np.int64), order)


@njit(cache=True)
def _labels_by_first_appearance(rep):
    n = len(rep)
    label = np.full(n, -1, np.int64)
    out = np.empty(n, np.int64)
    c = 0
    for i in range(n):
        r = rep[i]
        if label[r] < 0:
            label[r] = c
            c += 1
        out[i] = label[r]
    return out


def labels_from_reps(rep: np.ndarray) -> np.ndarray:
    """Dense cluster labels ``0..C-1`` numbered by first appearance of the representative.

    ``rep``: ``int64[n]``; representatives are rows (``0 <= rep[i] < n``) as the clustering
    functions return them, which takes one linear pass; other values take a sort.
    """
    rep = np.ascontiguousarray(rep, dtype=np.int64).ravel()
    n = len(rep)
    if n == 0 or (rep.min() >= 0 and rep.max() < n):
        return _labels_by_first_appearance(rep)
    # any other integers: by sorting (np.unique's hash path is slow on large arrays)
    order = np.argsort(rep, kind="stable")
    srt = rep[order]
    start = np.concatenate(([True], srt[1:] != srt[:-1]))
    group = np.cumsum(start) - 1              # group of each sorted position
    first = order[start]                      # first row of each group (stable sort)
    relabel = np.empty(len(first), np.int64)
    relabel[np.argsort(first, kind="stable")] = np.arange(len(first))
    out = np.empty(n, np.int64)
    out[order] = relabel[group]
    return out


def cluster_representatives(n: int, left: np.ndarray, right: np.ndarray, method: str,
                            rank: np.ndarray | None = None) -> np.ndarray:
    """Representative row of each document for a :class:`~neardup.ClusterConfig` method:
    ``"components"`` (:func:`connected_components`) or ``"strict"`` (:func:`strict_clusters`)."""
    if method == "strict":
        return strict_clusters(n, left, right, rank)
    return connected_components(n, left, right, rank)
