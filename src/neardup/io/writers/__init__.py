"""Atomic writers: result tables (Parquet, JSONL, CSV), JSON summaries and the deduplicated
corpus in the inputs' own formats.

Every file is written under a temporary name in its final directory (``.<name>.<random>.tmp``),
flushed and fsync'ed, then renamed with :func:`os.replace`; on any error the temporary file is
removed and the error re-raised (an :class:`OSError` becomes an :class:`OutputError` naming the
path), so a reader never sees a half-written output.

The modules: :mod:`.staged` (atomic files and folders), :mod:`.tables` (result tables, with
:mod:`.arrow`, :mod:`.parquet` and :mod:`.jsonl`), :mod:`.summary` (JSON summaries),
:mod:`.corpus` (the deduplicated corpus, with :mod:`.keep`, its keep flags, and
:mod:`.copying`, the copy of the kept lines of a JSONL input).
"""

from __future__ import annotations

from ..options import OUTPUT_FORMATS

# arrow_array, take_strings and parquet_writer: public, though not in __all__ (as before)
from .arrow import arrow_array as arrow_array
from .arrow import arrow_table
from .arrow import take_strings as take_strings
from .corpus import concat_files, deduplicated_names, write_deduplicated, write_deduplicated_part
from .jsonl import write_jsonl_table
from .keep import KeepStream
from .parquet import parquet_writer as parquet_writer
from .staged import Staged, prepare_outdir
from .summary import write_json_atomic
from .tables import TableStream, write_table, write_table_parts

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
    "write_table_parts",
]
