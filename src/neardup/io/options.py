"""How inputs are read and outputs written, as validated frozen objects.

Every reader, writer and engine takes these instead of loose keyword dictionaries, so an option
is checked once, in one place, with one message shape (:mod:`neardup.validate`), and travels
unchanged to a Dask worker (they are picklable).
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import Any

from ..validate import check_bool, check_choice, check_int, fail

INPUT_FORMATS = ("jsonl", "csv", "tsv", "parquet", "textdir")
OUTPUT_FORMATS = ("parquet", "jsonl", "csv")
ON_ERROR = ("fail", "skip")


@dataclass(frozen=True)
class ReadOptions:
    """How records are read from the inputs.

    ``text_fields``: the field(s) holding the text (several are joined with a newline);
    ``id_field``: the field holding the id (``None``: the running row number, or a file's path
    inside a folder); ``format``: one of :data:`INPUT_FORMATS` (``None``: from each file name);
    ``encoding``: of the text formats; ``on_error``: ``"fail"`` stops at the first bad record,
    ``"skip"`` counts it by reason and goes on; ``chunk_size``: documents per chunk.
    """

    text_fields: tuple[str, ...] = ("text",)
    id_field: str | None = None
    format: str | None = None
    encoding: str = "utf-8"
    on_error: str = "fail"
    chunk_size: int = 10_000

    def __post_init__(self) -> None:
        tf: Any = self.text_fields
        if isinstance(tf, str):
            tf = (tf,)
        try:
            tf = tuple(tf)
        except TypeError:
            raise fail("text_fields", self.text_fields, "one or more field names") from None
        if not tf or not all(isinstance(f, str) and f for f in tf):
            raise fail("text_fields", tf, "one or more field names")
        object.__setattr__(self, "text_fields", tf)
        if self.id_field is not None and (not isinstance(self.id_field, str) or not self.id_field):
            raise fail("id_field", self.id_field, "a field name or None")
        check_choice("input_format", self.format, INPUT_FORMATS, none=True)
        check_choice("on_error", self.on_error, ON_ERROR)
        check_int("chunk_size", self.chunk_size, 1)
        try:
            codecs.lookup(self.encoding)
        except (LookupError, TypeError):
            raise fail("encoding", self.encoding, "not a known text encoding") from None

    @property
    def fail(self) -> bool:
        return self.on_error == "fail"


@dataclass(frozen=True)
class OutputOptions:
    """What a dedup job writes: the ``clusters`` and ``pairs`` tables in ``format`` (one of
    :data:`OUTPUT_FORMATS`) and, with ``write_corpus``, the deduplicated corpus."""

    format: str = "parquet"
    write_corpus: bool = True

    def __post_init__(self) -> None:
        check_choice("output_format", self.format, OUTPUT_FORMATS)
        check_bool("write_corpus", self.write_corpus)
