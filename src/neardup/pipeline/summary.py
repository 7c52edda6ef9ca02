"""A run's summary: :class:`RunSummary`, the one layout of ``summary.json`` built from the counts
an engine gathered, and :class:`Progress`, what an engine reports its stages to."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Protocol

from .._records import record
from .._version import __version__
from ..config import DedupConfig
from ..lsh import CandidateStats, s_curve

__all__ = ["RunSummary", "Progress", "NoProgress"]


class Progress(Protocol):
    """What an engine reports its stages to (the CLI passes a rich progress display)."""

    def start(self, stage: str, total: int | None) -> None: ...
    def update(self, stage: str, done: int, total: int | None = None) -> None: ...
    def finish(self, stage: str) -> None: ...


class NoProgress:
    """Progress that shows nothing."""

    def start(self, stage: str, total: int | None) -> None:
        pass

    def update(self, stage: str, done: int, total: int | None = None) -> None:
        pass

    def finish(self, stage: str) -> None:
        pass


@record
class RunSummary:
    """The counts of a run, as every engine reports them; :meth:`to_dict` is the layout of
    ``summary.json`` (and of ``Result.summary``).

    ``distinct_texts``: distinct non-empty normalised texts; ``kept``: documents that represent
    their cluster (or stand alone); ``duplicate_pairs``: rows of the pairs table (verified and
    fingerprint pairs); ``verified_pairs``: those verified by similarity. The job fields
    (``inputs`` ...) are set by the file jobs only.
    """

    config: DedupConfig
    bands: int
    rows: int
    candidates: CandidateStats
    documents: int = 0
    text_bytes: int = 0
    empty_documents: int = 0
    distinct_texts: int = 0
    kept: int = 0
    clusters: int = 0
    largest_cluster: int = 0
    duplicate_pairs: int = 0
    verified_pairs: int = 0
    pairs: Any = None  # the pairs table's counts (neardup.expand.PairCounts)
    shingles: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    workers: int | None = None
    seconds: float = 0.0
    engine: str | None = None
    partitions: int | None = None
    # the local engine's memory: its budget, whether its state went past it to the scratch
    # folder, and the most the scratch folder held (removed at the end of the run)
    memory: dict[str, Any] | None = None
    # the file jobs
    inputs: list[str] | None = None
    input_bytes: int | None = None
    skipped: dict[str, Any] | None = None
    outputs: dict[str, Any] | None = None
    ingest_seconds: float | None = None
    ids: dict[str, Any] | None = None  # where the ids came from (neardup.io.IdInfo.to_dict)

    def to_dict(self) -> dict[str, Any]:
        n = self.documents
        exact_removed = n - self.empty_documents - self.distinct_texts
        t = self.config.lsh.threshold
        b, r = self.bands, self.rows
        d: dict[str, Any] = {"neardup_version": __version__}
        if self.engine is not None:
            d["engine"] = self.engine
        d.update(
            {
                "documents": n,
                "text_bytes": self.text_bytes,
                "empty_documents": self.empty_documents,
                "distinct_texts": self.distinct_texts,
                "exact_duplicates": exact_removed,
                "near_duplicates": n - self.kept - exact_removed,
                "kept": self.kept,
                "removed": n - self.kept,
                "clusters": self.clusters,
                "largest_cluster": self.largest_cluster,
                "duplicate_pairs": self.duplicate_pairs,
                "shingles": self.shingles,
                "lsh": {
                    "bands": b,
                    "rows": r,
                    "threshold": t,
                    "expected_recall_at_threshold": round(s_curve(t, b, r), 6),
                    "expected_recall_at_threshold_plus_0.05": round(
                        s_curve(min(t + 0.05, 1.0), b, r), 6
                    ),
                    "expected_recall_at_threshold_plus_0.1": round(
                        s_curve(min(t + 0.1, 1.0), b, r), 6
                    ),
                    **{
                        k: v
                        for k, v in self.candidates.to_dict().items()
                        if k not in ("bands", "rows")
                    },
                },
                "verified_pairs": self.verified_pairs,
                "pairs": self.pairs.to_dict() if self.pairs is not None else None,
                "config": self.config.to_dict(),
                "timings_s": {k: round(v, 4) for k, v in self.timings.items()},
                "workers": self.workers,
            }
        )
        if self.partitions is not None:
            d["partitions"] = self.partitions
        if self.memory is not None:
            d["memory"] = self.memory
        d["seconds"] = round(self.seconds, 4)
        if self.inputs is not None:
            wall = self.seconds
            d.update(
                {
                    "inputs": self.inputs,
                    **({"ids": self.ids} if self.ids is not None else {}),
                    "input_bytes": self.input_bytes,
                    "skipped": self.skipped,
                    "outputs": self.outputs,
                    "documents_per_s": round(n / wall, 1) if wall > 0 else None,
                    "mb_per_s": round(self.text_bytes / 1e6 / wall, 2) if wall > 0 else None,
                    "ingest_seconds": round(self.ingest_seconds or 0.0, 4),
                }
            )
        elif self.skipped is not None:  # the library's documents left out (on_error="skip")
            d["skipped"] = self.skipped
        return d
