"""Input and output: streaming document readers and atomic table / corpus writers."""

from .options import INPUT_FORMATS, ON_ERROR, OUTPUT_FORMATS, OutputOptions, ReadOptions
from .readers import (
    DocChunk,
    FilePart,
    Record,
    RecordStream,
    SkipReport,
    Source,
    detect_format,
    format_of_name,
    read_documents,
    record_stream,
    split_compression,
    total_input_bytes,
    utf8_len,
)
from .writers import (
    Staged,
    TableStream,
    prepare_outdir,
    write_deduplicated,
    write_json_atomic,
    write_table,
)

__all__ = [
    "INPUT_FORMATS", "OUTPUT_FORMATS", "ON_ERROR", "ReadOptions", "OutputOptions",
    "SkipReport", "DocChunk", "FilePart", "Record", "RecordStream", "Source", "detect_format",
    "format_of_name", "split_compression", "total_input_bytes", "read_documents",
    "record_stream", "utf8_len",
    "Staged", "TableStream", "prepare_outdir", "write_table", "write_json_atomic",
    "write_deduplicated",
]
