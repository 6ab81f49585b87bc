"""End-to-end scheduler benchmark: pods/s through a real `knuma apiserver` process with thousands of NUMA nodes.

    python -m knuma.bench.scheduler [--nodes 5000] [--pods 10000] [--zones 2]

Target (issue 20): at least `TARGET_PODS_PER_SECOND` at 5000 nodes with the API server on the same machine
(kube-scheduler's own CI threshold for SchedulingBasic at 5000 nodes is 680 pods/s, on far bigger machines).

The API server runs as its own process (as in a cluster; on a 2-core machine it gets one core, the scheduler the
other). Nodes and their NodeResourceTopology objects are created first, then the pending pods (Guaranteed, 1 to 4
CPUs, so every one fits somewhere); then the scheduler starts. Throughput is pods bound per second from the moment
the scheduler's caches are synced to the last binding — list, watch, filter, score, reserve, bind and events included,
scheduler_perf's SchedulingThroughput measured from outside.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["TARGET_PODS_PER_SECOND", "E2EResult", "run"]

TARGET_PODS_PER_SECOND = 700


@dataclass(frozen=True)
class E2EResult:
    nodes: int
    zones: int
    pods: int
    scheduled: int
    seconds: float
    attempt_p50_ms: float
    attempt_p99_ms: float
    wall_seconds: float = 0.0
    """The whole run: API server start, creating the cluster's objects, scheduling, shutdown."""
    scheduler_cpu_seconds: float = 0.0
    """CPU seconds of the scheduler's process (this one) between caches synced and the last binding."""
    apiserver_cpu_seconds: float = 0.0
    """CPU seconds of the API server's process over the same interval: with 2 cores, the one near `seconds`
    is the bottleneck."""

    @property
    def pods_per_second(self) -> float:
        return self.scheduled / self.seconds if self.seconds else 0.0


def _node(name: str, zones: int, cpus_per_zone: int, gib_per_zone: int) -> dict[str, Any]:
    cpu, memory = str(zones * cpus_per_zone), f"{zones * gib_per_zone}Gi"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "node-role.kubernetes.io/worker": ""}},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
        },
    }


def _nrt(name: str, zones: int, cpus_per_zone: int, gib_per_zone: int) -> dict[str, Any]:
    resources = [
        {
            "name": "cpu",
            "capacity": str(cpus_per_zone),
            "allocatable": str(cpus_per_zone),
            "available": str(cpus_per_zone),
        },
        {
            "name": "memory",
            "capacity": f"{gib_per_zone}Gi",
            "allocatable": f"{gib_per_zone}Gi",
            "available": f"{gib_per_zone}Gi",
        },
    ]
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name},
        "attributes": [
            {"name": "topologyManagerPolicy", "value": "single-numa-node"},
            {"name": "topologyManagerScope", "value": "container"},
        ],
        "zones": [{"name": f"node-{z}", "type": "Node", "resources": resources} for z in range(zones)],
    }


def _pod(index: int, cpus: int, scheduler_name: str) -> dict[str, Any]:
    resources = {"cpu": str(cpus), "memory": f"{cpus}Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"bench-{index:06d}", "namespace": "default"},
        "spec": {
            "schedulerName": scheduler_name,
            "containers": [
                {"name": "app", "image": "busybox", "resources": {"requests": resources, "limits": resources}}
            ],
        },
    }


async def _create_all(http: Any, path: str, bodies: list[dict[str, Any]], concurrency: int = 16) -> None:
    from knuma.kube import rest

    semaphore = asyncio.Semaphore(concurrency)

    async def one(body: dict[str, Any]) -> None:
        async with semaphore:
            await rest.post(http, path, body)

    await asyncio.gather(*(one(b) for b in bodies))


