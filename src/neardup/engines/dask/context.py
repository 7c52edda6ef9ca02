"""The run context: what the steps of a Dask run share, instead of the locals of one function.

A run is a list of steps (:data:`neardup.engines.dask.run.STEPS`), each a function of the
context that submits tasks through :meth:`RunContext.submit` and leaves its results on the
context for the steps after it. Only small handles and counts live here; the arrays stay in the
scratch folder.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...config import DedupConfig
from ...io import OutputOptions, ReadOptions, SkipReport
from ...pipeline import CandidateStats, Progress
from .plan import Spec
from .scratch import Part


@dataclass
class RunContext:
    """The state of one run (created by :func:`~neardup.engines.dask.dedup_dask`)."""

    client: Any
    paths: list[Path]
    outdir: Path
    config: DedupConfig
    read: ReadOptions
    output: OutputOptions
    partition_docs: int
    partitioned_tables: bool
    progress: Progress
    threads: int | None  # kernel threads per worker of a LocalCluster (None: as set)
    tok: str  # this run's token: task keys and the scratch folder's name
    work: Path  # the scratch folder
    futures: list = field(default_factory=list)  # submitted, cancelled if the run fails
    timings: dict[str, float] = field(default_factory=dict)
    t_start: float = field(default_factory=time.perf_counter)
    # planning
    bands: int = 0
    rows: int = 0
    specs: list[Spec] = field(default_factory=list)
    workers: int = 0
    total_bytes: int = 0
    # read
    parts: list[Part] = field(default_factory=list)
    line_prior: list[list[int]] = field(default_factory=list)  # lines before a JSONL range
    # ids: rows dropped per partition (ids repeated from earlier ones), global row offsets
    report: SkipReport = field(default_factory=SkipReport)
    drops: list[np.ndarray] = field(default_factory=list)
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    ids: dict[str, Any] | None = None  # where the ids came from (the summary's "ids")
    # exact groups
    exact_dir: str = ""  # the exact-group reducers' output (cluster sizes read it)
    distinct: int = 0
    empty: int = 0
    # candidates and verification
    cstats: CandidateStats = field(default_factory=CandidateStats)
    candidate_prefixes: list[str] | None = None
    verified: list[dict] = field(default_factory=list)
    verified_count: int = 0
    edges: str = ""  # the verified pairs both ways round, by owner of "src" (a shuffle)
    vl: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    vr: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    vs: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    # clustering
    cluster_map: Any = None  # a future of the ClusterMap (broadcast, or made on a worker)
    rounds: int = 0  # rounds of label propagation (method "components")
    # writing
    kept: int = 0
    pair_counts: Any = None  # the pairs table's PairCounts
    clusters: int = 0
    largest: int = 0
    outputs: dict[str, Any] = field(default_factory=dict)

    @property
    def P(self) -> int:  # noqa: N802 - the number of partitions, as in the docs
        return len(self.specs)

    @property
    def n(self) -> int:
        """Documents (valid records) in the whole corpus."""
        return int(self.offsets[-1])

    def submit(self, fn, *args, name: str, i: int | str = 0):
        """Submit a task under a key unique to this run, remembered for cancellation."""
        fut = self.client.submit(fn, *args, key=f"neardup-{name}-{self.tok}-{i}", pure=False)
        self.futures.append(fut)
        return fut

    def stop(self) -> None:
        """Cancel this run's tasks and wait until none of them runs on any worker any more:
        a worker cannot stop a task that has started, whose function then runs on to its end
        and may still write into this run's folders (which the caller is about to remove)."""
        with contextlib.suppress(Exception):
            self.client.cancel(self.futures)
        wait_stopped(self.client, self.tok)

    def done(self) -> None:
        """The tasks so far are finished and gathered: what a lost worker held need not be
        computed again."""
        self.futures.clear()

    def folder(self, name: str) -> str:
        """A new sub-folder of the scratch folder."""
        path = self.work / name
        path.mkdir()
        return str(path)


def _running(tok: str, dask_worker: Any = None) -> int:
    """On a worker: how many tasks whose key holds ``tok`` are running in its threads."""
    keys = list(getattr(dask_worker, "active_keys", ()))
    return sum(1 for k in keys if tok in str(k))


def wait_stopped(client: Any, tok: str, timeout: float = 60.0) -> bool:
    """Wait until no task whose key holds ``tok`` (a run's token) runs on any worker, at most
    ``timeout`` seconds; ``False`` if some still ran then (or the workers could not be
    asked)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            running = client.run(_running, tok)
        except Exception:  # noqa: BLE001  (workers gone: nothing of theirs runs on)
            return False
        if not any(running.values()):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
