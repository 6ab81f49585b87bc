"""Stranded devices: KnumaBinPacking charges placements for the GPUs a zone is expected to strand under the recent mix
of device pods (GPUs left without the CPUs or memory the pods that usually come need with them), and credits
placements that lower it."""

from __future__ import annotations

import random

import pytest

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import Pod
from knuma.scheduler.fast.vectorized import VectorizedScheduler
from knuma.scheduler.framework.interface import CycleState, NodeInfo, schedule_one
from knuma.scheduler.framework.profiles import default_profile
from knuma.scheduler.plugins.device_stranding import (
    GAP_WEIGHT,
    DeviceDemand,
    device_shape,
    device_stranding_penalty,
    gap_counts,
    gap_penalty,
)
from knuma.scheduler.plugins.dra_extended import ExtendedResourceMap
from knuma.scheduler.plugins.node_resources_fit import NodeResourcesFit
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.plugins.stranding import CPUDemand
from knuma.scheduler.plugins.strategies import ScoringStrategy, StrategyType
from knuma.scheduler.sequential import SequentialScheduler
from knuma.topology.kubelet import admit
from knuma.topology.node import NodeTopology
from tests.scheduler.builders import guaranteed, node_info, nrt, pod

GI = 1 << 30
GPU = "example.com/gpu"
PACKING = ScoringStrategy(StrategyType.KNUMA_BIN_PACKING)


def gpu_pod(gpus: int, cpus: int, name: str) -> Pod:
    return pod(guaranteed("app", str(cpus), f"{4 * cpus}Gi", limits={GPU: str(gpus)}), name=name)


def cpu_pod(cpus: int, name: str) -> Pod:
    return pod(guaranteed("app", str(cpus), f"{2 * cpus}Gi"), name=name)


def gpu_node(name: str, *free: tuple[int, int]) -> NodeInfo:
    """Zones of 4 GPUs and 48 CPUs, with (free GPUs, free CPUs) each."""
    zones: dict[int, dict[str, tuple[str, str] | str]] = {
        z: {GPU: ("4", str(gpus)), "cpu": ("48", str(cpus)), "memory": "256Gi"} for z, (gpus, cpus) in enumerate(free)
    }
    return node_info(nrt(name, zones))


def seen(*pods: Pod) -> CPUDemand:
    demand = CPUDemand()
    for p in pods:
        demand.observe(p)
    return demand


def test_shapes_are_the_devices_and_aligned_resources_of_device_pods() -> None:
    assert device_shape(gpu_pod(2, 16, "a")) == (("cpu", 16), (GPU, 2), ("memory", 64 * GI))
    assert device_shape(cpu_pod(16, "b")) == ()  # no devices: the CPU stranding term's business


def test_expected_stranded_devices_of_a_zone() -> None:
    demand = DeviceDemand()
    for index, (gpus, cpus) in enumerate([(1, 8), (2, 16)]):
        demand.observe(gpu_pod(gpus, cpus, f"seen-{index}"))
    assert demand.names == ("cpu", GPU, "memory")
    assert demand.expected_stranded((32, 4, 256 * GI)) == 0  # 8 CPUs per GPU either way: every GPU gets used
    assert demand.expected_stranded((10, 2, 256 * GI)) == 100  # CPUs for one 8-CPU pod: the second GPU is stuck
    assert demand.expected_stranded((7, 4, 256 * GI)) == 400  # not even one pod's CPUs
    assert demand.expected_stranded((47, 4, 64 * GI)) == 200  # memory for two 1-GPU pods or one 2-GPU pod
    assert DeviceDemand().expected_stranded((0, 4, 0)) == 0  # nothing seen: no penalty
    with pytest.raises(ValueError, match="window must be at least 1 pod"):
        DeviceDemand(window=0)


@pytest.mark.parametrize(("ones", "fours", "expected"), [(9, 1, 90), (1, 9, 10)])
def test_the_expectation_follows_how_often_each_shape_comes(ones: int, fours: int, expected: int) -> None:
    """4 free GPUs and 31 CPUs: a 4-GPU pod of 24 CPUs uses them all, 1-GPU pods of 8 CPUs only three. Some multiset
    of shapes uses every GPU, but how likely it is depends on which pod comes first."""
    demand = DeviceDemand()
    for index in range(ones):
        demand.observe(gpu_pod(1, 8, f"one-{index}"))
    for index in range(fours):
        demand.observe(gpu_pod(4, 24, f"four-{index}"))
    assert demand.expected_stranded((31, 4, 256 * GI)) == expected