async def _run(nodes: int, pods: int, zones: int, workdir: Path, seed: int) -> E2EResult:
    from knuma.api.crd import NRT_CRD
    from knuma.kube import rest
    from knuma.kube.client import api_session, async_http
    from knuma.kube.errors import NotFound
    from knuma.scheduler.config.load import DEFAULT_SCHEDULER_NAME, build_profiles, default_config
    from knuma.scheduler.daemon.loop import DaemonSettings, Scheduler
    from knuma.testing.apiserver import apiserver_process

    rng = random.Random(seed)
    with apiserver_process(workdir / "api") as api:
        http = async_http(api.kubeconfig, timeout=60)
        setup = api_session(api.kubeconfig, timeout=60)  # the cluster's objects go in faster than over httpx2
        try:
            await rest.post(http, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", NRT_CRD)
            nrt_path = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
            for _ in range(200):
                try:
                    await rest.get(http, nrt_path)
                    break
                except NotFound:  # the CRD is not served yet
                    await asyncio.sleep(0.05)
            names = [f"worker-{i:05d}" for i in range(nodes)]
            cpus_per_zone = 32 // zones
            await _create_all(setup, "/api/v1/nodes", [_node(n, zones, cpus_per_zone, 64 // zones) for n in names])
            await _create_all(setup, nrt_path, [_nrt(n, zones, cpus_per_zone, 64 // zones) for n in names])
            bodies = [_pod(i, rng.choice((1, 2, 2, 4)), DEFAULT_SCHEDULER_NAME) for i in range(pods)]
            await _create_all(setup, "/api/v1/namespaces/default/pods", bodies)
            await setup.aclose()

            daemon = Scheduler(
                async_http(api.kubeconfig, timeout=60),
                build_profiles(default_config()),
                DaemonSettings(leader_elect=False),
                writer=api_session(api.kubeconfig, timeout=60),
            )
            stop = asyncio.Event()
            task = asyncio.create_task(daemon.run(stop))
            await daemon.ready.wait()
            assert api.process is not None
            cpu_before = _cpu_seconds(os.getpid()), _cpu_seconds(api.process.pid)
            start = time.perf_counter()
            last, last_change = 0, start
            while daemon.scheduled < pods and time.perf_counter() - last_change < 10:
                await asyncio.sleep(0.05)
                if daemon.scheduled != last:
                    last, last_change = daemon.scheduled, time.perf_counter()
            elapsed = time.perf_counter() - start
            cpu = _cpu_seconds(os.getpid()) - cpu_before[0], _cpu_seconds(api.process.pid) - cpu_before[1]
            stop.set()
            await task
            await daemon.http.aclose()
            await daemon.writer.aclose()
            p50, p99 = _attempt_percentiles(daemon)
            return E2EResult(
                nodes,
                zones,
                pods,
                daemon.scheduled,
                elapsed,
                p50,
                p99,
                scheduler_cpu_seconds=cpu[0],
                apiserver_cpu_seconds=cpu[1],
            )
        finally:
            await setup.aclose()
            await http.aclose()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (`/proc/PID/stat` fields 14 and 15, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _attempt_percentiles(daemon: Any) -> tuple[float, float]:
    """p50/p99 of the scheduled attempts' latency histogram (bucket upper bounds), in ms."""
    buckets = [
        (float(sample.labels["le"]), sample.value)
        for metric in daemon.metrics.registry.collect()
        for sample in metric.samples
        if sample.name == "scheduler_scheduling_attempt_duration_seconds_bucket"
        and sample.labels.get("result") == "scheduled"
    ]
    total = max((count for _, count in buckets), default=0.0)

    def quantile(q: float) -> float:
        for bound, count in sorted(buckets):
            if total and count >= q * total:
                return bound * 1000
        return float("nan")

    return quantile(0.5), quantile(0.99)


def run(nodes: int = 5000, pods: int = 10000, zones: int = 2, seed: int = 0) -> E2EResult:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="knuma-sched-bench-") as tmp:
        result = asyncio.run(_run(nodes, pods, zones, Path(tmp), seed))
    return dataclasses.replace(result, wall_seconds=time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--zones", type=int, default=2)
    args = parser.parse_args()
    result = run(args.nodes, args.pods, args.zones)
    print(
        f"{result.scheduled}/{result.pods} pods on {result.nodes} nodes ({result.zones} zones) "
        f"in {result.seconds:.2f}s: {result.pods_per_second:.0f} pods/s; "
        f"attempt p50 {result.attempt_p50_ms:.1f} ms, p99 {result.attempt_p99_ms:.1f} ms "
        f"; CPU s scheduler {result.scheduler_cpu_seconds:.1f}, API server {result.apiserver_cpu_seconds:.1f} "
        f"(whole run {result.wall_seconds:.0f}s; load average {os.getloadavg()[0]:.2f})"
    )


if __name__ == "__main__":
    main()
