"""`ApiSession`: a keep-alive connection pool to the API server for many small requests (bindings, events).

A scheduler sends one `pods/binding` POST per pod and an Event for many of them; at hundreds of pods per second the
client's own cost per request decides the throughput, because the scheduling cycle shares the Python process (and
its GIL) with it. The `httpx2` client that lightkube gives us costs about 650 µs of CPU per request on loopback TLS
(its auth and redirect layers, `anyio` streams, a connection-pool scan per request); aiohttp's client about 170 µs;
this session's own HTTP/1.1 connections (`knuma.kube.http1`: one pre-built write per request, a minimal answer
parser) about 60% of aiohttp's (a GET with its JSON answer: 65 µs against 115 µs, measured in one process). So
the daemon's per-pod writes go through this session while everything else (informers, leader election, the tools)
keeps the `httpx2` client.

It is not a second request path: `knuma.kube.rest.request` accepts either client and turns the answer into the same
decoded JSON or typed errors. Credentials and TLS come from the kubeconfig exactly as for the `httpx2` client
(`knuma.kube.client.api_session` builds both from lightkube's `verify_cluster` and `user_auth`): any lightkube
authenticator (token, token file, exec plugin, basic) runs its own flow to produce the `Authorization` header, which
is cached and refreshed once on a 401, as the httpx auth flow would. No proxy is used (the kubeconfig's server is
dialled directly, as `trust_env=False` does for the other clients).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ssl
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

import httpx2

from knuma.errors import InvalidInput
from knuma.kube.errors import Unavailable, connection_failure
from knuma.kube.http1 import Http1Connection, Response, encode_request

__all__ = ["Answer", "ApiSession"]


@dataclass(frozen=True)
class Answer:
    """An HTTP answer, read completely."""

    status: int
    reason: str
    content: bytes
    url: str


class ApiSession:
    """Keep-alive HTTP/1.1 connections (at most `limit` at once, one request in flight on each) to one API server."""

    def __init__(
        self,
        base_url: str,
        *,
        ssl_context: ssl.SSLContext | None = None,
        auth: httpx2.Auth | None = None,
        timeout: float = 10.0,
        limit: int = 32,
        user_agent: str = "knuma",
    ) -> None:
        """`user_agent` names the writer: the API server records its fields under that manager."""
        self.base_url = base_url.rstrip("/")
        self.user_agent = user_agent
        self.timeout = timeout
        url = urllib.parse.urlsplit(self.base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise InvalidInput(f"the API server URL must be http(s)://HOST[:PORT], not {base_url!r}")
        self._host = url.hostname
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._prefix = url.path.rstrip("/")
        self._ssl: ssl.SSLContext | None = None
        if url.scheme == "https":
            self._ssl = ssl_context or ssl.create_default_context()
        self._host_header = url.netloc.rpartition("@")[2]
        self._auth = auth
        self._limit = limit
        self._authorization: str | None = None
        self._lock: asyncio.Lock | None = None
        self._busy = 0
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()
        self._idle: list[Http1Connection] = []
        self._open: set[Http1Connection] = set()

    async def send(
        self,
        method: str,
        path: str,
        *,
        content: bytes | None = None,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Answer:
        """Send one request and read the whole answer; `Unavailable` when there is none (connection refused or
        lost, timeout)."""
        target = self._prefix + path
        if params:
            target += ("&" if "?" in target else "?") + urllib.parse.urlencode(params)
        url = self.base_url + path + target[len(self._prefix + path) :]
        extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
        seconds = self.timeout if timeout is None else timeout
        for attempt in range(2):
            authorization = await self._authorize(refresh=attempt > 0)
            lines = f"Host: {self._host_header}\r\nUser-Agent: {self.user_agent}\r\n{extra}"
            if authorization:
                lines += f"Authorization: {authorization}\r\n"
            request = encode_request(method, target, lines, content)
            try:
                async with asyncio.timeout(seconds):
                    response = await self._exchange(request, head_only=method == "HEAD")
            except (TimeoutError, OSError) as err:
                raise Unavailable(method, url, None, connection_failure(err)) from err
            answer = Answer(response.status, response.reason, response.body, url)
            if answer.status != 401 or self._auth is None or attempt:
                return answer
        return answer

    async def aclose(self) -> None:
        for connection in list(self._open):
            connection.close()
        self._open.clear()
        self._idle.clear()
        await asyncio.sleep(0)  # let the transports run their close callbacks

    async def _exchange(self, request: bytes, *, head_only: bool) -> Response:
        """One request on an idle connection (or a new one); a reused connection the server had closed meanwhile
        (its keep-alive timeout) is retried once on a new connection when no byte of the answer came back, as
        Go's `http.Transport` retries a request that failed on a reused connection."""
        await self._acquire()
        try:
            while True:
                connection = await self._connection()
                try:
                    response = await connection.exchange(request, head_only=head_only)
                except OSError:
                    self._open.discard(connection)
                    connection.abort()
                    if connection.used and not connection.received:
                        continue  # a stale keep-alive connection: once more on a fresh one
                    raise
                except BaseException:  # a timeout or a cancellation mid-answer: the connection's state is unknown
                    self._open.discard(connection)
                    connection.abort()
                    raise
                if connection.closed:
                    self._open.discard(connection)
                else:
                    self._idle.append(connection)
                return response
        finally:
            self._release()

    async def _acquire(self) -> None:
        """One of the `limit` request slots, first come first served. A counter and a queue of waiters rather than
        `asyncio.Semaphore`, whose `acquire` scans every waiter on each call (Python 3.11): a burst of events
        queued behind the bindings would make each request pay for the whole queue."""
        if self._busy < self._limit and not self._waiting:
            self._busy += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            await waiter  # the releaser hands its slot over: `_busy` stays counted
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self._release()  # handed a slot after the cancellation: pass it on
            else:
                self._waiting.remove(waiter)
            raise

    def _release(self) -> None:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._busy -= 1

    async def _connection(self) -> Http1Connection:
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed and connection.transport is not None and not connection.transport.is_closing():
                return connection
            self._open.discard(connection)
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(
            Http1Connection,
            self._host,
            self._port,
            ssl=self._ssl,
            server_hostname=self._host if self._ssl is not None else None,
        )
        self._open.add(connection)
        return connection

    async def _authorize(self, *, refresh: bool) -> str | None:
        """The `Authorization` header the kubeconfig's authenticator produces; cached, re-run after a 401 (a
        rotated token file, an expired exec credential)."""
        if self._auth is None:
            return None
        if self._authorization is not None and not refresh:
            return self._authorization
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if self._authorization is not None and not refresh:
                return self._authorization
            request = httpx2.Request("GET", self.base_url)
            flow = self._auth.async_auth_flow(request)
            try:
                sent = await flow.__anext__()
                if refresh:  # tell the authenticator its header was refused, as httpx does on a 401
                    with contextlib.suppress(StopAsyncIteration):
                        sent = await flow.asend(httpx2.Response(401, request=sent))
            finally:
                await flow.aclose()
            self._authorization = sent.headers.get("Authorization")
            return self._authorization
