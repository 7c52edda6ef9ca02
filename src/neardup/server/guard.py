"""The service's middleware and access checks: :class:`_Guard` (ASGI middleware: the Host
allow-list, the Origin of state-changing requests, the API key, body limits and content types,
request counts), :class:`_Cors` (CORS with JSON refusals) and the dependencies of endpoints that
need a read or a write key (:func:`_role_dependencies`)."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import field
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request, Security
from fastapi.responses import JSONResponse, Response
from fastapi.security import APIKeyHeader, HTTPBearer
from starlette.middleware.cors import CORSMiddleware

from .._records import record
from .access import ApiKeys, HostRules, Role, allows, origin_allowed
from .front import add_headers, request_id
from .memory import BODY_MEMORY_BYTES, BodyBudget, MemoryCeiling

_JSON_ENDPOINTS = frozenset({"/documents", "/documents:batch", "/query", "/check"})
_UPLOAD_ENDPOINTS = frozenset({"/collections"})
#: The endpoints that read a request body (POST only).
_BODY_ENDPOINTS = _JSON_ENDPOINTS | _UPLOAD_ENDPOINTS
#: What anyone may fetch without a key: the page and its files, liveness, the API's
#: documentation (the page asks for a key when the API answers 401).
PUBLIC_PATHS = frozenset({"/", "/health", "/docs", "/openapi.json"})
PUBLIC_PREFIXES = ("/static/",)
#: Methods that change nothing: no Origin check.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Where the middleware leaves the role of the request's key for the endpoints.
ROLE_SCOPE_KEY = "neardup.role"


#: How keys are sent, for the OpenAPI schema (the middleware reads them; see ``_key_of``).
_BEARER = HTTPBearer(
    auto_error=False, scheme_name="bearer", description="An API key: `Authorization: Bearer KEY`."
)
_X_API_KEY = APIKeyHeader(
    name="X-API-Key",
    auto_error=False,
    scheme_name="apiKey",
    description="An API key: `X-API-Key: KEY`.",
)
_WHAT_WRITE_DOES = "to add or delete documents and to upload collections"


def _role_dependencies(api_keys: ApiKeys | None) -> tuple[Any, Any]:
    """The dependencies of endpoints that need a read key and a write key; each gives the
    role of the request's key (``write`` for everyone where the service has no keys)."""

    def need(needed: Role) -> Any:
        if api_keys is None:

            def everyone() -> Role:
                return "write"

            return Depends(everyone)

        def dep(
            request: Request,
            _bearer: Annotated[Any, Security(_BEARER)],
            _key: Annotated[Any, Security(_X_API_KEY)],
        ) -> Role:
            role = request.scope.get(ROLE_SCOPE_KEY)
            if role is None:  # the middleware refuses these first; kept as a guard
                raise HTTPException(
                    401,
                    "this service needs an API key: send it as 'Authorization: Bearer KEY'",
                    headers={"WWW-Authenticate": 'Bearer realm="neardup"'},
                )
            if not allows(role, needed):
                raise HTTPException(
                    403,
                    f"this needs an API key with the {needed} role "
                    f"({_WHAT_WRITE_DOES}); the key sent has the "
                    f"{role} role",
                )
            return role

        return Depends(dep)

    return need("read"), need("write")


# ---------------------------------------------------------------------------------------------
# Request counts


