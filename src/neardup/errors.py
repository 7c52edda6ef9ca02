"""The one exception hierarchy of neardup, rooted at :class:`NeardupError`, and the reasons
(:class:`SkipReason`) for which a record or a whole input is skipped or rejected."""

from __future__ import annotations

from enum import Enum


class SkipReason(str, Enum):
    """Why a record, or a whole input file, is skipped (``on_error="skip"``) or rejected.

    A member is a string (``SkipReason.MALFORMED_JSON == "malformed_json"``), written as that
    string in JSON, summaries and messages; ``description`` says it in words. The same names
    are used by the readers of :mod:`neardup.io`, the summaries of ``neardup dedup`` and the
    upload of the web service:

    ==================== ======================================================================
    ``malformed_json``   a JSON line that does not parse
    ``not_object``       a JSON line that is not an object
    ``undecodable``      bytes that are not valid in the input's encoding, or text that is not
                         valid Unicode (a lone surrogate)
    ``bad_row``          a CSV/TSV row that does not parse or has the wrong number of fields
    ``missing_field``    a record without the text or id field, or a header or schema without
                         that column
    ``non_string_field`` a text field that is not a string (a number, null, ...)
    ``bad_id``           an id that is not a string or an integer (or an empty id, where ids
                         must not be empty)
    ``duplicate_id``     an id already given to an earlier record
    ``empty_text``       a text that is empty or only white space (when empty texts are skipped)
    ``text_too_large``   a text over the limit of UTF-8 bytes per text
    ``empty_file``       a file (or folder) that holds no record
    ``unreadable``       a file that cannot be opened or read to its end (an I/O error, corrupt
                         compressed data, a broken Parquet file)
    ``missing_path``     an input path that does not exist
    ``unknown_format``   an input whose format cannot be told from its name, or is not supported
    ``not_a_directory``  a file given where a folder of text files is expected
    ==================== ======================================================================
    """

    description: str

    def __new__(cls, value: str, description: str) -> SkipReason:
        member = str.__new__(cls, value)
        member._value_ = value
        member.description = description
        return member

    # The plain string, also in f-strings and str() (Python 3.12 would otherwise write
    # "SkipReason.MALFORMED_JSON" for a str-mixin enum).
    __str__ = str.__str__

    def __format__(self, format_spec: str) -> str:
        return str.__format__(self, format_spec)

    MALFORMED_JSON = "malformed_json", "a JSON line that does not parse"
    NOT_OBJECT = "not_object", "a JSON line that is not an object"
    UNDECODABLE = (
        "undecodable",
        "bytes that are not valid in the input's encoding, or text "
        "that is not valid Unicode (a lone surrogate)",
    )
    BAD_ROW = ("bad_row", "a CSV/TSV row that does not parse or has the wrong number of fields")
    MISSING_FIELD = (
        "missing_field",
        "a record without the text or id field, or a header or schema without that column",
    )
    NON_STRING_FIELD = (
        "non_string_field",
        "a text field that is not a string (a number, null, ...)",
    )
    BAD_ID = (
        "bad_id",
        "an id that is not a string or an integer (or an empty id, where ids must not be empty)",
    )
    DUPLICATE_ID = "duplicate_id", "an id already given to an earlier record"
    EMPTY_TEXT = (
        "empty_text",
        "a text that is empty or only white space (when empty texts are skipped)",
    )
    TEXT_TOO_LARGE = "text_too_large", "a text over the limit of UTF-8 bytes per text"
    EMPTY_FILE = "empty_file", "a file (or folder) that holds no record"
    UNREADABLE = (
        "unreadable",
        "a file that cannot be opened or read to its end (an I/O "
        "error, corrupt compressed data, a broken Parquet file)",
    )
    MISSING_PATH = "missing_path", "an input path that does not exist"
    UNKNOWN_FORMAT = (
        "unknown_format",
        "an input whose format cannot be told from its name, or is not supported",
    )
    NOT_A_DIRECTORY = ("not_a_directory", "a file given where a folder of text files is expected")


class NeardupError(Exception):
    """Base class of every error neardup raises on purpose."""

    exit_code = 1


class ConfigError(NeardupError, ValueError):
    """A parameter is invalid; the message says which one, what it was and what is allowed."""

    exit_code = 2


class InputError(NeardupError):
    """Bad input data. The message names the file and the line (or row) and field.

    ``reason``: a :class:`SkipReason` (a plain string naming a member becomes that member;
    other strings, such as the offer loaders' own reasons, are kept as they are). ``detail``:
    the message without the file and line in front (what a caller that shows the line itself
    prints). ``whole_file``: the error is about a whole input (it cannot be read, is empty, or
    its header or schema lacks a column), not about one record.
    """

    exit_code = 3

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
        reason: SkipReason | str = "invalid",
        whole_file: bool = False,
    ):
        where = ""
        if path is not None:
            where = str(path)
            if line is not None:
                where += f":{line}"
            where += ": "
        if field is not None:
            message = f"field {field!r}: {message}"
        super().__init__(where + message)
        self.path = path
        self.line = line
        self.field = field
        self.detail = message
        self.whole_file = whole_file
        if not isinstance(reason, SkipReason):
            try:
                # a lookup by value; mypy takes the call for one to the two-argument __new__
                reason = SkipReason(reason)  # type: ignore[call-arg]
            except ValueError:
                pass
        self.reason: SkipReason | str = reason


class OutputError(NeardupError):
    """An output could not be written (permissions, disk full, existing non-directory)."""

    exit_code = 4
