"""How ``serve`` runs the app on uvicorn, bounded against clients that hold connections open.

uvicorn waits for a request's headers for ever: a client that opens connections and never finishes
its headers holds them (and a file descriptor each) until the process ends. Here each request must
send its headers within ``service.header_timeout`` of the connection opening, or of the previous
response on a kept-alive connection, and the service holds at most ``service.max_connections``
connections at once (past that, uvicorn answers 503).
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from ..config.settings import Settings


class HeaderDeadline(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's headers."""

    #: seconds a request has to send its headers; ``server_options`` sets it from the config
    header_timeout = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def handle_events(self) -> None:
        waiting_for = self.cycle
        super().handle_events()
        if self.cycle is not waiting_for:  # a request's headers arrived: it is served
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request on this connection gets the same deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _headers_too_slow(self) -> None:
        self._deadline = None
        if (self.cycle is None or self.cycle.response_complete) and not self.transport.is_closing():
            self.transport.close()


def server_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's options for the service: the header deadline, the connection cap, the drain on
    SIGTERM, and one access-log line per request (never a header, so never a key)."""
    protocol = type("ServiceProtocol", (HeaderDeadline,), {"header_timeout": settings.service.header_timeout})
    return {
        "http": protocol,
        "limit_concurrency": settings.service.max_connections,
        "timeout_graceful_shutdown": math.ceil(settings.service.drain_seconds),
        "log_level": "info",
        "access_log": True,  # cli/logs.py's log config takes the query string out of every access line
    }
