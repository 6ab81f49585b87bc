"""Micro-benchmarks of the scheduling core: Filter + Score cost per node for 2-, 4- and 8-zone nodes under
single-numa-node, and for wide machines (8 to 16 NUMA zones) under restricted, where hints cover every NUMA mask."""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass, replace

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import Pod
from knuma.scheduler.framework.interface import NodeInfo, schedule_one
from knuma.scheduler.framework.profiles import default_profile
from knuma.topology.node import NodeTopology

GI = 1 << 30


@dataclass(frozen=True)
class CoreResult:
    zones: int
    nodes: int
    feasible: int
    microseconds_per_node: float


def synthetic_nodes(count: int, zones: int, seed: int = 1, policy: Policy = Policy.SINGLE_NUMA_NODE) -> list[NodeInfo]:
    """Nodes of `zones` NUMA zones with 8 CPUs and 16 GiB each (memory manager on), partly used at random; beyond 8
    zones `max-allowable-numa-nodes` allows them."""
    rng = random.Random(seed)
    infos = []
    for index in range(count):
        allocatable = {z: {"cpu": 8000, "memory": 16 * GI} for z in range(zones)}
        available = {z: {"cpu": rng.randrange(0, 9) * 1000, "memory": rng.randrange(0, 17) * GI} for z in range(zones)}
        topology = NodeTopology.build(f"node-{index}", allocatable, policy, Scope.CONTAINER, available=available)
        if zones > topology.config.max_numa_nodes:
            topology = replace(topology, config=replace(topology.config, max_numa_nodes=zones))
        total = topology.available_total()
        infos.append(NodeInfo(name=topology.name, allocatable=total, topology=topology))
    return infos


def guaranteed_pod(cpus: int = 4, memory_gi: int = 8) -> Pod:
    limits = {"cpu": str(cpus), "memory": f"{memory_gi}Gi"}
    return Pod.from_manifest(
        {"metadata": {"name": "bench"}, "spec": {"containers": [{"name": "app", "resources": {"limits": limits}}]}}
    )


def measure(zones: int, nodes: int = 500, rounds: int = 5) -> CoreResult:
    infos = synthetic_nodes(nodes, zones)
    profile = default_profile()
    pod = guaranteed_pod()
    samples = []
    feasible = 0
    for _ in range(rounds):
        start = time.perf_counter()
        result = schedule_one(profile, pod, infos, explain=False)
        samples.append(time.perf_counter() - start)
        feasible = len(result.feasible())
    return CoreResult(zones, nodes, feasible, statistics.median(samples) / nodes * 1e6)


def run(zone_counts: tuple[int, ...] = (2, 4, 8), nodes: int = 500) -> list[CoreResult]:
    return [measure(z, nodes) for z in zone_counts]


@dataclass(frozen=True)
class WideResult:
    zones: int
    nodes: int
    cpus: int
    feasible: int
    milliseconds_per_node: float


def measure_wide(zones: int, cpus: int, nodes: int = 10, rounds: int = 3) -> WideResult:
    """A Guaranteed pod of `cpus` CPUs (2 GiB) against restricted nodes of `zones` zones: CPU and memory hints over
    every NUMA mask, merged; a pod wider than any preferred mask takes the non-preferred merge. Each round has nodes
    of its own (another seed), so no admission is answered from the cache of an earlier round."""
    profile = default_profile()
    pod = guaranteed_pod(cpus, 2)
    samples = []
    feasible = 0
    for round_index in range(rounds):
        infos = synthetic_nodes(nodes, zones, seed=1000 * (round_index + 1) + cpus, policy=Policy.RESTRICTED)
        start = time.perf_counter()
        result = schedule_one(profile, pod, infos, explain=False)
        samples.append(time.perf_counter() - start)
        feasible = len(result.feasible())
    return WideResult(zones, nodes, cpus, feasible, statistics.median(samples) / nodes * 1e3)


def run_wide(zone_counts: tuple[int, ...] = (8, 12, 16), cpu_counts: tuple[int, ...] = (4, 20)) -> list[WideResult]:
    return [measure_wide(z, c) for z in zone_counts for c in cpu_counts]
