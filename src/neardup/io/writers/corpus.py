"""The deduplicated corpus: the kept records of each input written in its own format
(:func:`write_deduplicated`, :func:`write_deduplicated_part`), their output names
(:func:`deduplicated_names`) and the concatenation of written parts (:func:`concat_files`)."""

from __future__ import annotations

import codecs
import csv
import io
import os
import shutil
from collections.abc import Iterable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import orjson

from ...errors import ConfigError, OutputError
from ..options import ReadOptions
from ..readers import FilePart, SkipReport, _RecordStream, _Source, record_stream, split_compression
from .copying import _copy_jsonl, _copy_ranges
from .keep import _Keep
from .staged import Staged, _write_atomic


def _output_names(sources: Sequence[_Source]) -> list[str]:
    """The name of each source's output in the output folder: the input's file name (less a
    ``.gz``/``.zst``), a folder of text files' name, or for the shards of a folder of Parquet
    files, the folder's name and the shard's path in it (the same layout). A name that two
    inputs would share is prefixed with the input's number (``2-``)."""
    tops: list[str] = []  # per source: the name in the output folder of its input
    rests: list[str | None] = []  # per source: a shard's path in its folder
    inputs: list[int] = []  # per source: its input's number (a folder of shards is one input)
    for src in sources:
        assert src.path is not None  # the inputs written are named files and folders
        if src.folder is not None and src.rel is not None:
            prev = sources[len(inputs) - 1] if inputs else None
            first = (  # the first shard of a folder given (the same folder may come twice)
                prev is None or prev.folder != src.folder or prev.rel is None or prev.rel >= src.rel
            )
            tops.append(src.folder.name or src.folder.resolve().name or "input")
            rests.append(src.rel)
            inputs.append(len(set(inputs)) if first else inputs[-1])
            continue
        if src.fmt == "textdir":
            tops.append(src.path.name or src.path.resolve().name or "input")
        elif src.fmt == "parquet":
            tops.append(src.path.name)
        else:
            tops.append(split_compression(src.path.name)[0])
        rests.append(None)
        inputs.append(len(set(inputs)))
    counts: dict[str, int] = {}
    for k in sorted(set(inputs)):
        name = tops[inputs.index(k)]
        counts[name] = counts.get(name, 0) + 1
    used = {name for name in tops if counts[name] == 1}
    named: dict[int, str] = {}  # input number -> its (prefixed) name
    out = []
    for name, rest, k in zip(tops, rests, inputs, strict=True):
        if k not in named:
            if counts[name] > 1:
                prefix = f"{k + 1}-"
                while prefix + name in used:
                    prefix = f"{k + 1}-{prefix}"
                name = prefix + name
                used.add(name)
            named[k] = name
        out.append(named[k] if rest is None else f"{named[k]}/{rest}")
    return out


def _write_jsonl(stream: _RecordStream, src: _Source, staged: Staged, keep: _Keep) -> None:
    f = staged.file
    assert f is not None
    for rec in stream.records(src):
        if keep(rec.index):
            f.write(rec.raw)


def _write_json_array(stream: _RecordStream, src: _Source, staged: Staged, keep: _Keep) -> None:
    """The kept items of a JSON array, as a JSON array (one item per line, each written
    again from its parsed value: same data, not the same bytes)."""
    f = staged.file
    assert f is not None
    sep = b"[\n"
    for rec in stream.records(src):
        if keep(rec.index):
            f.write(sep)
            f.write(orjson.dumps(rec.raw))
            sep = b",\n"
    f.write(b"[]\n" if sep == b"[\n" else b"\n]\n")


