"""A tiny HTTP/1.1 server for `/metrics`, `/healthz` and `/readyz` (and the operator's conversion webhook, the one
POST route), on asyncio streams.

Why not aiohttp (the project's HTTP library elsewhere): the exporter runs on every node and targets < 60 MB of
resident memory; importing aiohttp alone costs ~8 MB, and three GET endpoints polled by Prometheus and the kubelet
need no more than this. One request per connection (`Connection: close`), 5 s to send the request head.

With `tls` (a callable returning the current `ssl.SSLContext`), every connection is upgraded to TLS right after it
is accepted, with the context the callable returns at that moment: that is how a rotated certificate takes effect
without a restart (see `servingtls`).

With `gate` (an async callable of the method, the path and the request headers), every request is let through only
if it returns None; otherwise its response is sent instead: the scheduler's secure port authenticates and authorizes
there (`knuma.kube.delegation`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Awaitable, Callable, Mapping
from http import HTTPStatus
from typing import Any

__all__ = ["BodyHandler", "Gate", "Handler", "PeerCertificate", "Response", "SimpleHTTPServer"]

log = logging.getLogger("knuma.serving.http")

Response = tuple[int, str, bytes]
"""(status, content type, body)"""
Handler = Callable[[], Response]
BodyHandler = Callable[[bytes], Response]
"""A POST route: the request body in, the response out."""
PeerCertificate = Mapping[str, Any]
"""The client's verified certificate as `ssl.SSLSocket.getpeercert()` decodes it (`subject`, `issuer`, ...)."""
Gate = Callable[[str, str, Mapping[str, str], PeerCertificate | None], Awaitable[Response | None]]
"""(method, path, headers with lower-case names, the client's verified certificate or None) to None (let through) or
the response to send instead."""

_MAX_HEAD = 16 * 1024
MAX_BODY = 32 * 1024 * 1024
"""Larger request bodies are refused (413): a ConversionReview of many objects stays well below."""


_REFUSALS = frozenset(
    {
        "PEER_DID_NOT_RETURN_A_CERTIFICATE",
        "CERTIFICATE_VERIFY_FAILED",
        "NO_SHARED_CIPHER",
        "UNSUPPORTED_PROTOCOL",
    }
)
"""OpenSSL reasons of a handshake the server's TLS settings refused."""


def _address(peer: object) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer)


class SimpleHTTPServer:
    def __init__(
        self,
        routes: Mapping[str, Handler],
        tls: Callable[[], ssl.SSLContext] | None = None,
        *,
        posts: Mapping[str, BodyHandler] | None = None,
        gate: Gate | None = None,
    ) -> None:
        self.routes = dict(routes)
        self.gate = gate
        self.posts = dict(posts or {})
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
                peer = writer.get_extra_info("peername")
                if isinstance(err, ssl.SSLError) and err.reason in _REFUSALS:
                    # the TLS policy at work (client certificate, cipher suites, version): worth telling the
                    # operator, as the client only sees the connection closed (asyncio sends no TLS alert)
                    log.info("TLS handshake failed: refused %s: %s", _address(peer), err)
                else:  # port scans, tcpSocket probes, clients giving up
                    log.debug("TLS handshake failed: %s: %s", _address(peer), err)
                writer.transport.abort()
                return
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
            post = self._post_handler(head)
            refused = await self._gate(head, writer.get_extra_info("peercert") or None)
            if refused is not None:
                status, ctype, body = refused
            elif post is None:
                status, ctype, body = self._respond(head)
            else:
                status, ctype, body = await self._respond_post(head, reader, post)
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

    async def _gate(self, head: bytes, peer: PeerCertificate | None) -> Response | None:
        if self.gate is None or len(head) > _MAX_HEAD:
            return None
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            return None  # answered 400 by `_respond`
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        try:
            return await self.gate(parts[0], parts[1].split("?", 1)[0], headers, peer)
        except Exception:
            log.exception("request gate failed")
            return 500, "text/plain", b"internal error\n"

    def _post_handler(self, head: bytes) -> BodyHandler | None:
        parts = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
        if len(parts) == 3 and parts[0] == "POST" and len(head) <= _MAX_HEAD:
            return self.posts.get(parts[1].split("?", 1)[0])
        return None

    async def _respond_post(self, head: bytes, reader: asyncio.StreamReader, handler: BodyHandler) -> Response:
        length = None
        for line in head.decode("latin-1").split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip()) if value.strip().isdigit() else -1
            elif name.strip().lower() == "transfer-encoding" and value.strip().lower() != "identity":
                return 411, "text/plain", b"chunked request bodies are not supported; send Content-Length\n"
        if length is None or length < 0:
            return 411, "text/plain", b"Content-Length required\n"
        if length > MAX_BODY:
            return 413, "text/plain", b"request body too large\n"
        body = await asyncio.wait_for(reader.readexactly(length), timeout=30)
        try:
            return handler(body)
        except Exception:
            log.exception("POST handler failed")
            return 500, "text/plain", b"internal error\n"

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
