"""uvicorn's HTTP/1.1 protocol with a deadline for each request's line and headers.

uvicorn times out idle keep-alive connections but not a client that sends part of a
request line and then nothing: such connections would be held until the file-descriptor
limit. Here the clock starts at a connection's first byte (and again when a keep-alive
connection's next request begins) and a request whose headers are not complete in time is
answered 408 and closed. A request's body is the application's to read and bound.
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

REQUEST_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: 44\r\n\r\n"
    b"the request headers did not arrive in time\r\n"
)


def protocol_with_header_timeout(timeout_s: float) -> type[asyncio.Protocol]:
    """An ``H11Protocol`` that closes connections whose headers take over ``timeout_s``."""

    class HeaderTimeoutProtocol(H11Protocol):
        header_timeout_s = timeout_s
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE:
                if self._header_timer is None:
                    self._arm()  # the next request on a kept-alive connection has begun
            else:
                self._disarm()  # its headers are in

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            self._disarm()  # the keep-alive timer takes over until the next byte
            super().on_response_complete()

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._expire)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _expire(self) -> None:
            self._header_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.write(REQUEST_TIMEOUT)
                self.transport.close()

    return HeaderTimeoutProtocol
