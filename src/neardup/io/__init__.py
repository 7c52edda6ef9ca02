"""Input and output: streaming document readers and atomic table / corpus writers."""

from .readers import (
    INPUT_FORMATS,
    DocChunk,
    SkipReport,
    detect_format,
    read_documents,
    total_input_bytes,
)
from .writers import OUTPUT_FORMATS, write_deduplicated, write_json_atomic, write_table

__all__ = [
    "SkipReport", "DocChunk", "detect_format", "total_input_bytes", "read_documents",
    "write_table", "write_json_atomic", "write_deduplicated", "INPUT_FORMATS", "OUTPUT_FORMATS",
]
