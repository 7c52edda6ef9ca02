"""The local engine's algorithm: batch deduplication in this process, over chunks of documents.

``read -> normalise -> fingerprint (exact groups) -> shingle -> sketch`` runs per chunk as
documents arrive (:meth:`Deduplicator.add`); ``LSH -> verify -> cluster`` runs once over all
documents (:meth:`Deduplicator.finish`), which can tell which documents are kept in document
order as it decides them, so that :func:`dedup_files` copies the deduplicated corpus meanwhile.
Only one copy of each exact-duplicate group is shingled and sketched. What is kept between chunks is the index: for exact verification, the LSH band keys
of each distinct text (8 bytes per band) and its shingle hashes as 32-bit fingerprints (compared,
as they are, for the pairs that LSH proposes); for estimated verification, its signature
instead. Never the texts themselves.

The file job on top of it (``neardup dedup``: :func:`~neardup.jobs.dedup.dedup_files`,
:func:`~neardup.jobs.dedup.write_result`) is in :mod:`neardup.jobs.dedup`, beside the other
file jobs.
"""

from __future__ import annotations

import collections
import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._arrays import Growable
from .._columns import (
    IdColumn,
    TextColumn,
    id_column,
    select,
    table_columns,
    text_column,
    to_arrow,
)
from .._log import get_logger
from .._malloc import tune_malloc
from .._threads import get_num_threads, set_num_threads
from ..config import DedupConfig, ShingleConfig, config_from
from ..errors import ConfigError, InputError, SkipReason
from ..exact import FingerprintTable
from ..lsh import lsh_params
from ..pipeline import (
    RunSummary,
    ShingleBags,
    ShingleRanges,
    Signatures,
    TextSketches,
    cluster_texts,
    decide_in_order,
    documents_of_texts,
    expand_pairs,
    find_candidates,
    find_candidates_by_band,
    fingerprint_chunk,
    gather_sets,
    kept_rows,
    member_similarities,
    preference_rank,
    sketch_chunk,
    verify_pairs,
)
from ..result import Result
from ..text.normalize import is_arrow_strings, normalize
from ..validate import check_choice, check_int
from .stores import Budget, Scratch, SpilledArray, SpillingArray, default_budget, parse_size

if TYPE_CHECKING:
    from ..io.writers import KeepStream

__all__ = ["Deduplicator", "dedup"]

StageCallback = Callable[[str, int, int], None]  # (stage, done, total)

log = get_logger(__name__)

# Chunks ahead of the sketching worker (normalised and fingerprinted, not yet sketched). With
# one chunk ahead the sketching worker, the slowest stage, waited 0.65 s of a 1M run for its
# next chunk; with three (some MB each), 0.05 s. (The file reader's read-ahead is
# :data:`neardup.jobs.dedup._READ_AHEAD`.)
_SKETCH_QUEUE = 3


def _worker_init(threads: int) -> None:
    set_num_threads(threads)


