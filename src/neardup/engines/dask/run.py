"""A Dask run: options checked, a cluster started or reached, a scratch folder made, and the
steps run in order over one :class:`~neardup.engines.dask.context.RunContext`."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ...config import DedupConfig
from ...errors import ConfigError, OutputError
from ...io import (
    OutputOptions,
    ReadOptions,
    id_options,
    prepare_outdir,
    record_stream,
    total_input_bytes,
    write_json_atomic,
)
from ...lsh import lsh_params
from ...pipeline import NoProgress, Progress, RunSummary
from ...validate import check_int
from .candidates import candidates_step
from .cluster import cluster_step
from .context import RunContext
from .exact import exact_step
from .ids import ids_step
from .paths import absolute, check_workers, worker_os_error
from .plan import expand, plan
from .read import read_step
from .scratch import missing_dirs, remove_tree
from .verify import verify_step
from .write import write_step

#: The steps of a run, in order: (progress stage, step, progress total: "partitions" or a count).


STEPS: list[tuple[str, Callable[[RunContext], None], str | int | None]] = [
    ("read", read_step, "partitions"),
    ("ids", ids_step, None),
    ("exact", exact_step, "partitions"),
    ("candidates", candidates_step, "partitions"),
    ("verify", verify_step, "partitions"),
    ("cluster", cluster_step, 1),
    ("write", write_step, "partitions"),
]


def run_steps(ctx: RunContext) -> dict[str, Any]:
    """Plan the partitions, run :data:`STEPS` (timed, with progress), write ``summary.json``."""
    cfg = ctx.config
    ctx.bands, ctx.rows = lsh_params(cfg.lsh, cfg.sketch.num_perm)
    ctx.workers = len(ctx.client.scheduler_info()["workers"])
    ctx.specs = plan(ctx.paths, ctx.read.format, ctx.partition_docs, ctx.workers)
    ctx.total_bytes = total_input_bytes(ctx.paths)
    for stage, step, total in STEPS:
        ctx.progress.start(stage, ctx.P if isinstance(total, str) else total)  # "partitions"
        t0 = time.perf_counter()
        step(ctx)
        ctx.timings[stage] = ctx.timings.get(stage, 0.0) + time.perf_counter() - t0
        ctx.progress.finish(stage)
    n = ctx.n
    ctx.outputs["summary"] = str(ctx.outdir / "summary.json")
    parts = ctx.parts
    summary = RunSummary(
        config=cfg,
        bands=ctx.bands,
        rows=ctx.rows,
        candidates=ctx.cstats,
        engine="dask",
        documents=n,
        text_bytes=sum(d.ginfo["text_bytes"] for d in parts),
        empty_documents=ctx.empty,
        distinct_texts=ctx.distinct,
        kept=ctx.kept,
        clusters=ctx.clusters,
        largest_cluster=ctx.largest if n else 0,
        duplicate_pairs=ctx.pair_counts.rows,
        verified_pairs=ctx.verified_count,
        pairs=ctx.pair_counts,
        shingles=sum(d.ginfo["shingles"] for d in parts),
        timings=ctx.timings,
        workers=ctx.workers,
        partitions=ctx.P,
        seconds=time.perf_counter() - ctx.t_start,
        inputs=[str(p) for p in ctx.paths],
        input_bytes=ctx.total_bytes,
        skipped=ctx.report.to_dict(),
        outputs=ctx.outputs,
        ingest_seconds=ctx.timings.get("read", 0.0),
        ids=ctx.ids,
    ).to_dict()
    write_json_atomic(ctx.outdir / "summary.json", summary)
    return summary


def _run(
    client,
    paths: list[Path],
    outdir: Path,
    config: DedupConfig,
    read_opts: ReadOptions,
    out_opts: OutputOptions,
    partition_docs: int,
    progress: Progress,
    threads: int | None,
    work_dir: Path | None,
    partitioned_tables: bool,
) -> dict[str, Any]:
    """Make the scratch folder, run the steps, and remove the folder (and, after a failure,
    the output folders this run created), cancelling pending tasks on failure."""
    tok = uuid.uuid4().hex[:8]
    base = outdir if work_dir is None else work_dir
    # the folders this run creates (the output folder's and the work folder's), removed again
    # if it fails, unless something else is in them
    created = [missing_dirs(outdir)] + ([] if work_dir is None else [missing_dirs(base)])
    work = base / f".neardup-work-{tok}"
    ok = False
    try:
        prepare_outdir(outdir)
        if work_dir is not None:
            try:
                base.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise OutputError(f"{base}: cannot create the work directory: {e.strerror}") from e
        try:
            work.mkdir()
        except OSError as e:
            raise OutputError(f"{work}: cannot create the scratch folder: {e.strerror}") from e
        ctx = RunContext(
            client=client,
            paths=paths,
            outdir=outdir,
            config=config,
            read=read_opts,
            output=out_opts,
            partition_docs=partition_docs,
            partitioned_tables=partitioned_tables,
            progress=progress,
            threads=threads,
            tok=tok,
            work=work,
        )
        try:
            # before any work: every worker sees the inputs and can write where it must
            check_workers(
                client,
                paths,
                [(outdir, "the output folder")]
                + ([] if work_dir is None else [(work_dir, "the work folder")]),
            )
            summary = run_steps(ctx)
        except BaseException as e:
            ctx.stop()  # nothing of this run writes any more when its folders are removed
            if isinstance(e, OSError):  # a task's, on a worker (the client's are OutputError)
                raise worker_os_error(e, paths) from e
            raise
        finally:
            ctx.futures.clear()
        ok = True
        return summary
    finally:
        remove_tree(work)
        if not ok:
            for chain in created:
                for d in reversed(chain):
                    try:
                        d.rmdir()
                    except FileNotFoundError:
                        continue
                    except OSError:
                        break


def dedup_dask(
    paths: Sequence[str | os.PathLike],
    outdir: str | os.PathLike,
    *,
    config: DedupConfig | None = None,
    text_fields: Sequence[str] = ("text",),
    id_field: str | None = None,
    input_format: str | None = None,
    encoding: str = "utf-8",
    on_error: str = "fail",
    output_format: str = "parquet",
    write_corpus: bool = True,
    scheduler: str | None = None,
    n_workers: int = 2,
    partition_docs: int = 200_000,
    work_dir: str | os.PathLike | None = None,
    partitioned_tables: bool = False,
    progress: Any = None,
) -> dict[str, Any]:
    """:func:`neardup.jobs.dedup.dedup_files` on a Dask cluster; returns the summary (with ``engine``,
    ``workers`` and ``partitions``) and writes ``clusters``, ``pairs``, ``summary.json`` and,
    with ``write_corpus``, the deduplicated corpus in ``outdir`` as the local engine writes
    them (``deduplicated/NAME`` per input, in its format with all its columns).

    ``id_field``: as for :func:`~neardup.jobs.dedup.dedup_files` (``None``: the field ``id``
    when every record of every partition has one, else row numbers; ``""``: row numbers).

    ``scheduler``: the address of a running scheduler (``tcp://host:port``); without it a
    ``LocalCluster`` of ``n_workers`` single-threaded processes is started and closed. Inputs,
    ``outdir`` and ``work_dir`` must be visible to every worker at the same path: relative
    paths are made absolute here (and named so in messages and the summary), and every worker
    checks that it sees them before any work is sent (:class:`~neardup.errors.InputError` or
    :class:`~neardup.errors.OutputError` naming the path and the worker otherwise). An
    :class:`OSError` of a task (a file of the run gone from under a worker) is raised as one of
    those too. ``partition_docs`` (default 200,000: ~400 MB of 2 KB texts, a worker's
    working set ~0.6 GB): about how many records of a large uncompressed JSONL file (byte
    ranges, as many as a multiple of the workers) or of a Parquet file of more than 1.5 x that
    many rows (runs of whole row groups) go into one partition (other inputs are one partition
    each: a file, a folder of text files, each shard of a folder of Parquet shards; a
    directory given with ``input_format`` "jsonl" stands for its JSONL files). Connected
    components (``cluster`` "components") and the ``pairs`` table are made on the workers: no
    verified pair passes through the client. With ``cluster`` "strict" (greedy, sequential)
    the client gathers the verified pairs and clusters them.

    Each partition's arrays and the shuffles' pieces are kept as files in a scratch folder
    ``.neardup-work-XXXXXXXX`` under ``work_dir`` (default: ``outdir``), which must also be
    visible to every worker; the folder is removed at the end, also when the job fails.

    ``partitioned_tables``: write ``clusters/`` and ``pairs/`` as folders of Parquet parts, one
    per partition in row order (read them as one table with ``pyarrow.parquet.read_table``),
    instead of one file each; then no output row passes through the client. The deduplicated
    output of each input file is then a folder ``deduplicated/NAME/`` of parts
    ``part-NNNNN.EXT`` in the input's format, one per partition of it, in order: concatenated
    (Parquet: read as one table), the local engine's ``deduplicated/NAME`` (a folder of text
    files is written as the local engine writes it).
    """
    read_opts = ReadOptions(
        text_fields=text_fields,
        format=input_format,
        encoding=encoding,
        on_error=on_error,
        **id_options(id_field),
    )
    out_opts = OutputOptions(output_format, write_corpus)
    if partitioned_tables and output_format != "parquet":
        raise ConfigError(
            "partitioned tables are written as Parquet parts: use "
            "output_format='parquet' (the default)"
        )
    check_int("n_workers", n_workers, 1)
    check_int("partition_docs", partition_docs, 1)
    config = config or DedupConfig()
    if config.verify.mode != "exact":
        raise ConfigError(
            "verify='estimate' is not supported by the dask engine yet: use "
            "verify='exact' or the local engine"
        )
    # workers resolve relative paths in their own working folders: absolute ones from here on
    plist = expand([absolute(p) for p in paths], input_format)
    outdir = absolute(outdir)
    work_dir = None if work_dir is None else absolute(work_dir)
    # the same checks of the options and paths as the local engine, raised here at once
    record_stream(plist, read_opts)

    from distributed import Client, LocalCluster

    cluster = None
    if scheduler is None:
        import dask

        threads = max(1, (os.cpu_count() or 1) // n_workers)
        with dask.config.set({"distributed.scheduler.allowed-failures": 5}):
            cluster = LocalCluster(
                n_workers=n_workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
                # the workers do no linear algebra: no spinning BLAS threads
                env={"OPENBLAS_NUM_THREADS": "1"},
            )
        client = Client(cluster)
    else:
        threads = None
        client = Client(scheduler)
    try:
        return _run(
            client,
            plist,
            outdir,
            config,
            read_opts,
            out_opts,
            partition_docs,
            progress or NoProgress(),
            threads,
            work_dir,
            partitioned_tables,
        )
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
