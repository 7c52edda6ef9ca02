"""The local engine's algorithm: batch deduplication in this process, over chunks of documents.

``read -> normalise -> fingerprint (exact groups) -> shingle -> sketch`` runs per chunk as
documents arrive (:meth:`Deduplicator.add`); ``LSH -> verify -> cluster`` runs once over all
documents (:meth:`Deduplicator.finish`), which can tell which documents are kept in document
order as it decides them, so that :func:`dedup_files` copies the deduplicated corpus meanwhile.
Only one copy of each exact-duplicate group is shingled and sketched. What is kept between chunks is the index: for exact verification, the LSH band keys
of each distinct text (8 bytes per band) and its shingle hashes as 32-bit fingerprints (compared,
as they are, for the pairs that LSH proposes); for estimated verification, its signature
instead. Never the texts themselves.

The file job on top of it (``neardup dedup``: :func:`dedup_files`, :func:`write_result`) is in
:mod:`neardup.engines.local_job`; both names are importable from here too (loaded on first use).
"""

from __future__ import annotations

import collections
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
from ..cluster import (
    cluster_representatives,
    connected_components,
    labels_from_reps,
    preference_rank,
)
from ..config import DedupConfig, ShingleConfig, config_from
from ..errors import ConfigError, InputError, SkipReason
from ..exact import FingerprintTable
from ..expand import expand_pairs
from ..lsh import CandidateStats, candidate_pairs, candidates_from_keys, lsh_params
from ..result import JACCARD, MINHASH, Result
from ..stages import RunSummary, fingerprint_chunk, sketch_chunk
from ..text.normalize import is_arrow_strings, normalize
from ..validate import check_choice, check_int
from ..verify import estimate_pairs, unsorted_overlap_pairs

if TYPE_CHECKING:
    from ..io.writers import KeepStream

__all__ = ["Deduplicator", "dedup"]

StageCallback = Callable[[str, int, int], None]  # (stage, done, total)

log = get_logger(__name__)

# Chunks ahead of the sketching worker (normalised and fingerprinted, not yet sketched). With
# one chunk ahead the sketching worker, the slowest stage, waited 0.65 s of a 1M run for its
# next chunk; with three (some MB each), 0.05 s. (The file reader's read-ahead is
# :data:`neardup.engines.local_job._READ_AHEAD`.)
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
        self._sigs = Growable(np.uint32) if not self._exact else None
        self._keys = (
            [Growable(np.uint64) for _ in range(self._bands_rows[0])] if self._exact else None
        )
        self._sh = Growable(np.uint32)
        self._shsize = Growable(np.int64)
        self._n_unique = 0
        self._n_empty = 0
        self._text_bytes = 0
        self._shingles_total = 0
        self.timings: dict[str, float] = {}
        self.run_summary: RunSummary | None = None  # set by finish()
        self._finished = False
        self._t_first: float | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._pending: collections.deque[Future] = collections.deque()
        self._sketch_error: BaseException | None = None

    def __len__(self) -> int:
        return len(self._ids)

    def _tick(self, stage: str, t0: float) -> float:
        t1 = time.perf_counter()
        self.timings[stage] = self.timings.get(stage, 0.0) + (t1 - t0)
        return t1

    def add(
        self, texts: TextColumn, ids: IdColumn | None = None, text_bytes: int | None = None
    ) -> None:
        """Add a chunk of documents: ``texts`` in any form :mod:`neardup._columns` takes (a
        list of ``str``, a pyarrow, pandas or polars column, ...), ``ids`` strings or integers
        (default: the documents' running row numbers, counting skipped ones)."""
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
        if auto:
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
        self._pending.append(self._executor.submit(self._sketch_chunk, fp))

    def _sketch_chunk(self, fp) -> None:
        # chunks are sketched in order; once one failed, the ones queued after it are not
        # (their error is the first one's, raised by whoever waits for them)
        if self._sketch_error is not None:
            raise self._sketch_error
        try:
            self._sketch_one(fp)
        except BaseException as e:
            self._sketch_error = e
            raise

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
        # the stores' views: they must go before the stores can grow again
        sk.shingles = sk.keys = keys_out = None
        self._shingles_total += m
        if self._exact:
            self._sh.commit(m)
            for store in self._keys:
                store.commit(g)
            self._shsize.append(sk.sizes)
        else:
            self._sigs.append(sk.signatures)
        self._tick("shingle+sketch", t0)

    def _wait(self) -> None:
        """Wait for every chunk in flight; re-raise the first error, if any."""
        while self._pending:
            self._wait_one()

    def _wait_one(self) -> None:
        """Wait for the oldest chunk in flight; re-raise its error, if any."""
        self._pending.popleft().result()

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

            def measure(a, b):
                return unsorted_overlap_pairs(sh_hashes, sh_off, a, b)

            method = JACCARD
        else:

            def measure(a, b):
                return estimate_pairs(sigs, a, b)

            method = MINHASH
        rank = preference_rank(U, cfg.cluster.keep, ulen, ufp)
        rep_u = None
        if keep_out is not None and len(left):
            sim, rep_u = _decide_in_order(
                U, n, left, right, thr, cfg.cluster.method, rank, group, urow, measure, keep_out
            )
        else:
            sim = measure(left, right)
        ok = sim >= thr
        left, right, sim = left[ok], right[ok], sim[ok]
        self._stage("verify", cstats.candidates, cstats.candidates)
        t0 = self._tick("verify", t0)

        self._stage("cluster", 0, 1)
        if rep_u is None:
            rep_u = cluster_representatives(U, left, right, cfg.cluster.method, rank)
        members = np.flatnonzero(rep_u != np.arange(U))
        sim_u = np.ones(U, np.float32)
        if len(members):
            # most members are verified neighbours of their representative: their similarity
            # is known; the others' is computed
            reps = rep_u[members]
            known, found = _pair_lookup(U, left, right, sim, members, reps)
            todo = ~found
            if todo.any():
                known[todo] = measure(members[todo], reps[todo])
            sim_u[members] = known

        # expand from distinct texts to every document
        rows_all = np.arange(n, dtype=np.int64)
        representative = rows_all.copy()
        similarity = np.ones(n, np.float32)
        has = group >= 0
        g = group[has]
        representative[has] = urow[rep_u[g]]
        similarity[has] = sim_u[g]
        labels = labels_from_reps(representative)
        if keep_out is not None:
            keep_out.decide(_kept_rows(keep_out.decided, n, group, urow, rep_u))

        # every pair known to be a duplicate: the verified edges between distinct texts and
        # the pairs their exact groups imply (see neardup.expand)
        pairs, pcounts = expand_pairs(
            group, U, left, right, sim, method, cfg.pairs.mode, cfg.pairs.max_group
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
        )
        if self._skipped:
            self.run_summary.skipped = {
                "total": self._skipped,
                "by_reason": {str(SkipReason.NON_STRING_FIELD): self._skipped},
            }
        return self.run_summary.to_dict()


