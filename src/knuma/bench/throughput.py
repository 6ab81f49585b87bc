"""`knuma bench`: scheduler_perf-style throughput of the scheduling core (filter + score + reserve on every node, no
sampling), and the same for the straightforward reference implementation, with the speed-up.

Besides the usual workload (a few pod sizes, which the vectorised path's per-shape cache exploits), the core's worst
case is timed: every pod a shape never seen before (`new_shape_workload`), so every pod evaluates every node from
scratch. Issue 20's target for it: at least `NEW_SHAPE_TARGET` pods/s at 5000 nodes on one core."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import Pod
from knuma.scheduler.daemon.heap import frozen_heap
from knuma.scheduler.fast.vectorized import Decision, VectorizedScheduler
from knuma.scheduler.framework.interface import NodeInfo
from knuma.scheduler.sequential import SequentialScheduler
from knuma.topology.node import NodeTopology

GI = 1 << 30
NEW_SHAPE_TARGET = 1000
"""pods/s at 5000 nodes, every pod a new shape (issue 20)."""


@dataclass(frozen=True)
class Throughput:
    pods: int
    scheduled: int
    seconds: float
    cpu_seconds: float
    """This process's CPU time over the run: on a loaded machine, `pods / cpu_seconds` is what one free core gives."""
    average: float
    p50: float
    p90: float
    p99: float
    latency_ms: dict[str, float]


@dataclass(frozen=True)
class BenchResult:
    nodes: int
    pods: int
    zones: tuple[int, ...]
    knuma: Throughput
    reference: Throughput
    uncached: Throughput | None = None
    new_shapes: Throughput | None = None
    """The worst case: every pod a new shape (`new_shape_workload`), the per-shape cache on but never hit."""

    @property
    def speedup(self) -> float:
        return self.knuma.average / self.reference.average if self.reference.average else float("inf")

    def to_dict(self) -> dict[str, object]:
        k = self.knuma
        return {
            "nodes": self.nodes,
            "pods": self.pods,
            "zones": list(self.zones),
            "scheduled": k.scheduled,
            "throughput": {"average": round(k.average, 1), "p50": k.p50, "p90": k.p90, "p99": k.p99},
            "latency_ms": k.latency_ms,
            "reference_throughput": {"average": round(self.reference.average, 2), "pods": self.reference.pods},
            "speedup": round(self.speedup, 1),
            **(
                {"uncached_throughput": {"average": round(self.uncached.average, 1), "pods": self.uncached.pods}}
                if self.uncached is not None
                else {}
            ),
            **(
                {
                    "new_shape_throughput": {
                        "average": round(self.new_shapes.average, 1),
                        "pods": self.new_shapes.pods,
                        "scheduled": self.new_shapes.scheduled,
                        "latency_ms": self.new_shapes.latency_ms,
                        "per_cpu_second": round(self.new_shapes.pods / self.new_shapes.cpu_seconds, 1)
                        if self.new_shapes.cpu_seconds
                        else 0.0,
                        "target": NEW_SHAPE_TARGET,
                    }
                }
                if self.new_shapes is not None
                else {}
            ),
        }


def cluster(nodes: int, zones: Sequence[int], seed: int = 7) -> list[NodeInfo]:
    """`nodes` single-numa-node workers, NUMA zone counts cycling through `zones`, 16 CPUs and 32 GiB per zone."""
    rng = random.Random(seed)
    out = []
    for index in range(nodes):
        count = zones[index % len(zones)]
        per_zone = {z: {"cpu": 16000, "memory": 32 * GI} for z in range(count)}
        scope = Scope.POD if rng.random() < 0.2 else Scope.CONTAINER
        topology = NodeTopology.build(f"worker-{index:05d}", per_zone, Policy.SINGLE_NUMA_NODE, scope)
        allocatable = topology.available_total() | {"pods": 110}
        out.append(NodeInfo(topology.name, allocatable=allocatable, topology=topology, manifest={"kind": "Node"}))
    return out


