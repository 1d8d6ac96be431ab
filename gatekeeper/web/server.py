"""How ``gatekeeper serve`` runs its ASGI app: uvicorn, with bounded connections.

- ``header_timeout``: a connection whose request headers are not complete this many seconds
  after its first byte (or after it opened) is closed. uvicorn has no such option, so
  ``BoundedH11`` adds it to uvicorn's h11 protocol: the only place that touches uvicorn's
  internals (``H11Protocol``'s ``conn``, ``transport`` and ``loop``), checked by
  ``tests/web/test_serve_connections.py`` (idle and slow clients on loopback).
- ``keep_alive``: an idle connection between requests is closed after this many seconds
  (uvicorn's ``timeout_keep_alive``).
- ``max_connections``: beyond this many open connections (or requests in progress), a request
  is answered 503 and its connection closed (uvicorn's ``limit_concurrency``).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

#: The defaults of ``gatekeeper serve --header-timeout / --keep-alive / --max-connections``
HEADER_TIMEOUT = 10.0
KEEP_ALIVE = 5
MAX_CONNECTIONS = 100


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds on connections (seconds, seconds, a count), as checked by ``serve``."""

    header_timeout: float = HEADER_TIMEOUT
    keep_alive: int = KEEP_ALIVE
    max_connections: int = MAX_CONNECTIONS


def protocol(header_timeout: float) -> type[Any]:
    """uvicorn's h11 protocol with a header-read timeout of ``header_timeout`` seconds."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class BoundedH11(H11Protocol):
        _header_deadline: Any = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE:  # a request's headers are not complete
                self._arm()
            else:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._header_deadline is None and not self.transport.is_closing():
                self._header_deadline = self.loop.call_later(header_timeout, self._expired)

        def _disarm(self) -> None:
            if self._header_deadline is not None:
                self._header_deadline.cancel()
                self._header_deadline = None

        def _expired(self) -> None:
            self._header_deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

    return BoundedH11


def run(app: Any, sock: socket.socket, limits: Limits) -> None:
    """Serve ``app`` on the listening ``sock`` until interrupted (no access log)."""
    import uvicorn

    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        http=protocol(limits.header_timeout),
        timeout_keep_alive=limits.keep_alive,
        limit_concurrency=limits.max_connections,
    )
    uvicorn.Server(config).run(sockets=[sock])
