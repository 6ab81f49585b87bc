"""`/metrics`, `/healthz` and `/readyz` of the operator (controller-runtime's `--metrics-bind-address` and
`--health-probe-bind-address`, on one port).

`/healthz` answers while the event loop runs. `/readyz` is 200 once this replica leads (or runs without leader
election) and has finished a reconcile pass; a standby waiting for the Lease is healthy but not ready, so a rollout
of a two-replica Deployment keeps one serving replica.
"""

from __future__ import annotations

import asyncio

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from knuma.operator.metrics import OperatorMetrics
from knuma.serving.http import Response, SimpleHTTPServer

__all__ = ["HealthServer"]


class HealthServer:
    def __init__(self, metrics: OperatorMetrics, ready: asyncio.Event) -> None:
        self.metrics = metrics
        self.ready = ready
        self.server = SimpleHTTPServer({"/metrics": self._metrics, "/healthz": self._healthz, "/readyz": self._readyz})

    async def start(self, host: str, port: int) -> int:
        return await self.server.start(host, port)

    async def stop(self) -> None:
        await self.server.stop()

    def _metrics(self) -> Response:
        return 200, CONTENT_TYPE_LATEST, generate_latest(self.metrics.registry)

    def _healthz(self) -> Response:
        return 200, "text/plain", b"ok\n"

    def _readyz(self) -> Response:
        if self.ready.is_set():
            return 200, "text/plain", b"ok\n"
        return 503, "text/plain", b"not ready: not the leader, or no reconcile pass finished yet\n"
