"""The library's logging: every module that logs takes its logger from :func:`get_logger`, a
child of the ``"neardup"`` logger, which has a :class:`logging.NullHandler` so that nothing is
shown unless the application configures logging (the command line prints its own summaries).
``import neardup`` alone does not import :mod:`logging` (it would slow ``neardup --help``)."""

from __future__ import annotations

import logging

_root = logging.getLogger("neardup")
if not any(isinstance(h, logging.NullHandler) for h in _root.handlers):
    _root.addHandler(logging.NullHandler())


def get_logger(name: str) -> logging.Logger:
    """The logger of module ``name`` (``__name__``)."""
    return logging.getLogger(name)
