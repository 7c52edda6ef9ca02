"""What a read reports besides its records: the records (or files) skipped
(:class:`SkipReport`) and where the ids came from (:class:`IdInfo`)."""

from __future__ import annotations

from dataclasses import field
from typing import Any, cast

from ..._records import record
from ...errors import InputError, SkipReason

_MAX_EXAMPLES = 20


@record
class SkipReport:
    """Counts of the records (or whole files) skipped with ``on_error="skip"``, by reason."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def add(self, err: InputError) -> None:
        reason = str(getattr(err, "reason", "invalid"))  # a plain str: JSON writers want one
        self.counts[reason] = self.counts.get(reason, 0) + 1
        if len(self.examples) < _MAX_EXAMPLES:
            self.examples.append(str(err))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def to_dict(self) -> dict:
        return {
            "total": self.total,
            "by_reason": dict(sorted(self.counts.items())),
            "examples": list(self.examples),
        }


@record
class IdInfo:
    """Where the ids of a read came from, filled in by the reader as it goes.

    ``field``: the field given (``id_field``) or detected (``detected``: ``detect_id``, taken
    because every record read so far has one). ``missing``: where the first record without
    the detected field was (``"a.jsonl:17"``): from there on, and for every record before it
    (see :meth:`fix`), the ids are row numbers; ``fallback_row``: that record's number.
    ``file_names``: some input is a folder of text files (its ids are the files' paths).
    ``repeat``: with a detected field, the first id that repeats (an error at the end of the
    read unless a record without the field turns the ids into row numbers)."""

    field: str | None = None
    detected: bool = False
    missing: str | None = None
    fallback_row: int | None = None
    file_names: bool = False
    field_inputs: bool = False  # some input has fields (not a folder of text files)
    repeat: tuple[str, str, str, int | None, int] | None = None  # id, first at, again at,
    # its line and row
    textdir_sources: frozenset[int] = frozenset()

    @property
    def from_field(self) -> bool:
        return self.field is not None and self.missing is None

    def fix(self, ids: list[str], locations: Any) -> None:
        """After a detected field gave way to row numbers: the ids given before that record
        (``ids``: all rows in order, ``locations``: their ``(source << 40) | line``), except
        the file names of folders, become row numbers too."""
        if not self.fallback_row:
            return
        import numpy as np

        src = np.asarray(locations[: self.fallback_row], np.int64) >> 40
        rows = np.arange(self.fallback_row)
        if self.textdir_sources:
            rows = rows[~np.isin(src, list(self.textdir_sources))]
        for r in rows.tolist():
            ids[r] = str(r)

    def to_dict(self) -> dict[str, Any]:
        """The ``ids`` section of a summary: ``from`` (``"field"``, ``"row numbers"``, ``"file
        names"``, or two of them joined by ``" and "`` for a folder with other inputs),
        ``field``, ``detected`` and, where a detected field was not used, ``missing``."""
        parts = []
        if self.field_inputs:
            parts.append("field" if self.from_field else "row numbers")
        if self.file_names:
            parts.append("file names")
        field = self.from_field and self.field_inputs
        return {
            "from": " and ".join(parts) or "row numbers",
            "field": self.field if field else None,
            "detected": self.detected and field,
            **(
                {"missing": f"no field {self.field!r} at {self.missing}"}
                if self.detected and self.missing
                else {}
            ),
        }

    def repeat_error(self) -> InputError | None:
        """The error of a repeated id of a detected field, if the ids are that field's."""
        if self.repeat is None or not self.from_field or not self.detected:
            return None
        x, first, again, line, _row = self.repeat
        return repeat_error(cast(str, self.field), x, first, again, line)  # from_field: set


def repeat_error(field: str, x: str, first: str, path: str, line: int | None) -> InputError:
    """A detected id field whose id ``x`` repeats at ``path``/``line``, first seen at
    ``first``: an error whatever ``on_error`` says (the field may be no id at all)."""
    return InputError(
        f"id {x!r} repeats (first at {first}): the ids are taken from the field {field!r}, "
        f"which every record has, and must be distinct; give --id-field '' (id_field='') for "
        f"row numbers, or --id-field FIELD for another field",
        path=path,
        line=line,
        field=field,
        reason=SkipReason.DUPLICATE_ID,
    )


def ids_text(ids: dict[str, Any]) -> str:
    """The ``ids`` section of a summary in words, for the command line."""
    f = ids.get("field")
    text = ids["from"].replace("field", f"field {f!r}" if f else "field")
    if ids.get("detected"):
        text += " (found in every record)"
    if ids.get("missing"):
        text += f" ({ids['missing']})"
    return text
