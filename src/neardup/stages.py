"""The stages every engine and the online index share: one chunk's ingest and a run's summary.

``ingest_chunk`` turns a chunk of texts into arrays: normalise, fingerprint (exact groups),
shingle and sketch the first copy of each distinct text, band keys. The local engine
(:mod:`neardup.engines.local`), each partition of the Dask engine (:mod:`neardup.engines.dask`)
and :class:`neardup.Index` call it (the local engine in its two halves,
:func:`fingerprint_chunk` on the reading thread and :func:`sketch_chunk` on a worker thread, so
that reading and sketching overlap). :class:`RunSummary` is the one layout of a run's
``summary.json``, built from the counts an engine gathered. :class:`Progress` is what an engine
reports its stages to.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import field
from typing import Any, Protocol

import numpy as np

from ._kernels import lsh as _lsh_k
from ._records import record
from ._version import __version__
from .config import DedupConfig, ShingleConfig, SketchConfig, check_banding
from .exact import FingerprintTable, fingerprints
from .lsh import CandidateStats, s_curve
from .sketch import shingle_sketch
from .text.normalize import NormalizedBatch, normalize

__all__ = [
    "Fingerprinted",
    "Sketched",
    "fingerprint_chunk",
    "sketch_chunk",
    "ingest_chunk",
    "RunSummary",
    "Progress",
    "NoProgress",
]


@record
class Fingerprinted:
    """A normalised chunk of ``n`` texts and its ``G`` distinct non-empty texts.

    ``group``: ``int64[n]``, each text's distinct-text number (the fingerprint table's group,
    counted across chunks; -1 for an empty text); ``docs``: ``int64[G]``, the position in the
    chunk of each distinct text seen for the first time (the one that is shingled);
    ``lengths``/``fp_hi``/``fp_lo``: its normalised length in bytes and 128-bit fingerprint
    (``None`` when the chunk was not grouped by a fingerprint table).
    """

    batch: NormalizedBatch
    group: np.ndarray
    docs: np.ndarray
    lengths: np.ndarray
    fp_hi: np.ndarray | None
    fp_lo: np.ndarray | None
    empty: int


@record
class Sketched:
    """Shingles and sketches of the ``G`` new distinct texts of a chunk: ``keys``
    (``uint64[bands, G]``, LSH band keys) or ``signatures`` (``uint32[G, num_perm]``, when
    kept whole), and each text's 32-bit shingle fingerprints ``shingles[offsets[i]:offsets[i+1]]``
    (unsorted, with repeats)."""

    keys: np.ndarray | None
    signatures: np.ndarray | None
    shingles: np.ndarray
    offsets: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)


def fingerprint_chunk(
    batch: NormalizedBatch, table: FingerprintTable | None = None
) -> Fingerprinted:
    """Fingerprint a normalised chunk. With a ``table`` (exact groups across chunks), only the
    first copy of each text is new; without one, every non-empty text is its own group and no
    fingerprint is computed (``fp_hi``/``fp_lo`` are ``None``: the online index needs none, and
    a process that only queries then never loads that kernel)."""
    empty = batch.offsets[1:] == batch.offsets[:-1]
    if table is not None:
        hi, lo = fingerprints(batch.data, batch.offsets)
        group, first = table.add(hi, lo, skip=empty)
        docs = np.flatnonzero(first).astype(np.int64)
        hi, lo = hi[docs], lo[docs]
    else:
        docs = np.flatnonzero(~empty).astype(np.int64)
        group = np.full(len(empty), -1, np.int64)
        group[docs] = np.arange(len(docs), dtype=np.int64)
        hi = lo = None
    return Fingerprinted(
        batch, group, docs, batch.lengths[docs], hi, lo, int(np.count_nonzero(empty))
    )


def sketch_chunk(
    fp: Fingerprinted,
    shingle: ShingleConfig,
    sketch: SketchConfig,
    bands_rows: tuple[int, int] | None,
    out: Callable[[int], np.ndarray] | None = None,
    keys_out: Sequence[np.ndarray] | None = None,
) -> Sketched:
    """Shingle and sketch the new distinct texts of ``fp`` in one pass; with ``bands_rows``
    keep only their LSH band keys, without it their signatures. ``out(m)`` may supply the
    ``uint32[m]`` array the shingle fingerprints are written to (an engine's growing store),
    ``keys_out`` one ``uint64[G]`` array per band for the keys (its stores' free ends: the keys
    are then written there by the parallel kernel, and ``keys`` is that list instead of an
    array)."""
    if bands_rows is None:
        sigs, h32, off = shingle_sketch(fp.batch, shingle, sketch, fp.docs, out)
        return Sketched(None, sigs, h32, off)
    bands, rows = bands_rows
    n = len(fp.docs)
    keys = None
    if keys_out is None:
        keys = np.empty((bands, n), np.uint64)
        keys_out = list(keys)
    if len(keys_out) != bands or any(
        k.dtype != np.uint64 or k.shape != (n,) or not k.flags.c_contiguous or not k.flags.writeable
        for k in keys_out
    ):
        raise ValueError(f"keys_out must be {bands} writable uint64[{n}] arrays")
    addresses = np.array([k.ctypes.data for k in keys_out], np.uint64)
    check_banding(sketch.num_perm, bands, rows)

    def keys_of(sig: np.ndarray, lo: int, hi: int) -> None:  # sig: uint32, either scheme
        _lsh_k.band_keys_into(sig, bands, rows, addresses, lo, hi)

    _, h32, off = shingle_sketch(fp.batch, shingle, sketch, fp.docs, out, keys_of)
    return Sketched(list(keys_out) if keys is None else keys, None, h32, off)


def ingest_chunk(
    texts: Sequence[str],
    config: DedupConfig,
    bands_rows: tuple[int, int] | None,
    table: FingerprintTable | None = None,
) -> tuple[Fingerprinted, Sketched]:
    """Normalise, fingerprint, shingle and sketch a chunk: :func:`fingerprint_chunk` then
    :func:`sketch_chunk`, in one call."""
    fp = fingerprint_chunk(normalize(texts, config.normalize), table)
    return fp, sketch_chunk(fp, config.shingle, config.sketch, bands_rows)


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
