"""Batch deduplication: the stages in order, over chunks of documents.

``read -> normalise -> fingerprint (exact groups) -> shingle -> sketch`` runs per chunk as
documents arrive (:meth:`Deduplicator.add`); ``LSH -> verify -> cluster`` runs once over all
documents (:meth:`Deduplicator.finish`). Only one copy of each exact-duplicate group is shingled
and sketched. What is kept between chunks is the index: for exact verification, the LSH band keys
of each distinct text (8 bytes per band) and its shingle hashes as 32-bit fingerprints (sorted
into sets only for the documents that LSH proposes); for estimated verification, its signature
instead. Never the texts themselves.
"""

from __future__ import annotations

import mmap
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numba
import numpy as np

from ._malloc import tune_malloc
from ._version import __version__
from .cluster import cluster_representatives, labels_from_reps, preference_rank
from .config import DedupConfig
from .errors import InputError
from .exact import FingerprintTable, fingerprints
from .lsh import (
    CandidateStats,
    band_keys,
    candidate_pairs,
    candidates_from_keys,
    lsh_params,
    s_curve,
)
from .result import FINGERPRINT, JACCARD, MINHASH, Pairs, Result
from .sketch import shingle_sketch
from .text.normalize import normalize
from .validate import check_int
from .verify import estimate_pairs, overlap_pairs, sort_unique_segments

StageCallback = Callable[[str, int, int], None]  # (stage, done, total)


