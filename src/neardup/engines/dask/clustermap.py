"""The cluster map: what the write step needs of the clusters of texts in verified pairs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class ClusterMap:
    """Texts in verified pairs (by global first row, sorted): representative row and id (UTF-8
    bytes ``rep_id`` cut at ``rep_id_off``), similarity to it, and the first row of their
    cluster."""

    rows: np.ndarray
    rep: np.ndarray
    rep_id: np.ndarray
    rep_id_off: np.ndarray
    sim: np.ndarray
    cfirst: np.ndarray

    def rep_id_bytes(self) -> tuple[np.ndarray, np.ndarray]:
        return self.rep_id, self.rep_id_off

    def find(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pos = np.searchsorted(self.rows, rows)
        pos = np.minimum(pos, max(len(self.rows) - 1, 0))
        found = (self.rows[pos] == rows) if len(self.rows) else np.zeros(len(rows), bool)
        return found, pos
