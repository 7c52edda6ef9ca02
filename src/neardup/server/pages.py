"""The service's own routes: its statistics (``/stats``), liveness (``/health``), the API's
documentation (``/docs``), and the web page (``/``) with its files (``/static``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles

from ..index.redact import redact_location
from .guard import ROLE_SCOPE_KEY
from .models import _ERRORS, HealthOut
from .state import Service

STATIC = Path(__file__).parent / "static"


def _shown_stats(stats: dict[str, Any]) -> dict[str, Any]:
    """An index's statistics as ``/stats`` shows them: a URL without its secrets, an SQLite
    file by its name only (not where the server keeps it)."""
    out = dict(stats)
    if isinstance(out.get("url"), str):
        out["url"] = redact_location(out["url"])
    if isinstance(out.get("path"), str):
        out["path"] = Path(out["path"]).name
    return out


def add_service_routes(app: FastAPI, service: Service) -> None:
    """Add ``/stats``, ``/docs`` and ``/health`` to ``app``, about ``service``."""

    @app.get(
        "/stats",
        tags=["service"],
        summary="Index and service statistics",
        responses=_ERRORS,
        dependencies=[service.read, service.there],
    )
    def stats() -> dict[str, Any]:
        """The index's statistics (backend, documents, threshold, bands, ...), request counts
        and the number of collections kept."""
        return jsonable_encoder(
            {
                **_shown_stats(service.index.stats()),
                "requests": service.counts.to_dict(),
                "collections": len(service.collections),
                "process": os.getpid(),
                "collections_kept": service.collections.usage(),
                "limits": {
                    "max_upload_bytes": service.max_upload_bytes,
                    "max_text_bytes": service.max_text_bytes,
                    "max_batch": service.max_batch,
                },
            }
        )

    @app.get("/docs", include_in_schema=False)
    def docs() -> Response:
        """The API's documentation, rendered from its OpenAPI schema (works offline)."""
        from .apidoc import render

        return Response(render(app.openapi()), media_type="text/html; charset=utf-8")

    @app.get("/health", response_model=HealthOut, tags=["service"], summary="Liveness")
    def health(request: Request) -> HealthOut:
        """'ok' and the number of indexed documents (null without a key where the service
        needs one). Needs no key."""
        known = request.scope.get(ROLE_SCOPE_KEY) is not None
        return HealthOut(status="ok", documents=len(service.index) if known else None)


def add_page(app: FastAPI) -> None:
    """Add the web page (``/``) and its files (``/static``) to ``app``."""

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
