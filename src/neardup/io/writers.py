"""Atomic writers: result tables (Parquet, JSONL, CSV), JSON summaries and the deduplicated
corpus in the inputs' own formats.

Every file is written under a temporary name in its final directory (``.<name>.<random>.tmp``),
flushed and fsync'ed, then renamed with :func:`os.replace`; on any error the temporary file is
removed and the error re-raised (an :class:`OSError` becomes an :class:`OutputError` naming the
path), so a reader never sees a half-written output.
"""

from __future__ import annotations

import codecs
import csv
import errno
import io
import os
import shutil
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import orjson

from ..errors import ConfigError, OutputError
from ..validate import check_choice
from .options import OUTPUT_FORMATS, ReadOptions
from .readers import (
    FilePart,
    SkipReport,
    _open_binary,
    _RecordStream,
    _Source,
    record_stream,
    split_compression,
)

__all__ = [
    "OUTPUT_FORMATS",
    "KeepStream",
    "Staged",
    "TableStream",
    "arrow_table",
    "concat_files",
    "deduplicated_names",
    "prepare_outdir",
    "write_deduplicated",
    "write_deduplicated_part",
    "write_json_atomic",
    "write_jsonl_table",
    "write_table",
]

_JSONL_BATCH = 65_536
_BUFFER = 1 << 20
_COPY_BLOCK = 1 << 18  # bytes read at a time when copying the kept lines of a JSONL input
_LONG_LINE = 1024  # from this average line length on, newlines are looked for one by one
_WRITEBACK_EVERY = 8 << 20  # bytes of copied corpus after which its writing to disk is started
_PARALLEL_COPY = 32 << 20  # bytes of kept ranges per copying thread, at least
_DIRECT_COPY = 64 << 20  # from this many bytes of kept ranges on, copied past the page cache
_DIRECT_BLOCK = 8 << 20  # bytes read and written at a time when copying past the page cache
_PACKED_BLOCK = 1 << 20  # and when packing short runs through the page cache
_DIRECT_ALIGN = 4096  # what O_DIRECT asks of offsets and lengths (a multiple of the sector)
_SHORT_RUN = 1 << 20  # runs shorter than this on average are copied through this process
# errors of os.copy_file_range that mean "not between these files": copy through this process
_NO_COPY_RANGE = {
    getattr(errno, n)
    for n in ("EXDEV", "ENOSYS", "EINVAL", "EOPNOTSUPP", "ENOTSUP", "EBADF", "EPERM")
    if hasattr(errno, n)
}


# ---------------------------------------------------------------------------------------------
# Atomic files and directories


def _os_error(path: Path, what: str, e: OSError) -> OutputError:
    return OutputError(f"{path}: cannot {what}: {e.strerror or e}")


def _fsync_dir(path: Path) -> None:
    with suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class Staged:
    """A temporary file (or directory) next to ``final``, renamed onto it by :meth:`commit`.
    ``parents=False``: ``final``'s folder must exist (it is not created again: a writer of a
    run that was discarded meanwhile then fails instead of bringing its folders back)."""

    def __init__(self, final: Path, *, directory: bool = False, parents: bool = True):
        self.final = final
        self.directory = directory
        self.parents = parents
        self.file: BinaryIO | None = None
        try:
            if parents:
                final.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise _os_error(final.parent, "create the directory", e) from e
        for _ in range(100):
            tmp = final.parent / f".{final.name}.{os.urandom(6).hex()}.tmp"
            try:
                if directory:
                    os.mkdir(tmp)
                else:
                    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                    self.file = os.fdopen(fd, "wb", buffering=_BUFFER)
            except FileExistsError:
                continue
            except OSError as e:
                raise _os_error(final, "create a temporary file for", e) from e
            self.tmp = tmp
            return
        raise OutputError(f"{final}: cannot find a free temporary name")  # pragma: no cover

    def close(self) -> None:
        """Flush, fsync and close the temporary file."""
        f = self.file
        if f is not None and not f.closed:
            try:
                f.flush()
                os.fsync(f.fileno())
            except OSError as e:
                raise _os_error(self.final, "write", e) from e
            finally:
                f.close()

    def commit(self) -> Path:
        self.close()
        try:
            if self.directory and self.final.is_dir() and not self.final.is_symlink():
                trash = self.final.parent / f".{self.final.name}.{os.urandom(6).hex()}.old.tmp"
                os.replace(self.final, trash)
                os.replace(self.tmp, self.final)
                shutil.rmtree(trash, ignore_errors=True)
            else:
                os.replace(self.tmp, self.final)
        except OSError as e:
            raise _os_error(self.final, "rename the temporary output onto", e) from e
        _fsync_dir(self.final.parent)
        return self.final

    def discard(self) -> None:
        if self.file is not None:
            with suppress(OSError):
                self.file.close()
        if self.directory:
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            with suppress(OSError):
                os.unlink(self.tmp)


def _write_atomic(final: Path, write: Any, parents: bool = True) -> Path:
    """Call ``write(file)`` on a temporary file, then rename it onto ``final``."""
    staged = Staged(final, parents=parents)
    try:
        assert staged.file is not None
        write(staged.file)
        return staged.commit()
    except BaseException as e:
        staged.discard()
        if isinstance(e, OSError):
            raise _os_error(final, "write", e) from e
        raise


