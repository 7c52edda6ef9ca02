"""The HTTP service and web page of a :class:`neardup.Index`: ``create_app(index)`` and ``run``.

Needs the ``server`` extra (FastAPI, uvicorn, python-multipart: ``pip install
'neardup[server]'``); without it, importing this package raises
:class:`~neardup._extras.MissingExtraError`, whose message says so.
"""

from .._extras import MissingExtraError, available, require

for _module in ("fastapi", "uvicorn"):
    require(_module, "server", "the neardup web service")
if not (available("python_multipart") or available("multipart")):
    raise MissingExtraError("the neardup web service", "server", "python_multipart")

from .app import create_app  # noqa: E402
from .passages import shared_passages  # noqa: E402
from .serve import run  # noqa: E402

__all__ = ["create_app", "run", "shared_passages"]