class Deduplicator:
    """Streaming batch deduplication.

    >>> d = Deduplicator(threshold=0.8)
    >>> d.add(["a first text", "another text"])          # any number of chunks
    >>> result = d.finish()

    ``add`` may be called with chunks of any size; results do not depend on the chunking.
    Parameters: the keywords of :func:`dedup`, or a whole :class:`DedupConfig` as ``config``.
    ``on_error``: "fail" (default) on a missing text (``None``, a null), or "skip" to leave
    such documents out (counted in the summary's ``skipped``). ``check_ids``: reject repeated
    ids (the file readers do this already, so the pipeline turns it off to save memory).
    ``workers``: threads for the compiled stages (default: the calling thread's setting,
    :func:`neardup._threads.set_num_threads`; all available processors unless changed).

    ``memory_budget`` (bytes or a size such as ``"4G"``; default: a quarter of the machine's
    memory) bounds the band keys and shingle fingerprints held in memory: past it they move to
    a scratch folder in ``work_dir`` (default: the system's temporary folder), are read back in
    order (keys a band at a time, fingerprints a batch of candidate pairs at a time) and the
    folder is removed at the end; the result is the same.

    Pipelining: the compiled stages of a chunk (shingle, sketch) run on a worker thread without
    the GIL while the caller reads and normalises the next chunks; at most three chunks wait
    for it.
    Stage timings are therefore seconds of work per stage, and stages overlap.
    """

    def __init__(
        self,
        config: DedupConfig | None = None,
        *,
        threshold: float = 0.8,
        shingle: str | ShingleConfig = "word:5",
        num_perm: int = 128,
        scheme: Literal["oph", "classic"] = "oph",
        seed: int = 1,
        bands: int | None = None,
        rows: int | None = None,
        min_recall: float = 0.99,
        bucket_cap: int = 500,
        verify: Literal["exact", "estimate"] = "exact",
        cluster: Literal["components", "strict"] = "components",
        keep: Literal["first", "longest"] = "first",
        pairs: Literal["all", "edges"] = "all",
        pairs_max_group: int = 1000,
        nfkc: bool = True,
        casefold: bool = True,
        strip_html: bool = False,
        strip_punctuation: bool = False,
        strip_digits: bool = False,
        strip_stopwords: bool = False,
        workers: int | None = None,
        on_error: Literal["fail", "skip"] = "fail",
        check_ids: bool = True,
        on_stage: StageCallback | None = None,
        memory_budget: int | str | None = None,
        work_dir: str | os.PathLike | None = None,
    ):
        params = dict(
            threshold=threshold,
            shingle=shingle,
            num_perm=num_perm,
            scheme=scheme,
            seed=seed,
            bands=bands,
            rows=rows,
            min_recall=min_recall,
            bucket_cap=bucket_cap,
            verify=verify,
            cluster=cluster,
            keep=keep,
            pairs=pairs,
            pairs_max_group=pairs_max_group,
            nfkc=nfkc,
            casefold=casefold,
            strip_html=strip_html,
            strip_punctuation=strip_punctuation,
            strip_digits=strip_digits,
            strip_stopwords=strip_stopwords,
        )
        self.config = config_from(config, params)
        check_choice("on_error", on_error, ("fail", "skip"))
        self.on_error = on_error
        self._skipped = 0
        tune_malloc()
        check_int("workers", workers, 1, none=True)
        self.workers = get_num_threads() if workers is None else workers
        self._exact = self.config.verify.mode == "exact"
        self._on_stage = on_stage
        self._ids: list[str] = []
        self._seen_ids: dict[str, int] | None = {} if check_ids else None
        self._auto_until = 0  # rows 0.._auto_until-1 have row-number ids not yet in _seen_ids
        self._fp_table = FingerprintTable()
        self._group = Growable(np.int64)
        self._urow = Growable(np.int64)
        self._ulen = Growable(np.int64)
        self._ufp = Growable(np.uint64)
        # Exact verification needs the signatures only for their LSH band keys: keep the keys
        # (8 bytes per band and text, a quarter of a 128-value signature), one array per band.
        self._bands_rows = self.lsh_params()
        # Past the memory budget, the keys and fingerprints move to a scratch folder (removed
        # at the end) and are read back in order: the same answers in bounded memory.
        self.memory_budget = (
            default_budget() if memory_budget is None else parse_size(memory_budget)
        )
        self._budget = Budget(self.memory_budget)
        self._scratch = Scratch(work_dir)
        self._sigs = Growable(np.uint32) if not self._exact else None
        self._keys = (
            [
                SpillingArray(np.uint64, f"keys-{b}", self._budget, self._scratch)
                for b in range(self._bands_rows[0])
            ]
            if self._exact
            else []
        )
        self._sh = SpillingArray(np.uint32, "shingles", self._budget, self._scratch)
        self._shend = Growable(np.int64)  # where each distinct text's fingerprints end in _sh
        self._n_unique = 0
        self._n_empty = 0
        self._text_bytes = 0
        self._shingles_total = 0
        self.timings: dict[str, float] = {}
        self.run_summary: RunSummary | None = None  # set by finish()
        self._finished = False
        self._t_first: float | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._pending: collections.deque[tuple[Future, Callable | None]] = collections.deque()
        self._sketch_error: BaseException | None = None

    def __len__(self) -> int:
        return len(self._ids)

    def _tick(self, stage: str, t0: float) -> float:
        t1 = time.perf_counter()
        self.timings[stage] = self.timings.get(stage, 0.0) + (t1 - t0)
        return t1

    def add(
        self,
        texts: TextColumn,
        ids: IdColumn | None = None,
        text_bytes: int | None = None,
        on_sketched: Callable[[TextSketches], Any] | None = None,
    ) -> None:
        """Add a chunk of documents: ``texts`` in any form :mod:`neardup._columns` takes (a
        list of ``str``, a pyarrow, pandas or polars column, ...), ``ids`` strings or integers
        (default: the documents' running row numbers, counting skipped ones).

        ``on_sketched``: called, on the calling thread, with the chunk's
        :class:`~neardup.pipeline.TextSketches` (its documents' band keys and shingle sets, as
        the online index stores them) once the chunk is sketched, during a later ``add`` or
        ``finish`` (exact verification only: with ``verify="estimate"`` no shingles are
        kept)."""
        if on_sketched is not None and not self._exact:
            raise ConfigError("on_sketched needs verify='exact': estimates keep no shingles")
        if self._finished:
            raise RuntimeError("finish() was already called on this Deduplicator")
        if self._t_first is None:
            self._t_first = time.perf_counter()
        base = len(self._ids) + self._skipped  # the row number of this chunk's first text
        texts, kept, n_in = text_column(texts, self.on_error, base)
        if ids is not None:
            ids = select(id_column(ids, n_in, base), kept)
        elif kept is not None or self._skipped:
            # row numbers that skip the missing texts: checked like ids of the caller's
            ids = [str(base + i) for i in (range(n_in) if kept is None else kept.tolist())]
        auto = ids is None
        self._skipped += n_in - len(texts)
        n = len(texts)
        if ids is None:
            ids = [str(base + i) for i in range(n)]
        arrow = is_arrow_strings(texts)
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
                if x in seen:
                    raise InputError(
                        f"duplicate id {x!r} at positions {seen[x]} and {base + i}",
                        field="ids",
                        reason=SkipReason.DUPLICATE_ID,
                    )
                seen[x] = base + i
        self._ids.extend(ids)
        if text_bytes is None:
            if arrow:
                from ..io.readers import arrow_text_bytes

                text_bytes = arrow_text_bytes(texts)
            else:
                text_bytes = sum(len(t) for t in texts)
        self._text_bytes += text_bytes
        cfg = self.config

        t0 = time.perf_counter()
        batch = normalize(texts, cfg.normalize)
        t0 = self._tick("normalize", t0)

        # exact duplicates: 128-bit fingerprint of the normalised text
        fp = fingerprint_chunk(batch, self._fp_table)
        del batch
        self._n_empty += fp.empty
        self._n_unique = len(self._fp_table)
        self._group.append(fp.group)
        self._urow.append(fp.docs + base)
        self._ulen.append(fp.lengths)
        assert fp.fp_hi is not None  # fingerprinted with a table
        self._ufp.append(fp.fp_hi)
        t0 = self._tick("fingerprint", t0)

        while len(self._pending) >= _SKETCH_QUEUE:
            self._wait_one()
        if self._executor is None:
            # the kernels' thread count is per calling thread: the worker gets ``workers``. (All
            # threads for the worker measured faster than leaving one core to the main thread,
            # which spends part of each chunk waiting for the worker.)
            self._executor = ThreadPoolExecutor(
                1,
                thread_name_prefix="neardup-sketch",
                initializer=_worker_init,
                initargs=(self.workers,),
            )
        future = self._executor.submit(self._sketch_chunk, fp, on_sketched is not None)
        self._pending.append((future, on_sketched))

    def _sketch_chunk(self, fp, sketches: bool) -> TextSketches | None:
        # chunks are sketched in order; once one failed, the ones queued after it are not
        # (their error is the first one's, raised by whoever waits for them)
        if self._sketch_error is not None:
            raise self._sketch_error
        try:
            group = fp.group
            self._sketch_one(fp)
            return self._sketches_of(group) if sketches else None
        except BaseException as e:
            self._sketch_error = e
            raise

    def _sketches_of(self, group: np.ndarray) -> TextSketches:
        """The band keys and sorted shingle sets of the distinct texts ``group`` (one per
        document, -1: empty), read from the stores (on the worker thread, the one that grows
        them)."""
        need, pos = np.unique(group[group >= 0], return_inverse=True)
        at = np.full(len(group), -1, np.int64)
        at[group >= 0] = pos
        keys = np.stack([store.read(need) for store in self._keys]) if len(need) else None
        ends = self._shend.read(need)
        starts = np.zeros(len(need), np.int64)
        has_prev = need > 0
        starts[has_prev] = self._shend.read(need[has_prev] - 1)
        return gather_sets(self._sh.read, starts, ends, at, keys, len(self._keys))

    def _sketch_one(self, fp) -> None:
        cfg = self.config
        t0 = time.perf_counter()
        # Exact verification: the kernel writes the shingle fingerprints and the band keys
        # straight into their stores, so their fresh pages are touched once, by all threads
        # (not copied afterwards by this one while the others wait).
        g = len(fp.docs)
        keys_out = [store.reserve(g) for store in self._keys] if self._exact else None
        sk = sketch_chunk(
            fp,
            cfg.shingle,
            cfg.sketch,
            self._bands_rows if self._exact else None,
            self._sh.reserve if self._exact else None,
            keys_out,
        )
        del fp
        m = len(sk.shingles)
        sizes, signatures = sk.sizes, sk.signatures
        # the stores' views: they must go before the stores can grow again
        del sk, keys_out
        self._shingles_total += m
        if self._exact:
            before = len(self._sh)
            self._sh.commit(m)
            for store in self._keys:
                store.commit(g)
            self._shend.append(np.cumsum(sizes) + before)
            if self._budget.over():
                self._spill()
        else:
            assert self._sigs is not None and signatures is not None  # estimates keep them
            self._sigs.append(signatures)
        self._tick("shingle+sketch", t0)

    def _spill(self) -> None:
        """Move the keys and fingerprints to the scratch folder (on the worker thread, between
        chunks: no view of the stores is out)."""
        t0 = time.perf_counter()
        held = self._budget.used
        self._sh.spill()
        for store in self._keys:
            store.spill()
        self._budget.spilled = True
        log.info(
            "past the memory budget (%.0f MB): %.0f MB of keys and fingerprints moved to %s",
            self.memory_budget / 1e6,
            held / 1e6,
            self._scratch.path,
        )
        self._tick("spill", t0)

    def _wait(self) -> None:
        """Wait for every chunk in flight; re-raise the first error, if any."""
        while self._pending:
            self._wait_one()

    def _wait_one(self) -> None:
        """Wait for the oldest chunk in flight; re-raise its error, if any; hand its sketches
        to whoever asked for them."""
        future, on_sketched = self._pending.popleft()
        sketches = future.result()
        if on_sketched is not None:
            on_sketched(sketches)

    def close(self) -> None:
        """Stop the worker thread (``finish`` does this; call it when abandoning a run)."""
        try:
            self._wait()
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None
            if not self._finished:  # abandoned: what was spilled goes (finish removes it later)
                self._scratch.close()

    def __enter__(self) -> Deduplicator:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:  # failing: nobody takes the sketches of the chunks in flight
            self._pending = collections.deque((f, None) for f, _ in self._pending)
        self.close()

    def lsh_params(self) -> tuple[int, int]:
        """The (bands, rows) this run uses: given, or chosen for the threshold."""
        return lsh_params(self.config.lsh, self.config.sketch.num_perm)

    def _stage(self, name: str, done: int, total: int) -> None:
        if self._on_stage is not None:
            self._on_stage(name, done, total)

    def finish(self, keep: KeepStream | None = None) -> Result:
        """Run LSH, verification and clustering over everything added; return the result.

        ``keep`` (optional, :class:`neardup.io.writers.KeepStream` of one flag per document):
        told which documents are kept (``result.keep``) in document order as they are decided,
        verification and clustering going through the candidate pairs in the order of their
        groups' first documents, so that the corpus can be written meanwhile. The result is the
        same with it and without."""
        before = get_num_threads()
        set_num_threads(self.workers)
        try:
            result = self._finish(keep)
        except BaseException as e:
            if keep is not None:
                keep.fail(e)
            raise
        finally:
            set_num_threads(before)
            self._scratch.close()
        s = result.summary
        log.info(
            "%d documents: %d distinct texts, %d clusters of near-duplicates, %d removed (%.3f s)",
            s["documents"],
            s["distinct_texts"],
            s["clusters"],
            s["removed"],
            s["seconds"],
        )
        if self._skipped:
            log.warning(
                "%d documents with a missing text were left out (on_error='skip')", self._skipped
            )
        return result

    def _finish(self, keep_out: KeepStream | None = None) -> Result:
        if self._finished:
            raise RuntimeError("finish() was already called on this Deduplicator")
        self._finished = True
        self.close()
        cfg = self.config
        n = len(self._ids)
        U = self._n_unique
        k = cfg.sketch.num_perm

        t0 = time.perf_counter()
        group = self._group.take()
        urow = self._urow.take()
        ulen = self._ulen.take()
        ufp = self._ufp.take()
        if self._exact:
            keys = [store.take() for store in self._keys]
            sh_off = np.zeros(U + 1, np.int64)
            sh_off[1:] = self._shend.take()
            sh_hashes = self._sh.take()
        else:
            assert self._sigs is not None  # estimates keep the signatures
            sigs = self._sigs.take().reshape(U, k)
        t0 = self._tick("collect", t0)

        bands, rows = self._bands_rows
        self._stage("candidates", 0, 1)
        spilled = [s for s in keys if isinstance(s, SpilledArray)] if self._exact else []
        if spilled:  # one band at a time, read back from the scratch folder
            left, right, cstats = find_candidates_by_band(
                U, bands, rows, cfg.lsh.bucket_cap, lambda b: spilled[b].load(), self.workers
            )
            del keys, spilled
        elif self._exact:
            in_memory = [k for k in keys if isinstance(k, np.ndarray)]  # all of them
            del keys
            left, right, cstats = find_candidates(
                U, bands, rows, cfg.lsh.bucket_cap, keys=in_memory
            )
            del in_memory
        else:
            left, right, cstats = find_candidates(
                U, bands, rows, cfg.lsh.bucket_cap, signatures=sigs
            )
        self._stage("candidates", 1, 1)
        t0 = self._tick("lsh", t0)

        self._stage("verify", 0, len(left))
        measure: ShingleBags | ShingleRanges | Signatures
        if not self._exact:
            measure = Signatures(sigs)
        elif isinstance(sh_hashes, SpilledArray):  # the pairs' texts read back a batch at a time
            measure = ShingleRanges(sh_hashes.ranges, sh_off, _batch_bytes(self.memory_budget))
        else:
            measure = ShingleBags(sh_hashes, sh_off)
        rank = preference_rank(U, cfg.cluster.keep, ulen, ufp)
        rep_u = None
        if keep_out is not None and len(left):
            sim, rep_u = decide_in_order(
                U,
                n,
                left,
                right,
                cfg.lsh.threshold,
                cfg.cluster.method,
                rank,
                group,
                urow,
                measure,
                keep_out,
            )
            ok = sim >= np.float32(cfg.lsh.threshold)
            left, right, sim = left[ok], right[ok], sim[ok]
        else:
            left, right, sim = verify_pairs(measure, left, right, cfg.lsh.threshold)
        self._stage("verify", cstats.candidates, cstats.candidates)
        t0 = self._tick("verify", t0)

        self._stage("cluster", 0, 1)
        if rep_u is None:
            rep_u, sim_u = cluster_texts(U, left, right, sim, cfg.cluster.method, rank, measure)
        else:
            sim_u = member_similarities(U, rep_u, left, right, sim, measure)
        representative, similarity, labels = documents_of_texts(group, urow, rep_u, sim_u)
        if keep_out is not None:
            keep_out.decide(kept_rows(keep_out.decided, n, group, urow, rep_u))

        # every pair known to be a duplicate: the verified edges between distinct texts and
        # the pairs their exact groups imply (see neardup.expand)
        pairs, pcounts = expand_pairs(
            group, U, left, right, sim, measure.method, cfg.pairs.mode, cfg.pairs.max_group
        )
        self._stage("cluster", 1, 1)
        self._tick("cluster", t0)

        sizes = np.bincount(labels)
        summary = self._summary(n, U, bands, rows, cstats, pcounts, sizes, representative)
        return Result(self._ids, labels, representative, similarity, pairs, summary)

    def _summary(self, n, U, bands, rows, cstats, pcounts, sizes, representative) -> dict[str, Any]:
        wall = time.perf_counter() - (self._t_first or time.perf_counter())
        self.run_summary = RunSummary(
            config=self.config,
            bands=bands,
            rows=rows,
            candidates=cstats,
            documents=n,
            text_bytes=self._text_bytes,
            empty_documents=self._n_empty,
            distinct_texts=U,
            kept=int(np.count_nonzero(representative == np.arange(n))),
            clusters=int(np.count_nonzero(sizes >= 2)),
            largest_cluster=int(sizes.max(initial=0)),
            duplicate_pairs=pcounts.rows,
            verified_pairs=pcounts.verified,
            pairs=pcounts,
            shingles=self._shingles_total,
            timings=dict(self.timings),
            workers=self.workers,
            seconds=wall,
            memory={
                "budget_bytes": self.memory_budget,
                "spilled": self._budget.spilled,
                "scratch_bytes": self._scratch.peak_bytes,
                "work_dir": str(self._scratch.parent or tempfile.gettempdir()),
            },
        )
        if self._skipped:
            self.run_summary.skipped = {
                "total": self._skipped,
                "by_reason": {str(SkipReason.NON_STRING_FIELD): self._skipped},
            }
        return self.run_summary.to_dict()