def _write_csv(
    stream: _RecordStream, src: _Source, staged: Staged, keep: _Keep, encoding: str
) -> None:
    assert staged.file is not None
    if codecs.lookup(encoding).name == "utf-8-sig":
        encoding = "utf-8"
    text = io.TextIOWrapper(staged.file, encoding=encoding, newline="", write_through=False)
    writer = None

    def start() -> Any:
        header = stream.header
        _, names, ending = header
        w = csv.writer(text, delimiter="\t" if src.fmt == "tsv" else ",", lineterminator=ending)
        w.writerow(names)
        return w

    try:
        for rec in stream.records(src):
            if writer is None:
                writer = start()
            if keep(rec.index):
                writer.writerow(rec.raw)
        if writer is None and stream.header is not None:
            writer = start()
        text.flush()
    finally:
        text.detach()  # leave the binary file to Staged


def _write_parquet(stream: _RecordStream, src: _Source, staged: Staged, keep: _Keep) -> bool:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pw = None
    batch = None
    mask: list[bool] = []

    def flush() -> None:
        if batch is not None and any(mask):
            pw.write_batch(batch.filter(pa.array(mask, type=pa.bool_())))

    try:
        for rec in stream.records(src):
            if pw is None:
                pw = pq.ParquetWriter(staged.file, stream.header[1])
            b, i = rec.raw
            if b is not batch:
                flush()
                batch = b
                mask = [False] * b.num_rows
            if keep(rec.index):
                mask[i] = True
        if pw is None and stream.header is not None:
            pw = pq.ParquetWriter(staged.file, stream.header[1])
        flush()
    finally:
        if pw is not None:
            pw.close()
    return pw is not None


def _write_textdir(stream: _RecordStream, src: _Source, staged: Staged, keep: _Keep) -> None:
    assert src.files is not None
    made: set[Path] = set()
    for rec in stream.records(src):
        if not keep(rec.index):
            continue
        rel = src.files[rec.line - 1][0]
        dest = staged.tmp / rel
        if dest.parent not in made:
            if staged.parents:
                dest.parent.mkdir(parents=True, exist_ok=True)
            else:  # inside the staged folder only: never bring back a removed one
                cur = staged.tmp
                for name in dest.parent.relative_to(staged.tmp).parts:
                    cur = cur / name
                    with suppress(FileExistsError):
                        cur.mkdir()
            made.add(dest.parent)
        shutil.copyfile(rec.raw, dest)


def _write_source(
    stream: _RecordStream,
    src: _Source,
    staged: Staged,
    keep: _Keep,
    encoding: str,
    lines: np.ndarray | None = None,
    spans: np.ndarray | None = None,
) -> bool:
    """Write the kept records of one source of ``stream`` to ``staged``, in its format; with
    ``lines`` (JSONL: the line of each of its records, and optionally their ``spans``) the kept
    lines are copied without parsing them. ``False``: the source held nothing readable (a
    Parquet file), and nothing was written."""
    if src.fmt == "jsonl" and lines is not None:
        _copy_jsonl(stream, src, staged, keep, lines, spans)  # waits for the flags itself
        return True
    keep.ready()
    if src.fmt == "jsonl":
        _write_jsonl(stream, src, staged, keep)
    elif src.fmt == "json":
        _write_json_array(stream, src, staged, keep)
    elif src.fmt in ("csv", "tsv"):
        _write_csv(stream, src, staged, keep, encoding)
    elif src.fmt == "parquet":
        return _write_parquet(stream, src, staged, keep)
    else:
        _write_textdir(stream, src, staged, keep)
    return True


