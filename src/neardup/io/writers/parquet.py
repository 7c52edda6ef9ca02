"""Parquet output: :func:`parquet_writer`, pyarrow's own writer with the defaults of
``pyarrow.parquet.ParquetWriter``, without importing ``pyarrow.parquet``."""

from __future__ import annotations

from typing import Any, BinaryIO

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
