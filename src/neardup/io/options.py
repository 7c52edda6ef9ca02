"""How inputs are read and outputs written, as validated frozen objects.

Every reader, writer and engine takes these instead of loose keyword dictionaries, so an option
is checked once, in one place, with one message shape (:mod:`neardup.validate`), and travels
unchanged to a Dask worker (they are picklable).
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._records import record
from ..validate import check_bool, check_choice, check_int, check_str, fail

INPUT_FORMATS = ("jsonl", "json", "csv", "tsv", "parquet", "textdir")
OUTPUT_FORMATS = ("parquet", "jsonl", "csv")
ON_ERROR = ("fail", "skip")


@record(frozen=True)
class ReadOptions:
    """How records are read from the inputs.

    ``text_fields``: the field(s) holding the text (several are joined with a newline);
    ``id_field``: the field holding the id (``None``: the running row number, or a file's path
    inside a folder); ``detect_id``: with ``id_field`` ``None``, a field whose values are the
    ids when every record (of the inputs with fields) has one, a string or an integer, else the
    row numbers; the ids it gives must be distinct (a repeat is an error whatever
    ``on_error`` says: see :class:`~neardup.io.readers.IdInfo`); ``format``: one of :data:`INPUT_FORMATS` (``None``: from each file name);
    ``encoding``: of the text formats; ``on_error``: ``"fail"`` stops at the first bad record,
    ``"skip"`` counts it by reason and goes on; ``chunk_size``: documents per chunk.

    What counts as a record (the defaults take every record as it is):

    - ``skip_empty``: leave out records whose text is empty or only white space, counted as
      ``empty_text`` in the skip report whatever ``on_error`` says;
    - ``max_text_bytes``: a text over this many UTF-8 bytes is a bad record (``text_too_large``);
    - ``default_id``: the id of a record without one, a template of ``{line}`` (the record's
      line, or row, in its file) and ``{name}`` (the file's name), e.g. ``"{line}"`` or
      ``"stdin:{line}"``: used when ``id_field`` is ``None``, and for a JSON line without
      ``id_field``; ``None``: the running record number across all inputs (and a JSON line
      without ``id_field`` is a bad record, ``missing_field``);
    - ``unique_ids``: a record repeating an earlier record's id is a bad record
      (``duplicate_id``); ``False`` leaves that check to the caller (an online index, say).
    """

    text_fields: tuple[str, ...] = ("text",)
    id_field: str | None = None
    detect_id: str | None = None
    format: str | None = None
    encoding: str = "utf-8"
    on_error: str = "fail"
    chunk_size: int = 10_000
    skip_empty: bool = False
    max_text_bytes: int | None = None
    default_id: str | None = None
    unique_ids: bool = True

    # for type checkers, what __init__ takes (the fields above, in step with them): text_fields
    # also as one name or any sequence of names, made a tuple by __post_init__
    if TYPE_CHECKING:

        def __init__(
            self,
            text_fields: str | Sequence[str] = ("text",),
            id_field: str | None = None,
            detect_id: str | None = None,
            format: str | None = None,
            encoding: str = "utf-8",
            on_error: str = "fail",
            chunk_size: int = 10_000,
            skip_empty: bool = False,
            max_text_bytes: int | None = None,
            default_id: str | None = None,
            unique_ids: bool = True,
        ) -> None: ...

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
        if self.detect_id is not None:
            if not isinstance(self.detect_id, str) or not self.detect_id:
                raise fail("detect_id", self.detect_id, "a field name or None")
            if self.id_field is not None or self.default_id is not None:
                raise fail("detect_id", self.detect_id, "None when id_field or default_id is given")
        check_choice("input_format", self.format, INPUT_FORMATS, none=True)
        check_choice("on_error", self.on_error, ON_ERROR)
        check_int("chunk_size", self.chunk_size, 1)
        check_bool("skip_empty", self.skip_empty)
        check_int("max_text_bytes", self.max_text_bytes, 1, none=True)
        check_bool("unique_ids", self.unique_ids)
        if self.default_id is not None:
            check_str("default_id", self.default_id)
            try:
                ok = "{line}" in self.default_id and isinstance(
                    self.default_id.format(line=1, name="x"), str
                )
            except (KeyError, IndexError, ValueError):
                ok = False
            if not ok:
                raise fail(
                    "default_id",
                    self.default_id,
                    'a template holding {line}, e.g. "{line}" or "stdin:{line}" '
                    "(and optionally {name}), or None",
                )
        try:
            codecs.lookup(self.encoding)
        except (LookupError, TypeError):
            raise fail("encoding", self.encoding, "not a known text encoding") from None

    @property
    def fail(self) -> bool:
        return self.on_error == "fail"


def id_options(id_field: str | None) -> dict[str, Any]:
    """The :class:`ReadOptions` keywords of the file jobs' ``id_field`` (``neardup dedup``,
    ``neardup index add``): ``None`` detects the field ``id``, ``""`` means row numbers, a
    name is that field."""
    if id_field is None:
        return {"id_field": None, "detect_id": "id"}
    return {"id_field": id_field or None, "detect_id": None}


@record(frozen=True)
class OutputOptions:
    """What a dedup job writes: the ``clusters`` and ``pairs`` tables in ``format`` (one of
    :data:`OUTPUT_FORMATS`) and, with ``write_corpus``, the deduplicated corpus."""

    format: str = "parquet"
    write_corpus: bool = True

    def __post_init__(self) -> None:
        check_choice("output_format", self.format, OUTPUT_FORMATS)
        check_bool("write_corpus", self.write_corpus)
