"""The HTTP protocol the service runs: uvicorn's h11 protocol with a time limit on request
headers, which uvicorn does not have (a client that opens a connection and sends its headers
byte by byte, or stops half way, would otherwise hold the connection forever)."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

#: seconds a client has to send a request's headers, from the first byte of the request (or
#: the opening of the connection)
HEADER_SECONDS = 10.0


class BoundedH11Protocol(H11Protocol):
    """h11 with a header deadline: when a request's headers have not all arrived within
    :data:`HEADER_SECONDS` of its first byte (or of the connection's opening), the connection
    is answered 408 and closed. Requests whose headers are complete are left to the
    application's own limits (the body deadline of :class:`~neardup.server.app._Guard`)."""

    header_seconds = HEADER_SECONDS

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._start_header_timer()

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

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or not self._waiting_for_headers():
            return
        body = (b'{"detail":"the request headers did not arrive within '
                + str(int(self.header_seconds)).encode() + b' s"}')
        self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json"
                             b"\r\ncontent-length: " + str(len(body)).encode()
                             + b"\r\nconnection: close\r\n\r\n" + body)
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_timer()
        super().connection_lost(exc)