class _Growable:
    """An append-only 1-D array in a private anonymous memory map that grows in place.

    Appending copies a part in and lets it go at once, so the index never exists twice in memory
    (no concatenation at the end). Growing remaps pages (``mremap``) instead of copying them, and
    pages not yet written are not resident, so doubling the capacity costs no memory.
    """

    def __init__(self, dtype, capacity: int = 1 << 16):
        self._dtype = np.dtype(dtype)
        self._cap = capacity
        # Plain 4 KB pages on purpose: with MADV_HUGEPAGE the kernel zeroes (and may compact
        # for) 2 MB at each fault, which measured 2-4x more system time for the index at 1M
        # documents than small pages (benchmarks/README.md, "Where the time goes").
        self._map = mmap.mmap(-1, capacity * self._dtype.itemsize,
                              flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def append(self, part: np.ndarray) -> None:
        part = part.reshape(-1)
        view = self.reserve(len(part))
        view[:] = part
        del view  # the map cannot be resized while a view of it exists
        self.commit(len(part))

    def reserve(self, m: int) -> np.ndarray:
        """A writable view of the next ``m`` free elements (growing as needed); fill it, drop it,
        then :meth:`commit` them. Lets a kernel write its output straight into the index."""
        need = self._n + m
        if need > self._cap:
            self._cap = max(need, 2 * self._cap)
            self._map.resize(self._cap * self._dtype.itemsize)
        return np.frombuffer(self._map, self._dtype, count=m,
                             offset=self._n * self._dtype.itemsize)

    def commit(self, m: int) -> None:
        """Count the ``m`` elements written through the last :meth:`reserve` as appended."""
        if self._n + m > self._cap:
            raise ValueError("commit() past the reserved capacity")
        self._n += m

    def take(self) -> np.ndarray:
        """The appended values as one array backed by the map, trimmed to size (no copy)."""
        m, n = self._map, self._n
        self._map, self._n, self._cap = None, 0, 0
        if n == 0:
            m.close()
            return np.empty(0, self._dtype)
        m.resize(n * self._dtype.itemsize)
        return np.frombuffer(m, self._dtype, count=n)


def _worker_init(threads: int) -> None:
    numba.set_num_threads(threads)


class Deduplicator:
    """Streaming batch deduplication.

    >>> d = Deduplicator(threshold=0.8)
    >>> d.add(["a first text", "another text"])          # any number of chunks
    >>> result = d.finish()

    ``add`` may be called with chunks of any size; results do not depend on the chunking.
    Parameters: a :class:`DedupConfig` or the flat keywords of :meth:`DedupConfig.from_kwargs`.
    ``check_ids``: reject repeated ids (the file readers do this already, so the pipeline turns
    it off to save memory). ``workers``: threads for the compiled stages (default: numba's
    current setting, all cores unless ``NUMBA_NUM_THREADS`` says otherwise).

    Pipelining: the compiled stages of a chunk (shingle, sketch) run on a worker thread without
    the GIL while the caller reads and normalises the next chunk; at most one chunk is in flight.
    Stage timings are therefore seconds of work per stage, and stages overlap.
    """

    def __init__(self, config: DedupConfig | None = None, *, check_ids: bool = True,
                 on_stage: StageCallback | None = None, workers: int | None = None,
                 **params: Any):
        if config is not None and params:
            raise TypeError("pass either a DedupConfig or keyword parameters, not both")
        self.config = config or DedupConfig.from_kwargs(**params)
        tune_malloc()
        check_int("workers", workers, 1, none=True)
        self.workers = (numba.get_num_threads() if workers is None
                        else min(workers, numba.config.NUMBA_NUM_THREADS))
        self._exact = self.config.verify.mode == "exact"
        self._on_stage = on_stage
        self._ids: list[str] = []
        self._seen_ids: dict[str, int] | None = {} if check_ids else None
        self._auto_until = 0  # rows 0.._auto_until-1 have row-number ids not yet in _seen_ids
        self._fp_table = FingerprintTable()
        self._group = _Growable(np.int64)
        self._urow = _Growable(np.int64)
        self._ulen = _Growable(np.int64)
        self._ufp = _Growable(np.uint64)
        # Exact verification needs the signatures only for their LSH band keys: keep the keys
        # (8 bytes per band and text, a quarter of a 128-value signature), one array per band.
        self._bands_rows = self.lsh_params()
        self._sigs = _Growable(np.uint32) if not self._exact else None
        self._keys = ([_Growable(np.uint64) for _ in range(self._bands_rows[0])]
                      if self._exact else None)
        self._sh = _Growable(np.uint32)
        self._shsize = _Growable(np.int64)
        self._n_unique = 0
        self._n_empty = 0
        self._text_bytes = 0
        self._shingles_total = 0
        self.timings: dict[str, float] = {}
        self._finished = False
        self._t_first: float | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._pending: Future | None = None

    def __len__(self) -> int:
        return len(self._ids)

    def _tick(self, stage: str, t0: float) -> float:
        t1 = time.perf_counter()
        self.timings[stage] = self.timings.get(stage, 0.0) + (t1 - t0)
        return t1

    def add(self, texts: Sequence[str], ids: Sequence[str] | None = None,
            text_bytes: int | None = None) -> None:
        """Add a chunk of documents (``ids`` default to their running row numbers)."""
        if self._finished:
            raise RuntimeError("finish() was already called on this Deduplicator")
        if self._t_first is None:
            self._t_first = time.perf_counter()
        n = len(texts)
        base = len(self._ids)
        auto = ids is None
        if auto:
            ids = [str(base + i) for i in range(n)]
        elif len(ids) != n:
            raise InputError(f"got {n} texts but {len(ids)} ids", field="ids")
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise InputError(f"text at position {base + i} is {type(t).__name__}, not str",
                                 field="texts", reason="non_string_field")
        if self._seen_ids is not None and auto and self._auto_until == base:
            # Row numbers are distinct by construction: while every id so far is one, nothing
            # needs checking (and the check's dictionary is not built).
            self._auto_until = base + n
        elif self._seen_ids is not None:
            seen = self._seen_ids
            if self._auto_until > 0:  # the first chunk with ids of its own: the row numbers so far
                seen.update((str(i), i) for i in range(self._auto_until))
                self._auto_until = -1
            for i, x in enumerate(ids):
                if not isinstance(x, str):
                    raise InputError(f"id at position {base + i} is {type(x).__name__}, not str",
                                     field="ids", reason="bad_id")
                if x in seen:
                    raise InputError(f"duplicate id {x!r} at positions {seen[x]} and {base + i}",
                                     field="ids", reason="duplicate_id")
                seen[x] = base + i
        self._ids.extend(ids)
        if text_bytes is None:
            text_bytes = sum(len(t) for t in texts)
        self._text_bytes += text_bytes
        cfg = self.config

        t0 = time.perf_counter()
        batch = normalize(texts, cfg.normalize)
        t0 = self._tick("normalize", t0)

        # exact duplicates: 128-bit fingerprint of the normalised text
        fp_hi, fp_lo = fingerprints(batch.data, batch.offsets)
        empty = batch.offsets[1:] == batch.offsets[:-1]
        self._n_empty += int(np.count_nonzero(empty))
        group, first = self._fp_table.add(fp_hi, fp_lo, skip=empty)
        docs = np.flatnonzero(first).astype(np.int64)
        self._n_unique = len(self._fp_table)
        self._group.append(group)
        self._urow.append(docs + base)
        self._ulen.append(batch.lengths[docs])
        self._ufp.append(fp_hi[docs])
        t0 = self._tick("fingerprint", t0)

        self._wait()
        if self._executor is None:
            # numba's thread count is per calling thread: the worker gets ``workers``. (All
            # threads for the worker measured faster than leaving one core to the main thread,
            # which spends part of each chunk waiting for the worker.)
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="neardup-sketch",
                                                initializer=_worker_init,
                                                initargs=(self.workers,))
        self._pending = self._executor.submit(self._sketch_chunk, batch, docs)

    def _sketch_chunk(self, batch, docs: np.ndarray) -> None:
        cfg = self.config
        t0 = time.perf_counter()
        # Exact verification: the kernel writes the shingle fingerprints straight into the
        # index, so its fresh pages are touched once, by all threads (not copied afterwards).
        sigs, h32, off = shingle_sketch(batch, cfg.shingle, cfg.sketch, docs,
                                        self._sh.reserve if self._exact else None)
        del batch
        m = len(h32)
        del h32  # the index's view: it must go before the index can grow again
        self._shingles_total += m
        if self._exact:
            self._sh.commit(m)
            for store, row in zip(self._keys, band_keys(sigs, *self._bands_rows)):
                store.append(row)
            self._shsize.append(np.diff(off))
        else:
            self._sigs.append(sigs)
        self._tick("shingle+sketch", t0)

    def _wait(self) -> None:
        """Wait for the chunk in flight; re-raise its error, if any."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def close(self) -> None:
        """Stop the worker thread (``finish`` does this; call it when abandoning a run)."""
        try:
            self._wait()
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None

    def __enter__(self) -> Deduplicator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def lsh_params(self) -> tuple[int, int]:
        """The (bands, rows) this run uses: given, or chosen for the threshold."""
        return lsh_params(self.config.lsh, self.config.sketch.num_perm)

    def _stage(self, name: str, done: int, total: int) -> None:
        if self._on_stage is not None:
            self._on_stage(name, done, total)

    def finish(self) -> Result:
        """Run LSH, verification and clustering over everything added; return the result."""
        before = numba.get_num_threads()
        numba.set_num_threads(self.workers)
        try:
            return self._finish()
        finally:
            numba.set_num_threads(before)

    def _finish(self) -> Result:
        if self._finished:
            raise RuntimeError("finish() was already called on this Deduplicator")
        self._finished = True
        self.close()
        cfg = self.config
        n = len(self._ids)
        U = self._n_unique
        k = cfg.sketch.num_perm
        thr = np.float32(cfg.lsh.threshold)

        t0 = time.perf_counter()
        group = self._group.take()
        urow = self._urow.take()
        ulen = self._ulen.take()
        ufp = self._ufp.take()
        if self._exact:
            keys = [store.take() for store in self._keys]
            sizes = self._shsize.take()
            sh_off = np.zeros(U + 1, np.int64)
            np.cumsum(sizes, out=sh_off[1:])
            del sizes
            sh_hashes = self._sh.take()
        else:
            sigs = self._sigs.take().reshape(U, k)
        t0 = self._tick("collect", t0)

        bands, rows = self._bands_rows
        self._stage("candidates", 0, 1)
        if U >= 2 and self._exact:
            left, right, cstats = candidates_from_keys(keys, cfg.lsh.bucket_cap, overwrite=True)
            cstats.rows = rows
            del keys
        elif U >= 2:
            left, right, cstats = candidate_pairs(sigs, bands, rows, cfg.lsh.bucket_cap)
        else:
            left = right = np.zeros(0, np.int64)
            cstats = CandidateStats(bands=bands, rows=rows, bucket_cap=cfg.lsh.bucket_cap)
        self._stage("candidates", 1, 1)
        t0 = self._tick("lsh", t0)

        self._stage("verify", 0, len(left))
        if self._exact:
            # Only the documents in candidate pairs need their shingles as sorted sets; every
            # member of a cluster and its representative are among them.
            sh_end = sort_unique_segments(sh_hashes, sh_off, np.concatenate([left, right]))
            sim = overlap_pairs(sh_hashes, sh_off[:-1], sh_end, left, right)
            method = JACCARD
        else:
            sim = estimate_pairs(sigs, left, right)
            method = MINHASH
        ok = sim >= thr
        left, right, sim = left[ok], right[ok], sim[ok]
        self._stage("verify", cstats.candidates, cstats.candidates)
        t0 = self._tick("verify", t0)

        self._stage("cluster", 0, 1)
        rank = preference_rank(U, cfg.cluster.keep, ulen, ufp)
        rep_u = cluster_representatives(U, left, right, cfg.cluster.method, rank)
        members = np.flatnonzero(rep_u != np.arange(U))
        sim_u = np.ones(U, np.float32)
        if len(members):
            sim_u[members] = (overlap_pairs(sh_hashes, sh_off[:-1], sh_end, members,
                                            rep_u[members]) if self._exact
                              else estimate_pairs(sigs, members, rep_u[members]))

        # expand from distinct texts to every document
        rows_all = np.arange(n, dtype=np.int64)
        representative = rows_all.copy()
        similarity = np.ones(n, np.float32)
        has = group >= 0
        g = group[has]
        representative[has] = urow[rep_u[g]]
        similarity[has] = sim_u[g]
        labels = labels_from_reps(representative)

        dup_members = has & (urow[np.maximum(group, 0)] != rows_all)
        fp_left = urow[group[dup_members]]
        fp_right = rows_all[dup_members]
        pl = np.concatenate([urow[left], fp_left])
        pr = np.concatenate([urow[right], fp_right])
        swap = pl > pr
        pl[swap], pr[swap] = pr[swap], pl[swap]
        ps = np.concatenate([sim, np.ones(len(fp_left), np.float32)])
        pm = np.concatenate([np.full(len(left), method, np.uint8),
                             np.full(len(fp_left), FINGERPRINT, np.uint8)])
        order = np.lexsort((pr, pl))
        pairs = Pairs(pl[order], pr[order], ps[order], pm[order])
        self._stage("cluster", 1, 1)
        self._tick("cluster", t0)

        sizes = np.bincount(labels)
        summary = self._summary(n, U, bands, rows, cstats, pairs, sizes, representative)
        return Result(self._ids, labels, representative, similarity, pairs, summary)

    def _summary(self, n, U, bands, rows, cstats, pairs, sizes, representative) -> dict[str, Any]:
        cfg = self.config
        t = cfg.lsh.threshold
        kept = int(np.count_nonzero(representative == np.arange(n)))
        exact_removed = n - self._n_empty - U
        wall = time.perf_counter() - (self._t_first or time.perf_counter())
        return {
            "neardup_version": __version__,
            "documents": n,
            "text_bytes": self._text_bytes,
            "empty_documents": self._n_empty,
            "distinct_texts": U,
            "exact_duplicates": exact_removed,
            "near_duplicates": n - kept - exact_removed,
            "kept": kept,
            "removed": n - kept,
            "clusters": int(np.count_nonzero(sizes >= 2)),
            "largest_cluster": int(sizes.max(initial=0)),
            "duplicate_pairs": len(pairs),
            "shingles": self._shingles_total,
            "lsh": {
                "bands": bands, "rows": rows, "threshold": t,
                "expected_recall_at_threshold": round(s_curve(t, bands, rows), 6),
                "expected_recall_at_threshold_plus_0.1": round(s_curve(min(t + 0.1, 1.0), bands,
                                                                      rows), 6),
                **{k: v for k, v in cstats.to_dict().items() if k not in ("bands", "rows")},
            },
            "verified_pairs": int(np.count_nonzero(pairs.method != FINGERPRINT)),
            "config": cfg.to_dict(),
            "timings_s": {k: round(v, 4) for k, v in self.timings.items()},
            "workers": self.workers,
            "seconds": round(wall, 4),
        }


def dedup(texts: Sequence[str], ids: Sequence[str] | None = None, *,
          chunk_size: int = 10_000, **params: Any) -> Result:
    """Find near-duplicate clusters among ``texts`` and return a :class:`Result`.

    Parameters are the flat keywords of :meth:`DedupConfig.from_kwargs` (``threshold``,
    ``shingle``, ``num_perm``, ``verify``, ``cluster``, ``keep``, ...) or ``config=DedupConfig``.
    """
    config = params.pop("config", None)
    d = Deduplicator(config, **params)
    for s in range(0, len(texts), chunk_size):
        d.add(texts[s:s + chunk_size], None if ids is None else ids[s:s + chunk_size])
    if len(texts) == 0:
        d.add([], [] if ids is not None else None)
    return d.finish()
