"""The local engine's file job (``neardup dedup``): :func:`dedup_files` reads the inputs through
:mod:`neardup.io`, runs a :class:`~neardup.engines.local.Deduplicator` over them, writes the
outputs atomically (the tables, the deduplicated corpus, meanwhile, and ``summary.json``: a
:class:`~neardup.pipeline.RunSummary`) and optionally an online index; :func:`write_result` writes
a result's tables.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._log import get_logger
from ..config import DedupConfig
from ..engines.local import Deduplicator
from ..errors import InputError, OutputError, SkipReason
from ..pipeline import NoProgress, Progress
from ..result import Result

if TYPE_CHECKING:
    from ..io import OutputOptions, ReadOptions

__all__ = ["dedup_files", "write_result"]

# the local engine's logger, as before the file job had a module of its own
log = get_logger("neardup.engines.local")

# Chunks ahead of the stage after them: the file reader's (read and parsed, not yet normalised).
# (The sketching worker's queue is :data:`neardup.engines.local._SKETCH_QUEUE`.)
_READ_AHEAD = 3


class _Prefetch:
    """Iterates ``items`` on a thread of its own, ``depth`` items ahead of the caller.

    The reader (the JSONL scanner, the newline scan) then works while the calling thread
    normalises the previous chunk and the pipeline's worker sketches the one before: the three
    mostly run outside the GIL, so a 2-core machine is kept busy. An error of the reader is
    raised in the caller, in order; :meth:`close` (or leaving a ``with`` block) stops the
    reader at its next item."""

    _END = object()

    def __init__(self, items, depth: int = 1):
        import queue
        import threading

        self._items = items
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="neardup-read", daemon=True)
        self._thread.start()

    def _put(self, item) -> bool:
        import queue

        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            for item in self._items:
                if not self._put((True, item)):
                    return
            self._put((True, self._END))
        except BaseException as e:  # noqa: BLE001  (handed to the caller, who raises it)
            self._put((False, e))
        finally:
            close = getattr(self._items, "close", None)
            if close is not None and self._stop.is_set():
                close()

    def __iter__(self):
        while True:
            ok, item = self._queue.get()
            if not ok:
                raise item
            if item is self._END:
                return
            yield item

    def close(self) -> None:
        self._stop.set()
        self._thread.join()

    def __enter__(self) -> _Prefetch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _new_index(path: Path, config: DedupConfig):
    """An SQLite index under a temporary name beside ``path`` (which must not exist yet)."""
    from ..index import Index

    if path.exists():
        raise OutputError(
            f"{path}: exists; --save-index writes a new index (add to an existing "
            "one with `neardup index add`)"
        )
    if not path.parent.is_dir():
        raise OutputError(f"{path}: the folder {path.parent} does not exist")
    from ..index.sqlite import remove_index_files

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    remove_index_files(tmp)
    return Index(tmp, config=config), tmp


def _scratch_parent(outdir: Path, work_dir: str | os.PathLike | None) -> Path:
    """Where the local engine's scratch folder goes: ``work_dir``, else the output directory or
    the nearest folder above it that exists (nothing is created before the inputs are read)."""
    if work_dir is not None:
        return Path(work_dir)
    p = outdir
    while not p.is_dir() and p != p.parent:
        p = p.parent
    return p


def write_result(result: Result, outdir: Path, fmt: str = "parquet") -> dict[str, str]:
    """Write ``clusters`` and ``pairs`` tables of a result into ``outdir``; return their paths.
    Each table is made and written a part of rows at a time (:func:`write_table_parts`), so
    that a large run's write holds one part's columns, not the whole table's."""
    from ..io.writers import write_table_parts

    n, m = len(result.ids), len(result.pairs)

    def clusters_part(lo: int, hi: int, id_column=None) -> dict:
        cols = result.columns("clusters", id_column, part=(lo, hi))
        del cols["keep"]  # the file's columns, as they have always been
        return cols

    if fmt == "jsonl":
        clusters_path = write_table_parts(outdir / "clusters", n, clusters_part, fmt)
        pairs_path = write_table_parts(
            outdir / "pairs", m, lambda lo, hi: result.columns("pairs", part=(lo, hi)), fmt
        )
        return {"clusters": str(clusters_path), "pairs": str(pairs_path)}
    # Arrow tables: the ids made into one string array, which the other id columns index
    # (a million ids: 0.25 s of building strings instead of 0.5 s), and the pairs written on
    # a thread of their own while the clusters are (Arrow's writer works outside the GIL)
    from ..io.writers import arrow_array, take_strings

    ids = arrow_array(result.ids)

    def id_column(rows):
        if rows is None:
            return ids
        if isinstance(rows, slice):
            return ids[rows]  # Arrow's slice: no copy
        taken = take_strings(ids, rows)  # None: not a plain string array
        return taken if taken is not None else arrow_array(ids.to_numpy(False)[rows])

    def pairs_part(lo: int, hi: int) -> dict:
        return result.columns("pairs", id_column, part=(lo, hi))

    with ThreadPoolExecutor(1, thread_name_prefix="neardup-tables") as pool:
        pairs_done = pool.submit(write_table_parts, outdir / "pairs", m, pairs_part, fmt)
        clusters: Path | None = None
        try:
            clusters = write_table_parts(
                outdir / "clusters", n, lambda lo, hi: clusters_part(lo, hi, id_column), fmt
            )
            pairs = pairs_done.result()
        except BaseException:
            # whichever table was written is this call's to remove: the caller knows of none
            if pairs_done.exception() is None:
                Path(pairs_done.result()).unlink(missing_ok=True)
            if clusters is not None:
                clusters.unlink(missing_ok=True)
            raise
    return {"clusters": str(clusters), "pairs": str(pairs)}


