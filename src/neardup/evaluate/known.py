"""What is known about the pairs of ``n`` items (:class:`Truth`): a complete truth (one entity
per labelled item: two labelled items match iff their entities are equal) or a list of
labelled pairs (only the listed pairs are known). :mod:`.truth` reads it from files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field

import numpy as np

from .._records import record


@record
class Truth:
    """What is known about the pairs of ``n`` offers (rows of the loaded offers).

    ``shape``: ``"pairs"``, ``"entities"`` or ``"labelled_pairs"`` (:mod:`.truth`).
    ``labelled``: ``bool[n]``, offers the truth speaks of. With ``entity`` (``int64[n]``,
    ``-1`` where unlabelled; shapes ``pairs`` and ``entities``) two labelled offers match iff
    their entities are equal, and every pair of labelled offers is known (negatives complete
    over the labelled offers). With ``keys`` (sorted ``int64`` keys ``left * n + right`` of the
    listed pairs, ``left < right``) and ``match`` (``bool`` per key; shape
    ``labelled_pairs``) only the listed pairs are known. ``counts``: what loading saw."""

    n: int
    shape: str
    labelled: np.ndarray
    entity: np.ndarray | None = None
    keys: np.ndarray | None = None
    match: np.ndarray | None = None
    counts: dict = field(default_factory=dict)
    path: str | None = None

    @classmethod
    def from_labels(cls, labels: Sequence[object], shape: str = "entities") -> Truth:
        """A complete truth from one label per offer (equal labels: the same product);
        ``None`` labels are unlabelled offers."""
        codes: dict[object, int] = {}
        ent = np.fromiter(
            (-1 if lab is None else codes.setdefault(lab, len(codes)) for lab in labels),
            np.int64,
            len(labels),
        )
        return cls(len(ent), shape, ent >= 0, entity=ent)

    @property
    def negatives(self) -> str:
        """``"complete"`` (every pair of labelled offers is known) or ``"listed"``."""
        return "listed" if self.entity is None else "complete"

    def _norm(self, left, right) -> tuple[np.ndarray, np.ndarray]:
        left = np.asarray(left, np.int64)
        right = np.asarray(right, np.int64)
        if left.shape != right.shape:
            raise ValueError(f"{len(left)} left rows and {len(right)} right rows")
        if len(left) and (
            min(left.min(), right.min()) < 0 or max(left.max(), right.max()) >= self.n
        ):
            raise ValueError(f"pair rows must lie in [0, {self.n})")
        return np.minimum(left, right), np.maximum(left, right)

    def _listed(self) -> tuple[np.ndarray, np.ndarray]:
        """``(keys, match)`` of a truth of listed pairs (one without ``entity``)."""
        if self.keys is None or self.match is None:
            raise ValueError("a truth without entities needs keys and match")
        return self.keys, self.match

    def _find(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Listed pairs: ``(found, position in keys)`` of each pair."""
        keys, _ = self._listed()
        k = a * self.n + b
        pos = np.searchsorted(keys, k)
        posc = np.minimum(pos, max(len(keys) - 1, 0))
        found = (pos < len(keys)) & (keys[posc] == k) if len(keys) else np.zeros(len(k), bool)
        return found & (a != b), posc

    def is_known(self, left, right) -> np.ndarray:
        """``bool`` per pair: its truth is known (either order; a self pair is never known)."""
        a, b = self._norm(left, right)
        if self.entity is not None:
            return self.labelled[a] & self.labelled[b] & (a != b)
        return self._find(a, b)[0]

    def is_match(self, left, right) -> np.ndarray:
        """``bool`` per pair: known to be the same product."""
        a, b = self._norm(left, right)
        if self.entity is not None:
            return (
                self.labelled[a] & self.labelled[b] & (a != b) & (self.entity[a] == self.entity[b])
            )
        keys, match = self._listed()
        found, pos = self._find(a, b)
        return found & match[pos] if len(keys) else found

    def positives(self) -> tuple[np.ndarray, np.ndarray]:
        """All known matching pairs ``(left, right)``, ``left < right``, sorted."""
        if self.entity is None:
            keys, match = self._listed()
            k = keys[match]
            return k // self.n, k % self.n
        rows = np.flatnonzero(self.labelled)
        order = rows[np.argsort(self.entity[rows], kind="stable")]
        ent = self.entity[order]
        starts = (
            np.flatnonzero(np.r_[True, ent[1:] != ent[:-1]]) if len(ent) else np.zeros(0, np.int64)
        )
        ends = np.r_[starts[1:], len(ent)]
        lefts, rights = [], []
        for s, e in zip(starts.tolist(), ends.tolist()):
            if e - s < 2:
                continue
            members = order[s:e]
            i, j = np.triu_indices(e - s, 1)
            lefts.append(members[i])
            rights.append(members[j])
        if not lefts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        left = np.concatenate(lefts)
        right = np.concatenate(rights)
        a, b = np.minimum(left, right), np.maximum(left, right)
        o = np.lexsort((b, a))
        return a[o].astype(np.int64), b[o].astype(np.int64)

    def subset(self, rows) -> Truth:
        """The truth of the offers at ``rows`` (distinct), renumbered to their positions."""
        rows = np.asarray(rows, np.int64)
        if self.entity is not None:
            return Truth(len(rows), self.shape, self.labelled[rows], entity=self.entity[rows])
        keys, match = self._listed()
        pos = np.full(self.n, -1, np.int64)
        pos[rows] = np.arange(len(rows))
        a, b = pos[keys // self.n], pos[keys % self.n]
        keep = (a >= 0) & (b >= 0)
        a, b, m = a[keep], b[keep], match[keep]
        a, b = np.minimum(a, b), np.maximum(a, b)
        k = a * len(rows) + b
        o = np.argsort(k, kind="stable")
        lab = np.zeros(len(rows), bool)
        lab[a] = True
        lab[b] = True
        return Truth(len(rows), self.shape, lab, keys=k[o], match=m[o])

    def summary(self) -> dict:
        """Counts for a report: labelled offers, known matching and non-matching pairs, how
        the negatives are known, and what loading counted."""
        npos = len(self.positives()[0])
        lab = int(self.labelled.sum())
        if self.entity is not None:
            neg = lab * (lab - 1) // 2 - npos
            ents = len(np.unique(self.entity[self.labelled]))
        else:
            keys, match = self._listed()
            neg = int(len(keys) - match.sum())
            ents = None
        out = {
            "shape": self.shape,
            "offers": self.n,
            "labelled_offers": lab,
            "positive_pairs": npos,
            "negative_pairs": neg,
            "negatives": self.negatives,
        }
        if ents is not None:
            out["entities"] = ents
        if self.path is not None:
            out["path"] = self.path
        return {**out, **self.counts}
