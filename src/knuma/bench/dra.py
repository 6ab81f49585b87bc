"""Scheduling pods with ResourceClaims at 1000 DGX-like nodes: the daemon's cycle, pods/s and latency per pod.

    python -m knuma.bench.dra [--nodes 1000] [--claim-pods 100] [--plain-pods 1000]

Nodes are the `dgx` shape (2 NUMA nodes of 55 CPUs, 8 GPUs and 8 NICs, GPU *i* and NIC *i* on one PCIe root) with
their NRT and ResourceSlices. Each pod runs the steps the daemon's `Scheduler.schedule_one` runs, on the daemon's
objects (`ClusterCache` with the DRA zone overlay, `FastPath`, the default configuration's profile with
DynamicResources): the zone devices re-read, the decision (`FastPath.decide`: for pods with claims, DynamicResources
node by node on the nodes the vectorised plugins leave feasible, its Filter running the allocator), Reserve
(`DynamicResources.allocations`, the allocation held in flight, the device shape observed) and the cache's assume;
then the claim is written back as its informer would deliver it. Binding is left out (`knuma.bench.scheduler`
measures the whole loop through an API server). Pods with claims ask for 1 GPU + 1 NIC on one PCIe root with 8 CPUs,
or 2 GPUs + 1 NIC with 16 CPUs, on an empty cluster and on one where half the GPUs are held by claims allocated
beforehand without pods (scheduler_perf's `SteadyStateClusterResourceClaimTemplate/half_*`: one claim per GPU,
GPUs 0-3 of every node); the same number of pods without claims (8 or 16 CPUs) runs on a fresh cluster for scale
(the vectorised fast path).
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import time
from dataclasses import dataclass
from typing import Any

from knuma.api.pod import Pod
from knuma.bench.scheduler import _node, _nrt
from knuma.scheduler.cache.nrt import ClusterCache
from knuma.scheduler.config.load import build_profiles, default_config
from knuma.scheduler.daemon.heap import frozen_heap
from knuma.scheduler.fast.path import FastPath
from knuma.scheduler.framework.interface import Profile
from knuma.scheduler.plugins.device_state import DeviceState
from knuma.scheduler.plugins.dra_zones import claimed_devices
from knuma.scheduler.plugins.dynamic_resources import DynamicResources
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.sim.dra import claim_pod
from knuma.testbed.dra import device_classes, resource_slices
from knuma.testbed.shapes import BUILTIN_SHAPES

__all__ = ["DraBenchRow", "run"]

SCHEDULER = "topology-aware-scheduler"
GPU_DRIVER = "gpu.sim.knuma.io"
"""The simulated GPU driver of the `dgx` shape (`knuma.testbed.dra`), also its device class."""


@dataclass(frozen=True)
class DraBenchRow:
    pods_kind: str
    nodes: int
    pods: int
    scheduled: int
    seconds: float
    p50_ms: float
    p99_ms: float

    @property
    def pods_per_second(self) -> float:
        return self.pods / self.seconds if self.seconds else 0.0


def _pod(index: int, gpus: int, cpus: int, claims: bool) -> tuple[Pod, dict[str, Any] | None]:
    """`gpus` GPUs and a NIC (on the same PCIe root for one GPU) with `cpus` CPUs and 4 GiB per CPU, or the same pod
    without a claim."""
    pod, claim = claim_pod(
        f"p{index:05d}",
        index,
        cpus=cpus,
        memory_gi=4 * cpus,
        gpus=gpus if claims else 0,
        nics=1 if claims else 0,
        same_root=gpus == 1,
        scheduler_name=SCHEDULER,
    )
    return pod, claim or None


def _cluster(nodes: int) -> tuple[ClusterCache, DeviceState, FastPath, Profile]:
    shape = BUILTIN_SHAPES["dgx"]
    cache = ClusterCache()
    devices = DeviceState()
    for body in device_classes([shape]):
        devices.set_class(body)
    for i in range(nodes):
        name = f"dgx-{i:04d}"
        cache.upsert_node(_node(name, 2, 55, 1020))
        cache.upsert_nrt(_nrt(name, 2, 55, 1020))
        for body in resource_slices(name, shape):
            devices.set_slice(body)
    cache.overlay = devices.with_zone_devices
    profile = build_profiles(default_config(), devices=devices)[SCHEDULER]
    return cache, devices, FastPath(cache), profile


def _cycle(
    cache: ClusterCache, devices: DeviceState, fast: FastPath, profile: Profile, pod: Pod, claim: dict[str, Any] | None
) -> bool:
    """One `Scheduler.schedule_one` without the bind: zone devices, decision, Reserve, assume."""
    changed = devices.zone_devices_changed()
    for name in list(cache.nodes) if changed is None else changed:
        cache.invalidate(name)
    outcome = fast.decide(profile, pod)
    if outcome.node is None:
        return False
    assumed = pod
    if claim is not None:
        plugin = next(p for p in profile.filters if isinstance(p, DynamicResources))
        info = cache.node_info(outcome.node)
        assert info is not None
        result, claims = plugin.allocations(pod, info)
        if not result.allocatable:
            return False
        chosen = {c.claim: c.allocation for c in result.results}
        devices.reserve(pod, chosen)
        numa = next(p for p in profile.filters if isinstance(p, NodeResourceTopologyMatch))
        numa.demand.observe(pod, claimed_devices(chosen.values()))
        in_flight = {c.key: chosen.get(c.key) for c in claims.claims}
        assumed = dataclasses.replace(pod, dra_devices=plugin.device_numa(pod, outcome.node, in_flight))
    cache.assume(assumed, outcome.node)
    return True


def _allocated_claim(node: str, gpu: int) -> dict[str, Any]:
    """A claim for one GPU, allocated to GPU `gpu` of `node` (scheduler_perf's `allocResourceClaims`: allocated
    without a pod)."""
    result = {"request": "gpu", "driver": GPU_DRIVER, "pool": node, "device": f"gpu-{gpu}"}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"init-{node}-{gpu}", "namespace": "init"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": GPU_DRIVER}}]}},
        "status": {"allocation": {"devices": {"results": [result]}}},
    }


def _measure(kind: str, nodes: int, pods: int, claims: bool, seed: int, half_allocated: bool = False) -> DraBenchRow:
    cache, devices, fast, profile = _cluster(nodes)
    if half_allocated:
        for name in list(cache.nodes):
            for gpu in range(4):
                devices.set_claim(_allocated_claim(name, gpu))
    rng = random.Random(seed)
    arrivals = [_pod(i, *rng.choice([(1, 8), (1, 8), (2, 16)]), claims) for i in range(pods)]
    _cycle(cache, devices, fast, profile, *_pod(pods, 1, 8, claims))  # warm-up (first shape, caches)
    latencies = []
    scheduled = 0
    with frozen_heap():  # as the daemon freezes the heap once its caches are synced
        start = time.perf_counter()
        for pod, claim in arrivals:
            if claim is not None:
                devices.set_claim(claim)  # the claim exists before its pod is scheduled
            began = time.perf_counter()
            scheduled += _cycle(cache, devices, fast, profile, pod, claim)
            latencies.append(time.perf_counter() - began)
            if claim is not None:
                written = devices.in_flight.get(f"default/{claim['metadata']['name']}")
                if written is not None:  # PreBind wrote it; the informer brings it back
                    devices.set_claim({**claim, "status": {"allocation": written[1].to_dict()}})
        seconds = time.perf_counter() - start
    quantiles = statistics.quantiles(latencies, n=100)
    return DraBenchRow(kind, nodes, pods, scheduled, seconds, quantiles[49] * 1000, quantiles[98] * 1000)


def run(nodes: int = 1000, claim_pods: int = 100, plain_pods: int = 1000, seed: int = 0) -> list[DraBenchRow]:
    return [
        _measure("with claims (1-2 GPUs + NIC)", nodes, claim_pods, True, seed),
        _measure("with claims, half the GPUs allocated", nodes, claim_pods, True, seed, half_allocated=True),
        _measure("without claims", nodes, plain_pods, False, seed),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--claim-pods", type=int, default=100)
    parser.add_argument("--plain-pods", type=int, default=1000)
    args = parser.parse_args()
    for row in run(args.nodes, args.claim_pods, args.plain_pods):
        print(
            f"{row.pods_kind}: {row.scheduled}/{row.pods} pods on {row.nodes} nodes in {row.seconds:.2f}s: "
            f"{row.pods_per_second:.1f} pods/s; per pod p50 {row.p50_ms:.1f} ms, p99 {row.p99_ms:.1f} ms"
        )


if __name__ == "__main__":
    main()