def workload(pods: int, seed: int = 11) -> list[Pod]:
    """Mostly Guaranteed pods with 1 to 8 exclusive CPUs, some two-container pods, some Burstable ones."""
    rng = random.Random(seed)
    out = []
    for index in range(pods):
        roll = rng.random()
        if roll < 0.15:
            containers = [{"name": "app", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]
        else:
            count = 2 if roll > 0.85 else 1
            containers = [
                {
                    "name": f"c{c}",
                    "resources": {
                        "limits": {"cpu": str(rng.choice([1, 2, 4, 8])), "memory": f"{rng.choice([2, 4, 8])}Gi"}
                    },
                }
                for c in range(count)
            ]
        out.append(Pod.from_manifest({"metadata": {"name": f"pod-{index:05d}"}, "spec": {"containers": containers}}))
    return out


def new_shape_workload(pods: int, seed: int = 13) -> list[Pod]:
    """`workload`'s mix (Guaranteed pods of 1 to 8 exclusive CPUs, some with two containers, some Burstable ones),
    but every pod a shape no earlier pod had: each container's memory is its size plus the pod's index in KiB (and
    a Burstable pod's CPU request varies too), so no per-shape result can be reused (below 2**20 pods)."""
    rng = random.Random(seed)
    out = []
    for index in range(pods):
        roll = rng.random()
        if roll < 0.15:
            requests = {"cpu": f"{100 + index % 900}m", "memory": f"{(1 << 20) + index}Ki"}
            containers = [{"name": "app", "resources": {"requests": requests}}]
        else:
            count = 2 if roll > 0.85 else 1
            containers = [
                {
                    "name": f"c{c}",
                    "resources": {
                        "limits": {
                            "cpu": str(rng.choice([1, 2, 4, 8])),
                            "memory": f"{rng.choice([2, 4, 8]) << 20 | index}Ki",
                        }
                    },
                }
                for c in range(count)
            ]
        out.append(Pod.from_manifest({"metadata": {"name": f"new-{index:05d}"}, "spec": {"containers": containers}}))
    return out


def measure(schedule: Callable[[Pod], Decision], pods: Sequence[Pod]) -> Throughput:
    """Time `schedule` over `pods`, with the heap built so far frozen for the cycle collector, as the daemon freezes
    it once its caches are synced (`knuma.scheduler.daemon.heap`)."""
    latencies = []
    scheduled = 0
    with frozen_heap():
        start, cpu_start = time.perf_counter(), time.process_time()
        window_start, window_count, windows = start, 0, []
        for pod in pods:
            t0 = time.perf_counter()
            decision = schedule(pod)
            t1 = time.perf_counter()
            latencies.append(t1 - t0)
            scheduled += decision.node is not None
            window_count += 1
            if t1 - window_start >= 1.0:
                windows.append(window_count / (t1 - window_start))
                window_start, window_count = t1, 0
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    average = len(pods) / elapsed if elapsed else 0.0
    if not windows:
        windows = [average]
    ordered = sorted(windows)

    def pct(values: list[float], q: float) -> float:
        return values[min(len(values) - 1, int(q * len(values)))]

    lat = sorted(latencies)
    return Throughput(
        pods=len(pods),
        scheduled=scheduled,
        seconds=elapsed,
        cpu_seconds=cpu,
        average=average,
        p50=round(pct(ordered, 0.50), 1),
        p90=round(pct(ordered, 0.10), 1),  # scheduler_perf: the throughput exceeded 90% of the time
        p99=round(pct(ordered, 0.01), 1),
        latency_ms={
            "p50": round(pct(lat, 0.50) * 1e3, 3),
            "p90": round(pct(lat, 0.90) * 1e3, 3),
            "p99": round(pct(lat, 0.99) * 1e3, 3),
            "mean": round(statistics.fmean(lat) * 1e3, 3),
        },
    )


def run(
    nodes: int = 5000,
    pods: int = 10000,
    zones: Sequence[int] = (2, 4, 8),
    reference_pods: int = 20,
    uncached_pods: int = 2000,
    new_shape_pods: int = 2000,
) -> BenchResult:
    """Every scheduler starts from the same empty cluster and takes the same pods in order (the baselines the first
    `reference_pods` / `uncached_pods` of them: their cost per pod does not depend on how full the cluster is). The
    worst case (`new_shape_pods` pods of `new_shape_workload`, 0 skips it) runs on a fresh cluster too."""
    pod_list = workload(pods)
    knuma = measure(VectorizedScheduler(cluster(nodes, zones)).schedule, pod_list)
    uncached = None
    if uncached_pods > 0:
        baseline = VectorizedScheduler(cluster(nodes, zones), cache_shapes=0)
        uncached = measure(baseline.schedule, pod_list[: min(uncached_pods, pods)])
    new_shapes = None
    if new_shape_pods > 0:
        new_shapes = measure(VectorizedScheduler(cluster(nodes, zones)).schedule, new_shape_workload(new_shape_pods))
    reference = measure(SequentialScheduler(cluster(nodes, zones)).schedule, pod_list[: min(reference_pods, pods)])
    return BenchResult(nodes, pods, tuple(zones), knuma, reference, uncached, new_shapes)
