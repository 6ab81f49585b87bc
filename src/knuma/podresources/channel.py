"""gRPC unary calls over HTTP/2 on a unix socket: the little of gRPC the kubelet PodResources API needs.

Why not grpcio (which the tests' kubelet server uses): the exporter runs on every node with a memory target of
60 MB, and importing grpcio's C core costs about 15 MiB of resident memory plus its threads, for three unary calls
on a local socket. This module speaks the same wire protocol (gRPC over HTTP/2, "PROTOCOL-HTTP2.md" in the gRPC
repository) with the `h2` protocol library, synchronously, one call at a time:

- request: HEADERS (`:method POST`, `:path /<service>/<method>`, `content-type: application/grpc`, `te: trailers`,
  `grpc-timeout`), then one DATA frame with the length-prefixed message and END_STREAM;
- response: HEADERS (`:status 200`), DATA with one length-prefixed message, and trailers carrying `grpc-status` and
  `grpc-message` (or a trailers-only response when the call fails at once);
- flow control: a large receive window, and received data is acknowledged as it arrives, so a 16 MiB answer
  streams without stalls;
- deadlines: `grpc-timeout` tells the server, and the socket times out locally at the same instant;
- messages above `max_message_bytes` are refused (RESOURCE_EXHAUSTED), as grpcio's
  `grpc.max_receive_message_length` does; compressed messages are never asked for.

The connection is kept between calls. Any transport failure closes it and raises UNAVAILABLE; the next call dials
again, which is what a restarted kubelet (new socket) needs.
"""

from __future__ import annotations

import enum
import socket
import struct
import threading
import time
from urllib.parse import unquote

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

from knuma.errors import KnumaError

__all__ = ["Channel", "RpcError", "StatusCode"]

_WINDOW = 1024 * 1024
_READ = 256 * 1024
_HTTP_TO_GRPC = {400: 13, 401: 16, 403: 7, 404: 12, 429: 14, 502: 14, 503: 14, 504: 14}
"""HTTP status -> gRPC code when a response carries no grpc-status (gRPC's http-grpc-status-mapping.md)."""


