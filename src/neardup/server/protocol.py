"""The HTTP protocol the service runs: uvicorn's h11 protocol with a time limit on request
headers, which uvicorn does not have (a client that opens a connection and sends its headers
byte by byte, or stops half way, would otherwise hold the connection forever), and a bound on
open connections that idle ones cannot exhaust.

Connections and requests are limited apart: the application limits the requests it handles
at once (:class:`~neardup.server.front.Front`); this protocol keeps at most
``max_connections`` open, and when a new one would go over, it closes the connection that has
waited longest for a request (half-open, its headers unfinished, or idle between two requests
of a keep-alive client) to make room. A connection whose request is being handled is never
closed for room; when every one is, the newcomer is refused with a 503. Every refusal is JSON,
``{"detail": ...}``, with ``Retry-After`` where trying again makes sense."""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from .._log import get_logger
from .front import MAX_CONNECTIONS

#: seconds a client has to send a request's headers, from the first byte of the request (or
#: the opening of the connection)
HEADER_SECONDS = 10.0

log = get_logger(__name__)


def refusal(status: int, reason: str, detail: str, retry_after: int | None = None) -> bytes:
    """A whole HTTP/1.1 response that closes the connection: ``{"detail": detail}``."""
    body = json.dumps({"detail": detail}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        + (f"retry-after: {retry_after}\r\n" if retry_after is not None else "")
        + "x-content-type-options: nosniff\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class BoundedH11Protocol(H11Protocol):
    """h11 with a header deadline and a connection bound.

    When a request's headers have not all arrived within :attr:`header_seconds` of its first
    byte (or of the connection's opening), the connection is answered 408 and closed. Requests
    whose headers are complete are left to the application's own limits (the body deadline of
    :class:`~neardup.server.app._Guard`, the request limit of
    :class:`~neardup.server.front.Front`). Beyond :attr:`max_connections` open connections,
    the one waiting longest for a request is closed (see the module)."""

    header_seconds = HEADER_SECONDS
    #: open connections at most (None: no bound)
    max_connections: int | None = MAX_CONNECTIONS
    #: with workers: where this one says how many connections it has open
    #: (:class:`~neardup.server.front.ConnectionShares`)
    shares: Any = None

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._start_header_timer()
        waiting = self._waiting()
        waiting[self] = None
        if self.max_connections is not None and len(self.connections) > self.max_connections:
            self._make_room(waiting)
        if self.shares is not None:
            self.shares.set(len(self.connections))

    # -- connections waiting for a request, longest waiting first ---------------------------
    def _waiting(self) -> OrderedDict[BoundedH11Protocol, None]:
        """This server's connections that have no request in hand, in the order they began to
        wait (at their opening, or when their last response was sent)."""
        state = self.server_state
        got = getattr(state, "neardup_waiting", None)
        if got is None:
            got = OrderedDict()
            state.neardup_waiting = got  # type: ignore[attr-defined]
        return got

    def _make_room(self, waiting: OrderedDict[BoundedH11Protocol, None]) -> None:
        for conn in waiting:
            if conn is not self and not conn.transport.is_closing():
                conn._close_for_room()
                return
        # every other connection has a request being handled: the newcomer waits its turn
        waiting.pop(self, None)
        log.warning(
            "connection refused: %d connections are open and every one has a request "
            "being handled (--max-connections)",
            len(self.connections) - 1,
        )
        self.transport.write(
            refusal(
                503,
                "Service Unavailable",
                f"the service has {self.max_connections} connections "
                "open, each with a request being handled; try again in a moment",
                retry_after=1,
            )
        )
        self.transport.close()

    def _close_for_room(self) -> None:
        """Close this connection, which has no request being handled, to make room: a client
        that has begun a request is told why; an idle keep-alive connection is just closed
        (clients open a new one)."""
        self._waiting().pop(self, None)
        self._stop_header_timer()
        begun = bool(self.conn.trailing_data[0])
        log.debug(
            "closing a connection from %s that waits for a request (%s) to make room",
            _address(self.client),
            "headers unfinished" if begun else "idle",
        )
        if begun:
            self.transport.write(
                refusal(
                    503,
                    "Service Unavailable",
                    "the service is at its limit of open connections "
                    "and this one had not sent a whole request; try again, sending the request "
                    "at once",
                    retry_after=1,
                )
            )
        self.transport.close()

    # -- the header deadline ----------------------------------------------------------------
    def _start_header_timer(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_seconds, self._headers_late)

    def _stop_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _waiting_for_headers(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._waiting_for_headers():
            if data:
                self._start_header_timer()  # a new request has begun
        else:
            self._stop_header_timer()  # its headers are in: the application takes over
            self._waiting().pop(self, None)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._waiting_for_headers() and not self.transport.is_closing():
            waiting = self._waiting()
            waiting.pop(self, None)
            waiting[self] = None  # waits for its next request from now

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or not self._waiting_for_headers():
            return
        self._waiting().pop(self, None)
        self.transport.write(
            refusal(
                408,
                "Request Timeout",
                f"the request headers did not arrive within "
                f"{self.header_seconds:g} s; send them at once",
                retry_after=1,
            )
        )
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        """A request h11 cannot parse (or whose headers are too large): a JSON 400."""
        self._waiting().pop(self, None)
        limit = self.config.h11_max_incomplete_event_size
        self.transport.write(
            refusal(
                400,
                "Bad Request",
                "the request is not valid HTTP/1.1"
                + (f" (or its headers are over {limit:,} bytes)" if limit else ""),
            )
        )
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_timer()
        self._waiting().pop(self, None)
        super().connection_lost(exc)
        if self.shares is not None:
            self.shares.set(len(self.connections))


def _address(client: tuple[str, int] | None) -> str:
    return f"{client[0]}:{client[1]}" if client else "an unknown address"