def write_deduplicated(
    paths: str | os.PathLike | Iterable[str | os.PathLike],
    keep: Any,
    outdir: str | os.PathLike,
    *,
    text_fields: Sequence[str] | str = ("text",),
    id_field: str | None = None,
    on_error: str = "fail",
    encoding: str = "utf-8",
    fmt: str | None = None,
    chunk_size: int = 10_000,
    locations: Any = None,
    spans: Any = None,
    options: ReadOptions | None = None,
) -> list[Path]:
    """Write the records of ``paths`` whose ``keep`` flag is true into ``outdir``, each input in
    its own format; return the output paths (in input order).

    ``keep`` is a bool array indexed by the global record number of :func:`read_documents`
    called with the same inputs and options (records skipped with ``on_error="skip"`` have no
    number and are never written). Per input:

    - JSONL: the kept lines, byte for byte (decompressed), in ``outdir/<name without .gz/.zst>``;
    - CSV/TSV: the header and the kept rows (same delimiter, the header's line ending, the
      input's encoding), rewritten with :func:`csv.writer`, in ``outdir/<name without .gz/.zst>``;
    - Parquet: the kept rows with the same Arrow schema in ``outdir/<name>``;
    - a directory: the kept files copied (as they are, compressed or not) to
      ``outdir/<directory name>/<relative path>``.

    ``locations`` (optional): the ``DocChunk.locations`` of every record of that reading, in
    order; with them JSONL inputs are copied line by line without being parsed again.
    ``spans`` (optional, with ``locations``): their ``DocChunk.spans``; with them the kept lines
    of an uncompressed JSONL file are copied by byte ranges, without reading the file again.
    ``options``: the reading's :class:`ReadOptions` (instead of the options one by one).

    When two inputs would get the same output name, each of those is prefixed with its 1-based
    position in ``paths`` (``"1-a.jsonl"``, ``"3-a.jsonl"``). All outputs are written under
    temporary names and renamed only after every input has been read and the number of records
    has matched ``len(keep)`` (otherwise :class:`ConfigError`), so a failed call leaves no
    partial output. An input that yields nothing readable (a corrupt Parquet file, skipped)
    gets no output.
    """
    flags = _Keep(keep)
    if locations is not None:
        locations = np.asarray(locations, dtype=np.int64)
        if locations.shape != (flags.n,):
            raise ConfigError(
                f"locations has shape {locations.shape} but keep has {flags.n} "
                "flags: both must come from the same reading"
            )
        if spans is not None:
            spans = np.asarray(spans, dtype=np.int64)
            if spans.shape != (flags.n, 2):
                raise ConfigError(
                    f"spans has shape {spans.shape} but keep has {flags.n} "
                    "flags: it must be (records, 2), from the same reading"
                )
    if options is None:
        options = ReadOptions(
            text_fields=text_fields,
            id_field=id_field,
            format=fmt,
            encoding=encoding,
            on_error=on_error,
            chunk_size=chunk_size,
        )
    stream = record_stream(paths, options, SkipReport(), all_columns=True)
    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():
        raise OutputError(f"{outdir}: exists and is not a directory")
    names = _output_names(stream.sources)
    staged_all: list[Staged] = []
    try:
        for src, name in zip(stream.sources, names, strict=True):
            staged = Staged(outdir / name, directory=src.fmt == "textdir")
            staged_all.append(staged)
            lines = src_spans = None
            if src.fmt == "jsonl" and locations is not None:
                here = (locations >> 40) == src.index
                lines = locations[here] & ((1 << 40) - 1)
                src_spans = None if spans is None else spans[here]
            if not _write_source(stream, src, staged, flags, options.encoding, lines, src_spans):
                staged_all.pop().discard()
                continue
            staged.close()
        if stream.count != flags.n:
            raise ConfigError(
                f"keep has {flags.n} flags but the inputs hold {stream.count} "
                "records: keep must come from reading the same inputs with the "
                "same options"
            )
        written = []
        while staged_all:
            written.append(staged_all[0].commit())
            staged_all.pop(0)
        return written
    except BaseException as e:
        for staged in staged_all:
            staged.discard()
        if isinstance(e, OSError):
            raise OutputError(
                f"{outdir}: cannot write the deduplicated corpus: {e.strerror or e}"
            ) from e
        raise


def deduplicated_names(
    paths: str | os.PathLike | Iterable[str | os.PathLike], options: ReadOptions | None = None
) -> list[tuple[str, str]]:
    """The name that :func:`write_deduplicated` gives the output of each input of ``paths``
    (read with ``options``) in its folder, and the input's format ("jsonl", "csv", "tsv",
    "parquet" or "textdir"), in input order."""
    sources = record_stream(paths, options or ReadOptions()).sources
    return list(zip(_output_names(sources), [src.fmt for src in sources], strict=True))


