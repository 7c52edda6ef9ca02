"""The service's exception handlers: every error a JSON ``{"detail": "message"}`` with its
status (422 for invalid fields, naming each; 409, 503 and 507 for the index's errors; a 500
that shows nothing of the error and logs it under the request's id), added to an application by
:func:`add_exception_handlers`."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from fastapi import FastAPI, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from .._log import get_logger
from ..errors import ConfigError, InputError
from ..index import DuplicateIdError, IndexBusyError, IndexChangedError, IndexFullError
from ..index.sqlite import SQLITE_FULL, SQLITE_READONLY
from .front import LOGGED_SCOPE_KEY, request_id
from .guard import _error

#: the logger of the service's application (named as the module that made it)
log = get_logger(f"{__package__}.app")


def _busy(exc: BaseException) -> bool:
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg


def _redis_errors() -> tuple[type[Exception], ...]:
    """The Redis client's errors that mean its server cannot be reached (none without the
    client: no Redis index either)."""
    try:
        import redis.exceptions as rex
    except ImportError:
        return ()
    return (rex.ConnectionError, rex.TimeoutError, rex.BusyLoadingError)


def _unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) says that the Redis server cannot be reached."""
    kinds = _redis_errors()
    if not kinds:
        return False
    seen = exc
    for _ in range(5):
        if isinstance(seen, kinds):
            return True
        under = seen.__cause__ or seen.__context__
        if under is None:
            return False
        seen = under
    return False


def _loc(loc: tuple[Any, ...]) -> str:
    parts = list(loc)
    prefix = ""
    if parts and parts[0] in ("query", "path", "header", "cookie"):
        prefix = f"{parts.pop(0)} parameter "
    elif parts and parts[0] == "body":
        parts.pop(0)
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return prefix + (out or "request body")


#: What a JSON field of a strict type must be, after pydantic's message.
_JSON_TYPES = {
    "bool_type": " (JSON true or false; not a string or a number)",
    "int_type": " (a JSON integer; not true or false, a string or a fraction)",
    "float_type": " (a JSON number; not true or false or a string)",
    "string_type": " (a JSON string)",
}


def _validation_message(errors: list[dict[str, Any]]) -> str:
    msgs = []
    for e in errors[:5]:
        kind = e.get("type", "")
        if kind == "json_invalid":
            err = (e.get("ctx") or {}).get("error", "")
            loc = e.get("loc", ())
            at = f" at character {loc[1]}" if len(loc) > 1 and isinstance(loc[1], int) else ""
            msgs.append(f"the request body is not valid JSON: {err}{at}".rstrip())
        elif kind == "missing" and tuple(e.get("loc", ())) == ("body",):
            msgs.append("the request body is missing: send a JSON object")
        elif kind == "model_attributes_type" and tuple(e.get("loc", ())) == ("body",):
            msgs.append("the request body must be a JSON object")
        else:
            msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
            msgs.append(f"{_loc(tuple(e.get('loc', ())))}: {msg}{_JSON_TYPES.get(kind, '')}")
    if len(errors) > 5:
        msgs.append(f"and {len(errors) - 5} more")
    return "; ".join(msgs)


async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    return JSONResponse(
        {
            "detail": _validation_message(list(errors)),
            "errors": jsonable_encoder(
                [{"loc": e.get("loc"), "msg": e.get("msg"), "type": e.get("type")} for e in errors]
            ),
        },
        status_code=422,
    )


async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    detail = exc.detail
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"no such endpoint: {request.method} {request.url.path} (see /docs for the API)"
    elif exc.status_code == 405:
        detail = f"{request.method} is not allowed on {request.url.path}"
    return JSONResponse(
        {"detail": str(detail)},
        status_code=exc.status_code,
        headers=getattr(exc, "headers", None),
    )


async def _duplicate(request: Request, exc: DuplicateIdError) -> JSONResponse:
    return _error(409, f"id {exc.doc_id!r} is already in the index")


async def _input(request: Request, exc: InputError) -> JSONResponse:
    return _error(422, str(exc))


async def _config(request: Request, exc: ConfigError) -> JSONResponse:
    return _error(422, str(exc))


async def _locked(request: Request, exc: IndexBusyError) -> JSONResponse:
    return _error(503, f"the index is busy: {exc}", {"Retry-After": "1"})


