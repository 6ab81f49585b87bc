"""`/metrics`, `/healthz` and `/readyz` of the scheduler daemon.

`/healthz` answers while the process runs its event loop; `/readyz` only once the caches have synced and this
replica holds the lease (a standby is healthy but not ready, as kube-scheduler reports it).
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from knuma.scheduler.daemon.loop import Scheduler
from knuma.serving.http import Response, SimpleHTTPServer

__all__ = ["HealthServer"]


class HealthServer:
    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.server = SimpleHTTPServer({"/metrics": self._metrics, "/healthz": self._healthz, "/readyz": self._readyz})

    async def start(self, host: str, port: int) -> int:
        return await self.server.start(host, port)

    async def stop(self) -> None:
        await self.server.stop()

    def _metrics(self) -> Response:
        return 200, CONTENT_TYPE_LATEST, generate_latest(self.scheduler.metrics.registry)

    def _healthz(self) -> Response:
        return 200, "text/plain", b"ok\n"

    def _readyz(self) -> Response:
        if self.scheduler.ready.is_set():
            return 200, "text/plain", b"ok\n"
        return 503, "text/plain", b"not ready: caches not synced or not the leader\n"
