"""How many simulated nodes one process sustains: heartbeats on time, then a burst of pod admissions.

The API server runs as its own process (`knuma apiserver`, HTTPS, in memory); this process runs a `Fleet` of N
two-socket nodes with in-process NRT publishing, exactly as `knuma up --exporters in-process` does. Per N:

1. registration: every Node and Lease created, every NRT published;
2. a heartbeat window (default 30 s, Leases renewed every 10 s as the kubelet does): renewals done versus due, the
   longest gap between two renewals of one Lease (it must stay well under the 40 s lease duration, else the node
   would be marked NotReady by a node lifecycle controller), the event loop's worst lag, and this process's CPU;
3. admissions: `pods` Guaranteed pods created already bound (round-robin over the nodes), timed until the kubelets
   have admitted every one and written its status (NRT updates follow within the next second).

N is *sustained* when no Lease went more than 1.5 renewal intervals (15 s) without a renewal, during the window or at
its end, and the renewals in the window were at least 95% of those due (the window's edges cut a few).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import multiprocessing
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knuma.api.crd import NRT_CRD
from knuma.bench.memory import memory_status
from knuma.kube import rest
from knuma.kube.client import async_client, async_http
from knuma.local.nodes.fleet import Fleet, FleetSettings
from knuma.local.nodes.spec import NodeSpec
from knuma.testbed.shapes import BUILTIN_SHAPES

__all__ = ["FleetBenchResult", "run"]

RENEW_INTERVAL = 10.0


@dataclass(frozen=True)
class FleetBenchResult:
    nodes: int
    register_seconds: float
    window_seconds: float
    renewals: int
    renewals_due: int
    worst_gap: float
    stalest: float
    """Seconds since the least recently renewed Lease was renewed, at the end of the window."""
    worst_loop_lag: float
    cpu_fraction: float
    """CPU seconds of this process per wall second during the heartbeat window (1.0 = one core busy)."""
    rss_mib: float
    pods: int
    admitted: int
    admit_seconds: float

    @property
    def sustained(self) -> bool:
        """Every Lease renewed on schedule: no gap and no stale Lease beyond 1.5 intervals, and the renewals in the
        window at least 95% of those due (the window's edges cut a few)."""
        on_time = max(self.worst_gap, self.stalest) <= 1.5 * RENEW_INTERVAL
        return on_time and self.renewals >= 0.95 * self.renewals_due

    @property
    def admissions_per_second(self) -> float:
        return self.admitted / self.admit_seconds if self.admit_seconds else 0.0


def _pod(name: str, node: str) -> dict[str, Any]:
    limits = {"cpu": "4", "memory": "8Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": limits}}],
        },
    }


async def _lag_monitor(worst: list[float], period: float = 0.05) -> None:
    loop = asyncio.get_running_loop()
    while True:
        started = loop.time()
        await asyncio.sleep(period)
        worst[0] = max(worst[0], loop.time() - started - period)


async def _measure(kubeconfig: Path, count: int, window: float, pods: int) -> FleetBenchResult:
    shape = BUILTIN_SHAPES["two-socket"]
    specs = [NodeSpec(f"bench-{i:04d}", i, shape, "bench") for i in range(count)]
    http = async_http(kubeconfig, timeout=60.0)
    client = async_client(kubeconfig, field_manager="knuma-exporter", timeout=60.0)
    settings = FleetSettings(nrt="in-process", lease_renew_interval=RENEW_INTERVAL, nrt_resync_interval=3600.0)
    fleet = Fleet(http, client, specs, settings)
    stop = asyncio.Event()
    started = time.monotonic()
    task = asyncio.create_task(fleet.run(stop))
    try:
        await fleet.ready.wait()
        while fleet.stats.nrt_publishes < count:  # every node's first NRT
            await asyncio.sleep(0.05)
        register_seconds = time.monotonic() - started
        worst_lag = [0.0]
        monitor = asyncio.create_task(_lag_monitor(worst_lag))
        renewals_before = fleet.stats.lease_renewals
        fleet.stats.worst_renewal_gap = 0.0
        cpu_before, wall_before = time.process_time(), time.monotonic()
        await asyncio.sleep(window)
        cpu_fraction = (time.process_time() - cpu_before) / (time.monotonic() - wall_before)
        renewals = fleet.stats.lease_renewals - renewals_before
        worst_gap = fleet.stats.worst_renewal_gap
        stalest = fleet.stats.renewal_lag(time.monotonic())
        monitor.cancel()
        due = int(count * window / RENEW_INTERVAL)
        admitted_before = fleet.stats.admitted
        admit_started = time.monotonic()
        limit = asyncio.Semaphore(16)

        async def create(i: int) -> None:
            async with limit:
                await rest.post(http, "/api/v1/namespaces/default/pods", _pod(f"p-{i}", specs[i % count].name))

        await asyncio.gather(*(create(i) for i in range(pods)))
        deadline = time.monotonic() + 120
        while fleet.stats.admitted - admitted_before < pods and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        while fleet.stats.status_writes < fleet.stats.admitted and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        admit_seconds = time.monotonic() - admit_started
        rss = memory_status(os.getpid())["VmHWM"] / 2**20  # this process's own peak (see knuma.bench.memory)
        return FleetBenchResult(
            nodes=count,
            register_seconds=register_seconds,
            window_seconds=window,
            renewals=renewals,
            renewals_due=due,
            worst_gap=worst_gap,
            stalest=stalest,
            worst_loop_lag=worst_lag[0],
            cpu_fraction=cpu_fraction,
            rss_mib=rss,
            pods=pods,
            admitted=fleet.stats.admitted - admitted_before,
            admit_seconds=admit_seconds,
        )
    finally:
        stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 30)
        await http.aclose()
        await client.close()


def run_one(count: int, *, window: float = 30.0, pods: int = 1000) -> FleetBenchResult:
    """One measurement against a fresh `knuma apiserver` process."""
    from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

    from knuma.kube.client import sync_client
    from knuma.testing.apiserver import apiserver_process

    with tempfile.TemporaryDirectory(prefix="knuma-nodes-bench-") as work, apiserver_process(Path(work)) as api:
        sync = sync_client(api.kubeconfig)
        crd: Any = CustomResourceDefinition.from_dict(NRT_CRD)
        sync.create(crd)
        sync.close()
        return asyncio.run(_measure(api.kubeconfig, count, window, pods))


def run(
    sizes: tuple[int, ...] = (250, 1000, 2000), *, window: float = 30.0, pods: int = 1000
) -> list[FleetBenchResult]:
    """Each size in a fresh process: its RSS is then the node process's own peak, not that of whatever ran
    before in the caller (`make bench` runs every benchmark in one process, a 5000-node simulation among them)."""
    context = multiprocessing.get_context("spawn")
    results = []
    for n in sizes:
        with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
            results.append(pool.submit(run_one, n, window=window, pods=pods).result())
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="250,1000,2000")
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--pods", type=int, default=1000)
    args = parser.parse_args()
    for result in run(tuple(int(n) for n in args.nodes.split(",")), window=args.window, pods=args.pods):
        print(result, "sustained" if result.sustained else "NOT sustained")


if __name__ == "__main__":
    main()
