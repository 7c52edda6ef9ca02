"""Every duplicate pair from the verified edges and the exact-duplicate groups.

A run compares only one document of each exact-duplicate group (identical normalised texts)
with the others: its pairs are *edges*, a verified pair ``(a, b)`` between two groups' first
documents and, inside a group, each copy with the group's first document. Every other pair
whose similarity is then known exactly is *implied*: two copies of one group (similarity 1.0,
"fingerprint"), and, for an edge ``(a, b)``, every member of ``a``'s group with every member of
``b``'s group (the edge's similarity: their shingle sets are those of ``a`` and ``b``).

An exact group of ``g`` documents implies ``g (g - 1) / 2`` pairs, and an edge between groups of
``g`` and ``h`` documents ``g h``: a group of 10,000 empty-looking posts would write 50 million
rows. Groups of more than ``max_group`` documents are therefore written as edges only (each copy
with the group's first document; an edge to such a group stays one pair), and the pairs left
out are counted (:class:`PairCounts`).

All functions are vectorised over arrays (no Python loop per pair or group); a group's members
are given as a *layout*: ``members`` (``int64``, each group's rows ascending, groups one after
the other), ``starts`` and ``sizes`` (``int64[G]``).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np

from ._records import record
from .result import FINGERPRINT, Pairs

#: ``pairs``: every pair known to be a duplicate, or only the compared ones.
PAIRS_MODES = ("all", "edges")


@record
class PairCounts:
    """What the pairs table holds and what it leaves out.

    ``verified``: rows compared by similarity (edges between groups); ``fingerprint``: rows of
    two documents with identical normalised text, of which ``implied_fingerprint`` are two
    copies (not compared themselves); ``implied_near``: rows of two documents of different
    groups other than the edge between the groups (the edge's similarity); ``left_out``:
    implied pairs not written, all of them with ``mode`` "edges", those of the
    ``groups_over`` exact groups of more than ``max_group`` documents otherwise;
    ``largest_group``: documents in the largest exact group."""

    mode: str = "all"
    max_group: int = 1000
    verified: int = 0
    fingerprint: int = 0
    implied_fingerprint: int = 0
    implied_near: int = 0
    left_out: int = 0
    groups_over: int = 0
    largest_group: int = 0

    def merge(self, other: PairCounts) -> PairCounts:
        """The counts of two disjoint parts of one run (same mode and limit)."""
        out = PairCounts(self.mode, self.max_group)
        for f in fields(self)[2:]:
            a, b = getattr(self, f.name), getattr(other, f.name)
            setattr(out, f.name, max(a, b) if f.name == "largest_group" else a + b)
        return out

    @property
    def rows(self) -> int:
        """Rows of the pairs table."""
        return self.verified + self.fingerprint + self.implied_near

    @property
    def implied(self) -> int:
        """Rows not compared themselves but implied by exact groups."""
        return self.implied_fingerprint + self.implied_near

    def to_dict(self) -> dict[str, Any]:
        """The ``pairs`` section of the summary."""
        # three parts that add up to the rows: the compared pairs, the identical texts paired
        # with their group's first, and the pairs implied by exact groups (identical or not)
        return {
            "mode": self.mode,
            "rows": self.rows,
            "verified": self.verified,
            "identical": self.fingerprint - self.implied_fingerprint,
            "implied": self.implied,
            "left_out": self.left_out,
            "max_group": self.max_group,
            "groups_over_max": self.groups_over,
            "largest_exact_group": self.largest_group,
        }


def ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + n) for s, n in zip(starts, lengths)])``, vectorised."""
    lengths = np.asarray(lengths, np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(lengths)
    shift = np.asarray(starts, np.int64) - (ends - lengths)
    return np.arange(total, dtype=np.int64) + np.repeat(shift, lengths)


def group_layout(group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The layout of ``group`` (``int64[n]``: each row's group, -1 for none): ``members``,
    ``starts``, ``sizes`` (see the module's docstring)."""
    rows = np.flatnonzero(group >= 0)
    g = group[rows]
    members = rows[np.argsort(g, kind="stable")].astype(np.int64)
    sizes = np.bincount(g, minlength=n_groups).astype(np.int64)
    starts = np.zeros(n_groups, np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    return members, starts, sizes


def within_pairs(
    members: np.ndarray, starts: np.ndarray, sizes: np.ndarray, mode: str, max_group: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, PairCounts]:
    """The pairs inside exact groups: ``(left, right, implied, counts)`` as member *positions*
    (indices into ``members``), ``left < right``. Each copy is paired with its group's first
    member (not implied); with ``mode`` "all", also every two copies of a group of at most
    ``max_group`` members (implied)."""
    sizes = np.asarray(sizes, np.int64)
    starts = np.asarray(starts, np.int64)
    multi = sizes >= 2
    expand = multi & (sizes <= max_group) if mode == "all" else np.zeros(len(sizes), bool)
    # every pair of an expanded group: position p is paired with the s - 1 - p after it
    es, ez = starts[expand], sizes[expand]
    pos = ranges(es, ez)
    after = np.repeat(ez, ez) - (pos - np.repeat(es, ez)) - 1
    el = np.repeat(pos, after)
    er = ranges(pos + 1, after)
    e_implied = el != np.repeat(np.repeat(es, ez), after)
    # the stars of the others
    star = multi & ~expand
    ss, sz = starts[star], sizes[star]
    sr = ranges(ss + 1, sz - 1)
    sl = np.repeat(ss, sz - 1)
    left = np.concatenate([el, sl])
    right = np.concatenate([er, sr])
    implied = np.concatenate([e_implied, np.zeros(len(sl), bool)])
    s_all = sizes[multi]
    n_pairs = s_all * (s_all - 1) // 2
    counts = PairCounts(
        mode=mode,
        max_group=max_group,
        fingerprint=len(left),
        implied_fingerprint=int(np.count_nonzero(implied)),
        left_out=int(n_pairs.sum() - len(left)),
        groups_over=(int(np.count_nonzero(sizes > max_group)) if mode == "all" else 0),
        largest_group=int(sizes.max(initial=0)),
    )
    return left, right, implied, counts


def cross_pairs(
    members: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    eu: np.ndarray,
    ev: np.ndarray,
    mode: str,
    max_group: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, PairCounts]:
    """The pairs of the edges between groups ``eu[i]`` and ``ev[i]`` (group numbers of the
    layout): ``(a, b, edge, implied, counts)``, ``a`` and ``b`` member positions (not ordered),
    ``edge`` the index of the edge each pair comes from. The edge itself is the pair of the
    groups' first members (not implied); with ``mode`` "all", every member of one group is
    paired with every member of the other when neither has more than ``max_group`` members."""
    eu = np.asarray(eu, np.int64)
    ev = np.asarray(ev, np.int64)
    su, sv = sizes[eu], sizes[ev]
    full = su * sv
    if mode == "all":
        n = np.where((su <= max_group) & (sv <= max_group), full, 1)
    else:
        n = np.ones(len(eu), np.int64)
    edge = np.repeat(np.arange(len(eu), dtype=np.int64), n)
    t = ranges(np.zeros(len(eu), np.int64), n)
    width = sv[edge]
    i, j = t // width, t % width
    a = starts[eu][edge] + i
    b = starts[ev][edge] + j
    implied = t > 0
    counts = PairCounts(
        mode=mode,
        max_group=max_group,
        verified=len(eu),
        implied_near=int(np.count_nonzero(implied)),
        left_out=int((full - n).sum()),
    )
    return a, b, edge, implied, counts


def expand_pairs(
    group: np.ndarray,
    n_groups: int,
    left: np.ndarray,
    right: np.ndarray,
    similarity: np.ndarray,
    method: int,
    mode: str = "all",
    max_group: int = 1000,
) -> tuple[Pairs, PairCounts]:
    """The pairs table of a run: ``group`` (``int64[n]``, each document's exact group, -1 for
    none), the verified edges ``left``, ``right`` (group numbers) with their ``similarity``
    and ``method`` code. Returns the :class:`~neardup.result.Pairs` of document rows, sorted by
    ``(left, right)``, and their counts."""
    members, starts, sizes = group_layout(group, n_groups)
    wl, wr, wimp, wc = within_pairs(members, starts, sizes, mode, max_group)
    a, b, edge, cimp, cc = cross_pairs(members, starts, sizes, left, right, mode, max_group)
    a, b = members[a], members[b]
    pl = np.concatenate([np.minimum(a, b), members[wl]])
    pr = np.concatenate([np.maximum(a, b), members[wr]])
    ps = np.concatenate([np.asarray(similarity, np.float32)[edge], np.ones(len(wl), np.float32)])
    pm = np.concatenate(
        [np.full(len(a), method, np.uint8), np.full(len(wl), FINGERPRINT, np.uint8)]
    )
    pi = np.concatenate([cimp, wimp])
    order = np.lexsort((pr, pl))
    return (Pairs(pl[order], pr[order], ps[order], pm[order], pi[order]), wc.merge(cc))
