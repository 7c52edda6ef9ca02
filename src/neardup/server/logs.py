"""The log of ``neardup serve``: where it goes (stderr, or a file that logrotate may move away:
it is reopened when that happens), its level and its format, one line a record::

    2025-01-31 12:00:00,123 INFO neardup.access: 127.0.0.1:50312 "POST /query" 200 3.1 ms, ...

The service's loggers (``neardup.*``) and uvicorn's (``uvicorn.*``, its startup and protocol
warnings; its access log is replaced by ``neardup.access``, which leaves query strings out)
write there. What is logged never holds an API key or a document's text; a password in a URL
is masked on the way out as well."""

from __future__ import annotations

import logging
import logging.handlers
import re
import sys
from pathlib import Path

#: the levels ``--log-level`` takes
LEVELS = ("debug", "info", "warning", "error")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: the loggers the service's log receives
LOGGERS = ("neardup", "uvicorn")

_URL_PASSWORD = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)[^@\s/]*@")


class _MaskPasswords(logging.Formatter):
    """The format above, with the password of any ``scheme://user:password@host`` masked."""

    def format(self, record: logging.LogRecord) -> str:
        return _URL_PASSWORD.sub(r"\1***@", super().format(record))


#: what :func:`configure` changed, per logger (level, propagate), for :func:`reset`
_before: dict[str, tuple[int, bool]] = {}


def configure(level: str = "info", file: str | Path | None = None) -> logging.Handler:
    """Send the service's log to ``file`` (appended to; reopened when it is moved or removed,
    as logrotate does) or to stderr, from ``level`` up. Called again, it replaces the handler
    it set before; :func:`reset` undoes it."""
    if level.lower() not in LEVELS:
        raise ValueError(f"log level {level!r}: use one of {', '.join(LEVELS)}")
    handler: logging.Handler
    if file is not None:
        handler = logging.handlers.WatchedFileHandler(file, encoding="utf-8", delay=False)
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_MaskPasswords(FORMAT))
    handler.set_name("neardup-serve")
    number = getattr(logging, level.upper())
    _remove()
    for name in LOGGERS:
        logger = logging.getLogger(name)
        _before.setdefault(name, (logger.level, logger.propagate))
        logger.addHandler(handler)
        logger.setLevel(number)
        logger.propagate = False
    return handler


def name_process(label: str) -> None:
    """Mark every record of this process with ``label`` (a worker of ``neardup serve
    --workers``: ``worker 2``), after the logger's name."""
    fmt = _MaskPasswords(FORMAT.replace("%(name)s:", f"%(name)s [{label}]:"))
    for name in LOGGERS:
        for h in logging.getLogger(name).handlers:
            if h.get_name() == "neardup-serve":
                h.setFormatter(fmt)


def reset() -> None:
    """Undo :func:`configure`: its handler closed, the loggers as they were."""
    _remove()
    for name, (level, propagate) in _before.items():
        logger = logging.getLogger(name)
        logger.setLevel(level)
        logger.propagate = propagate
    _before.clear()


def _remove() -> None:
    for name in LOGGERS:
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if h.get_name() == "neardup-serve"]:
            logger.removeHandler(old)
            old.close()
