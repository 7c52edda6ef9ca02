"""The HTTP service and web page of a :class:`neardup.Index`: ``create_app(index)`` and ``run``.

Needs FastAPI (and uvicorn to serve); see :mod:`neardup.server.app`.
"""

from .app import create_app, run
from .passages import shared_passages

__all__ = ["create_app", "run", "shared_passages"]
