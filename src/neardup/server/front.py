"""What every request to ``neardup serve`` passes first (:class:`Front`, outside the
application): its request ID, the limit on requests handled at once, the access log line, and
the headers every response carries (:func:`add_headers`: ``X-Request-ID`` and the security
headers of the page).

Requests are limited here, not connections (those are bounded by the protocol, see
:mod:`.protocol`): a request counts from the moment its headers have arrived until its
response is sent, so half-open or idle connections hold no slot."""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .._log import get_logger

#: requests handled at once, by default (503 beyond)
MAX_REQUESTS = 64
#: connections kept open at once, by default (the protocol's bound, :mod:`.protocol`)
MAX_CONNECTIONS = 1000
#: paths answered whatever the number of requests being handled: liveness, which costs
#: nothing, so that a service at its limit is not taken for a dead one and restarted
UNLIMITED_PATHS = frozenset({"/health"})
#: where a request's ID is kept in its ASGI scope
REQUEST_ID_SCOPE_KEY = "neardup.request_id"
#: set in the scope by an exception handler that has logged the request's error
LOGGED_SCOPE_KEY = "neardup.error_logged"

#: The page's policy: its own script and style sheet only, nothing inline, no frames, no
#: plugins, no <base>; forms post to the service itself. ``data:`` images for its empty icon.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)

#: A request ID a client may choose (else the service makes one): letters, digits and
#: ``._:-``, up to 64 characters; anything else is replaced, so that it is safe in the log.
_SANE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")

log = get_logger("neardup.server")
access_log = get_logger("neardup.access")


def request_id(
    scope: MutableMapping[str, Any], refused: Callable[[str], bool] | None = None
) -> str:
    """The request's ID, chosen once: the client's own ``X-Request-ID`` if it is sane (and
    ``refused(it)`` is false: an API key sent there is not taken), else a new one."""
    rid = scope.get(REQUEST_ID_SCOPE_KEY)
    if isinstance(rid, str):
        return rid
    rid = None
    for name, value in scope.get("headers", ()):
        if name.lower() == b"x-request-id":
            got = value.decode("latin-1").strip()
            if _SANE_ID.fullmatch(got) and not (refused is not None and refused(got)):
                rid = got
            break
    rid = rid or secrets.token_hex(8)
    scope[REQUEST_ID_SCOPE_KEY] = rid
    return rid


def add_headers(message: MutableMapping[str, Any], rid: str | None) -> None:
    """Add ``X-Request-ID`` and the security headers to a ``http.response.start`` message,
    where the response has none of its own."""
    headers = list(message.get("headers", ()))
    have = {bytes(k).lower() for k, _ in headers}
    if rid is not None and b"x-request-id" not in have:
        headers.append((b"x-request-id", rid.encode("latin-1")))
    headers += [(k, v) for k, v in SECURITY_HEADERS if k not in have]
    message["headers"] = headers


def printable(s: str, limit: int = 300) -> str:
    """``s`` for one log line: control characters escaped, at most ``limit`` characters."""
    if s.isprintable() and len(s) <= limit:
        return s
    out = "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in s[:limit]
    )
    return out + ("..." if len(s) > limit else "")


def client_address(scope: MutableMapping[str, Any]) -> str:
    client = scope.get("client")
    if not client:
        return "-"
    host, port = client[0], client[1]
    return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"


class Front:
    """ASGI middleware outside the whole application: gives each request its ID, handles at
    most ``max_requests`` at once (a JSON 503 with ``Retry-After`` beyond), adds the headers
    every response carries, logs one access line per request (the path without its query
    string, which may hold a key) and logs any error no handler has logged."""

    def __init__(
        self,
        app: Callable[..., Awaitable[None]],
        max_requests: int = MAX_REQUESTS,
        refused_id: Callable[[str], bool] | None = None,
        close_after: Callable[[], bool] | None = None,
    ):
        self.app = app
        self.max_requests = max_requests
        self.refused_id = refused_id
        #: asked at each response: true to close its connection after it (``Connection:
        #: close``, so the client opens a new one; see :class:`ConnectionShares`)
        self.close_after = close_after
        self.active = 0
        self.turned_away = 0

    async def __call__(
        self, scope: MutableMapping[str, Any], receive: Callable, send: Callable
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        rid = request_id(scope, self.refused_id)
        status: list[int | None] = [None]

        async def send_marked(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                add_headers(message, rid)
                if self.close_after is not None and self.close_after():
                    message["headers"] = [*message.get("headers", ()), (b"connection", b"close")]
            await send(message)

        if self.active >= self.max_requests and scope.get("path") not in UNLIMITED_PATHS:
            self.turned_away += 1
            if self.turned_away == 1 or self.turned_away % 100 == 0:
                log.warning(
                    "%d requests are being handled, the limit (--max-requests): "
                    "answering 503 (%d so far)",
                    self.active,
                    self.turned_away,
                )
            await _json(
                send_marked,
                503,
                f"the service is handling its limit of "
                f"{self.max_requests} requests at once; try again "
                "in a moment",
                retry_after=1,
            )
            self._log(scope, status[0], started, rid)
            return
        self.active += 1
        try:
            await self.app(scope, receive, send_marked)
        except Exception as exc:
            if not scope.get(LOGGED_SCOPE_KEY):
                log.error(
                    "internal error on %s %s, request ID %s",
                    scope.get("method"),
                    printable(scope.get("path", "")),
                    rid,
                    exc_info=exc,
                )
            if status[0] is None:
                await _json(
                    send_marked,
                    500,
                    f"internal error (reported in the service's log as request ID {rid})",
                )
        finally:
            self.active -= 1
            self._log(scope, status[0], started, rid)

    @staticmethod
    def _log(scope: MutableMapping[str, Any], status: int | None, started: float, rid: str) -> None:
        access_log.info(
            '%s "%s %s" %s %.1f ms, request ID %s',
            client_address(scope),
            scope.get("method"),
            printable(scope.get("path", "")),
            status if status is not None else "-",
            (time.perf_counter() - started) * 1000,
            rid,
        )


async def _json(send: Callable, status: int, detail: str, retry_after: int | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class ConnectionShares:
    """The open connections of each worker of ``neardup serve --workers``, in memory the
    workers share (``counts``: one integer per worker, made before they are forked), so that
    a worker holding more than its share closes one after a response, and its client's next
    connection may go to another worker. The system spreads new connections among the
    workers, but a client keeps its connection: with few clients, one worker could keep most
    of them (4 of 5 in tests) while the other waits."""

    def __init__(self, counts: Any, worker: int):
        self.counts = counts
        self.worker = worker

    def set(self, n: int) -> None:
        """This worker now has ``n`` connections open."""
        self.counts[self.worker] = n

    def over(self) -> bool:
        """Whether this worker holds more connections than its share (the total over the
        workers, rounded up)."""
        counts = list(self.counts)
        share = -(-sum(counts) // len(counts))
        return counts[self.worker] > share