async def _changed(request: Request, exc: IndexChangedError) -> JSONResponse:
    log.error("the index is not there as opened (%s %s): %s", request.method, request.url.path, exc)
    return _error(
        503,
        f"{exc}: this service will not answer from it; restart the "
        "service to serve the backend as it is now",
    )


async def _full(request: Request, exc: IndexFullError) -> JSONResponse:
    log.error("the index has no room (%s %s): %s", request.method, request.url.path, exc)
    return _error(
        507,
        f"the index has no room: {exc}; the operator must free disk space "
        "(or raise the index's size limit)",
    )


async def _sqlite(request: Request, exc: sqlite3.OperationalError) -> JSONResponse:
    rid = request_id(request.scope)
    if _busy(exc):
        log.warning(
            "the index is busy (another process holds its SQLite write lock): "
            "503 to %s %s, request ID %s",
            request.method,
            request.url.path,
            rid,
        )
        return _error(
            503,
            "the index is busy: another process holds its write lock; try again in a moment",
            {"Retry-After": "1"},
        )
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF  # the primary code
    if code == SQLITE_FULL:  # outside a write transaction (the library's own)
        log.error("the index has no room (%s %s): %s", request.method, request.url.path, exc)
        return _error(
            507,
            "the index has no room: the disk is full, or the index file "
            "reached its size limit; nothing was written; the operator "
            "must free disk space (or raise the index's size limit)",
        )
    if code == SQLITE_READONLY:
        log.error("the index cannot be written (%s %s): %s", request.method, request.url.path, exc)
        return _error(
            503,
            "the index's SQLite file cannot be written (a read-only file "
            "system, or no write permission); nothing was written; the "
            "operator must make it writable",
        )
    msg = str(exc).lower()
    if "unable to open" in msg or "disk i/o" in msg:
        log.error(
            "index error on %s %s, request ID %s: %s",
            request.method,
            request.url.path,
            rid,
            exc,
        )
        return _error(
            503,
            "the index's SQLite file cannot be used right now (a disk "
            f"error, see the service's log, request ID {rid}); nothing was "
            "written; try again later",
            {"Retry-After": "5"},
        )
    return _internal_error(request, exc)


def _internal_error(request: Request, exc: Exception) -> JSONResponse:
    rid = request_id(request.scope)
    log.error(
        "internal error on %s %s, request ID %s",
        request.method,
        request.url.path,
        rid,
        exc_info=exc,
    )
    request.scope[LOGGED_SCOPE_KEY] = True
    return _error(
        500,
        f"internal error (reported in the service's log as request ID {rid})",
        {"X-Request-ID": rid},
    )


async def _redis_down(request: Request, exc: Exception) -> JSONResponse:
    rid = request_id(request.scope)
    log.warning(
        "the index's Redis server cannot be reached (%s): 503 to %s %s, request ID %s",
        type(exc).__name__,
        request.method,
        request.url.path,
        rid,
    )
    return _error(
        503,
        "the index's Redis server cannot be reached; try again in a "
        "moment (the service reconnects by itself)",
        {"Retry-After": "5", "X-Request-ID": rid},
    )


async def _internal(request: Request, exc: Exception) -> JSONResponse:
    if _unreachable(exc):  # a Redis error under another one
        return await _redis_down(request, exc)
    return _internal_error(request, exc)


_E = TypeVar("_E", bound=Exception)


def _handle(
    app: FastAPI, kind: type[_E], handler: Callable[[Request, _E], Awaitable[Response]]
) -> None:
    """``app.add_exception_handler(kind, handler)``, typed: Starlette calls ``handler`` with
    instances of ``kind`` only, which its signature (a handler of any Exception) cannot say."""
    app.add_exception_handler(
        kind, cast(Callable[[Request, Exception], Awaitable[Response]], handler)
    )


def add_exception_handlers(app: FastAPI) -> None:
    """Answer every error of ``app``'s endpoints with the handlers above."""
    _handle(app, RequestValidationError, _invalid)
    _handle(app, StarletteHTTPException, _http)
    _handle(app, DuplicateIdError, _duplicate)
    _handle(app, InputError, _input)
    _handle(app, ConfigError, _config)
    _handle(app, IndexBusyError, _locked)
    _handle(app, IndexChangedError, _changed)
    _handle(app, IndexFullError, _full)
    _handle(app, sqlite3.OperationalError, _sqlite)
    for kind in _redis_errors():
        _handle(app, kind, _redis_down)
    _handle(app, Exception, _internal)