# ---------------------------------------------------------------------------------------------
# Tables


def _check_columns(columns: Mapping[str, Any]) -> int:
    if not columns:
        raise ConfigError("columns is empty: a table needs at least one column")
    lengths = {name: len(col) for name, col in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ConfigError(f"columns have different lengths: {lengths}")
    return next(iter(lengths.values()))


#: From this many values on, a column of strings goes to ``pyarrow.array`` (see below)
_PYARROW_STRINGS = 2_000_000


def _pyarrow_strings_faster(n: int) -> bool:
    """Whether ``pyarrow.array`` makes ``n`` strings faster than :func:`_string_array`: it
    imports pandas the first time (0.15-0.2 s) and then takes 25 ns a value where
    :func:`_string_array` takes 40-60 ns (ASCII) or 150 ns; so once pandas is loaded, or for
    millions of values."""
    return "pandas" in sys.modules or n >= _PYARROW_STRINGS


def _string_array(values: list) -> Any:
    """``values`` (all ``str``) as an Arrow string array, built from one UTF-8 buffer and its
    offsets, as ``pyarrow.array`` builds it (without importing pandas); ``None`` when they are
    not all strings, hold a lone surrogate or need more than 2 GiB (``pyarrow.array`` takes
    those, with its own errors)."""
    import pyarrow as pa

    try:
        joined = "".join(values)
    except TypeError:
        return None
    n = len(values)
    ends = np.empty(n + 1, dtype=np.int64)  # character offsets of the values in ``joined``
    ends[0] = 0
    np.cumsum(np.fromiter(map(len, values), dtype=np.int64, count=n), out=ends[1:])
    if joined.isascii():
        data = joined.encode("ascii")
    else:
        try:
            data = joined.encode("utf-8")
        except UnicodeEncodeError:
            return None
        # the byte offset of every character (a byte that does not continue a UTF-8 sequence
        # starts one), and of the end
        u8 = np.frombuffer(data, dtype=np.uint8)
        starts = np.flatnonzero((u8 & 0xC0) != 0x80)
        ends = np.append(starts, len(data))[ends]
    if len(data) > np.iinfo(np.int32).max:
        return None
    offsets = ends.astype(np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def arrow_array(col: Any) -> Any:
    """One column as :func:`write_table` makes it an Arrow array (numpy arrays of numbers or
    bools shared, strings built from one UTF-8 buffer; an Arrow array as it is)."""
    return _arrow_array(col)


def take_strings(arr: Any, rows: np.ndarray) -> Any:
    """``arr[rows]`` for an Arrow string array without nulls (``rows``: integers), gathered from
    its buffers with numpy: what ``arr.take(rows)`` gives, without loading ``pyarrow.compute``
    (0.14 s) or making Python strings; ``None`` for another array (nulls, large strings, more
    than 2 GiB of text)."""
    import pyarrow as pa

    if not isinstance(arr, pa.Array) or arr.type != pa.string() or arr.null_count:
        return None
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    _, off_buf, data_buf = arr.buffers()
    off = np.frombuffer(off_buf, np.int32, len(arr) + 1, arr.offset * 4).astype(np.int64)
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    starts = off[:-1][rows]
    lens = (off[1:] - off[:-1])[rows]
    ends = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lens, out=ends[1:])
    if ends[-1] > np.iinfo(np.int32).max:
        return None
    # byte j of the output is byte j - ends[i] + starts[i] of the input, for its row i
    out = data[np.arange(ends[-1], dtype=np.int64) + np.repeat(starts - ends[:-1], lens)]
    return pa.Array.from_buffers(
        pa.string(), len(rows), [None, pa.py_buffer(ends.astype(np.int32)), pa.py_buffer(out)]
    )


def _arrow_array(col: Any) -> Any:
    import pyarrow as pa

    if isinstance(col, pa.Array):
        return col
    if isinstance(col, np.ndarray):
        if col.ndim != 1:
            raise ConfigError(f"a column must be one-dimensional, got shape {col.shape}")
        plain = type(col) is np.ndarray  # not a masked array, whose mask means nulls
        if plain and col.dtype == object and not _pyarrow_strings_faster(len(col)):
            arr = _string_array(col.tolist())
            if arr is not None:
                return arr
        if plain and col.dtype.kind in "biuf" and col.dtype.isnative:
            # the array's own memory, as pyarrow.array shares it, without importing pandas
            col = np.ascontiguousarray(col)
            if col.dtype == np.bool_:
                bits = np.packbits(col, bitorder="little")
                return pa.Array.from_buffers(pa.bool_(), len(col), [None, pa.py_buffer(bits)])
            return pa.Array.from_buffers(
                pa.from_numpy_dtype(col.dtype), len(col), [None, pa.py_buffer(col)]
            )
        if col.dtype == object or col.dtype.kind in "US":
            return pa.array(col, type=pa.string() if len(col) == 0 else None)
        return pa.array(col)
    col = list(col)
    arr = None if _pyarrow_strings_faster(len(col)) else _string_array(col)
    if arr is not None:
        return arr
    return pa.array(col, type=pa.string() if len(col) == 0 else None)


#: The options ``pyarrow.parquet.ParquetWriter`` gives pyarrow's own writer by default (read
#: from pyarrow 26), which :func:`parquet_writer` passes it so that the files are the same byte
#: for byte (a test compares them with the installed pyarrow).
_PARQUET_DEFAULTS = {
    "version": "2.6",
    "compression": "snappy",
    "use_dictionary": True,
    "write_statistics": True,
    "data_page_version": "1.0",
    "writer_engine_version": "V2",
}


def parquet_writer(sink: BinaryIO, schema: Any) -> Any:
    """A Parquet writer of ``schema`` into the open binary file ``sink`` (``write_table(t)``,
    ``close()``) that does not import ``pyarrow.parquet``: that module loads pyarrow's file
    systems (S3, GCS, HDFS, Azure) and with them ``ssl``, 10-30 ms of every ``dedup`` run that
    only writes two small tables. pyarrow's own writer class with the defaults of
    ``pyarrow.parquet.ParquetWriter`` (a test checks the files are identical); where a pyarrow
    release changes that class, ``pyarrow.parquet.ParquetWriter`` itself."""
    try:
        from pyarrow._parquet import ParquetWriter

        return ParquetWriter(sink, schema, **_PARQUET_DEFAULTS)
    except (ImportError, TypeError, ValueError):
        import pyarrow.parquet as pq

        return pq.ParquetWriter(sink, schema)


def arrow_table(columns: Mapping[str, Any]) -> Any:
    import pyarrow as pa

    return pa.table({name: _arrow_array(col) for name, col in columns.items()})


def _py_slice(col: Any, start: int, end: int) -> list:
    if isinstance(col, np.ndarray):
        part = col[start:end]
        if part.dtype == np.float32 or part.dtype == np.float16:
            # orjson prints float32 in its shortest form (0.8, not 0.800000011920929); parsing
            # that back gives Python floats which print the same way
            return orjson.loads(
                orjson.dumps(part.astype(np.float32), option=orjson.OPT_SERIALIZE_NUMPY)
            )
        return part.tolist()
    return list(col[start:end])


def _jsonl_values(col: Any, start: int, end: int) -> tuple[list[bytes], bool]:
    """The JSON text of each value of ``col[start:end]`` as ``orjson`` writes it in an object,
    from one ``orjson.dumps`` of the whole list where that can be split back into values (a
    call per value costs ~1 us); ``True`` with texts of strings given without their quotes."""
    values = _py_slice(col, start, end)
    if not values:
        return [], False
    dumps = orjson.dumps
    if isinstance(col, np.ndarray) and col.dtype.kind in "biuf":
        # numbers, true, false and null hold no comma: the list's text split at its commas
        return dumps(values)[1:-1].split(b","), False
    try:
        joined = "".join(values)
    except TypeError:  # not all strings
        joined = '"'
    if '"' not in joined:
        # without a quote in any string, '","' stands only between two of them
        return dumps(values)[2:-2].split(b'","'), True
    opt = orjson.OPT_SERIALIZE_NUMPY
    return [dumps(v, option=opt) for v in values], False


def write_jsonl_table(f: BinaryIO, columns: Mapping[str, Any], n: int) -> None:
    """One JSON object a line, ``{"name":value,...}`` as ``orjson.dumps`` writes the row's
    dict, put together column by column (the text of each column's values, then the rows as
    one join) rather than one dict a row."""
    names = list(columns)
    cols = list(columns.values())
    if not all(type(name) is str for name in names):  # as before: a dict a row
        opt = orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY
        for start in range(0, n, _JSONL_BATCH):
            end = min(start + _JSONL_BATCH, n)
            parts = [_py_slice(c, start, end) for c in cols]
            f.write(
                b"".join(
                    [
                        orjson.dumps(dict(zip(names, row, strict=True)), option=opt)
                        for row in zip(*parts, strict=True)
                    ]
                )
            )
        return
    keys = [orjson.dumps(name) + b":" for name in names]
    k = len(cols)
    for start in range(0, n, _JSONL_BATCH):
        end = min(start + _JSONL_BATCH, n)
        m = end - start
        # per row: before each value the text between it and the previous one (b"{" and its
        # key; b"," and its key; a string's quotes), then b"}\n"
        out: list[bytes] = [b""] * (m * (2 * k + 1))
        quoted = False  # whether the previous value was a string without its quotes
        for j, col in enumerate(cols):
            texts, quotes = _jsonl_values(col, start, end)
            head = (b'",' if quoted else b",") if j else b"{"
            out[2 * j :: 2 * k + 1] = [head + keys[j] + (b'"' if quotes else b"")] * m
            out[2 * j + 1 :: 2 * k + 1] = texts
            quoted = quotes
        out[2 * k :: 2 * k + 1] = [b'"}\n' if quoted else b"}\n"] * m
        f.write(b"".join(out))


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

    def write(self, columns: Mapping[str, Any]) -> None:
        """Append rows given as columns (as :func:`write_table` takes them)."""
        if self.fmt == "jsonl":
            write_jsonl_table(self.staged.file, columns, _check_columns(columns))
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
            write_jsonl_table(self.staged.file, cols, table.num_rows)
            return
        self._write_arrow(table)

    def _write_arrow(self, table: Any) -> None:
        f = self.staged.file
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


def prepare_outdir(outdir: str | os.PathLike) -> Path:
    """Create the output directory (and its parents), or say clearly why it cannot be used."""
    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():
        raise OutputError(f"{outdir}: exists and is not a directory")
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"{outdir}: cannot create the output directory: {e.strerror}") from e
    if not os.access(outdir, os.W_OK):
        raise OutputError(f"{outdir}: the output directory is not writable")
    return outdir