@record
class _Counts:
    """Request counts for ``/stats``."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    total: int = 0
    by_endpoint: Counter = field(default_factory=Counter)
    by_status: Counter = field(default_factory=Counter)

    def add(self, endpoint: str, status: int) -> None:
        with self.lock:
            self.total += 1
            self.by_endpoint[endpoint] += 1
            self.by_status[str(status)] += 1

    def to_dict(self) -> dict[str, Any]:
        with self.lock:
            return {
                "total": self.total,
                "by_endpoint": dict(sorted(self.by_endpoint.items())),
                "by_status": dict(sorted(self.by_status.items())),
            }


# ---------------------------------------------------------------------------------------------
# Body limits, content types and request counts


class _Guard:
    """ASGI middleware, in this order: the Host allow-list, the Origin of state-changing
    requests, the API key (its role left in the scope for the endpoints), the body size limit
    (Content-Length and bytes actually sent), content type and UTF-8 of JSON bodies; and request
    counts. Refusals come before the body is read. Reads the body once and replays it."""

    def __init__(
        self,
        app: Callable[..., Awaitable[None]],
        max_upload_bytes: int,
        counts: _Counts,
        hosts: HostRules,
        origins: list[str],
        api_keys: ApiKeys | None,
        body_seconds: float = 30.0,
        bodies: BodyBudget | None = None,
        ceiling: MemoryCeiling | None = None,
    ):
        self.app = app
        self.body_seconds = body_seconds
        self.limit = max_upload_bytes
        self.bodies = bodies or BodyBudget(BODY_MEMORY_BYTES)
        self.ceiling = ceiling or MemoryCeiling(None)
        self.counts = counts
        self.hosts = hosts
        self.origins = origins
        self.api_keys = api_keys

    async def __call__(
        self, scope: MutableMapping[str, Any], receive: Callable, send: Callable
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = [500]
        keys = self.api_keys  # a key sent as the request ID is not taken (nor logged)
        rid = request_id(scope, None if keys is None else lambda v: keys.role(v) is not None)

        async def send_counting(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                add_headers(message, rid)
            await send(message)

        held = [0]  # body bytes reserved in the budget, given back when the request is done
        try:
            error = await self._check(scope, receive, held)
            if isinstance(error, JSONResponse):
                await error(scope, receive, send_counting)
            else:
                await self.app(scope, error, send_counting)
        finally:
            if held[0]:
                self.bodies.give(held[0])
            endpoint = scope.get("endpoint")
            self.counts.add(getattr(endpoint, "__name__", "other"), status[0])

    async def _check(
        self, scope: MutableMapping[str, Any], receive: Callable, held: list[int]
    ) -> JSONResponse | Callable:
        """A response refusing the request, or the ``receive`` to run it with (the bytes of
        its body reserved in the budget go into ``held``)."""
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        method, path = scope["method"], scope["path"]
        refused = self._access(scope, headers, method, path)
        if refused is not None:
            return refused
        length = headers.get("content-length")
        if length is not None:
            if not length.strip().isdigit():
                return _error(400, f"Content-Length {length!r} is not a number")
            if int(length) > self.limit:
                return _error(
                    413, f"the request body is {int(length)} bytes; the limit is {self.limit} bytes"
                )
        if method == "POST" and (path in _JSON_ENDPOINTS or path in _UPLOAD_ENDPOINTS):
            ctype = headers.get("content-type", "")
            media = ctype.split(";")[0].strip().lower()
            if (
                path in _JSON_ENDPOINTS
                and ctype
                and not (media == "application/json" or media.endswith("+json"))
            ):
                return _error(
                    415,
                    f"{path} takes a JSON body: send Content-Type: "
                    f"application/json (got {ctype!r})",
                )
            if (
                path in _JSON_ENDPOINTS
                and "charset=" in ctype.lower()
                and ctype.lower().split("charset=")[1].strip(" \"'").split(";")[0]
                not in ("utf-8", "utf8")
            ):
                return _error(415, f"{path} takes UTF-8 JSON (got {ctype!r})")
            if path in _UPLOAD_ENDPOINTS and media != "multipart/form-data":
                return _error(
                    415,
                    f"{path} takes a multipart/form-data upload with a 'file' "
                    f"field (got {ctype or 'no Content-Type'!r})",
                )
        if method != "POST" or path not in _BODY_ENDPOINTS:
            # no endpoint here reads a body: none is waited for (a slow body sent to the page
            # or to /health must not hold a request slot)
            return receive
        if self.ceiling.over():
            return _error(
                503,
                "the service is at its memory limit (--max-memory-mb) and "
                "takes no new work until it falls; try again in a moment",
                {"Retry-After": "5"},
            )
        # Read the whole body (bounded) so that its size and encoding are known before parsing;
        # a client that stops sending gets a 408 instead of holding the request open. The
        # bodies held at once stay within their budget: the announced length is reserved
        # before anything is read, a body without one as it arrives.
        if length is not None and not self._reserve(int(length), held):
            return self._bodies_full()
        chunks: list[bytes] = []
        size = 0
        deadline = asyncio.get_running_loop().time() + self.body_seconds
        while True:
            left = deadline - asyncio.get_running_loop().time()
            try:
                message = await asyncio.wait_for(receive(), timeout=max(left, 0.001))
            except asyncio.TimeoutError:
                return _error(
                    408,
                    f"the request body did not arrive within "
                    f"{self.body_seconds:g} s: send it at once",
                    {"Connection": "close", "Retry-After": "1"},
                )
            if message["type"] == "http.disconnect":
                return _error(400, "the client disconnected before sending the whole body")
            body = message.get("body", b"")
            size += len(body)
            if size > self.limit:
                return _error(413, f"the request body is over the limit of {self.limit} bytes")
            if size > held[0] and not self._reserve(size - held[0], held):
                return self._bodies_full()
            chunks.append(body)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if method == "POST" and path in _JSON_ENDPOINTS and body:
            try:
                body.decode("utf-8")
            except UnicodeDecodeError as e:
                return _error(400, f"the request body is not valid UTF-8 (byte {e.start + 1})")
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay

    def _reserve(self, n: int, held: list[int]) -> bool:
        if not self.bodies.take(n):
            return False
        held[0] += n
        return True

    def _bodies_full(self) -> JSONResponse:
        return _error(
            503,
            f"the service is receiving its limit of "
            f"{self.bodies.limit / 1e6:g} MB of request bodies at once "
            "(--body-memory-mb); try again in a moment",
            {"Retry-After": "2"},
        )

    def _access(
        self, scope: MutableMapping[str, Any], headers: dict[str, str], method: str, path: str
    ) -> JSONResponse | None:
        """A refusal for the Host, the Origin or the key, or None (the role is then in the
        scope)."""
        host = headers.get("host")
        if not self.hosts.allows(host):
            return _error(
                400,
                f"the Host header {host!r} is not a name this service answers "
                "to; if clients reach it under that name, start it with "
                "--allowed-host NAME (allowed_hosts)"
                if host is not None
                else "the request has no Host header; send one",
            )
        if method not in SAFE_METHODS:
            origin = headers.get("origin")
            site = headers.get("sec-fetch-site", "").strip().lower()
            if origin is not None and not origin_allowed(
                origin, scope.get("scheme", "http"), host, self.origins
            ):
                return _error(
                    403,
                    f"cross-origin request refused: a web page of {origin!r} "
                    f"may not {method} here (only the service's own page may, "
                    "and origins given with --allowed-origin or --cors-origin)",
                )
            if origin is None and site in ("cross-site", "same-site"):
                return _error(
                    403,
                    f"cross-site request refused (Sec-Fetch-Site: {site}): only "
                    "the service's own page may change something",
                )
        if self.api_keys is None:
            scope[ROLE_SCOPE_KEY] = "write"  # no keys: everyone may do everything
            return None
        self.api_keys.reload_if_changed()
        repeated = _repeated_key_headers(scope.get("headers", []))
        if repeated is not None:
            return _error(
                400,
                f"the request sends {repeated}: send one API key, in one "
                "'Authorization: Bearer KEY' or one 'X-API-Key: KEY' header",
            )
        key, how = _key_of(headers)
        role = self.api_keys.role(key) if key else None
        scope[ROLE_SCOPE_KEY] = role
        if role is not None or path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES):
            return None
        if key == "":
            return _error(
                401,
                "the Authorization header is not 'Bearer KEY': send the API "
                "key as 'Authorization: Bearer KEY' (or 'X-API-Key: KEY')",
                headers={"WWW-Authenticate": 'Bearer realm="neardup"'},
            )
        if key is None:
            return _error(
                401,
                "this service needs an API key: send it as 'Authorization: "
                "Bearer KEY' (or 'X-API-Key: KEY'); ask its operator for a "
                "read key (to search) or a write key (to add and delete)",
                headers={"WWW-Authenticate": 'Bearer realm="neardup"'},
            )
        return _error(
            401,
            f"the API key sent ({how}) is not valid: it may have been "
            "replaced; ask the service's operator for the current one",
            headers={"WWW-Authenticate": 'Bearer realm="neardup", error="invalid_token"'},
        )


def _repeated_key_headers(raw: Sequence[tuple[bytes, bytes]]) -> str | None:
    """How a request sends more than one key, in words (never the keys), or None: two
    ``Authorization`` headers, two ``X-API-Key`` headers, or a bearer key and an ``X-API-Key``
    (an ``Authorization`` of another scheme, from a proxy's own login, is not a key)."""
    auth = [v for k, v in raw if k.lower() == b"authorization"]
    api = sum(1 for k, _ in raw if k.lower() == b"x-api-key")
    if len(auth) > 1:
        return f"{len(auth)} Authorization headers"
    if api > 1:
        return f"{api} X-API-Key headers"
    if api and auth and auth[0].strip()[:7].lower() == b"bearer ":
        return "both an Authorization: Bearer header and an X-API-Key header"
    return None


def _key_of(headers: dict[str, str]) -> tuple[str | None, str]:
    """The key a request sends and how (never logged or echoed): ``Authorization: Bearer KEY``,
    else ``X-API-Key: KEY``."""
    auth = headers.get("authorization")
    if auth is not None:
        scheme, _, value = auth.strip().partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip(), "Authorization: Bearer"
    key = headers.get("x-api-key")
    if key is not None and key.strip():
        return key.strip(), "X-API-Key"
    if auth is not None:
        return "", "Authorization"  # a header that is not Bearer KEY: no valid key
    return None, ""


def _error(status: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


class _Cors(CORSMiddleware):
    """Starlette's CORS middleware, answering a refused preflight with a JSON error."""

    def preflight_response(self, request_headers: Any) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code < 400:
            return response
        what = bytes(response.body).decode("latin-1").removeprefix("Disallowed CORS ")
        headers = {
            k: v
            for k, v in response.headers.items()
            if k.lower() not in ("content-length", "content-type")
        }
        return _error(
            response.status_code,
            f"cross-origin request refused: its {what} "
            "are not allowed (--cors-origin names the web "
            "origins that may call this service)",
            headers=headers,
        )
