"""One keep-alive HTTP/1.1 client connection as an asyncio protocol: a request out, its whole answer back.

The scheduler's per-pod writes (a `pods/binding` POST per pod, events) are small requests with small answers, hundreds
per second, sent from the process that also runs the scheduling cycle. A general client spends most of its CPU on
what these requests never need (aiohttp: a request and a response object, a multi-dict of headers, a payload
registry, a task to write each body, timers): this connection writes one pre-built request with one
`transport.write` and parses the answer's status line, `Content-Length` or chunked body, and `Connection: close`
itself. TLS, reading and writing stay asyncio's. `knuma.kube.session.ApiSession` pools these connections.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

__all__ = ["Http1Connection", "Response", "encode_request"]

_MAX_HEAD = 64 * 1024


class Response:
    """A complete answer: status, reason phrase, body, and whether the server keeps the connection open."""

    __slots__ = ("body", "keep_alive", "reason", "status")

    def __init__(self, status: int, reason: str, body: bytes, keep_alive: bool) -> None:
        self.status, self.reason, self.body, self.keep_alive = status, reason, body, keep_alive


def encode_request(method: str, target: str, headers: str, body: bytes | None) -> bytes:
    """The request's bytes: `headers` is the pre-joined `Name: value\\r\\n` lines (Host and the session's own
    included); Content-Length is added for a body."""
    if body is None:
        return f"{method} {target} HTTP/1.1\r\n{headers}\r\n".encode("latin-1")
    head = f"{method} {target} HTTP/1.1\r\n{headers}Content-Length: {len(body)}\r\n\r\n".encode("latin-1")
    return head + body


class Http1Connection(asyncio.Protocol):
    """At most one request in flight (no pipelining). `closed` once the peer or a failure ended it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.used = False
        """Whether a request was sent on it before (a reused connection may have been closed by the server)."""
        self._buffer = bytearray()
        self._head: _Head | None = None
        """The current answer's parsed head, once it arrived (the body is waited for without parsing it again)."""
        self._chunks = _Chunks()
        self._waiter: asyncio.Future[Response] | None = None
        self._head_only = False
        self.received = False
        """Whether any byte of the current request's answer arrived."""

    # -- asyncio.Protocol ----------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.received = True
        self._buffer += data
        if self._waiter is None:  # nothing asked: a server speaking out of turn
            self._fail(ConnectionError("the server sent data without a request"))
            return
        try:
            answer = self._parse(eof=False)
        except ConnectionError as err:
            self._fail(err)
            return
        if answer is not None:
            self._finish(answer)

    def eof_received(self) -> bool:
        if self._waiter is not None and not self._waiter.done():
            try:
                answer = self._parse(eof=True)
            except ConnectionError as err:
                self._fail(err)
                return False
            if answer is not None:
                self._finish(answer)
            else:
                self._fail(ConnectionResetError("the server closed the connection before answering"))
        self.closed = True
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(exc or ConnectionResetError("the connection was closed before the answer"))

    # -- requests --------------------------------------------------------------------------------------------

    async def exchange(self, request: bytes, *, head_only: bool = False) -> Response:
        """Send `request` (from `encode_request`) and wait for its whole answer. Connection failures raise
        `OSError`s; the caller bounds the wait (and closes the connection when it gives up)."""
        if self.closed or self.transport is None or self.transport.is_closing():
            raise ConnectionResetError("the connection is closed")
        loop = asyncio.get_running_loop()
        self._waiter = loop.create_future()
        self._head_only = head_only
        self.received = False
        self._buffer.clear()
        self._head = None
        self._chunks = _Chunks()
        self.transport.write(request)
        try:
            return await self._waiter
        finally:
            self.used = True
            self._waiter = None

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    # -- parsing ---------------------------------------------------------------------------------------------

    def _finish(self, answer: Response) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(answer)
        if not answer.keep_alive:
            self.close()

    def _fail(self, err: BaseException) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(err)
        if not self.closed:
            self.abort()

    def _parse(self, *, eof: bool) -> Response | None:
        """The answer if the buffer holds all of it, else None (wait for more). The head is parsed once and a chunked
        body decoded as its chunks arrive, so a large answer in many reads costs linear time, not quadratic."""
        head = self._head
        if head is None:
            head = self._head = self._parse_head()
            if head is None:
                return None
        buffer = self._buffer
        if self._head_only or head.status in (204, 304):
            return Response(head.status, head.reason, b"", head.keep_alive)
        if head.chunked:
            body = self._chunks.feed(buffer, head.body_start)
            return None if body is None else Response(head.status, head.reason, body, head.keep_alive)
        if head.length is not None:
            if len(buffer) - head.body_start < head.length:
                return None
            return Response(
                head.status,
                head.reason,
                bytes(buffer[head.body_start : head.body_start + head.length]),
                head.keep_alive,
            )
        if not eof:  # delimited by the end of the connection
            return None
        return Response(head.status, head.reason, bytes(buffer[head.body_start :]), False)

    def _parse_head(self) -> _Head | None:
        """The answer's status line and headers, or None while incomplete; interim (1xx) answers are dropped."""
        buffer = self._buffer
        while True:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(buffer) > _MAX_HEAD:
                    raise ConnectionError("the answer's header is too long")
                return None
            lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
            version, _, rest = lines[0].partition(" ")
            code, _, reason = rest.partition(" ")
            if not version.startswith("HTTP/1.") or not code.isdigit():
                raise ConnectionError(f"not an HTTP/1.1 answer: {lines[0][:100]!r}")
            status = int(code)
            if 100 <= status < 200:  # an interim answer (we never send Expect): skip it, the real one follows
                del buffer[: end + 4]
                continue
            break
        length: int | None = None
        chunked = False
        keep_alive = version == "HTTP/1.1"
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "content-length":
                value = value.strip()
                if not value.isdigit():
                    raise ConnectionError(f"bad Content-Length {value!r}")
                length = int(value)
            elif name == "transfer-encoding":
                chunked = value.strip().lower().endswith("chunked")
            elif name == "connection":
                tokens = {t.strip().lower() for t in value.split(",")}
                keep_alive = "keep-alive" in tokens if version != "HTTP/1.1" else "close" not in tokens
        return _Head(status, reason, length, chunked, keep_alive, end + 4)


@dataclass(frozen=True, slots=True)
class _Head:
    status: int
    reason: str
    length: int | None
    chunked: bool
    keep_alive: bool
    body_start: int
    """Offset of the body in the connection's buffer."""


class _Chunks:
    """A chunked body decoded as it arrives: complete chunks are kept and never read again (trailers are skipped)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.position = -1
        """Offset in the buffer of the next chunk-size line (-1: not started)."""

    def feed(self, buffer: bytearray, start: int) -> bytes | None:
        """The whole body once the last chunk arrived, else None."""
        if self.position < 0:
            self.position = start
        while True:
            position = self.position
            line_end = buffer.find(b"\r\n", position)
            if line_end < 0:
                return None
            size_text = bytes(buffer[position:line_end]).split(b";")[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise ConnectionError(f"bad chunk size {size_text[:20]!r}") from None
            data_start = line_end + 2
            if size == 0:
                trailer_end = buffer.find(b"\r\n\r\n", data_start - 2)
                return None if trailer_end < 0 else b"".join(self.parts)
            if len(buffer) < data_start + size + 2:
                return None
            self.parts.append(bytes(buffer[data_start : data_start + size]))
            self.position = data_start + size + 2
