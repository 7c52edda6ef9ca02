"""The one exception hierarchy of neardup, rooted at :class:`NeardupError`."""

from __future__ import annotations


class NeardupError(Exception):
    """Base class of every error neardup raises on purpose."""

    exit_code = 1


class ConfigError(NeardupError, ValueError):
    """A parameter is invalid; the message says which one, what it was and what is allowed."""

    exit_code = 2


class InputError(NeardupError):
    """Bad input data. The message names the file and the line (or row) and field."""

    exit_code = 3

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None, reason: str = "invalid"):
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
        self.reason = reason


class OutputError(NeardupError):
    """An output could not be written (permissions, disk full, existing non-directory)."""

    exit_code = 4
