"""Connection limits: at most `max_connections` open at once, and a short deadline to authenticate.

Why: each open connection holds a file descriptor. 1,100 idle TCP connections (which cost an attacker nothing, no
token needed) used to exhaust the process's descriptors: every real request timed out and asyncio logged each failed
`accept()` (32 MB of logs in 8 s). So:

- a new connection that has not completed an authenticated request (or a request to a public health endpoint)
  within `preauth_timeout` seconds is closed;
- above `max_connections`, the oldest connection still waiting to authenticate is closed to make room (so idle
  connections can never lock out a real client); when every open connection is authenticated, the new one is closed;
- what is dropped is logged once per interval with a count, never once per connection;
- over HTTPS, a connection that does not finish its TLS handshake within `preauth_timeout` is closed too (asyncio's
  default waits 60 s); such connections are not counted against `max_connections` (they reach the HTTP layer only
  after the handshake), so the handshake deadline is what bounds them.

Authenticated connections (watches, informers, kubectl) are never closed by this guard. The limit is below the
usual 1,024 descriptors per process, leaving room for the database, the log and the server's own sockets.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from typing import Any

from aiohttp import web

log = logging.getLogger("knuma.local.apiserver")

DEFAULT_MAX_CONNECTIONS = 512
DEFAULT_PREAUTH_TIMEOUT = 10.0
_REPORT_INTERVAL = 10.0


class GuardedSite(web.TCPSite):
    """`web.TCPSite` with a TLS handshake deadline (aiohttp does not expose asyncio's `ssl_handshake_timeout`)."""

    def __init__(self, runner: web.AppRunner, host: str, port: int, *, handshake_timeout: float, **kwargs: Any):
        super().__init__(runner, host, port, **kwargs)
        self._handshake_timeout = handshake_timeout

    async def start(self) -> None:
        await web.BaseSite.start(self)
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            server,
            self._host,
            self._port,
            ssl=self._ssl_context,
            ssl_handshake_timeout=self._handshake_timeout if self._ssl_context is not None else None,
            backlog=self._backlog,
            reuse_address=self._reuse_address,
            reuse_port=self._reuse_port,
        )


class ConnectionGuard:
    def __init__(
        self, max_connections: int = DEFAULT_MAX_CONNECTIONS, preauth_timeout: float = DEFAULT_PREAUTH_TIMEOUT
    ):
        if max_connections < 1 or preauth_timeout <= 0:
            raise ValueError("max_connections must be >= 1 and preauth_timeout > 0")
        self.max_connections = max_connections
        self.preauth_timeout = preauth_timeout
        self._open: set[Any] = set()
        #: Connections still waiting to authenticate, oldest first, with the timer that closes them.
        self._pending: OrderedDict[Any, asyncio.TimerHandle] = OrderedDict()
        self.dropped = 0
        self._reported = 0
        self._last_report = 0.0

    @property
    def open_connections(self) -> int:
        return len(self._open)

    def install(self, server: web.Server) -> None:
        """Hook into aiohttp's `Server` (the per-connection protocol factory calls these two for every connection)."""
        made, lost = server.connection_made, server.connection_lost

        def connection_made(handler: Any, transport: asyncio.Transport) -> None:
            made(handler, transport)
            self.opened(transport)

        def connection_lost(handler: Any, exc: BaseException | None = None) -> None:
            transport = handler.transport
            lost(handler, exc)
            if transport is not None:
                self.closed(transport)

        server.connection_made = connection_made  # type: ignore[method-assign]
        server.connection_lost = connection_lost  # type: ignore[method-assign]

    def opened(self, transport: asyncio.Transport) -> None:
        if len(self._open) >= self.max_connections:
            if self._pending:
                oldest, timer = self._pending.popitem(last=False)
                timer.cancel()
                self._drop(oldest, "connection limit reached; closed the oldest unauthenticated connection")
            else:
                self._drop(transport, "connection limit reached; every open connection is authenticated")
                return
        self._open.add(transport)
        loop = asyncio.get_running_loop()
        self._pending[transport] = loop.call_later(self.preauth_timeout, self._expire, transport)

    def closed(self, transport: asyncio.Transport) -> None:
        self._open.discard(transport)
        timer = self._pending.pop(transport, None)
        if timer is not None:
            timer.cancel()

    def authenticated(self, transport: asyncio.Transport | None) -> None:
        """The connection completed an authenticated (or public) request: it stays open for as long as it likes."""
        timer = self._pending.pop(transport, None) if transport is not None else None
        if timer is not None:
            timer.cancel()

    def _expire(self, transport: asyncio.Transport) -> None:
        if self._pending.pop(transport, None) is not None:
            self._drop(transport, f"no authenticated request within {self.preauth_timeout:g} s")

    def _drop(self, transport: asyncio.Transport, why: str) -> None:
        self._open.discard(transport)
        transport.abort()
        self.dropped += 1
        now = time.monotonic()
        if now - self._last_report >= _REPORT_INTERVAL:
            log.warning(
                "closed %d connection(s) in the last %.0f s (%s); %d open",
                self.dropped - self._reported,
                _REPORT_INTERVAL,
                why,
                len(self._open),
            )
            self._reported = self.dropped
            self._last_report = now
