"""Input and output: streaming document readers and atomic table / corpus writers.

The options and format names load at once; the readers and writers (orjson, numpy) on first
use, so that the command line can list the formats without loading them.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from .options import (
    INPUT_FORMATS,
    ON_ERROR,
    OUTPUT_FORMATS,
    OutputOptions,
    ReadOptions,
    id_options,
)

_LAZY = {
    "DocChunk": ".readers",
    "FilePart": ".readers",
    "Record": ".readers",
    "RecordStream": ".readers",
    "SkipReport": ".readers",
    "IdInfo": ".readers",
    "ids_text": ".readers",
    "Source": ".readers",
    "detect_format": ".readers",
    "format_of_name": ".readers",
    "read_documents": ".readers",
    "read_all": ".readers",
    "record_stream": ".readers",
    "split_compression": ".readers",
    "total_input_bytes": ".readers",
    "utf8_len": ".readers",
    "Staged": ".writers",
    "TableStream": ".writers",
    "concat_files": ".writers",
    "deduplicated_names": ".writers",
    "prepare_outdir": ".writers",
    "write_deduplicated": ".writers",
    "write_deduplicated_part": ".writers",
    "write_json_atomic": ".writers",
    "write_table": ".writers",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    setattr(sys.modules[__name__], name, value)
    return value


if TYPE_CHECKING:
    from .readers import (
        DocChunk,
        FilePart,
        IdInfo,
        Record,
        RecordStream,
        SkipReport,
        Source,
        detect_format,
        format_of_name,
        ids_text,
        read_all,
        read_documents,
        record_stream,
        split_compression,
        total_input_bytes,
        utf8_len,
    )
    from .writers import (
        Staged,
        TableStream,
        concat_files,
        deduplicated_names,
        prepare_outdir,
        write_deduplicated,
        write_deduplicated_part,
        write_json_atomic,
        write_table,
    )

__all__ = [
    "INPUT_FORMATS",
    "OUTPUT_FORMATS",
    "ON_ERROR",
    "ReadOptions",
    "OutputOptions",
    "id_options",
    "SkipReport",
    "IdInfo",
    "ids_text",
    "DocChunk",
    "FilePart",
    "Record",
    "RecordStream",
    "Source",
    "detect_format",
    "format_of_name",
    "split_compression",
    "total_input_bytes",
    "read_documents",
    "read_all",
    "record_stream",
    "utf8_len",
    "Staged",
    "TableStream",
    "prepare_outdir",
    "write_table",
    "write_json_atomic",
    "write_deduplicated",
    "write_deduplicated_part",
    "deduplicated_names",
    "concat_files",
]
