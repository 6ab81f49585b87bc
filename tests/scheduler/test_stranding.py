"""Stranded CPUs: KnumaBinPacking charges placements for zone remainders no recent pod size can fill."""

from __future__ import annotations

import random

import pytest

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import Pod
from knuma.scheduler.fast.vectorized import VectorizedScheduler
from knuma.scheduler.framework.interface import CycleState, NodeInfo, schedule_one
from knuma.scheduler.framework.profiles import default_profile
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.plugins.stranding import CPUDemand, exclusive_cpu_sizes, stranding_penalty
from knuma.scheduler.plugins.strategies import ScoringStrategy, StrategyType
from knuma.scheduler.sequential import SequentialScheduler
from knuma.topology.kubelet import admit
from knuma.topology.node import NodeTopology
from tests.scheduler.builders import container, guaranteed, node_info, nrt, pod

GI = 1 << 30
PACKING = ScoringStrategy(StrategyType.KNUMA_BIN_PACKING)
SIZES = (3, 5, 6, 7, 10)


def sized(cpu: int, name: str = "") -> Pod:
    return pod(guaranteed("app", str(cpu), f"{cpu}Gi"), name=name or f"g{cpu}")


def demand_of(*sizes: int) -> CPUDemand:
    demand = CPUDemand()
    for index, size in enumerate(sizes):
        demand.observe(sized(size, f"seen-{index}"))
    return demand


def twelve_cpu_zones(name: str, *free: int, devices: bool = False) -> NodeInfo:
    zones = {}
    for z, cpus in enumerate(free):
        zone: dict[str, tuple[str, str] | str] = {"cpu": ("12", str(cpus)), "memory": "64Gi"}
        if devices:
            zone["example.com/gpu"] = "2"
        zones[z] = zone
    return node_info(nrt(name, zones))


def test_sizes_are_the_long_running_exclusive_cpus_of_guaranteed_pods() -> None:
    sidecar = guaranteed("proxy", "1", restartPolicy="Always")
    p = pod(guaranteed("app", "4"), guaranteed("log", "2"), init=(guaranteed("setup", "8"), sidecar))
    assert exclusive_cpu_sizes(p) == (1, 4, 2)  # the init container's 8 CPUs are given back before the apps start
    assert exclusive_cpu_sizes(pod(guaranteed("app", "1500m"))) == ()  # fractional: shared pool, nothing pinned
    assert exclusive_cpu_sizes(pod(container("app", requests={"cpu": "4"}))) == ()  # Burstable


def test_stranded_cpus_are_what_no_sum_of_sizes_fills() -> None:
    demand = demand_of(*SIZES)
    # 3 and 5 fill 8 and 11 exactly; 4 takes one 3 and strands 1; nothing fits 1 or 2
    assert [demand.stranded(free) for free in range(13)] == [0, 1, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]
    assert demand.stranded(10_000) == 0  # the table grows on demand
    assert CPUDemand().stranded(2) == 0  # nothing seen yet: no penalty, plain bin packing


def test_each_pod_counts_once_and_the_window_forgets_old_sizes() -> None:
    demand = CPUDemand(window=2)
    demand.observe(sized(4, "a"))
    version = demand.version
    demand.observe(sized(4, "a"))  # a retry of the same pod
    demand.observe(sized(4, "b"))  # the same size again
    assert demand.sizes == {4} and demand.version == version
    demand.observe(sized(6, "c"))  # "a" leaves the window; 4 is still there through "b"
    assert demand.sizes == {4, 6} and demand.version == version + 1
    demand.observe(sized(6, "d"))  # "b" leaves: no 4-CPU pod in the window any more
    assert demand.sizes == {6} and demand.version == version + 2
    with pytest.raises(ValueError, match="window must be at least 1 pod"):
        CPUDemand(window=0)


def test_penalty_is_the_increase_in_stranded_cpus_relative_to_the_zone() -> None:
    demand = demand_of(*SIZES)
    node = twelve_cpu_zones("n", 9)
    assert node.topology is not None

    def penalty(cpu: int, on: NodeInfo = node) -> int:
        assert on.topology is not None
        admission = admit(sized(cpu), on.topology)
        assert admission.admitted
        return stranding_penalty(on.topology, admission.node, demand)

    assert penalty(7) == 3 * 100 * 2 // 12  # 9 - 7 leaves 2: both stranded
    assert penalty(5) == 3 * 100 * 1 // 12  # leaves 4: a 3-CPU pod fits, 1 CPU stranded
    assert penalty(6) == 0  # leaves 3: exactly one 3-CPU pod
    assert penalty(7, twelve_cpu_zones("gpu", 9, devices=True)) == 0  # zones with devices are exempt