def test_the_window_forgets_old_shapes() -> None:
    demand = DeviceDemand(window=1)
    assert demand.observe(gpu_pod(1, 8, "a"))
    assert not demand.observe(gpu_pod(1, 8, "a"))  # a retry
    assert demand.observe(gpu_pod(4, 24, "b"))  # "a" leaves
    assert demand.expected_stranded((30, 3, 256 * GI)) == 300  # only the 4-GPU shape is known now


def test_observe_reports_a_change_only_when_the_expectations_read_so_far_change() -> None:
    """What `CPUDemand.version` (and so every cached score) follows: the same mix again changes nothing; a shift in
    the mix that moves an expectation the scheduler has read does."""
    demand = DeviceDemand(window=10)
    for index in range(10):
        demand.observe(gpu_pod(1, 8, f"a-{index}") if index % 2 else gpu_pod(4, 24, f"a-{index}"))
    assert demand.expected_stranded((31, 4, 256 * GI)) == 50
    assert not any(  # each pod replaces one of its shape in the window
        demand.observe(gpu_pod(1, 8, f"b-{index}") if index % 2 else gpu_pod(4, 24, f"b-{index}"))
        for index in range(20)
    )
    changes = [demand.observe(gpu_pod(1, 8, f"c-{index}")) for index in range(4)]
    assert any(changes) and demand.expected_stranded((31, 4, 256 * GI)) > 50


def test_a_cpu_pod_that_would_strand_gpus_goes_where_it_strands_none() -> None:
    """A 16-CPU pod: CPU packing prefers the fuller GPU node, but there it leaves 2 GPUs with 10 CPUs, enough for
    one 8-CPU GPU pod (one GPU stranded where none was expected); on the emptier node the GPUs keep their CPUs."""
    demand = seen(gpu_pod(1, 8, "g1"), gpu_pod(2, 16, "g2"))
    fuller, emptier = gpu_node("fuller", (2, 26)), gpu_node("emptier", (4, 48))
    p = cpu_pod(16, "cpu16")
    assert fuller.topology is not None
    admission = admit(p, fuller.topology)
    assert device_stranding_penalty(fuller.topology, admission.node, demand.devices) == 3 * (100 - 0) // 4
    nodes = [fuller, emptier]
    assert schedule_one(default_profile(PACKING), p, nodes).selected == "fuller"  # no device pod seen
    exact = schedule_one(default_profile(PACKING, demand=demand), p, nodes, explain=False)
    assert exact.selected == "emptier"
    vectorized = VectorizedScheduler(nodes, PACKING, demand=seen(gpu_pod(1, 8, "g1"), gpu_pod(2, 16, "g2")))
    _, scores = vectorized.filter_and_score(p)
    assert scores.tolist() == [r.score for r in exact.nodes]
    assert vectorized.schedule(p).node == "emptier"


