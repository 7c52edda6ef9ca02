"""``neardup dedup`` as a library call: files in, an output directory out.

Reading is validated completely before anything is written: with ``on_error="fail"`` the first
bad record stops the run and no output is created; with ``on_error="skip"`` bad records are
counted by reason in the summary. Every output file is written under a temporary name and renamed.
"""

from __future__ import annotations

import os
import time
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .config import DedupConfig
from .errors import OutputError
from .io import (
    OutputOptions,
    ReadOptions,
    SkipReport,
    prepare_outdir,
    read_documents,
    total_input_bytes,
    write_deduplicated,
    write_json_atomic,
    write_table,
)
from .pipeline import Deduplicator
from .result import METHOD_NAMES, Result


class Progress(Protocol):
    """What the job reports progress to (the CLI passes a rich progress display)."""

    def start(self, stage: str, total: int | None) -> None: ...
    def update(self, stage: str, done: int, total: int | None = None) -> None: ...
    def finish(self, stage: str) -> None: ...


class _NoProgress:
    def start(self, stage: str, total: int | None) -> None:
        pass

    def update(self, stage: str, done: int, total: int | None = None) -> None:
        pass

    def finish(self, stage: str) -> None:
        pass


def _new_index(path: Path, config: DedupConfig):
    """An SQLite index under a temporary name beside ``path`` (which must not exist yet)."""
    from .index import Index

    if path.exists():
        raise OutputError(f"{path}: exists; --save-index writes a new index (add to an existing "
                          "one with `neardup index add`)")
    if not path.parent.is_dir():
        raise OutputError(f"{path}: the folder {path.parent} does not exist")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{tmp}{suffix}").unlink(missing_ok=True)
    return Index(tmp, config=config), tmp


def write_result(result: Result, outdir: Path, fmt: str = "parquet") -> dict[str, str]:
    """Write ``clusters`` and ``pairs`` tables of a result into ``outdir``; return their paths."""
    ids = np.asarray(result.ids, dtype=object)
    clusters = write_table(outdir / "clusters", {
        "id": ids,
        "cluster": result.labels,
        "representative": ids[result.representative],
        "similarity": result.similarity,
    }, fmt)
    p = result.pairs
    pairs = write_table(outdir / "pairs", {
        "id_a": ids[p.left],
        "id_b": ids[p.right],
        "similarity": p.similarity,
        "method": np.asarray(METHOD_NAMES, dtype=object)[p.method],
    }, fmt)
    return {"clusters": str(clusters), "pairs": str(pairs)}


def dedup_files(paths: Sequence[str | os.PathLike], outdir: str | os.PathLike, *,
                config: DedupConfig | None = None, text_fields: Sequence[str] = ("text",),
                id_field: str | None = None, input_format: str | None = None,
                encoding: str = "utf-8", on_error: str = "fail", chunk_size: int = 10_000,
                output_format: str = "parquet", write_corpus: bool = True,
                progress: Progress | None = None,
                save_index: str | os.PathLike | None = None) -> dict[str, Any]:
    """Deduplicate the documents of ``paths`` and write clusters, pairs, the deduplicated corpus
    and ``summary.json`` into ``outdir``. Returns the summary.

    ``save_index``: also build an online :class:`~neardup.Index` (SQLite) of every document, with
    the run's parameters, at this new path. It is built under a temporary name beside it and
    renamed only when the whole run succeeded.
    """
    read_opts = ReadOptions(text_fields=text_fields, id_field=id_field, format=input_format,
                            encoding=encoding, on_error=on_error, chunk_size=chunk_size)
    out_opts = OutputOptions(output_format, write_corpus)
    config = config or DedupConfig()
    progress = progress or _NoProgress()
    outdir = Path(outdir)
    t_start = time.perf_counter()
    paths = [Path(p) for p in paths]
    report = SkipReport()

    index = index_tmp = None
    if save_index is not None:
        index, index_tmp = _new_index(Path(save_index), config)
    try:
        return _run(paths, outdir, config, report, read_opts, out_opts, progress, t_start,
                    index, index_tmp, save_index)
    except BaseException:
        if index is not None:
            index.close()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{index_tmp}{suffix}").unlink(missing_ok=True)
        raise


def _run(paths, outdir, config, report, read_opts: ReadOptions, out_opts: OutputOptions,
         progress, t_start, index, index_tmp, save_index) -> dict[str, Any]:
    def on_stage(stage: str, done: int, total: int) -> None:
        progress.update(stage, done, total)

    total_bytes = total_input_bytes(paths)
    progress.start("read", total_bytes)
    t0 = time.perf_counter()
    done_bytes = 0
    read_time = 0.0
    locations = array("q")  # where each record came from, to copy kept JSONL lines unparsed
    index_time = 0.0
    with Deduplicator(config, check_ids=False, on_stage=on_stage) as dd:
        t_read = time.perf_counter()
        for chunk in read_documents(paths, report=report, options=read_opts):
            read_time += time.perf_counter() - t_read
            dd.add(chunk.texts, chunk.ids, text_bytes=chunk.text_bytes)
            if index is not None:
                t_ix = time.perf_counter()
                index.add_many(zip(chunk.ids, chunk.texts), batch_size=max(len(chunk), 1))
                index_time += time.perf_counter() - t_ix
            locations.extend(chunk.locations)
            done_bytes += chunk.progress_bytes
            progress.update("read", done_bytes, total_bytes)
            t_read = time.perf_counter()
        read_time += time.perf_counter() - t_read
        progress.finish("read")
        t_ingest = time.perf_counter() - t0
        for stage in ("candidates", "verify", "cluster"):
            progress.start(stage, None)
        result = dd.finish()
        for stage in ("candidates", "verify", "cluster"):
            progress.finish(stage)

    # Everything was read and checked: only now is anything written.
    progress.start("write", None)
    t0 = time.perf_counter()
    prepare_outdir(outdir)
    outputs = write_result(result, outdir, out_opts.format)
    if out_opts.write_corpus:
        written = write_deduplicated(paths, result.keep, outdir / "deduplicated",
                                     locations=np.frombuffer(locations, np.int64),
                                     options=read_opts)
        outputs["deduplicated"] = [str(p) for p in written]
    if index is not None:
        index.close()
        os.replace(index_tmp, save_index)
        outputs["index"] = str(save_index)
    t_write = time.perf_counter() - t0
    progress.finish("write")

    summary = dict(result.summary)
    wall = time.perf_counter() - t_start
    summary["inputs"] = [str(p) for p in paths]
    summary["input_bytes"] = total_bytes
    summary["skipped"] = report.to_dict()
    summary["outputs"] = outputs
    summary["timings_s"] = {"read": round(read_time, 4), **summary["timings_s"],
                            "write": round(t_write, 4)}
    if index is not None:
        summary["timings_s"]["index"] = round(index_time, 4)
    summary["seconds"] = round(wall, 4)
    summary["documents_per_s"] = round(summary["documents"] / wall, 1) if wall > 0 else None
    summary["mb_per_s"] = round(summary["text_bytes"] / 1e6 / wall, 2) if wall > 0 else None
    summary["ingest_seconds"] = round(t_ingest, 4)
    outputs["summary"] = str(outdir / "summary.json")
    write_json_atomic(outdir / "summary.json", summary)
    return summary
