"""`ApiSession`: a keep-alive connection pool to the API server for many small requests (bindings, events).

A scheduler sends one `pods/binding` POST per pod and an Event for many of them; at hundreds of pods per second the
client's own cost per request decides the throughput, because the scheduling cycle shares the Python process (and
its GIL) with it. The `httpx2` client that lightkube gives us costs about 650 µs of CPU per request on loopback TLS
(its auth and redirect layers, `anyio` streams, a connection-pool scan per request); aiohttp's client, already a
dependency of knuma, costs about 170 µs for the same request. So the daemon's per-pod writes go through this session
while everything else (informers, leader election, the tools) keeps the `httpx2` client.

It is not a second request path: `knuma.kube.rest.request` accepts either client and turns the answer into the same
decoded JSON or typed errors. Credentials and TLS come from the kubeconfig exactly as for the `httpx2` client
(`knuma.kube.client.api_session` builds both from lightkube's `verify_cluster` and `user_auth`): any lightkube
authenticator (token, token file, exec plugin, basic) runs its own flow to produce the `Authorization` header, which
is cached and refreshed once on a 401, as the httpx auth flow would.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx2

from knuma.kube.errors import Unavailable, connection_failure

if TYPE_CHECKING:
    import aiohttp  # imported when a session is made: the exporter and the tools never pay its ~8 MB

__all__ = ["Answer", "ApiSession"]


@dataclass(frozen=True)
class Answer:
    """An HTTP answer, read completely."""

    status: int
    reason: str
    content: bytes
    url: str


class ApiSession:
    """Keep-alive HTTP/1.1 connections (at most `limit` at once) to one API server."""

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
        import aiohttp

        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._ssl = ssl_context
        self._auth = auth
        self._limit = limit
        self._authorization: str | None = None
        self._session: aiohttp.ClientSession | None = None
        self._lock: asyncio.Lock | None = None

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
        import aiohttp

        session = self._session or self._open()
        url = self.base_url + path
        sent = dict(headers or {})
        for attempt in range(2):
            authorization = await self._authorize(refresh=attempt > 0)
            if authorization:
                sent["Authorization"] = authorization
            try:
                async with session.request(
                    method,
                    url,
                    data=content,
                    params=dict(params) if params else None,
                    headers=sent,
                    timeout=self._timeout if timeout is None else aiohttp.ClientTimeout(total=timeout),
                ) as response:
                    body = await response.read()
                    answer = Answer(response.status, response.reason or "", body, str(response.url))
            except (aiohttp.ClientError, TimeoutError, OSError) as err:
                raise Unavailable(method, url, None, connection_failure(err)) from err
            if answer.status != 401 or self._auth is None or attempt:
                return answer
        return answer

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _open(self) -> aiohttp.ClientSession:
        """The aiohttp session, created on first use: it belongs to the running event loop."""
        import aiohttp

        connector = aiohttp.TCPConnector(limit=self._limit, ssl=self._ssl if self._ssl is not None else True)
        self._session = aiohttp.ClientSession(
            connector=connector, headers={"User-Agent": self.user_agent}, trust_env=False
        )
        return self._session

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