def write_deduplicated_part(
    path: str | os.PathLike,
    keep: Any,
    dest: str | os.PathLike,
    *,
    options: ReadOptions,
    part: FilePart | None = None,
    lines: Any = None,
    parents: bool = True,
) -> Path | None:
    """Write the records of one input (or of one ``part`` of it, as :func:`record_stream` reads
    it) whose ``keep`` flag is true to ``dest``, as :func:`write_deduplicated` writes an input:
    in its format and with all its columns (a folder of text files: a folder); atomically.
    Returns ``dest``, or ``None`` when the input holds nothing readable (nothing is written).

    ``keep``: one flag per valid record of the input or part, in reading order (with
    ``options``). ``lines`` (optional, JSONL): each of those records' line number in the file
    (:attr:`Record.line`); with them the kept lines are copied without being parsed again,
    reading only the part's bytes. The parts of a file written with :class:`FilePart` ranges
    that cover it, concatenated in order, are what :func:`write_deduplicated` writes for the
    whole file (Parquet: the same table). ``parents=False``: ``dest``'s folder must exist
    (see :class:`Staged`)."""
    flags = _Keep(keep)
    if lines is not None:
        lines = np.asarray(lines, dtype=np.int64)
        if lines.shape != (flags.n,):
            raise ConfigError(
                f"lines has shape {lines.shape} but keep has {flags.n} flags: "
                "both must come from the same reading"
            )
    stream = record_stream([path], options, SkipReport(), part=part, all_columns=True)
    if len(stream.sources) != 1:  # a folder of Parquet shards: an output per shard
        raise ConfigError(
            f"{path} is a folder of {len(stream.sources)} Parquet shards: write the "
            "deduplicated records of each shard apart (neardup.io.readers.parquet_shards)"
        )
    src = stream.sources[0]
    dest = Path(dest)
    staged = Staged(dest, directory=src.fmt == "textdir", parents=parents)
    try:
        if not _write_source(
            stream, src, staged, flags, options.encoding, lines if src.fmt == "jsonl" else None
        ):
            staged.discard()
            return None
        if stream.count != flags.n:
            raise ConfigError(
                f"keep has {flags.n} flags but {src.name} holds {stream.count} "
                "records: keep must come from reading it with the same options"
            )
        return staged.commit()
    except BaseException as e:
        staged.discard()
        if isinstance(e, OSError):
            raise OutputError(
                f"{dest}: cannot write the deduplicated records: {e.strerror or e}"
            ) from e
        raise


def concat_files(
    parts: Sequence[str | os.PathLike], dest: str | os.PathLike, fmt: str, parents: bool = True
) -> Path:
    """Write the concatenation of ``parts`` (files of one format, as
    :func:`write_deduplicated_part` writes the parts of a file) to ``dest``, atomically: JSONL
    byte for byte (copied by the system where it can, not through this process); Parquet as
    one table with the first part's schema, row group by row group. A CSV/TSV file, which has
    a header, is only copied (one part)."""
    if fmt in ("csv", "tsv") and len(parts) != 1:
        raise ConfigError(f"{fmt} parts hold a header each: give exactly one, got {len(parts)}")
    if fmt not in ("jsonl", "csv", "tsv", "parquet"):
        raise ConfigError(f"fmt={fmt!r} is invalid: jsonl, csv, tsv or parquet")
    if not parts:
        raise ConfigError("parts is empty: give at least one file")

    def write(f: BinaryIO) -> None:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            writer = None
            try:
                for part in parts:
                    pf = pq.ParquetFile(part)
                    if writer is None:
                        writer = pq.ParquetWriter(f, pf.schema_arrow)
                    for g in range(pf.num_row_groups):
                        writer.write_table(pf.read_row_group(g))
            finally:
                if writer is not None:
                    writer.close()
            return
        for part in parts:
            size = os.path.getsize(part)
            if not _copy_ranges(Path(part), f, np.array([0]), np.array([size])):
                raise OutputError(f"{part}: is shorter than when it was written")

    return _write_atomic(Path(dest), write, parents)