def _json_default(obj: Any) -> Any:
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__} to JSON")


def write_json_atomic(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as pretty JSON (indent 2, trailing newline), atomically; return the path."""
    data = orjson.dumps(
        obj,
        default=_json_default,
        option=orjson.OPT_INDENT_2
        | orjson.OPT_SERIALIZE_NUMPY
        | orjson.OPT_NON_STR_KEYS
        | orjson.OPT_APPEND_NEWLINE,
    )
    return _write_atomic(Path(path), lambda f: f.write(data))


# ---------------------------------------------------------------------------------------------
# The deduplicated corpus


def _output_names(sources: Sequence[_Source]) -> list[str]:
    names = []
    for src in sources:
        if src.fmt == "textdir":
            names.append(src.path.name or src.path.resolve().name or "input")
        elif src.fmt == "parquet":
            names.append(src.path.name)
        else:
            names.append(split_compression(src.path.name)[0])
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    used = {name for name in names if counts[name] == 1}
    out = []
    for i, name in enumerate(names, start=1):
        if counts[name] > 1:
            prefix = f"{i}-"
            while prefix + name in used:
                prefix = f"{i}-{prefix}"
            name = prefix + name
            used.add(name)
        out.append(name)
    return out


class KeepStream:
    """Keep flags decided in record order while the corpus is being written.

    The deciding side (a deduplication's verification and clustering, batch by batch) calls
    :meth:`decide` with the flags of the next records, in order, or :meth:`fail` if it cannot
    go on. :func:`write_deduplicated` given a ``KeepStream`` copies the kept lines of a large
    uncompressed JSONL input as their flags arrive, so that the disk works while the rest is
    decided; for every other input it waits until all flags are decided."""

    def __init__(self, n: int):
        self.array = np.zeros(n, np.bool_)
        self.n = n
        self._decided = 0
        self._error: BaseException | None = None
        self._cond = threading.Condition()

    @property
    def decided(self) -> int:
        """The number of records whose flag is decided (the first ones)."""
        return self._decided

    def decide(self, flags: Any) -> None:
        """The flags of the next records."""
        flags = np.asarray(flags, np.bool_).reshape(-1)
        with self._cond:
            a = self._decided
            if a + len(flags) > self.n:
                raise ValueError(f"{a + len(flags)} flags decided for {self.n} records")
            self.array[a : a + len(flags)] = flags
            self._decided = a + len(flags)
            self._cond.notify_all()

    def fail(self, error: BaseException) -> None:
        """The deciding side stopped: whoever waits gets an error instead of flags."""
        with self._cond:
            self._error = error
            self._cond.notify_all()

    def wait(self, end: int) -> int:
        """Wait until at least the first ``end`` flags (at most all) are decided and return
        how many are: raises if the deciding side stopped before."""
        end = min(end, self.n)
        with self._cond:
            while self._decided < end and self._error is None:
                self._cond.wait()
            if self._decided < end:
                raise ConfigError(
                    "the deduplication stopped before it decided which records to keep"
                ) from self._error
            return self._decided


class _Keep:
    def __init__(self, keep: Any):
        self.stream = keep if isinstance(keep, KeepStream) else None
        if self.stream is not None:
            self.array = self.stream.array
            self.n = self.stream.n
            self._flags: list[bool] | None = None
            return
        arr = np.asarray(keep)
        if arr.ndim != 1 or arr.dtype != np.bool_:
            raise ConfigError(
                f"keep must be a one-dimensional bool array, got dtype {arr.dtype} "
                f"and shape {arr.shape}"
            )
        self.array = arr
        self._flags = arr.tolist()
        self.n = len(self._flags)

    def ready(self) -> None:
        """Wait until every flag is decided (a :class:`KeepStream`'s)."""
        if self.stream is not None:
            self.stream.wait(self.n)

    @property
    def flags(self) -> list[bool]:
        if self._flags is None:
            self.ready()
            self._flags = self.array.tolist()
        return self._flags

    def __call__(self, index: int) -> bool:
        if index >= self.n:
            raise ConfigError(
                f"keep has {self.n} flags but the inputs hold more records: keep "
                "must come from reading the same inputs with the same options"
            )
        return self.flags[index]


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


def _copy_lines(
    data: BinaryIO,
    out: BinaryIO,
    wanted: np.ndarray,
    block_size: int = _COPY_BLOCK,
    long_line: int = _LONG_LINE,
) -> bool:
    """Write the lines of ``data`` numbered ``wanted`` (1-based, strictly increasing) to
    ``out``, byte for byte; return ``False`` when ``data`` ends before the last of them.

    Lines end with ``b"\\n"`` (kept, as any ``b"\\r"`` before it); a last line without one is a
    line too. ``data`` is read in blocks of ``block_size`` bytes and each run of consecutive
    wanted lines is written with one ``write`` per block it spans; reading stops after the
    last wanted line. The newlines of a block are found with numpy, or, after a block whose
    lines were longer than ``long_line`` bytes on average, with ``bytearray.find`` from one to
    the next (cheaper than two passes over every byte when they are few).
    """
    n = len(wanted)
    if n == 0:
        return True
    w = np.asarray(wanted, dtype=np.int64)
    cut = np.flatnonzero(np.diff(w) != 1) + 1
    firsts = w[np.concatenate(([0], cut))]  # runs of consecutive lines [firsts[k], lasts[k]]
    lasts = w[np.concatenate((cut - 1, [n - 1]))]
    n_runs = len(firsts)
    buf = bytearray(block_size)
    view = memoryview(buf)
    arr = np.frombuffer(buf, dtype=np.uint8)
    is_nl = np.empty(block_size, dtype=np.bool_)
    find = buf.find
    write = out.write
    k = 0  # the first run not written to its end
    ended = 0  # lines ended (by a newline) before the block
    open_line = False  # whether the bytes read so far end inside a line
    sparse = False  # whether to look for the newlines one by one
    while k < n_runs:
        got = data.readinto(view)
        if not got:
            break
        if sparse:
            found = []
            p = find(b"\n", 0, got)
            while p >= 0:
                found.append(p)
                p = find(b"\n", p + 1, got)
            nl = np.array(found, dtype=np.int64)
        else:
            np.equal(arr[:got], 10, out=is_nl[:got])
            nl = np.flatnonzero(is_nl[:got])
        m = len(nl)
        sparse = got > m * long_line
        # the block holds the ends of lines ended + 1 .. ended + m, and the start of line
        # ended + m + 1 (``top``, still open; empty when the block ends with a newline); line
        # ended + 1 + i spans bounds[i]:bounds[i + 1] of the block
        top = ended + m + 1
        bounds = np.empty(m + 2, dtype=np.int64)
        bounds[0] = 0
        np.add(nl, 1, out=bounds[1 : m + 1])
        bounds[m + 1] = got
        stop = int(np.searchsorted(firsts, top, side="right"))  # runs starting in the block
        if stop > k:
            lo = np.maximum(firsts[k:stop], ended + 1) - (ended + 1)
            hi = np.minimum(lasts[k:stop], top) - ended
            for s, e in zip(bounds[lo].tolist(), bounds[hi].tolist()):
                if e > s:
                    write(view[s:e])
            k = stop if lasts[stop - 1] < top else stop - 1
        ended += m
        open_line = buf[got - 1] != 10
    return k == n_runs or int(lasts[-1]) <= ended + open_line


_NO_FUNCTION: Any = object()
_sync_file_range_fn: Any = _NO_FUNCTION


def _sync_file_range() -> Any:
    """The C library's ``sync_file_range`` (Linux), or ``None``."""
    global _sync_file_range_fn
    if _sync_file_range_fn is _NO_FUNCTION:
        _sync_file_range_fn = None
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                fn = ctypes.CDLL(None, use_errno=True).sync_file_range
                fn.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint]
                fn.restype = ctypes.c_int
                _sync_file_range_fn = fn
            except (OSError, AttributeError):
                pass
    return _sync_file_range_fn


class _Writeback:
    """A binary file's ``write`` that, every ``every`` bytes, asks the kernel to start writing
    the file's dirty pages to disk (``sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE)``, on
    Linux; it does not wait), so that the disk works while the copy goes on and the fsync of
    :meth:`Staged.close` finds little left: the copy and the fsync of 205 MB took 0.19 s,
    0.13 s so. Elsewhere, or where the call fails, a plain ``write``."""

    def __init__(self, f: BinaryIO, every: int = _WRITEBACK_EVERY):
        self.f = f
        self.every = every
        self.pending = 0
        self.start = _sync_file_range()
        try:
            self.fd = f.fileno()
        except (OSError, ValueError, AttributeError):
            self.start = None

    def write(self, data: Any) -> int:
        n = self.f.write(data)
        self.written(n)
        return n

    def written(self, n: int) -> None:
        """Count ``n`` bytes written to the file (by :meth:`write` or past it)."""
        self.pending += n
        if self.pending >= self.every and self.start is not None:
            self.pending = 0
            if self.start(self.fd, 0, 0, 2) != 0:  # 2: SYNC_FILE_RANGE_WRITE
                self.start = None


def _runs(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ranges ``[starts[i], ends[i])`` (at least one, in order) with adjacent ones joined:
    the starts and ends of the runs."""
    cut = np.flatnonzero(starts[1:] != ends[:-1]) + 1
    return (starts[np.concatenate(([0], cut))], ends[np.concatenate((cut - 1, [len(starts) - 1]))])


def _direct_on(dst: int) -> int | None:
    """Switch the file descriptor ``dst`` to ``O_DIRECT`` writes; return its flags before, to
    give to :func:`_direct_off`, or ``None`` where the system or file system has none."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return None
    import fcntl

    try:
        mode = fcntl.fcntl(dst, fcntl.F_GETFL)
        fcntl.fcntl(dst, fcntl.F_SETFL, mode | flag)
    except OSError:  # a file system without direct writes
        return None
    return mode


def _direct_off(dst: int, mode: int) -> None:
    import fcntl

    fcntl.fcntl(dst, fcntl.F_SETFL, mode)


def _copy_ranges(
    path: Path, out: BinaryIO, starts: np.ndarray, ends: np.ndarray, threads: int | None = None
) -> bool:
    """Append the bytes ``[starts[i], ends[i])`` of the file ``path`` to ``out``, in order,
    without reading them into this process where the system can copy between files
    (``os.copy_file_range``: Linux; else ``os.pread`` and ``os.pwrite``). Adjacent ranges are
    copied in one call. Each range's place in ``out`` is known beforehand, so from
    ``_PARALLEL_COPY`` bytes on the ranges are split into ``threads`` shares of about equal
    bytes (default: :func:`neardup._threads.get_num_threads`), copied at once by as many
    threads (the copying is the kernel's work, outside the GIL): 1.7 GB in 1.1-1.2 s with two
    threads, 1.5-1.6 s with one. Returns ``False`` when the file is shorter than the last range
    (it changed since it was read)."""
    n = len(starts)
    if n == 0:
        return True
    run_starts, run_ends = _runs(starts, ends)
    out.flush()
    dst = out.fileno()
    base = out.tell()
    dest = base + np.concatenate(([0], np.cumsum(run_ends - run_starts)))
    total = int(dest[-1] - base)
    src = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        if os.fstat(src).st_size < int(run_ends[-1]):
            return False
        if threads is None:
            from .._threads import get_num_threads

            threads = get_num_threads()
        if total >= _DIRECT_COPY and base % _DIRECT_ALIGN == 0:
            done = _copy_direct(src, out, run_starts, run_ends, dest, total, threads)
            if done is not None:
                return done
        if total < len(run_starts) * _SHORT_RUN and hasattr(os, "pread"):
            # many short runs: one system call per run would cost more than copying them
            # through this process (21,000 short documents: 3,063 runs, 23-43 ms against 9-18)
            return _copy_packed(src, dst, run_starts, run_ends, dest, total, threads, False)
        shares = max(1, min(threads, total // _PARALLEL_COPY, len(run_starts)))
        # share k copies the runs whose first byte lands in [k/shares, (k+1)/shares) of total
        bounds = np.searchsorted(dest[:-1] - base, np.arange(shares + 1) * total // shares)
        bounds[-1] = len(run_starts)
        jobs = [
            (run_starts[a:b].tolist(), run_ends[a:b].tolist(), dest[a:b].tolist())
            for a, b in zip(bounds[:-1], bounds[1:])
            if b > a
        ]
        if len(jobs) == 1:
            ok = _copy_runs(src, dst, *jobs[0])
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(len(jobs), thread_name_prefix="neardup-copy") as pool:
                ok = all(list(pool.map(lambda job: _copy_runs(src, dst, *job), jobs)))
        if not ok:
            return False
    finally:
        os.close(src)
        out.seek(0, os.SEEK_END)  # the buffered file object's position, after the copies
    return True


def _copy_direct(
    src: int,
    out: BinaryIO,
    run_starts: np.ndarray,
    run_ends: np.ndarray,
    dest: np.ndarray,
    total: int,
    threads: int,
) -> bool | None:
    """:func:`_copy_ranges` past the page cache: the source is read in windows of
    ``_DIRECT_BLOCK`` bytes and the runs packed into whole blocks written with ``O_DIRECT``
    (Linux), ``threads`` threads each writing its share of the output. Copying the 152,868
    runs of a million-document corpus (1.65 GB) took 1.6-2.8 s with ``copy_file_range``, one
    system call per run, and 1.0-1.5 s so. ``None`` when the output's file system does not
    take it (no ``O_DIRECT``; ``EINVAL``): the caller then copies the usual way."""
    dst = out.fileno()  # flushed by the caller
    mode = _direct_on(dst)
    if mode is None:
        return None
    try:
        return _copy_packed(src, dst, run_starts, run_ends, dest, total, threads, True)
    finally:
        _direct_off(dst, mode)


def _copy_packed(
    src: int,
    dst: int,
    run_starts: np.ndarray,
    run_ends: np.ndarray,
    dest: np.ndarray,
    total: int,
    threads: int,
    direct: bool,
) -> bool | None:
    """Copy the runs to ``dest[0]`` onward in ``dst`` through blocks of this process (the
    compiled :func:`~neardup._kernels.copyout.copy_packed`), ``threads`` threads each writing
    its share of the output (cut at multiples of 4,096 bytes). With ``direct`` (``dst`` opened
    with ``O_DIRECT``) the last block is padded and the file truncated after it, and ``None``
    means that the file system refused the writes. ``False``: the source ended early."""
    base = int(dest[0])
    done = _copy_packed_range(
        src, dst, run_starts, run_ends, dest, base, base + total, threads, direct, direct
    )
    if done is None:
        os.ftruncate(dst, base)
    elif done and direct:
        os.ftruncate(dst, base + total)  # the last block's padding
    return done


def _copy_packed_range(
    src: int,
    dst: int,
    run_starts: np.ndarray,
    run_ends: np.ndarray,
    dest: np.ndarray,
    lo: int,
    hi: int,
    threads: int,
    direct: bool,
    last: bool,
) -> bool | None:
    """The bytes ``[lo, hi)`` of the output that the runs make (run ``i``: the source's bytes
    ``[run_starts[i], run_ends[i])``, written at ``dest[i]``; ``dest`` has one more value, the
    end of the last run). With ``direct``, ``lo`` is a multiple of 4,096 bytes and so is ``hi``
    unless ``last``: the last block is then padded (the caller truncates the file). ``None``:
    the file system refused direct writes; ``False``: the source ended early."""
    from .._kernels.copyout import copy_packed

    total = hi - lo
    shares = max(1, min(threads, total // _PARALLEL_COPY, len(run_starts)))
    # (a cut never before lo: lo need not be a multiple of 4,096 through the page cache)
    cuts = (
        [lo]
        + [
            max(lo, (lo + k * total // shares) // _DIRECT_ALIGN * _DIRECT_ALIGN)
            for k in range(1, shares)
        ]
        + [hi]
    )
    jobs = []
    for k in range(shares):
        a, b = cuts[k], cuts[k + 1]
        if b <= a:
            continue
        r0 = int(np.searchsorted(dest[1:], a, side="right"))  # the run holding byte a
        r1 = int(np.searchsorted(dest[:-1], b, side="left"))  # the runs starting before b
        jobs.append((r0, r1, a, b, direct and last and k == shares - 1))

    # through the page cache: smaller pieces, each sent to disk as soon as it is written, so
    # that the file's fsync waits for the last piece only (17 MB: 13 ms of waiting before),
    # and less fresh memory for the buffers
    block = _DIRECT_BLOCK if direct else _PACKED_BLOCK

    def job(j: tuple) -> int:
        r0, r1, a, b, pad = j
        return copy_packed(
            src, dst, run_starts, run_ends, dest, r0, r1, a, b, pad, block, not direct
        )

    if len(jobs) <= 1:
        codes = [job(j) for j in jobs]
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(jobs), thread_name_prefix="neardup-copy") as pool:
            codes = list(pool.map(job, jobs))
    if direct and any(c == errno.EINVAL for c in codes):  # no direct writes on this system
        return None
    for c in codes:
        if c > 0:
            raise OSError(c, os.strerror(c))
    return not any(c < 0 for c in codes)


def _copy_streaming(
    path: Path,
    out: BinaryIO,
    starts: np.ndarray,
    ends: np.ndarray,
    keep: _Keep,
    first: int,
    threads: int | None = None,
) -> bool:
    """Append the lines ``[starts[i], ends[i])`` of the file ``path`` whose keep flag
    (record ``first + i`` of ``keep.stream``) is true to ``out``, in order, as the flags are
    decided: each time more are, their kept lines are copied (past the page cache where the
    system allows it: :func:`_copy_direct`), up to the last whole block of the output so far.
    ``False`` when the file is shorter than the last line (it changed since it was read)."""
    assert keep.stream is not None
    n = len(starts)
    out.flush()
    dst = out.fileno()
    base = out.tell()
    if threads is None:
        from .._threads import get_num_threads

        threads = get_num_threads()
    src = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    mode = None
    try:
        if n and os.fstat(src).st_size < int(ends[-1]):
            return False
        if base % _DIRECT_ALIGN == 0:
            mode = _direct_on(dst)
        direct = mode is not None
        # the runs of kept lines not yet wholly written: source bytes and place in the output
        r_starts = r_ends = r_dest = np.zeros(0, np.int64)
        pos = done = base  # the end of the output so far, and of what is written
        i = 0
        while True:
            final = i >= n
            if not final:
                j = min(keep.stream.wait(first + i + 1) - first, n)
                flags = keep.array[first + i : first + j]
                s, e = starts[i:j][flags], ends[i:j][flags]
                i = j
                if len(s):
                    rs, re_ = _runs(s, e)
                    sizes = re_ - rs
                    r_starts = np.concatenate((r_starts, rs))
                    r_ends = np.concatenate((r_ends, re_))
                    r_dest = np.concatenate((r_dest, pos + np.cumsum(sizes) - sizes))
                    pos += int(sizes.sum())
            hi = pos if final or not direct else pos // _DIRECT_ALIGN * _DIRECT_ALIGN
            if hi > done:
                dest = np.concatenate((r_dest, [pos]))
                ok = _copy_packed_range(
                    src, dst, r_starts, r_ends, dest, done, hi, threads, direct, final
                )
                if ok is None:  # no direct writes here after all: through the page cache
                    _direct_off(dst, mode)
                    mode = None
                    direct = False
                    os.ftruncate(dst, done)
                    continue
                if not ok:
                    return False
                done = hi
                whole = int(np.searchsorted(dest[1:], done, side="right"))  # written in full
                r_starts, r_ends, r_dest = r_starts[whole:], r_ends[whole:], r_dest[whole:]
            if final:
                break
        if direct and pos > base:
            os.ftruncate(dst, pos)  # the last block's padding
        return True
    finally:
        if mode is not None:
            _direct_off(dst, mode)
        os.close(src)
        out.seek(0, os.SEEK_END)


def _copy_runs(src: int, dst: int, starts: list[int], ends: list[int], dest: list[int]) -> bool:
    """Copy the bytes ``[starts[i], ends[i])`` of ``src`` to ``dest[i]`` onward in ``dst``
    (file descriptors); ``False`` when ``src`` ended early. Every ``_WRITEBACK_EVERY`` bytes the
    kernel is asked to start writing ``dst`` to disk (:class:`_Writeback`)."""
    fast = getattr(os, "copy_file_range", None)
    sync = _sync_file_range()
    pending = 0
    for a, b, o in zip(starts, ends, dest):
        while a < b:
            done = 0
            if fast is not None:
                try:
                    done = fast(src, dst, b - a, a, o)
                except OSError as e:  # another file system, not supported: plain copy
                    if e.errno not in _NO_COPY_RANGE:
                        raise
                    fast = None
                    continue
            else:
                data = os.pread(src, min(b - a, _COPY_BLOCK << 4), a)
                done = len(data)
                view = memoryview(data)
                at = o
                while view:
                    w = os.pwrite(dst, view, at)
                    view, at = view[w:], at + w
            if done == 0:
                return False  # the file ended early
            a, o = a + done, o + done
            pending += done
            if pending >= _WRITEBACK_EVERY and sync is not None:
                pending = 0
                if sync(dst, 0, 0, 2) != 0:  # 2: SYNC_FILE_RANGE_WRITE
                    sync = None
    return True


def _copy_jsonl(
    stream: _RecordStream,
    src: _Source,
    staged: Staged,
    keep: _Keep,
    lines: np.ndarray,
    spans: np.ndarray | None = None,
) -> None:
    """Copy the kept lines of a JSONL source without parsing it again: ``lines`` holds the line
    number of each of its records, in record order, as the first reading found them, and
    ``spans`` (optional) the bytes ``[start, end)`` of each record's line in the file (``-1``
    where unknown). With every kept record's span known, an uncompressed file is copied range
    by range (:func:`_copy_ranges`) instead of being read again."""
    f = staged.file
    assert f is not None
    base = stream.count
    if base + len(lines) > keep.n:
        raise ConfigError(
            f"keep has {keep.n} flags but the inputs hold more records: keep "
            "must come from reading the same inputs with the same options"
        )
    if (
        keep.stream is not None
        and spans is not None
        and src.compression is None
        and hasattr(os, "pwrite")
        and src.path is not None
        and len(lines)
    ):
        # flags still being decided: copy as they come, where every line's bytes are known
        starts, ends = spans[:, 0], spans[:, 1]
        if (
            int(ends[-1]) - int(starts[0]) >= _DIRECT_COPY
            and lines[0] >= 1
            and (np.diff(lines) > 0).all()
            and (starts >= 0).all()
            and (ends > starts).all()
            and (starts[1:] >= ends[:-1]).all()
        ):
            stream.count += len(lines)
            if _copy_streaming(src.path, f, starts, ends, keep, base):
                return
            raise ConfigError(f"{src.name}: is shorter than when it was read: it changed meanwhile")
    keep.ready()
    flags = keep.array[base : base + len(lines)]
    wanted = lines[flags]
    stream.count += len(lines)
    if len(wanted) == 0:
        return
    if wanted[0] < 1 or (np.diff(wanted) <= 0).any():
        raise ConfigError(
            f"{src.name}: the locations of its records are not line numbers in "
            "reading order: they must come from reading the same inputs"
        )
    if (
        spans is not None
        and src.compression is None
        and hasattr(os, "pwrite")
        and src.path is not None
    ):
        kept = spans[flags]
        starts, ends = kept[:, 0], kept[:, 1]
        if (starts >= 0).all() and (ends > starts).all() and (starts[1:] >= ends[:-1]).all():
            if _copy_ranges(src.path, f, starts, ends):
                return
            raise ConfigError(f"{src.name}: is shorter than when it was read: it changed meanwhile")
    with _open_binary(src.path, src.compression) as (raw, data):
        if src.start:  # a part of an uncompressed file (a Dask partition): read from its start
            raw.seek(src.start)
        if _copy_lines(data, _Writeback(f), wanted - src.first_line, _COPY_BLOCK, _LONG_LINE):
            return
    raise ConfigError(f"{src.name}: has fewer lines than when it was read: it changed meanwhile")


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
