"""Partitions: which part of which input each read task takes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...io import format_of_name, split_compression


@dataclass(frozen=True)
class Spec:
    """One partition: a whole input (``start == 0, end is None``), a byte range of a JSONL file
    (``split``) or a run of row groups ``[start, end)`` of a Parquet file (``row_groups``)."""

    path: str
    fmt: str | None
    start: int = 0
    end: int | None = None
    split: bool = False  # a range of a split JSONL file (the file's first range included)
    row_groups: bool = False  # a run of row groups of a split Parquet file (the first too)
    source: int = 0  # the input it is (a part) of: its position in the inputs


def count_lines(path: str, start: int, end: int) -> int:
    """Newlines in bytes [start, end) of a file."""
    count = 0
    with open(path, "rb") as f:
        f.seek(start)
        left = end - start
        while left > 0:
            block = f.read(min(left, 1 << 24))
            if not block:
                break
            count += block.count(b"\n")
            left -= len(block)
    return count


def expand(paths: Sequence[Path], input_format: str | None) -> list[Path]:
    """A directory given with a data format other than "textdir" and "parquet" stands for its
    files of that format (sorted by name, hidden ones and others left out): a folder of JSONL
    parts. (A folder of Parquet shards is an input of several sources: see :func:`plan`.)"""
    out: list[Path] = []
    for p in paths:
        # a folder of Parquet shards is read as its shards (see :func:`plan`)
        if p.is_dir() and input_format not in (None, "textdir", "parquet"):
            files = sorted(
                f
                for f in p.iterdir()
                if f.is_file()
                and not f.name.startswith(".")
                and format_of_name(f.name) == input_format
            )
            out.extend(files)
        else:
            out.append(p)
    return out


def row_group_runs(path: Path, partition_docs: int) -> list[tuple[int, int]]:
    """Runs ``[a, b)`` of the row groups of a Parquet file of more than ~1.5 x
    ``partition_docs`` rows, each of about ``partition_docs`` rows (a row group is never cut;
    a short last run joins the one before); one run for a smaller file, or one the footer of
    which cannot be read (the reader reports it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
        sizes = [meta.row_group(k).num_rows for k in range(meta.num_row_groups)]
    except (pa.ArrowException, OSError):
        return [(0, 1)]
    if sum(sizes) <= partition_docs * 1.5:
        return [(0, len(sizes))]
    runs: list[tuple[int, int]] = []
    a = acc = 0
    for g, n in enumerate(sizes):
        # end the run before group g if that comes closer to partition_docs than taking it
        if acc and acc + n - partition_docs > partition_docs - acc:
            runs.append((a, g))
            a, acc = g, 0
        acc += n
    if runs and acc < partition_docs / 2:
        a = runs.pop()[0]
    runs.append((a, len(sizes)))
    return runs


def plan(
    paths: list[Path], input_format: str | None, partition_docs: int, workers: int = 1
) -> list[Spec]:
    """One partition per input (of a folder of Parquet shards, as Spark and ``datasets`` write
    them: one per shard, ``source`` numbering the shards as the reader does); uncompressed
    JSONL files of more than ~1.5 x ``partition_docs`` records (estimated from their first
    1 MB) are cut into line-aligned byte ranges of about equal size, as many as a multiple of
    ``workers`` (so that every worker has as much to read), Parquet files of more than 1.5 x
    ``partition_docs`` rows into runs of row groups."""
    from ...io import detect_format
    from ...io.readers import parquet_shards

    files: list[Path] = []  # one per source, as the reader numbers them
    for p in paths:
        shards = None if input_format == "textdir" else parquet_shards(p)
        files.extend([p] if shards is None else shards)
    specs: list[Spec] = []
    for k, p in enumerate(files):
        fmt = "textdir" if p.is_dir() else (input_format or detect_format(p))
        _, comp = split_compression(p.name)
        if fmt == "parquet" and comp is None:
            runs = row_group_runs(p, partition_docs)
            if len(runs) == 1:
                specs.append(Spec(str(p), input_format, source=k))
            else:
                specs.extend(
                    Spec(str(p), input_format, a, b, row_groups=True, source=k) for a, b in runs
                )
            continue
        if fmt != "jsonl" or comp is not None:
            specs.append(Spec(str(p), input_format, source=k))
            continue
        size = p.stat().st_size
        with open(p, "rb") as f:
            head = f.read(1 << 20)
            per_line = len(head) / max(head.count(b"\n"), 1)
            step = max(int(per_line * partition_docs), 1 << 16)
            if size <= step * 1.5:
                specs.append(Spec(str(p), input_format, source=k))
                continue
            ranges = -(-size // step)
            ranges += -ranges % max(workers, 1)
            step = -(-size // ranges)
            bounds = [0]
            while bounds[-1] + step < size:
                f.seek(bounds[-1] + step)
                f.readline()
                b = f.tell()
                if b >= size:
                    break
                bounds.append(b)
            bounds.append(size)
        for a, b in zip(bounds, bounds[1:]):
            specs.append(Spec(str(p), input_format, a, b, split=True, source=k))
    return specs
