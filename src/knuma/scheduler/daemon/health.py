"""`/metrics`, `/healthz` and `/readyz` of the scheduler daemon, on the secure port and/or the old insecure one.

`/healthz` answers while the process runs its event loop; `/readyz` only once the caches have synced and this
replica holds the lease (a standby is healthy but not ready, as kube-scheduler reports it). `/livez` is `/healthz`,
as kube-scheduler serves both.

The secure port (`secure.py`) serves the same routes over HTTPS behind delegated authentication and authorization;
the insecure `--metrics-port` serves them over plain HTTP to anyone who can reach it, as kube-scheduler's removed
`--port` did.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from knuma.scheduler.daemon.loop import Scheduler
from knuma.serving.http import Gate, Handler, Response, SimpleHTTPServer

__all__ = ["HealthServer"]


class HealthServer:
    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        routes: dict[str, Handler] = {
            "/metrics": self._metrics,
            "/healthz": self._healthz,
            "/livez": self._healthz,
            "/readyz": self._readyz,
        }
        self.routes = routes
        self.server = SimpleHTTPServer(routes)
        self.secure: SimpleHTTPServer | None = None

    async def start(self, host: str, port: int) -> int:
        """The insecure port (plain HTTP, no authentication); the port bound."""
        return await self.server.start(host, port)

    async def start_secure(self, host: str, port: int, tls: Callable[[], ssl.SSLContext], gate: Gate) -> int:
        """The secure port: HTTPS with `tls`'s current context, every request through `gate`; the port bound."""
        self.secure = SimpleHTTPServer(self.routes, tls, gate=gate)
        return await self.secure.start(host, port)

    async def stop(self) -> None:
        await self.server.stop()
        if self.secure is not None:
            await self.secure.stop()

    def _metrics(self) -> Response:
        return 200, CONTENT_TYPE_LATEST, generate_latest(self.scheduler.metrics.registry)

    def _healthz(self) -> Response:
        return 200, "text/plain", b"ok\n"

    def _readyz(self) -> Response:
        if self.scheduler.ready.is_set():
            return 200, "text/plain", b"ok\n"
        return 503, "text/plain", b"not ready: caches not synced or not the leader\n"