def dedup_files(
    paths: Sequence[str | os.PathLike],
    outdir: str | os.PathLike,
    *,
    config: DedupConfig | None = None,
    text_fields: Sequence[str] = ("text",),
    id_field: str | None = None,
    input_format: str | None = None,
    encoding: str = "utf-8",
    on_error: str = "fail",
    chunk_size: int = 10_000,
    output_format: str = "parquet",
    write_corpus: bool = True,
    progress: Progress | None = None,
    save_index: str | os.PathLike | None = None,
    memory_budget: int | str | None = None,
    work_dir: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Deduplicate the documents of ``paths`` and write clusters, pairs, the deduplicated corpus
    and ``summary.json`` into ``outdir``. Returns the summary.

    ``memory_budget`` (bytes, or a size such as ``"4G"``; default a quarter of the machine's
    memory): past it, the run's band keys and shingle fingerprints move to a scratch folder in
    ``work_dir`` (default: the output directory, or the nearest folder above it that exists)
    and are read back in order; the outputs are the same. The folder is removed at the end,
    also when the run fails or is interrupted; the summary's ``memory`` says whether it was
    used and how large it grew.

    ``id_field``: the field holding the ids; ``None`` (default): the field ``id`` when every
    record has one (a string or an integer; its values must then be distinct), else row
    numbers; ``""``: row numbers. A folder's files are named by their paths whatever it says.
    The summary's ``ids`` says which were used (:meth:`neardup.io.IdInfo.to_dict`).

    ``save_index``: also build an online :class:`~neardup.Index` (SQLite) of every document, with
    the run's parameters, at this new path. It is built under a temporary name beside it and
    renamed only when the whole run succeeded.
    """
    # neardup.io (orjson, the readers and writers) is loaded by the file jobs only, so that
    # ``import neardup`` and the command line's help stay light
    from ..io import OutputOptions, ReadOptions, SkipReport, id_options

    read_opts = ReadOptions(
        text_fields=text_fields,
        format=input_format,
        encoding=encoding,
        on_error=on_error,
        chunk_size=chunk_size,
        **id_options(id_field),
    )
    out_opts = OutputOptions(output_format, write_corpus)
    config = config or DedupConfig()
    progress = progress or NoProgress()
    outdir = Path(outdir)
    t_start = time.perf_counter()
    inputs = [Path(p) for p in paths]
    report = SkipReport()

    from ..io.streams import Spool

    index = index_tmp = None
    spool = Spool(outdir, input_format)  # standard input and pipes, kept for the second read
    try:
        inputs = spool.paths(inputs)
        if save_index is not None:
            index, index_tmp = _new_index(Path(save_index), config)
        summary = _run(
            inputs,
            outdir,
            config,
            report,
            read_opts,
            out_opts,
            progress,
            t_start,
            index,
            index_tmp,
            save_index,
            {"memory_budget": memory_budget, "work_dir": _scratch_parent(outdir, work_dir)},
            spool.display,
        )
    except BaseException:
        if index is not None and index_tmp is not None:
            index.close()
            from ..index.sqlite import remove_index_files

            remove_index_files(index_tmp)
        spool.close(failed=True)
        raise
    spool.close()
    return summary


def _run(
    paths,
    outdir,
    config,
    report,
    read_opts: ReadOptions,
    out_opts: OutputOptions,
    progress,
    t_start,
    index,
    index_tmp,
    save_index,
    engine: dict[str, Any],
    display=str,
) -> dict[str, Any]:
    from ..io import (
        IdInfo,
        prepare_outdir,
        read_documents,
        total_input_bytes,
    )

    def on_stage(stage: str, done: int, total: int) -> None:
        progress.update(stage, done, total)

    total_bytes = total_input_bytes(paths)
    progress.start("read", total_bytes)
    t0 = time.perf_counter()
    done_bytes = 0
    read_time = 0.0
    locations = []  # where each record came from, to copy kept JSONL lines unparsed
    spans = []  # and the bytes of its line, to copy them without reading the file again
    index_time = 0.0

    def index_add(ids, texts):
        def add(sketches):
            nonlocal index_time
            t_ix = time.perf_counter()
            index.add_sketched(ids, texts, sketches)
            index_time += time.perf_counter() - t_ix

        return add

    with Deduplicator(config, check_ids=False, on_stage=on_stage, **engine) as dd:
        t_read = time.perf_counter()
        ids = IdInfo()
        reader = read_documents(paths, report=report, options=read_opts, arrow=True, ids=ids)
        with _Prefetch(reader, _READ_AHEAD) as chunks:
            for chunk in chunks:
                read_time += time.perf_counter() - t_read
                if index is not None and ids.fallback_row:
                    raise InputError(
                        f"no field {ids.field!r} at {ids.missing}, though the "
                        f"{ids.fallback_row:,} records before it have one: the index being "
                        f"built cannot change their ids to row numbers; give --id-field "
                        f"{ids.field} (every record must then have it) or --id-field '' (row "
                        "numbers)",
                        field=ids.field,
                        reason=SkipReason.MISSING_FIELD,
                    )
                if index is None:
                    dd.add(chunk.texts, chunk.ids, text_bytes=chunk.text_bytes)
                else:
                    # the index stores the band keys and shingle sets the run makes: each text
                    # is sketched once (what it could not take, estimates, it makes itself)
                    texts = chunk.texts
                    if not isinstance(texts, list):
                        texts = texts.to_pylist()
                    if config.verify.mode == "exact":
                        dd.add(
                            chunk.texts,
                            chunk.ids,
                            text_bytes=chunk.text_bytes,
                            on_sketched=index_add(chunk.ids, texts),
                        )
                    else:
                        dd.add(chunk.texts, chunk.ids, text_bytes=chunk.text_bytes)
                        t_ix = time.perf_counter()
                        index.add_many(zip(chunk.ids, texts), batch_size=max(len(chunk), 1))
                        index_time += time.perf_counter() - t_ix
                locations.append(chunk.locations)
                spans.append(chunk.spans)
                done_bytes += chunk.progress_bytes
                docs = {"documents": len(dd)} if getattr(progress, "counts_documents", 0) else {}
                progress.update("read", done_bytes, total_bytes, **docs)
                t_read = time.perf_counter()
        read_time += time.perf_counter() - t_read
        # a detected id field that some record lacks: row numbers for the records before it
        ids.fix(dd._ids, np.concatenate(locations) if locations else [])
        progress.finish("read")
        t_ingest = time.perf_counter() - t0
        # Everything was read and checked: only now is anything written. The outputs of a run
        # are all there, with summary.json written last, or none of them: a failure or an
        # interrupt removes what this run had written (each file is itself written under a
        # temporary name). The deduplicated corpus is copied while verification and clustering
        # decide which documents are kept, in document order.
        prepare_outdir(outdir)
        (outdir / "summary.json").unlink(missing_ok=True)  # an earlier run's: no longer true
        corpus = (
            _CorpusCopy(paths, outdir, read_opts, locations, spans, len(dd))
            if out_opts.write_corpus
            else None
        )
        try:
            for stage in ("candidates", "verify", "cluster"):
                progress.start(stage, None)
            result = dd.finish(None if corpus is None else corpus.keep)
        except BaseException as e:
            if corpus is not None:
                corpus.abandon(e)
            raise
        for stage in ("candidates", "verify", "cluster"):
            progress.finish(stage)

    progress.start("write", None)
    t0 = time.perf_counter()
    committed: list[Path] = []
    try:
        outputs = _write_outputs(result, outdir, out_opts, corpus, committed)
        if index is not None:
            index.close()
            from ..index.sqlite import move_index_files

            move_index_files(index_tmp, save_index)
            committed.append(Path(save_index))
            outputs["index"] = str(save_index)
        t_write = time.perf_counter() - t0
        progress.finish("write")
        summary = _final_summary(
            dd,
            report,
            [display(p) for p in paths],
            outdir,
            outputs,
            total_bytes,
            t_start,
            t_ingest,
            read_time,
            t_write,
            index_time,
            index is not None,
            ids.to_dict(),
        )
    except BaseException as e:
        _remove(committed)
        if committed:
            log.warning(
                "the run failed while writing; removed what it had written: %s",
                ", ".join(str(p) for p in committed),
            )
        if isinstance(e, OutputError):
            raise OutputError(f"{e} (no output of this run was left in {outdir})") from e
        raise
    return summary


class _CorpusCopy:
    """The deduplicated corpus, written on a thread of its own from the keep flags of
    :attr:`keep` (a :class:`~neardup.io.writers.KeepStream`) as they are decided."""

    def __init__(self, paths, outdir: Path, read_opts, locations: list, spans: list, n: int):
        from ..io.writers import KeepStream

        self.keep = KeepStream(n)
        self.folder = outdir / "deduplicated"
        self._folder_existed = self.folder.exists()
        locs = np.concatenate(locations) if locations else np.zeros(0, np.int64)
        spans_all = np.concatenate(spans) if spans and all(x is not None for x in spans) else None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="neardup-write")
        self._future = self._pool.submit(self._copy, paths, locs, spans_all, read_opts)

    def _copy(self, paths, locations, spans, read_opts) -> list[Path]:
        from ..io import deduplicated_names, write_deduplicated

        # An earlier run's corpus that this one replaces is removed first, while verification
        # runs, rather than when the new one is renamed onto it: freeing the blocks of 1.6 GB
        # took 0.26-0.33 s where the file system discards them (mount option ``discard``).
        for name, fmt in deduplicated_names(paths, read_opts):
            old = self.folder / name
            if fmt != "textdir" and old.is_file() and not old.is_symlink():
                with contextlib.suppress(OSError):
                    old.unlink()
        return write_deduplicated(
            paths, self.keep, self.folder, locations=locations, spans=spans, options=read_opts
        )

    def failed(self) -> bool:
        return self._future.done() and self._future.exception() is not None

    def wait(self) -> tuple[list[Path], BaseException | None]:
        """Wait for the copy: the paths written, or the error that stopped it."""
        try:
            error = self._future.exception()
            return ([] if error is not None else self._future.result()), error
        finally:
            self._pool.shutdown(wait=True)

    def abandon(self, error: BaseException) -> None:
        """Tell the copy that no more flags come (``error`` stopped the run), wait for it to
        stop (it then leaves nothing of its own) and remove the folder it made."""
        self.keep.fail(error)
        self.wait()
        self.remove_folder()

    def remove_folder(self) -> None:
        """Remove the output's folder if this run made it and it is empty."""
        if not self._folder_existed:
            with contextlib.suppress(OSError):
                self.folder.rmdir()


def _write_outputs(
    result, outdir, out_opts, corpus: _CorpusCopy | None, committed: list[Path]
) -> dict[str, Any]:
    """Write the tables while the corpus is being copied (both mostly outside the GIL: Arrow's
    writer, the system's copy); add each path to ``committed`` as soon as it is in place."""
    outputs: dict[str, Any] = {}
    if corpus is None:
        outputs.update(write_result(result, outdir, out_opts.format))
        committed.extend(Path(p) for p in outputs.values())
        return outputs
    table_error: BaseException | None = None
    written: list[Path] = []
    try:
        if not corpus.failed():
            outputs.update(write_result(result, outdir, out_opts.format))
            committed.extend(Path(p) for p in outputs.values())
    except BaseException as e:  # noqa: BLE001  (raised once the corpus is done)
        table_error = e
    finally:
        # what the corpus wrote is this run's too, whatever happened here meanwhile
        written, corpus_error = corpus.wait()
        committed.extend(Path(p) for p in written)
    if corpus_error is not None:  # if the corpus failed, its error is the one raised
        corpus.remove_folder()
        raise corpus_error
    if table_error is not None:
        raise table_error
    outputs["deduplicated"] = [str(p) for p in written]
    return outputs


def _remove(paths: list[Path]) -> None:
    import shutil

    for p in paths:
        try:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink(missing_ok=True)
        except OSError:
            pass
    for p in {p.parent for p in paths}:  # an output folder this run made and left empty
        if p.name == "deduplicated":
            with contextlib.suppress(OSError):
                p.rmdir()


def _final_summary(
    dd,
    report,
    inputs,
    outdir,
    outputs,
    total_bytes,
    t_start,
    t_ingest,
    read_time,
    t_write,
    index_time,
    with_index,
    ids,
) -> dict[str, Any]:
    from ..io import write_json_atomic

    rs = dd.run_summary
    rs.timings = {"read": read_time, **rs.timings, "write": t_write}
    if with_index:
        rs.timings["index"] = index_time
    outputs["summary"] = str(outdir / "summary.json")
    rs.seconds = time.perf_counter() - t_start
    rs.inputs = list(inputs)
    rs.input_bytes = total_bytes
    rs.skipped = report.to_dict()
    rs.outputs = outputs
    rs.ingest_seconds = t_ingest
    rs.ids = ids
    summary = rs.to_dict()
    if report.total:
        log.warning("%d records were skipped: %s", report.total, report.to_dict()["by_reason"])
    write_json_atomic(outdir / "summary.json", summary)
    log.info("outputs written to %s", outdir)
    return summary
