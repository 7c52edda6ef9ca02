"""Streaming readers for JSONL, CSV/TSV, Parquet and directories of text files.

Everything here is built on one record stream (:class:`RecordStream`) that turns inputs into
records ``(index, id, text, raw, line)``. :func:`read_documents` groups them into
:class:`DocChunk` objects; :func:`neardup.io.writers.write_deduplicated` walks the very same
stream a second time and uses ``raw`` to copy the kept records, so both passes agree on which
records exist, which are skipped and how they are numbered. The web service's upload and
``neardup stream`` read through it too: an input is a path (or several), the bytes of a file, or
a binary file object such as ``sys.stdin.buffer`` (read a line at a time, as lines arrive).
Every record or file left out has a :class:`~neardup.errors.SkipReason`.

Line-oriented formats (JSONL, CSV, TSV) are split into lines on the byte ``b"\\n"`` before
decoding, so their ``encoding`` must be ASCII-compatible (UTF-8, Latin-1, cp1252, ...); a UTF-8
byte order mark at the start of a file is ignored.

The package holds one module per format (:mod:`.jsonl` and, for its batch path,
:mod:`.jsonl_blocks`; :mod:`.json_array`, :mod:`.csv_tsv`, :mod:`.parquet`, :mod:`.textdir`),
what they share (:mod:`.base`), format detection and sources (:mod:`.sources`), what a read
reports (:mod:`.reports`), the record stream (:mod:`.stream`) and the documents in chunks
(:mod:`.documents`). The public names of the former module are all exported here.
"""

from __future__ import annotations

# The public names of the former module, from their new homes (``X as X``: exported, though
# not in ``__all__``), and the private names that neardup.io.writers imports from here.
from ..options import INPUT_FORMATS
from ..options import ReadOptions as ReadOptions
from .base import _open_binary as _open_binary
from .base import _Source as _Source
from .base import utf8_len
from .documents import DocChunk, read_documents
from .documents import arrow_text_bytes as arrow_text_bytes
from .documents import read_all as read_all
from .jsonl_blocks import ArrowBatch as ArrowBatch
from .reports import IdInfo as IdInfo
from .reports import SkipReport
from .reports import ids_text as ids_text
from .reports import repeat_error as repeat_error
from .sources import (
    Source,
    detect_format,
    format_of_name,
    parquet_shards,
    split_compression,
    total_input_bytes,
)
from .stream import JSONL_BLOCK_BYTES as JSONL_BLOCK_BYTES
from .stream import JSONL_FIRST_BLOCK_BYTES as JSONL_FIRST_BLOCK_BYTES
from .stream import FilePart, Record, RecordStream, record_stream
from .stream import _Record as _Record
from .stream import _RecordStream as _RecordStream

__all__ = [
    "SkipReport",
    "DocChunk",
    "FilePart",
    "Record",
    "RecordStream",
    "Source",
    "detect_format",
    "format_of_name",
    "parquet_shards",
    "split_compression",
    "total_input_bytes",
    "read_documents",
    "record_stream",
    "utf8_len",
    "INPUT_FORMATS",
]