def test_knuma_bin_packing_leaves_remainders_later_pods_can_use() -> None:
    """A 7-CPU pod: packing alone picks the fuller node and strands 2 CPUs there; with the sizes seen it takes the
    empty zone and leaves 5, which a 5-CPU pod fills."""
    nodes = [twelve_cpu_zones("fuller", 9, 0), twelve_cpu_zones("emptier", 12, 12)]
    p = sized(7, "new")
    assert schedule_one(default_profile(PACKING), p, nodes).selected == "fuller"  # only its own size seen: 7
    demand = demand_of(*SIZES)
    assert schedule_one(default_profile(PACKING, demand=demand), p, nodes).selected == "emptier"
    vectorized = VectorizedScheduler(nodes, PACKING, demand=demand_of(*SIZES))
    feasible, scores = vectorized.filter_and_score(p)
    exact = schedule_one(default_profile(PACKING, demand=demand), p, nodes, explain=False)
    assert scores.tolist() == [r.score for r in exact.nodes] and feasible.all()
    assert vectorized.schedule(p).node == "emptier"


def test_the_plugin_counts_pending_pods_too() -> None:
    """Pods that fit nowhere still say which sizes the zones will be asked for."""
    plugin = NodeResourceTopologyMatch(PACKING)
    full = twelve_cpu_zones("full", 2)
    assert not plugin.filter(CycleState(), sized(10, "waiting"), full).ok
    assert plugin.demand.sizes == {10}


def test_vectorized_rescores_cached_shapes_when_the_sizes_change() -> None:
    nodes = [twelve_cpu_zones("fuller", 9, 0), twelve_cpu_zones("emptier", 12, 12)]
    vectorized = VectorizedScheduler(nodes, PACKING)
    _, before = vectorized.filter_and_score(sized(7, "first"))
    # With only 7s seen, a 7 strands nothing new anywhere. Once 3s are seen, 9 and 12 are sums of 3s, and the 2 or 5
    # CPUs a 7 leaves strand 2: the scores cached for the 7-CPU shape are stale.
    vectorized.demand.observe(sized(3, "a-three"))
    second = sized(7, "second")
    _, after = vectorized.filter_and_score(second)
    exact = schedule_one(default_profile(PACKING, demand=vectorized.demand), second, nodes, explain=False)
    assert after.tolist() == [r.score for r in exact.nodes]
    assert after[0] == before[0] - 3 * 100 * 2 // 12
    assert after[1] < before[1]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_vectorized_and_sequential_agree_on_a_fragmenting_workload(seed: int) -> None:
    """Eight 11-12-CPU zones per node, a few pod sizes, both scopes, multi-container pods and a device zone: the
    penalty decides many placements, and both paths must make the same ones."""
    rng = random.Random(seed)
    nodes = []
    for index in range(10):
        zones = {z: {"cpu": (11 if z < 4 else 12) * 1000, "memory": 64 * GI} for z in range(8)}
        if index == 9:
            zones[7]["example.com/gpu"] = 2
        scope = Scope.POD if index % 3 == 0 else Scope.CONTAINER
        topology = NodeTopology.build(f"n{index}", zones, Policy.SINGLE_NUMA_NODE, scope)
        nodes.append(NodeInfo(f"n{index}", allocatable=topology.available_total() | {"pods": 110}, topology=topology))
    sequential, vectorized = SequentialScheduler(nodes, PACKING), VectorizedScheduler(nodes, PACKING)
    penalised = 0
    for index in range(150):
        apps = [guaranteed(f"c{i}", str(rng.choice(SIZES)), "2Gi") for i in range(rng.choice([1, 1, 1, 2]))]
        p = pod(*apps, name=f"p{index}")
        want, got = sequential.schedule(p), vectorized.schedule(p)
        assert (got.node, got.score) == (want.node, want.score), f"pod {index}"
        penalised += int(_penalised(sequential, p))
    assert penalised > 20


def _penalised(sequential: SequentialScheduler, p: Pod) -> bool:
    """Whether the pod's stranding penalty is positive on some node it fits (as the sequential scheduler sees them)."""
    plugin = next(f for f in sequential.profile.filters if isinstance(f, NodeResourceTopologyMatch))
    for node in sequential.nodes:
        if node.topology is None:
            continue
        admission = admit(p, node.topology)
        if admission.admitted and stranding_penalty(node.topology, admission.node, plugin.demand) > 0:
            return True
    return False
