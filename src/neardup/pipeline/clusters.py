"""Clusters and representatives: the verified pairs of distinct texts made into clusters, each
member's similarity to its representative, and both carried to every document.

:func:`cluster_texts` is the step every engine runs once its pairs are verified;
:func:`decide_in_order` verifies and clusters group by group of candidates, telling which
documents are kept in document order while it goes (the local engine's copy of the corpus
starts on the first decisions); :func:`documents_of_texts` carries the clusters of distinct
texts to every document.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from ..cluster import (
    cluster_representatives,
    connected_components,
    labels_from_reps,
    preference_rank,
)
from .verification import Measure


class Decisions(Protocol):
    """What is told which documents are kept, in document order (the local file job's copy of
    the deduplicated corpus, :class:`neardup.io.writers.KeepStream`): ``decide(keep)`` takes
    whether each of the next documents is kept; ``decided`` counts those told so far."""

    @property
    def decided(self) -> int: ...

    def decide(self, keep: np.ndarray) -> None: ...


__all__ = [
    "Decisions",
    "preference_rank",
    "cluster_texts",
    "member_similarities",
    "decide_in_order",
    "kept_rows",
    "documents_of_texts",
]

#: the similarity of pairs of texts ``(a[i], b[i])``: a :class:`~.verification.Measure`'s
#: ``pairs``, or an engine's own (the Dask engine's asks the partitions holding the texts)
PairSimilarity = Callable[[np.ndarray, np.ndarray], np.ndarray]


def cluster_texts(
    n: int,
    left: np.ndarray,
    right: np.ndarray,
    similarity: np.ndarray,
    method: str,
    rank: np.ndarray,
    measure: Measure | PairSimilarity,
) -> tuple[np.ndarray, np.ndarray]:
    """Cluster ``n`` distinct texts by their verified pairs ``(left, right)`` (with their
    ``similarity``) by the cluster ``method`` ("components" or "strict"), preferring low
    ``rank`` as representative. Returns each text's representative (``int64[n]``) and its
    similarity to it (``float32[n]``, 1 for a representative)."""
    rep = cluster_representatives(n, left, right, method, rank)
    return rep, member_similarities(n, rep, left, right, similarity, measure)


def member_similarities(
    n: int,
    rep: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    similarity: np.ndarray,
    measure: Measure | PairSimilarity,
) -> np.ndarray:
    """Each text's similarity to its representative ``rep`` (1 for a representative): most
    members are verified neighbours of their representative, whose similarity is known among
    the pairs ``(left, right, similarity)``; the others' is measured."""
    sim = np.ones(n, np.float32)
    members = np.flatnonzero(rep != np.arange(n))
    if len(members) == 0:
        return sim
    reps = rep[members]
    known, found = _pair_lookup(n, left, right, similarity, members, reps)
    todo = ~found
    if todo.any():
        pairs = measure if callable(measure) else measure.pairs
        known[todo] = pairs(members[todo], reps[todo])
    sim[members] = known
    return sim


def _pair_lookup(
    n: int, left: np.ndarray, right: np.ndarray, values: np.ndarray, a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The ``values`` of the pairs ``(a[i], b[i])`` among the pairs ``(left, right)`` of rows
    ``0..n-1``, in either order: ``(found values, or 0, found mask)``."""
    out = np.zeros(len(a), values.dtype)
    if len(left) == 0 or len(a) == 0:
        return out, np.zeros(len(a), bool)
    n64 = np.int64(n)
    keys = np.minimum(left, right) * n64 + np.maximum(left, right)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    want = np.minimum(a, b) * n64 + np.maximum(a, b)
    at = np.minimum(np.searchsorted(keys, want), len(keys) - 1)
    found = keys[at] == want
    out[found] = values[order[at[found]]]
    return out, found


#: where verification and clustering are cut into batches (fractions of the candidate pairs)
#: when their decisions are wanted in document order (:func:`decide_in_order`): small first
#: batches, so that the copy of the corpus, which waits for the first decisions, starts soon
_DECISION_CUTS = (1 / 32, 1 / 16, 1 / 8, 2 / 8, 3 / 8, 4 / 8, 5 / 8, 6 / 8, 7 / 8)


def kept_rows(a: int, b: int, group: np.ndarray, urow: np.ndarray, rep: np.ndarray) -> np.ndarray:
    """Whether each document of the rows ``[a, b)`` is kept: an empty one always, another if it
    is the first of its text and its text represents itself or its cluster. ``group``: each
    document's distinct text (-1: empty); ``urow``: each text's first document; ``rep``: each
    text's representative."""
    g = group[a:b]
    keep = g < 0
    has = ~keep
    keep[has] = urow[rep[g[has]]] == np.arange(a, b, dtype=np.int64)[has]
    return keep


def decide_in_order(
    n_texts: int,
    n_docs: int,
    left: np.ndarray,
    right: np.ndarray,
    threshold: float,
    method: str,
    rank: np.ndarray,
    group: np.ndarray,
    urow: np.ndarray,
    measure: Measure,
    keep_out: Decisions,
) -> tuple[np.ndarray, np.ndarray]:
    """Verify the candidate pairs and cluster the distinct texts group by group of candidates
    (connected by candidate pairs), in the order of their groups' first texts, and tell
    ``keep_out`` which documents are kept as soon as every text before them is decided.
    Returns the pairs' similarities (in their order) and each text's representative, which are
    those of verifying and clustering all pairs at once: a text's cluster lies within its group
    of candidates, where the clustering depends only on the verified pairs and the ranks."""
    thr = np.float32(threshold)
    comp = connected_components(n_texts, left, right)  # each text's group: its first text
    first = comp[left]
    order = np.argsort(first, kind="stable")
    first = first[order]
    m = len(order)
    cut_set = {0, m}
    for f in _DECISION_CUTS:  # never splitting a group
        at = min(int(f * m), m - 1)
        cut_set.add(int(np.searchsorted(first, first[at], side="left")))
    cuts = sorted(cut_set)
    sim = np.empty(m, np.float32)
    rep = np.arange(n_texts, dtype=np.int64)
    decided = 0  # documents told
    for a, b in zip(cuts[:-1], cuts[1:]):
        idx = order[a:b]
        la, rb = left[idx], right[idx]
        s = measure.pairs(la, rb)
        sim[idx] = s
        ok = s >= thr
        if ok.any():
            texts, pos = np.unique(np.concatenate((la[ok], rb[ok])), return_inverse=True)
            k = int(ok.sum())
            reps = cluster_representatives(len(texts), pos[:k], pos[k:], method, rank[texts])
            rep[texts] = texts[reps]
        # every text before the next group's first is decided, and so is every document
        # before that text's first document
        upto = n_docs if b == m else int(urow[first[b]])
        if upto > decided:
            keep_out.decide(kept_rows(decided, upto, group, urow, rep))
            decided = upto
    return sim, rep


def documents_of_texts(
    group: np.ndarray, urow: np.ndarray, rep: np.ndarray, sim: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Carry the clusters of distinct texts to every document: ``group`` (each document's
    text, -1: empty), ``urow`` (each text's first document), ``rep`` and ``sim`` (each text's
    representative and similarity to it). Returns each document's representative row, its
    similarity to it and its cluster label (clusters numbered by their first document)."""
    n = len(group)
    representative = np.arange(n, dtype=np.int64)
    similarity = np.ones(n, np.float32)
    has = group >= 0
    g = group[has]
    representative[has] = urow[rep[g]]
    similarity[has] = sim[g]
    return representative, similarity, labels_from_reps(representative)