class StatusCode(enum.IntEnum):
    """gRPC status codes (same numbers and names as grpc.StatusCode)."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


class RpcError(KnumaError):
    def __init__(self, code: StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


class _Unavailable(KnumaError):
    """The transport failed: close the connection, report UNAVAILABLE."""


class Channel:
    """A gRPC client connection to `path` (a unix socket). Thread-safe: calls are serialised."""

    def __init__(self, path: str, *, max_message_bytes: int = 16 * 1024 * 1024, authority: str = "localhost") -> None:
        self.path = path
        self.max_message_bytes = max_message_bytes
        self.authority = authority
        self._sock: socket.socket | None = None
        self._conn: h2.connection.H2Connection | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._close()

    def unary(self, method: str, request: bytes, timeout: float) -> bytes:
        """Call `method` (`/package.Service/Method`) with a serialised request; the serialised response.

        Raises `RpcError` with the server's status, DEADLINE_EXCEEDED when `timeout` passes, UNAVAILABLE when the
        socket cannot be reached or the connection breaks.
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            try:
                return self._unary(method, request, timeout, deadline)
            except _Unavailable as err:
                self._close()
                raise RpcError(StatusCode.UNAVAILABLE, str(err)) from None
            except TimeoutError:
                self._close()  # the answer may still come on this stream: start clean next time
                raise RpcError(StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded") from None
            except RpcError as err:
                if err.code in (StatusCode.RESOURCE_EXHAUSTED, StatusCode.INTERNAL):
                    self._close()  # we stopped reading mid-stream
                raise

    def _unary(self, method: str, request: bytes, timeout: float, deadline: float) -> bytes:
        conn = self._connect(deadline)
        stream_id = conn.get_next_available_stream_id()
        conn.send_headers(
            stream_id,
            [
                (":method", "POST"),
                (":scheme", "http"),
                (":path", method),
                (":authority", self.authority),
                ("content-type", "application/grpc"),
                ("te", "trailers"),
                ("grpc-timeout", f"{max(1, min(99_999_999, int(timeout * 1000)))}m"),
                ("user-agent", "knuma-exporter"),
            ],
        )
        conn.send_data(stream_id, struct.pack(">BI", 0, len(request)) + request, end_stream=True)
        self._flush(deadline)
        headers: dict[str, str] = {}
        trailers: dict[str, str] = {}
        body = bytearray()
        ended = False
        while not ended:
            for event in self._receive(deadline):
                if isinstance(event, h2.events.ConnectionTerminated):
                    raise _Unavailable(f"connection closed by the server (GOAWAY {event.error_code!s})")
                if getattr(event, "stream_id", stream_id) != stream_id:
                    continue
                if isinstance(event, h2.events.ResponseReceived):
                    headers = _decode(event.headers)
                elif isinstance(event, h2.events.DataReceived):
                    body += event.data
                    conn.acknowledge_received_data(event.flow_controlled_length, stream_id)
                    if len(body) > self.max_message_bytes + 5:
                        raise RpcError(
                            StatusCode.RESOURCE_EXHAUSTED,
                            f"received message larger than max ({self.max_message_bytes} bytes)",
                        )
                elif isinstance(event, h2.events.TrailersReceived):
                    trailers = _decode(event.headers)
                elif isinstance(event, h2.events.StreamReset):
                    raise RpcError(StatusCode.UNAVAILABLE, f"stream reset by the server ({event.error_code!s})")
                elif isinstance(event, h2.events.StreamEnded):
                    ended = True
            self._flush(deadline)
        return self._result(headers, trailers, bytes(body))

    def _result(self, headers: dict[str, str], trailers: dict[str, str], body: bytes) -> bytes:
        status = trailers.get("grpc-status", headers.get("grpc-status"))
        message = unquote(trailers.get("grpc-message", headers.get("grpc-message", "")))
        if status is None:
            http = int(headers.get(":status", "0") or 0)
            code = StatusCode.UNKNOWN if http == 200 else StatusCode(_HTTP_TO_GRPC.get(http, 2))
            raise RpcError(code, message or f"response without grpc-status (HTTP {http})")
        try:
            code = StatusCode(int(status))
        except ValueError:
            code = StatusCode.UNKNOWN
        if code is not StatusCode.OK:
            raise RpcError(code, message)
        if not headers.get("content-type", "").startswith("application/grpc"):
            raise RpcError(StatusCode.UNKNOWN, f"unexpected content-type {headers.get('content-type')!r}")
        if len(body) < 5:
            raise RpcError(StatusCode.INTERNAL, "response without a message")
        compressed, length = struct.unpack(">BI", body[:5])
        if compressed:
            raise RpcError(StatusCode.INTERNAL, "compressed response, but no compression was offered")
        if length > self.max_message_bytes:
            raise RpcError(
                StatusCode.RESOURCE_EXHAUSTED,
                f"received message larger than max ({length} vs. {self.max_message_bytes})",
            )
        if len(body) != 5 + length:
            raise RpcError(StatusCode.INTERNAL, f"response of {len(body) - 5} bytes, but the frame says {length}")
        return body[5:]

    def _connect(self, deadline: float) -> h2.connection.H2Connection:
        if self._conn is not None and self._sock is not None:
            return self._conn
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            sock.connect(self.path)
        except TimeoutError:
            sock.close()
            raise
        except OSError as err:
            sock.close()
            raise _Unavailable(f"cannot connect to {self.path}: {err.strerror or err}") from None
        conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8", validate_inbound_headers=True)
        )
        conn.initiate_connection()
        conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: _WINDOW})
        conn.increment_flow_control_window(_WINDOW)
        self._sock, self._conn = sock, conn
        return conn

    def _flush(self, deadline: float) -> None:
        assert self._sock is not None and self._conn is not None
        data = self._conn.data_to_send()
        if not data:
            return
        self._sock.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            self._sock.sendall(data)
        except TimeoutError:
            raise
        except OSError as err:
            raise _Unavailable(f"connection to {self.path} broke: {err.strerror or err}") from None

    def _receive(self, deadline: float) -> list[h2.events.Event]:
        assert self._sock is not None and self._conn is not None
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        self._sock.settimeout(remaining)
        try:
            data = self._sock.recv(_READ)
        except TimeoutError:
            raise
        except OSError as err:
            raise _Unavailable(f"connection to {self.path} broke: {err.strerror or err}") from None
        if not data:
            raise _Unavailable(f"connection to {self.path} closed by the server")
        try:
            return self._conn.receive_data(data)
        except h2.exceptions.ProtocolError as err:
            raise _Unavailable(f"HTTP/2 protocol error from {self.path}: {err}") from None

    def _close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock = None
        self._conn = None


def _decode(headers: list[tuple[str, str]] | list[tuple[bytes, bytes]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in headers:
        key = name.decode() if isinstance(name, bytes) else name
        out[key] = value.decode() if isinstance(value, bytes) else value
    return out
