"""A tiny HTTP/1.1 server for `/metrics`, `/healthz` and `/readyz`, on asyncio streams.

Why not aiohttp (the project's HTTP library elsewhere): the exporter runs on every node and targets < 60 MB of
resident memory; importing aiohttp alone costs ~8 MB, and three GET endpoints polled by Prometheus and the kubelet
need no more than this. One request per connection (`Connection: close`), 5 s to send the request head.

With `tls` (a callable returning the current `ssl.SSLContext`), every connection is upgraded to TLS right after it
is accepted, with the context the callable returns at that moment: that is how a rotated certificate takes effect
without a restart (see `servingtls`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Callable, Mapping
from http import HTTPStatus

__all__ = ["Handler", "Response", "SimpleHTTPServer"]

log = logging.getLogger("knuma.serving.http")

Response = tuple[int, str, bytes]
"""(status, content type, body)"""
Handler = Callable[[], Response]

_MAX_HEAD = 16 * 1024


class SimpleHTTPServer:
    def __init__(self, routes: Mapping[str, Handler], tls: Callable[[], ssl.SSLContext] | None = None) -> None:
        self.routes = dict(routes)
        self.tls = tls
        self._server: asyncio.Server | None = None
        self.port: int | None = None

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._serve, host, port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.tls is not None:
            try:
                await writer.start_tls(self.tls(), ssl_handshake_timeout=5)
            except (ssl.SSLError, TimeoutError, ConnectionError, OSError) as err:
                log.debug("TLS handshake failed: %s", err)
                writer.transport.abort()
                return
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
            status, ctype, body = self._respond(head)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            writer.close()
            return
        reason = HTTPStatus(status).phrase
        writer.write(
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n".encode()
            + body
        )
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()

    def _respond(self, head: bytes) -> Response:
        if len(head) > _MAX_HEAD:
            return 431, "text/plain", b"request header too large\n"
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = request_line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            return 400, "text/plain", b"bad request\n"
        method, target = parts[0], parts[1].split("?", 1)[0]
        handler = self.routes.get(target)
        if handler is None:
            return 404, "text/plain", b"not found\n"
        if method not in ("GET", "HEAD"):
            return 405, "text/plain", b"method not allowed\n"
        try:
            status, ctype, body = handler()
        except Exception:
            log.exception("handler for %s failed", target)
            return 500, "text/plain", b"internal error\n"
        return status, ctype, b"" if method == "HEAD" else body