def test_a_placement_that_makes_a_zone_likelier_to_end_full_is_credited() -> None:
    """With 1-GPU pods of 8 CPUs common, a zone of 4 GPUs and 31 CPUs is expected to strand 0.9 GPU; a 4-GPU pod of 24
    CPUs takes all four: a credit, on both paths."""
    demand = seen(*(gpu_pod(1, 8, f"one-{index}") for index in range(9)), gpu_pod(4, 24, "four"))
    nodes = [gpu_node("tight", (4, 31)), gpu_node("roomy", (4, 48))]
    p = gpu_pod(4, 24, "new-four")
    demand.observe(p)
    for node, charge in zip(nodes, (3 * (0 - 90) // 4, 0), strict=True):
        assert node.topology is not None
        admission = admit(p, node.topology)
        assert device_stranding_penalty(node.topology, admission.node, demand.devices) == charge
    exact = schedule_one(default_profile(PACKING, demand=demand), p, nodes, explain=False)
    assert exact.selected == "tight"
    vectorized = VectorizedScheduler(nodes, PACKING, demand=demand)
    _, scores = vectorized.filter_and_score(p)
    assert scores.tolist() == [r.score for r in exact.nodes]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_vectorized_and_sequential_agree_on_a_gpu_cluster(seed: int) -> None:
    """GPU nodes (both scopes) next to CPU nodes, GPU pods of several CPU-to-GPU ratios and CPU-only pods: the
    penalty decides many placements, and both paths must make the same ones."""
    rng = random.Random(seed)
    nodes = []
    for index in range(12):
        with_gpus = index < 9
        zones = {
            z: {"cpu": 24_000 if with_gpus else 32_000, "memory": 96 * GI, **({GPU: 4} if with_gpus else {})}
            for z in range(2)
        }
        scope = Scope.POD if index % 3 == 0 else Scope.CONTAINER
        topology = NodeTopology.build(f"n{index}", zones, Policy.SINGLE_NUMA_NODE, scope)
        nodes.append(NodeInfo(f"n{index}", allocatable=topology.available_total() | {"pods": 110}, topology=topology))
    sequential, vectorized = SequentialScheduler(nodes, PACKING), VectorizedScheduler(nodes, PACKING)
    plugin = next(f for f in sequential.profile.filters if isinstance(f, NodeResourceTopologyMatch))
    penalised = credited = 0
    for index in range(120):
        if rng.random() < 0.7:
            gpus = rng.choice([1, 1, 2, 3, 4])
            p = gpu_pod(gpus, gpus * rng.choice([3, 4, 6]), f"p{index}")
        else:
            p = cpu_pod(rng.choice([4, 8, 12]), f"p{index}")
        plugin.demand.observe(p)  # as scheduling it will: its own shape counts
        charges = []
        for node in sequential.nodes:
            if node.topology is None:
                continue
            admission = admit(p, node.topology)
            if admission.admitted:
                charges.append(device_stranding_penalty(node.topology, admission.node, plugin.demand.devices))
        penalised += any(charge > 0 for charge in charges)
        credited += any(charge < 0 for charge in charges)
        want, got = sequential.schedule(p), vectorized.schedule(p)
        assert (got.node, got.score) == (want.node, want.score), f"pod {index}"
    assert penalised > 5 and penalised + credited > 10


def test_new_device_shapes_do_not_rebuild_the_cpu_stranding_table() -> None:
    """Device shapes change `CPUDemand.version` (cached scores must be recomputed) but not the CPU sizes: the
    stranding table stays as it was (the CPU table once doubled on every version change, and 40 new shapes hung the
    scheduler)."""
    demand = seen(cpu_pod(4, "four"))
    table = demand.stranded_table(10)
    for index in range(40):
        demand.observe(gpu_pod(1 + index, 4, f"g{index}"))  # 4 CPUs: a size seen already
    assert demand.stranded_table(10) is table and len(table) <= 1 + 64


def test_gap_counts_and_the_sum_of_squares_change_of_a_placement() -> None:
    """Zones with some but not all GPUs free are gaps; a placement is charged the change in the sum of the squared
    counts: creating a third 1-GPU gap costs 2*2+1, turning a 3-gap into a 1-gap where two 1-gaps exist costs
    (2*2+1) - (2*1-1), filling a 1-gap exactly earns 2*2-1."""
    nodes = [gpu_node("a", (1, 40), (3, 40)), gpu_node("b", (1, 40), (4, 48)), gpu_node("c", (0, 10), (2, 40))]
    topologies = [n.topology for n in nodes if n.topology is not None]
    counts = gap_counts(topologies)
    assert counts == {1: 2, 3: 1, 2: 1}
    two = gpu_pod(2, 8, "two")
    b = topologies[1]
    into_empty = admit(two, b).node  # zone 1 of b: 4 -> 2, a second 2-gap
    assert gap_penalty(b, into_empty, counts) == GAP_WEIGHT * (2 * 1 + 1)
    a = topologies[0]
    after = a.with_available({0: dict(a.zones[0].available), 1: {**a.zones[1].available, GPU: 1}})
    assert gap_penalty(a, after, counts) == GAP_WEIGHT * ((2 * 2 + 1) - (2 * 1 - 1))
    filled = a.with_available({0: {**a.zones[0].available, GPU: 0}, 1: dict(a.zones[1].available)})
    assert gap_penalty(a, filled, counts) == -GAP_WEIGHT * (2 * 2 - 1)


def test_a_gpu_pod_keeps_the_gap_counts_even_on_both_paths() -> None:
    """Two 1-GPU gaps exist; a 2-GPU pod fits a zone with 3 free (leaving a third 1-gap) or an empty zone of a node
    otherwise alike (a 2-gap): CPU packing and expected stranding tie, and the node named first would win; the sum
    of squares sends it to the empty zone, and the vectorised path scores every node as the plugin does."""
    demand = seen(gpu_pod(1, 8, "one"), gpu_pod(2, 8, "two"))
    nodes = [
        gpu_node("a-three-free", (3, 40), (0, 0)),
        gpu_node("b-four-free", (4, 40), (0, 0)),
        gpu_node("gaps", (1, 48), (1, 48)),
    ]
    p = gpu_pod(2, 8, "new-two")
    demand.observe(p)
    exact = schedule_one(default_profile(PACKING, demand=demand), p, nodes, explain=True)
    assert exact.selected == "b-four-free"
    counts = gap_counts(n.topology for n in nodes if n.topology is not None)
    charged = {}
    for node in nodes[:2]:
        assert node.topology is not None
        charged[node.name] = gap_penalty(node.topology, admit(p, node.topology).node, counts)
    assert charged == {"a-three-free": GAP_WEIGHT * 4, "b-four-free": GAP_WEIGHT * 1}
    vectorized = VectorizedScheduler(nodes, PACKING, demand=demand)
    _, scores = vectorized.filter_and_score(p)
    assert scores.tolist() == [r.score or 0 for r in exact.nodes]
    assert vectorized.schedule(p).node == "b-four-free"


def test_reserve_replaces_the_shape_of_a_pod_whose_extended_resources_dra_serves() -> None:
    """A pod asking `example.com/gpu: 2` looks like a device-plugin pod while it is filtered; once Reserve has
    allocated its extended resources through DRA (KEP-5004), its shape is the claim's devices, and the extended
    resource, which no zone holds on that node, leaves it (neither a phantom demand nor the devices counted twice).
    Reserved where a device plugin serves it, the shape stays; a second Reserve of the same shape changes nothing."""
    demand = DeviceDemand()
    dra = gpu_pod(2, 16, "dra")
    assert demand.observe(dra)  # Filter: the node is not chosen yet
    assert demand.names == ("cpu", GPU, "memory")
    assert demand.observe(dra, {"gpu.sim.knuma.io/devices": 2}, served=(GPU,))
    assert demand.mix == {(("cpu", 16), ("gpu.sim.knuma.io/devices", 2), ("memory", 64 * GI)): 1}
    assert demand.names == ("cpu", "gpu.sim.knuma.io/devices", "memory")
    assert not demand.observe(dra, {"gpu.sim.knuma.io/devices": 2}, served=(GPU,))
    plugin = gpu_pod(2, 16, "plugin")
    demand.observe(plugin)
    assert not demand.observe(plugin, {})  # a device plugin's GPUs: the shape Filter saw
    assert demand.mix[(("cpu", 16), (GPU, 2), ("memory", 64 * GI))] == 1


def test_where_dra_serves_an_extended_resource_dynamic_resources_charges_its_device_stranding() -> None:
    """KEP-5004: on a node without `example.com/gpu` a DeviceClass serves it, the GPU is a DRA device, and
    DynamicResources charges the devices its placement strands; KnumaBinPacking leaves its device term out there, as
    for a pod with ResourceClaims (not charged twice). Where a device plugin serves it, the term stays. Both paths."""
    dra_gpus = "gpu.sim.knuma.io/devices"
    demand = CPUDemand()
    demand.observe(gpu_pod(1, 8, "g1"), {dra_gpus: 1}, served=(GPU,))
    mapping = ExtendedResourceMap()
    mapping.set_class("gpus", GPU, "2026-11-29T10:00:00Z")
    dra_zones: dict[int, dict[str, tuple[str, str] | str]] = {
        z: {dra_gpus: ("4", "4"), "cpu": ("48", "48"), "memory": "256Gi"} for z in (0, 1)
    }
    dra = node_info(nrt("dra", dra_zones))  # NRT data only: no example.com/gpu in what it lists
    plugin_node = gpu_node("plugin", (4, 48), (4, 48))
    big = gpu_pod(1, 40, "big")  # 40 of a zone's 48 CPUs: 8 left for its 4 GPUs, 8-CPU GPU pods expected
    claims = Pod.from_manifest(
        {
            "metadata": {"name": "claims"},
            "spec": {
                "containers": [guaranteed("app", "40", "160Gi")],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu"}],
            },
        }
    )
    numa = NodeResourceTopologyMatch(PACKING, demand, extended=mapping)
    served = numa.score(CycleState(), big, dra)
    assert served == numa.score(CycleState(), claims, dra)
    assert served > NodeResourceTopologyMatch(PACKING, demand).score(CycleState(), big, dra)  # without DRA: charged
    assert numa.score(CycleState(), big, plugin_node) < numa.score(CycleState(), claims, plugin_node)
    vectorized = VectorizedScheduler([dra, plugin_node], PACKING, demand=demand, fit=NodeResourcesFit(extended=mapping))
    _, scores = vectorized.filter_and_score(big)
    profile = default_profile(PACKING, demand=demand)
    for plugin in profile.filters:
        if isinstance(plugin, NodeResourcesFit | NodeResourceTopologyMatch):
            plugin.extended = mapping
    exact = schedule_one(profile, big, [dra, plugin_node], explain=False)
    assert scores.tolist() == [r.score for r in exact.nodes]