#: where verification and clustering are cut into batches (fractions of the candidate pairs)
#: when their decisions are wanted in document order (:func:`_decide_in_order`): small first
#: batches, so that the copy of the corpus, which waits for the first decisions, starts soon
_DECISION_CUTS = (1 / 32, 1 / 16, 1 / 8, 2 / 8, 3 / 8, 4 / 8, 5 / 8, 6 / 8, 7 / 8)


def _kept_rows(
    a: int, b: int, group: np.ndarray, urow: np.ndarray, rep_u: np.ndarray
) -> np.ndarray:
    """Whether each document of the rows ``[a, b)`` is kept: an empty one always, another if it
    is the first of its text and its text represents itself or its cluster."""
    g = group[a:b]
    keep = g < 0
    has = ~keep
    keep[has] = urow[rep_u[g[has]]] == np.arange(a, b, dtype=np.int64)[has]
    return keep


def _decide_in_order(
    U: int,
    n: int,
    left: np.ndarray,
    right: np.ndarray,
    thr,
    method: str,
    rank: np.ndarray,
    group: np.ndarray,
    urow: np.ndarray,
    measure,
    keep_out: KeepStream,
) -> tuple[np.ndarray, np.ndarray]:
    """Verify the candidate pairs and cluster the distinct texts group by group of candidates
    (connected by candidate pairs), in the order of their groups' first texts, and tell
    ``keep_out`` which documents are kept as soon as every text before them is decided.
    Returns the pairs' similarities (in their order) and each text's representative, which are
    those of verifying and clustering all pairs at once: a text's cluster lies within its group
    of candidates, where the clustering depends only on the verified pairs and the ranks."""
    comp = connected_components(U, left, right)  # each text's group: its first text
    first = comp[left]
    order = np.argsort(first, kind="stable")
    first = first[order]
    m = len(order)
    cuts = {0, m}
    for f in _DECISION_CUTS:  # never splitting a group
        at = min(int(f * m), m - 1)
        cuts.add(int(np.searchsorted(first, first[at], side="left")))
    cuts = sorted(cuts)
    sim = np.empty(m, np.float32)
    rep_u = np.arange(U, dtype=np.int64)
    decided = 0  # documents told
    for a, b in zip(cuts[:-1], cuts[1:]):
        idx = order[a:b]
        la, rb = left[idx], right[idx]
        s = measure(la, rb)
        sim[idx] = s
        ok = s >= thr
        if ok.any():
            texts, pos = np.unique(np.concatenate((la[ok], rb[ok])), return_inverse=True)
            k = int(ok.sum())
            reps = cluster_representatives(len(texts), pos[:k], pos[k:], method, rank[texts])
            rep_u[texts] = texts[reps]
        # every text before the next group's first is decided, and so is every document
        # before that text's first document
        upto = n if b == m else int(urow[first[b]])
        if upto > decided:
            keep_out.decide(_kept_rows(decided, upto, group, urow, rep_u))
            decided = upto
    return sim, rep_u


def _pair_lookup(
    n: int, left: np.ndarray, right: np.ndarray, values: np.ndarray, a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The ``values`` of the pairs ``(a[i], b[i])`` among the pairs ``(left, right)`` of rows
    ``0..n-1``, in either order: ``(found values, or 0, found mask)``."""
    out = np.zeros(len(a), values.dtype)
    if len(left) == 0 or len(a) == 0:
        return out, np.zeros(len(a), bool)
    n = np.int64(n)
    keys = np.minimum(left, right) * n + np.maximum(left, right)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    want = np.minimum(a, b) * n + np.maximum(a, b)
    at = np.minimum(np.searchsorted(keys, want), len(keys) - 1)
    found = keys[at] == want
    out[found] = values[order[at[found]]]
    return out, found


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
      (done and total in candidate pairs) and "cluster", each at its start and its end.
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
        config_from(config, params), workers=workers, on_error=on_error, on_stage=progress
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
