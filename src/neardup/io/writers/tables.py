"""Result tables (Parquet, JSONL, CSV): :func:`write_table` (a whole table, atomically) and
:class:`TableStream` (a table written part by part)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ...errors import ConfigError
from ...validate import check_choice
from ..options import OUTPUT_FORMATS
from .arrow import arrow_table
from .jsonl import write_jsonl_table
from .parquet import parquet_writer
from .staged import Staged, _write_atomic


def _check_columns(columns: Mapping[str, Any]) -> int:
    if not columns:
        raise ConfigError("columns is empty: a table needs at least one column")
    lengths = {name: len(col) for name, col in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ConfigError(f"columns have different lengths: {lengths}")
    return next(iter(lengths.values()))


def write_table(
    path_stem: str | os.PathLike, columns: Mapping[str, np.ndarray | list], fmt: str = "parquet"
) -> Path:
    """Write ``columns`` (equal lengths: numpy arrays of numbers/bools/str objects, or lists of
    str; for Parquet and CSV also pyarrow arrays) to ``path_stem`` + ``.parquet`` / ``.jsonl`` /
    ``.csv``, atomically; return the path.

    Zero rows give a valid file (Parquet with the schema, CSV with the header, JSONL empty).
    """
    check_choice("fmt", fmt, OUTPUT_FORMATS)
    final = Path(f"{os.fspath(path_stem)}.{fmt}")
    n = _check_columns(columns)
    if fmt == "jsonl":
        return _write_atomic(final, lambda f: write_jsonl_table(f, columns, n))
    table = arrow_table(columns)
    if fmt == "parquet":

        def write(f: BinaryIO) -> None:
            w = parquet_writer(f, table.schema)
            w.write_table(table)
            w.close()

        return _write_atomic(final, write)
    import pyarrow.csv as pcsv

    return _write_atomic(final, lambda f: pcsv.write_csv(table, f))


class TableStream:
    """One output table written part by part (parquet, jsonl or csv) under a temporary name,
    renamed onto ``STEM.FORMAT`` by :meth:`commit` (or removed by :meth:`discard`)."""

    def __init__(self, stem: str | os.PathLike, fmt: str):
        check_choice("fmt", fmt, OUTPUT_FORMATS)
        self.final = Path(f"{os.fspath(stem)}.{fmt}")
        self.fmt = fmt
        self.staged = Staged(self.final)
        self.writer: Any = None

    @property
    def _file(self) -> BinaryIO:
        f = self.staged.file
        assert f is not None  # a staged file, not a folder
        return f

    def write(self, columns: Mapping[str, Any]) -> None:
        """Append rows given as columns (as :func:`write_table` takes them)."""
        if self.fmt == "jsonl":
            write_jsonl_table(self._file, columns, _check_columns(columns))
            return
        self._write_arrow(arrow_table(columns))

    def write_parquet_part(self, path: str | os.PathLike) -> None:
        """Append the rows of a Parquet file (a part written by another process)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        if self.fmt == "jsonl":
            cols = {
                name: (col.to_pylist() if pa.types.is_string(col.type) else col.to_numpy())
                for name, col in zip(table.column_names, table.columns)
            }
            write_jsonl_table(self._file, cols, table.num_rows)
            return
        self._write_arrow(table)

    def _write_arrow(self, table: Any) -> None:
        f = self._file
        if self.writer is None:
            self.schema = table.schema  # the first part's (a CSVWriter does not keep it)
            if self.fmt == "parquet":
                self.writer = parquet_writer(f, self.schema)
            else:
                import pyarrow.csv as pcsv

                self.writer = pcsv.CSVWriter(f, self.schema)
        self.writer.write_table(table.cast(self.schema))

    def commit(self) -> str:
        if self.writer is not None:
            self.writer.close()
        return str(self.staged.commit())

    def discard(self) -> None:
        if self.writer is not None:  # closed before its file, which it would write to
            with suppress(Exception):
                self.writer.close()
            self.writer = None
        self.staged.discard()


#: rows of a table written at a time by :func:`write_table_parts`: Arrow's Parquet writer's own
#: row group size, so that a table written in parts is the file written whole
PART_ROWS = 1024 * 1024


def write_table_parts(
    path_stem: str | os.PathLike,
    n: int,
    part: Callable[[int, int], Mapping[str, Any]],
    fmt: str = "parquet",
    rows: int = PART_ROWS,
) -> Path:
    """:func:`write_table` of a table of ``n`` rows made ``rows`` at a time (``part(lo, hi)``:
    the columns of rows ``[lo, hi)``), so that only one part's columns and encoding are in
    memory at a time; the file is the one :func:`write_table` writes of the whole table."""
    if n <= rows:
        return write_table(path_stem, part(0, n), fmt)
    stream = TableStream(path_stem, fmt)
    try:
        for lo in range(0, n, rows):
            stream.write(part(lo, min(n, lo + rows)))
        return Path(stream.commit())
    except BaseException:
        stream.discard()
        raise
