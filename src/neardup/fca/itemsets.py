"""Maximal frequent itemsets of a weighted transaction database, mined by the compiled kernel
:mod:`neardup._kernels.itemsets` (a depth-first miner in the manner of GenMax and MAFIA: items
ranked by support, occurrence delivery, parent equivalence pruning, a lookahead on the whole
candidate tail, and maximality checked against the maximal sets found so far)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np

from ..validate import check_int


def maximal_itemsets(
    tracts: Mapping[tuple[int, ...], int], min_support: int
) -> list[tuple[tuple[int, ...], int]]:
    """Every maximal itemset of two items or more whose support is at least ``min_support``,
    with its support, in no particular order.

    ``tracts`` maps each transaction (a tuple of items: integers from 0 to 2**31 - 2) to its
    multiplicity; an itemset's support is the sum of the multiplicities of the transactions that
    hold all of its items. An itemset is maximal when no proper superset reaches the minimum.
    Items within a set come in ascending order; a transaction's repeated items count once, and
    transactions of multiplicity 0 count for nothing."""
    check_int("min_support", min_support, 1)
    n = len(tracts)
    lengths = np.fromiter(map(len, tracts), np.int64, n)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    items = np.fromiter(itertools.chain.from_iterable(tracts), np.int64, int(offsets[-1]))
    weights = np.fromiter(tracts.values(), np.int64, n)
    members, bounds, supports = maximal_itemset_arrays(items, offsets, weights, min_support)
    flat = members.tolist()
    b = bounds.tolist()
    return [(tuple(flat[b[i] : b[i + 1]]), s) for i, s in enumerate(supports.tolist())]


def maximal_itemset_arrays(
    items: np.ndarray, offsets: np.ndarray, weights: np.ndarray, min_support: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`maximal_itemsets` on a CSR database: transaction ``t`` is
    ``items[offsets[t]:offsets[t + 1]]`` with multiplicity ``weights[t]``. Returns
    ``(members, bounds, supports)``: set ``i`` is ``members[bounds[i]:bounds[i + 1]]``."""
    from .._kernels.itemsets import maximal_itemsets as kernel

    check_int("min_support", min_support, 1)
    items = np.ascontiguousarray(items, np.int64)
    offsets = np.ascontiguousarray(offsets, np.int64)
    weights = np.ascontiguousarray(weights, np.int64)
    n = len(weights)
    if (
        offsets.ndim != 1
        or len(offsets) != n + 1
        or (n and offsets[0] != 0)
        or (n and offsets[-1] != len(items))
        or np.any(np.diff(offsets) < 0)
    ):
        raise ValueError(
            f"offsets: {n + 1} non-decreasing values from 0 to {len(items)} "
            "(one more than the weights)"
        )
    if len(weights) and weights.min() < 0:
        raise ValueError("weights: multiplicities are non-negative")
    if n >= 2**31 - 1:
        raise ValueError(f"{n} transactions: at most 2**31 - 2")
    n_items = 0
    if len(items):
        lo, hi = int(items.min()), int(items.max())
        if lo < 0 or hi >= 2**31 - 1:
            raise ValueError(f"items: integers from 0 to 2**31 - 2, not {lo if lo < 0 else hi}")
        n_items = hi + 1
    if n_items > 2 * len(items) + 1024:
        # sparse item numbers: the kernel's tables by item would be mostly empty
        ids, dense = np.unique(items, return_inverse=True)
        members, bounds, supports = kernel(
            dense.astype(np.int64).reshape(-1), offsets, weights, len(ids), min_support
        )
        return ids[members], bounds, supports
    return kernel(items, offsets, weights, n_items, min_support)