def _batch_bytes(budget: int) -> int:
    """The fingerprints one batch of spilled candidate pairs reads: a quarter of the budget,
    between 16 and 256 MB (two batches are held at a time: one measured, the next read)."""
    return min(max(budget // 4, 16 << 20), 256 << 20)


def dedup(
    texts: TextColumn,
    ids: IdColumn | None = None,
    *,
    threshold: float = 0.8,
    shingle: str | ShingleConfig = "word:5",
    num_perm: int = 128,
    scheme: Literal["oph", "classic"] = "oph",
    seed: int = 1,
    bands: int | None = None,
    rows: int | None = None,
    min_recall: float = 0.99,
    bucket_cap: int = 500,
    verify: Literal["exact", "estimate"] = "exact",
    cluster: Literal["components", "strict"] = "components",
    keep: Literal["first", "longest"] = "first",
    pairs: Literal["all", "edges"] = "all",
    pairs_max_group: int = 1000,
    nfkc: bool = True,
    casefold: bool = True,
    strip_html: bool = False,
    strip_punctuation: bool = False,
    strip_digits: bool = False,
    strip_stopwords: bool = False,
    config: DedupConfig | None = None,
    chunk_size: int = 10_000,
    workers: int | None = None,
    on_error: Literal["fail", "skip"] = "fail",
    text_field: str | None = None,
    id_field: str | None = None,
    progress: StageCallback | None = None,
    memory_budget: int | str | None = None,
    work_dir: str | os.PathLike | None = None,
) -> Result:
    """Find near-duplicate clusters among ``texts`` and return a :class:`Result`
    (``result.to_pandas()``, ``to_polars()``, ``to_arrow()``: the clusters or the pairs as a
    table).

    ``texts``: a list of ``str``, or a column of a pyarrow table, a pandas or polars data
    frame, a Hugging Face dataset (read in place where it is Arrow); ``ids``: strings or
    integers (default: row numbers). Or ``texts`` is the whole table (a pandas or polars
    DataFrame, a pyarrow Table, a Hugging Face Dataset): ``text_field`` names its column of
    texts (default "text") and ``id_field`` its ids (default: the column "id" where there is
    one, else row numbers).

    Parameters (their defaults are those of :class:`DedupConfig`):

    - ``threshold``: the similarity (Jaccard of the shingle sets) from which two documents are
      near-duplicates, in (0, 1];
    - ``shingle``: ``"word:K"`` or ``"char:K"`` (``":OFFSET"`` to take every OFFSET-th);
    - ``num_perm``, ``scheme`` ("oph" one-permutation MinHash or "classic"), ``seed``: the
      MinHash signatures;
    - ``bands``, ``rows``: the LSH banding (default: chosen from ``threshold`` so that a pair
      at the threshold is found with probability ``min_recall``); ``bucket_cap``: the largest
      LSH bucket paired in full;
    - ``verify``: "exact" Jaccard of every candidate pair, or the signature "estimate";
    - ``cluster``: "components" or "strict" (no chains); ``keep``: the representative, "first"
      or "longest";
    - ``pairs``: "all" (default) for every pair known to be a duplicate in ``result.pairs``:
      the verified ones and those implied by exact-duplicate groups (``Pairs.implied``), or
      "edges" for the compared ones only; ``pairs_max_group``: exact groups of more documents
      are written as edges only, and ``summary["pairs"]["left_out"]`` counts what they leave
      out (:mod:`neardup.expand`);
    - ``nfkc``, ``casefold``, ``strip_html``, ``strip_punctuation``, ``strip_digits``,
      ``strip_stopwords``: normalisation;
    - ``config``: a whole :class:`DedupConfig` instead of the keywords above;
    - ``chunk_size``: documents per chunk through the pipeline (results do not depend on it);
      ``workers``: threads for the compiled stages (default: all processors);
    - ``on_error``: "fail" on a missing text (``None``, a null), or "skip" to leave such
      documents out (``result.summary["skipped"]`` counts them; the ids of the others stay
      their own, or their row numbers in ``texts``);
    - ``progress``: called as ``progress(stage, done, total)``: stage "read" after each chunk
      of documents is read in (done and total in documents), then "candidates", "verify"
      (done and total in candidate pairs) and "cluster", each at its start and its end;
    - ``memory_budget`` (bytes, or a size such as ``"4G"``; default a quarter of the machine's
      memory): past it, the band keys and shingle fingerprints move to a scratch folder in
      ``work_dir`` (default: the system's temporary folder), removed at the end; the result is
      the same (``result.summary["memory"]`` says whether it was used).
    """
    check_int("chunk_size", chunk_size, 1)
    if progress is not None and not callable(progress):
        raise ConfigError(f"progress={progress!r} is invalid: a function of (stage, done, total)")
    params = dict(
        threshold=threshold,
        shingle=shingle,
        num_perm=num_perm,
        scheme=scheme,
        seed=seed,
        bands=bands,
        rows=rows,
        min_recall=min_recall,
        bucket_cap=bucket_cap,
        verify=verify,
        cluster=cluster,
        keep=keep,
        pairs=pairs,
        pairs_max_group=pairs_max_group,
        nfkc=nfkc,
        casefold=casefold,
        strip_html=strip_html,
        strip_punctuation=strip_punctuation,
        strip_digits=strip_digits,
        strip_stopwords=strip_stopwords,
    )
    texts, ids = table_columns(texts, ids, text_field, id_field)
    d = Deduplicator(
        config_from(config, params),
        workers=workers,
        on_error=on_error,
        on_stage=progress,
        memory_budget=memory_budget,
        work_dir=work_dir,
    )
    arrow = to_arrow(texts)
    if arrow is not None:
        texts = arrow
    elif isinstance(texts, (str, bytes)):
        raise ConfigError(f"texts must be a sequence of strings, not one {type(texts).__name__}")
    elif isinstance(texts, np.ndarray):
        texts = texts.tolist()
    elif not isinstance(texts, (list, tuple)):
        texts = list(texts)
    if ids is not None:
        ids = id_column(ids, len(texts))
    for s in range(0, len(texts), chunk_size):
        d.add(texts[s : s + chunk_size], None if ids is None else ids[s : s + chunk_size])
        if progress is not None:
            progress("read", min(s + chunk_size, len(texts)), len(texts))
    if len(texts) == 0:
        d.add([], [] if ids is not None else None)
    return d.finish()
