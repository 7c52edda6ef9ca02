"""What a deduplication run returns: arrays first, records on request (no pandas needed)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any, Literal

from ._extras import require
from ._records import record

if TYPE_CHECKING:
    import pandas
    import polars
    import pyarrow

import numpy as np

#: ``Pairs.method`` codes and their names in outputs.
FINGERPRINT, JACCARD, MINHASH = 0, 1, 2
METHOD_NAMES = ("fingerprint", "jaccard", "minhash")


@record
class Pairs:
    """Duplicate pairs of document rows: ``left < right`` (``int64[m]``), ``similarity``
    (``float32[m]``) and how it was obtained, ``method`` (``uint8[m]``): 0 "fingerprint"
    (identical normalised text), 1 "jaccard" (exact Jaccard of the shingle sets), 2 "minhash"
    (signature estimate); ``implied`` (``bool[m]``, default all False): the pair was not
    compared itself, its similarity follows from exact-duplicate groups (two copies of one
    text, or a copy of a text and a near-duplicate of that text: see :mod:`neardup.expand`)."""

    left: np.ndarray
    right: np.ndarray
    similarity: np.ndarray
    method: np.ndarray
    implied: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.implied is None:
            self.implied = np.zeros(len(self.left), bool)

    def __len__(self) -> int:
        return len(self.left)

    @classmethod
    def empty(cls) -> Pairs:
        return cls(
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
            np.zeros(0, np.float32),
            np.zeros(0, np.uint8),
            np.zeros(0, bool),
        )


@record
class Result:
    """Clusters and pairs of one run.

    Per document ``i`` (input order): ``ids[i]``; ``labels[i]`` a dense cluster number;
    ``representative[i]`` the row of its cluster's representative (``i`` itself for a
    representative or a singleton); ``similarity[i]`` its similarity to the representative
    (1.0 for the representative). ``keep`` marks the documents of the deduplicated corpus.
    """

    ids: list[str]
    labels: np.ndarray
    representative: np.ndarray
    similarity: np.ndarray
    pairs: Pairs
    summary: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def keep(self) -> np.ndarray:
        """``bool[n]``: True for the one document kept from each cluster."""
        return self.representative == np.arange(len(self.representative))

    @property
    def duplicate_rows(self) -> np.ndarray:
        """Rows of documents removed as duplicates of a representative."""
        return np.flatnonzero(~self.keep)

    def cluster_sizes(self) -> np.ndarray:
        return np.bincount(self.labels, minlength=int(self.labels.max(initial=-1)) + 1)

    def clusters(self, min_size: int = 2) -> list[dict[str, Any]]:
        """Clusters with at least ``min_size`` members, largest first:
        ``{"cluster", "representative", "size", "members": [{"id", "similarity"}, ...]}``."""
        sizes = self.cluster_sizes()
        big = np.flatnonzero(sizes >= min_size)
        if len(big) == 0:
            return []
        rows = np.flatnonzero(np.isin(self.labels, big))
        rows = rows[np.lexsort((rows, self.labels[rows]))]
        out: dict[int, dict[str, Any]] = {}
        for r in rows.tolist():
            c = int(self.labels[r])
            entry = out.get(c)
            if entry is None:
                rep = int(self.representative[r])
                entry = out[c] = {
                    "cluster": c,
                    "representative": self.ids[rep],
                    "size": int(sizes[c]),
                    "members": [],
                }
            entry["members"].append({"id": self.ids[r], "similarity": float(self.similarity[r])})
        return sorted(out.values(), key=lambda e: (-e["size"], e["cluster"]))

    def cluster_records(self) -> list[dict[str, Any]]:
        """One record per document: id, cluster, representative id, similarity."""
        ids = self.ids
        return [
            {"id": ids[i], "cluster": int(c), "representative": ids[int(r)], "similarity": float(s)}
            for i, (c, r, s) in enumerate(zip(self.labels, self.representative, self.similarity))
        ]

    def pair_records(self) -> list[dict[str, Any]]:
        """One record per duplicate pair: id_a, id_b, similarity, method, implied."""
        ids = self.ids
        p = self.pairs
        assert p.implied is not None  # set by Pairs.__post_init__
        return [
            {
                "id_a": ids[int(a)],
                "id_b": ids[int(b)],
                "similarity": float(s),
                "method": METHOD_NAMES[int(m)],
                "implied": bool(i),
            }
            for a, b, s, m, i in zip(p.left, p.right, p.similarity, p.method, p.implied)
        ]

    # -- tables -------------------------------------------------------------------------------
    def columns(
        self,
        table: Literal["clusters", "pairs"] = "clusters",
        id_column: Callable[[np.ndarray | slice | None], Any] | None = None,
        part: tuple[int, int] | None = None,
    ) -> dict[str, np.ndarray]:
        """The columns of a table as NumPy arrays, as ``neardup dedup`` writes them:

        - ``"clusters"``: one row per document: ``id``, ``cluster``, ``representative`` (its
          id), ``similarity`` (to the representative), ``keep`` (kept in the deduplicated
          corpus);
        - ``"pairs"``: one row per duplicate pair: ``id_a``, ``id_b``, ``similarity``,
          ``method`` ("fingerprint", "jaccard" or "minhash"), ``implied`` (True where the pair
          was not compared itself: its similarity follows from exact-duplicate groups).

        ``id_column`` (optional): makes a column of ids from the rows it is given (``None``: all
        rows in order; a ``slice``: those rows in order), in place of the NumPy object arrays
        (a writer's own string arrays).
        ``part`` (optional): only the table's rows ``[lo, hi)``.
        """
        if id_column is None:
            ids = np.asarray(self.ids, dtype=object)

            def id_column(rows):
                return ids if rows is None else ids[rows]

        s = slice(None) if part is None else slice(*part)
        if table == "clusters":
            return {
                "id": id_column(None if part is None else slice(*part)),
                "cluster": self.labels[s],
                "representative": id_column(self.representative[s]),
                "similarity": self.similarity[s],
                "keep": self.keep
                if part is None
                else self.representative[s] == np.arange(*part, dtype=np.int64),
            }
        if table == "pairs":
            p = self.pairs
            assert p.implied is not None  # set by Pairs.__post_init__
            return {
                "id_a": id_column(p.left[s]),
                "id_b": id_column(p.right[s]),
                "similarity": p.similarity[s],
                "method": np.asarray(METHOD_NAMES, dtype=object)[p.method[s]],
                "implied": p.implied[s],
            }
        from .errors import ConfigError

        raise ConfigError(f"table={table!r} is invalid: 'clusters' or 'pairs'")

    def to_arrow(self, table: Literal["clusters", "pairs"] = "clusters") -> pyarrow.Table:
        """The ``clusters`` or ``pairs`` table (see :meth:`columns`) as a ``pyarrow.Table``."""
        import pyarrow as pa

        cols = self.columns(table)
        return pa.table(
            {
                k: pa.array(v, type=pa.string() if v.dtype == object else None)
                for k, v in cols.items()
            }
        )

    def to_pandas(self, table: Literal["clusters", "pairs"] = "clusters") -> pandas.DataFrame:
        """The ``clusters`` or ``pairs`` table as a ``pandas.DataFrame`` (needs pandas)."""
        require("pandas", "tables", "Result.to_pandas")
        return self.to_arrow(table).to_pandas()

    def to_polars(self, table: Literal["clusters", "pairs"] = "clusters") -> polars.DataFrame:
        """The ``clusters`` or ``pairs`` table as a ``polars.DataFrame`` (needs polars)."""
        pl = require("polars", "tables", "Result.to_polars")
        return pl.from_arrow(self.to_arrow(table))
