"""DRA devices in the NUMA zones KnumaBinPacking scores: counted from the scheduler's claims (allocated and in
flight), claim pods' devices in the device shapes, and pods without claims kept off the CPUs that free DRA GPUs
need, on both decision paths."""

from __future__ import annotations

import random

import pytest

from knuma.api.dra.resourceclaim import AllocationResult, DeviceResult
from knuma.api.nrt import Policy, Scope
from knuma.api.pod import Pod
from knuma.scheduler.config.load import build_profiles, default_config
from knuma.scheduler.fast.vectorized import VectorizedScheduler
from knuma.scheduler.framework.interface import CycleState, NodeInfo, schedule_one
from knuma.scheduler.framework.profiles import default_profile
from knuma.scheduler.plugins.device_state import DeviceState
from knuma.scheduler.plugins.device_stranding import device_shape
from knuma.scheduler.plugins.dra_zones import claimed_devices, with_zone_devices
from knuma.scheduler.plugins.dynamic_resources import DynamicResources
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.plugins.stranding import CPUDemand
from knuma.scheduler.plugins.strategies import ScoringStrategy, StrategyType
from knuma.scheduler.sequential import SequentialScheduler
from knuma.testbed.dra import device_classes, resource_slices
from knuma.testbed.shapes import BUILTIN_SHAPES
from knuma.topology.node import NodeTopology
from tests.scheduler.builders import guaranteed, pod

GI = 1 << 30
GPUS, NICS = "gpu.sim.knuma.io/devices", "nic.sim.knuma.io/devices"
PACKING = ScoringStrategy(StrategyType.KNUMA_BIN_PACKING)


def claim_pod(name: str, cpus: int) -> Pod:
    container = guaranteed("app", str(cpus), f"{4 * cpus}Gi")
    container["resources"]["claims"] = [{"name": "devices"}]
    spec = {"containers": [container], "resourceClaims": [{"name": "devices", "resourceClaimName": f"{name}-claim"}]}
    return Pod.from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})


def cpu_pod(cpus: int, name: str) -> Pod:
    return pod(guaranteed("app", str(cpus), f"{2 * cpus}Gi"), name=name)


def allocation(*devices: tuple[str, str], pool: str = "p") -> AllocationResult:
    return AllocationResult(tuple(DeviceResult("r", driver, pool, device) for driver, device in devices))


def dgx_node(name: str, free_cpus: tuple[int, int], devices: dict[int, dict[str, tuple[int, int]]]) -> NodeInfo:
    zones = {z: {"cpu": 55_000, "memory": 1020 * GI} for z in range(2)}
    topology = NodeTopology.build(name, zones, Policy.SINGLE_NUMA_NODE, Scope.CONTAINER)
    topology = topology.with_available(
        {z: {"cpu": cpus * 1000, "memory": 1020 * GI} for z, cpus in enumerate(free_cpus)}
    )
    topology = with_zone_devices(topology, devices)
    return NodeInfo(name, allocatable={"cpu": 110_000, "memory": 2040 * GI, "pods": 110}, topology=topology)


def test_zone_devices_count_allocated_and_in_flight_claims() -> None:
    state = DeviceState()
    assert state.zone_devices_changed() == set()  # a cluster without DRA: nothing for the cache to re-read
    for body in resource_slices("dgx-0", BUILTIN_SHAPES["dgx"]):
        state.set_slice(body)
    assert state.zone_devices("dgx-0") == {0: {GPUS: (4, 4), NICS: (4, 4)}, 1: {GPUS: (4, 4), NICS: (4, 4)}}
    assert state.zone_devices_changed() is None  # first look: every node
    pool = next(iter(state.slices.values())).pool.name
    taken = {"request": "gpu", "driver": "gpu.sim.knuma.io", "pool": pool, "device": "gpu-5"}
    state.set_claim(
        {
            "metadata": {"name": "a", "namespace": "default"},
            "spec": {"devices": {"requests": []}},
            "status": {"allocation": {"devices": {"results": [taken]}}},
        }
    )
    assert state.zone_devices("dgx-0")[1][GPUS] == (4, 3)
    nic_pool = next(s for s in state.slices.values() if s.driver == "nic.sim.knuma.io").pool.name
    in_flight = allocation(("nic.sim.knuma.io", "nic-0"), pool=nic_pool)
    state.reserve(claim_pod("p", 8), {"default/b": in_flight})
    assert state.zone_devices("dgx-0")[0][NICS] == (4, 3)
    assert state.zone_devices_changed() == {"dgx-0"}
    assert state.zone_devices_changed() == set()
    info = state.with_zone_devices(dgx_node("dgx-0", (55, 55), {}))
    assert info.topology is not None
    assert info.topology.zones[1].available[GPUS] == 3 and info.topology.zones[1].total(GPUS) == 4
    assert state.with_zone_devices(dgx_node("other", (55, 55), {})).topology == dgx_node("other", (55, 55), {}).topology


def test_a_partitionable_gpu_counts_once_and_is_busy_once_any_cut_of_it_is_in_use() -> None:
    """`mig`: two GPUs per NUMA node, each published whole and as 9 partitions drawing on its counter set. The zone
    holds 2 GPUs, not 20; a 1g.10gb partition in flight makes its GPU busy, the other stays free."""
    state = DeviceState()
    for body in resource_slices("mig-0", BUILTIN_SHAPES["mig"]):
        state.set_slice(body)
    assert state.zone_devices("mig-0") == {0: {GPUS: (2, 2)}, 1: {GPUS: (2, 2)}}
    in_flight = allocation(("gpu.sim.knuma.io", "gpu-1-1g-10gb-3"), pool="mig-0")
    state.reserve(claim_pod("p", 2), {"default/b": in_flight})
    assert state.zone_devices("mig-0")[0][GPUS] == (2, 1)
    assert state.zone_devices("mig-0")[1][GPUS] == (2, 2)


def test_claim_pods_shapes_hold_their_dra_devices() -> None:
    p = claim_pod("trainer", 8)
    claimed = claimed_devices([allocation(("gpu.sim.knuma.io", "gpu-0"), ("nic.sim.knuma.io", "nic-0"))])
    assert claimed == {GPUS: 1, NICS: 1}
    assert device_shape(p) == ()
    assert device_shape(p, claimed) == (("cpu", 8), (GPUS, 1), ("memory", 32 * GI), (NICS, 1))
    demand = CPUDemand()
    demand.observe(p)
    assert not demand.devices
    demand.observe(p, claimed)
    assert demand.devices.names == ("cpu", GPUS, "memory", NICS)


def seen_gpu_pods() -> CPUDemand:
    """Recent claim pods: 1 GPU + 1 NIC with 8 CPUs, 2 GPUs + 1 NIC with 20."""
    demand = CPUDemand()
    for index in range(6):
        gpus, cpus = (1, 8) if index % 2 else (2, 20)
        demand.observe(claim_pod(f"g{index}", cpus), {GPUS: gpus, NICS: 1})
    return demand


def test_a_pod_without_claims_keeps_off_the_cpus_of_free_dra_gpus() -> None:
    """A 16-CPU pod: bin packing prefers the fuller node, whose only zone with room keeps 4 free GPUs and would be
    left 4 CPUs, too few for any recent GPU pod; on the other node it takes a zone whose GPUs are all in use."""
    fuller = dgx_node("fuller", (20, 10), {0: {GPUS: (4, 4), NICS: (4, 4)}, 1: {GPUS: (4, 1), NICS: (4, 1)}})
    other = dgx_node("other", (30, 18), {0: {GPUS: (4, 0), NICS: (4, 0)}, 1: {GPUS: (4, 2), NICS: (4, 2)}})
    p = cpu_pod(16, "cpu16")
    nodes = [fuller, other]
    assert schedule_one(default_profile(PACKING), p, nodes).selected == "fuller"  # no device pod seen
    exact = schedule_one(default_profile(PACKING, demand=seen_gpu_pods()), p, nodes, explain=False)
    assert exact.selected == "other"
    vectorized = VectorizedScheduler(nodes, PACKING, demand=seen_gpu_pods())
    _, scores = vectorized.filter_and_score(p)
    assert scores.tolist() == [r.score for r in exact.nodes]
    assert vectorized.schedule(p).node == "other"


def test_claim_pods_are_not_charged_for_the_devices_their_claims_take() -> None:
    """A claim pod's DRA devices are not in the zones the kubelet model predicts: charging the CPUs it takes next
    to free GPUs would charge it for stranding the GPUs it is about to use. Both paths leave the term out."""
    demand = seen_gpu_pods()
    node = dgx_node("n", (20, 55), {0: {GPUS: (4, 4), NICS: (4, 4)}, 1: {GPUS: (4, 4), NICS: (4, 4)}})
    p = claim_pod("new", 16)
    plain = cpu_pod(16, "plain")
    profile = default_profile(PACKING, demand=demand)
    with_claims = schedule_one(profile, p, [node], explain=False).nodes[0].score
    without = schedule_one(profile, plain, [node], explain=False).nodes[0].score
    assert with_claims is not None and without is not None and with_claims > without
    vectorized = VectorizedScheduler([node], PACKING, demand=demand)
    assert vectorized.filter_and_score(p)[1].tolist() == [with_claims]
    assert vectorized.filter_and_score(plain)[1].tolist() == [without]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_vectorized_and_sequential_agree_with_dra_devices_in_the_zones(seed: int) -> None:
    """DGX-like nodes whose zones hold DRA GPUs and NICs (some taken, and claims taking more between pods), pods
    without claims of several sizes: the device term decides placements, and both paths make the same ones."""
    rng = random.Random(seed)
    nodes = []
    for index in range(8):
        devices = {z: {GPUS: (4, rng.randint(0, 4)), NICS: (4, rng.randint(0, 4))} for z in range(2)}
        nodes.append(dgx_node(f"n{index}", (rng.randint(10, 55), rng.randint(10, 55)), devices))
    sequential, vectorized = SequentialScheduler(nodes, PACKING), VectorizedScheduler(nodes, PACKING)
    plugin = next(f for f in sequential.profile.filters if isinstance(f, NodeResourceTopologyMatch))
    shapes = [(rng.choice([1, 2, 4]), rng.choice([8, 16, 24])) for _ in range(10)]
    for index, (gpus, cpus) in enumerate(shapes):
        plugin.demand.observe(claim_pod(f"g{index}", cpus), {GPUS: gpus, NICS: 1})
        vectorized.demand.observe(claim_pod(f"g{index}", cpus), {GPUS: gpus, NICS: 1})
    placed = 0
    for index in range(40):
        if index % 5 == 4:  # a claim elsewhere took a GPU: the daemon's cache re-reads that node
            row = rng.randrange(len(nodes))
            node = sequential.nodes[row]
            assert node.topology is not None
            zone = rng.randrange(2)
            total, free = node.topology.zones[zone].available[GPUS], node.topology.zones[zone].total(GPUS)
            counts = {zone: {GPUS: (free, max(0, total - 1))}}
            updated = NodeInfo(
                node.name, node.allocatable, node.requested, node.pod_count, with_zone_devices(node.topology, counts)
            )
            sequential.nodes[row] = updated
            vectorized.upsert_node(updated)
        p = cpu_pod(rng.choice([4, 8, 12, 16]), f"p{index}")
        want, got = sequential.schedule(p), vectorized.schedule(p)
        assert (got.node, got.score) == (want.node, want.score), f"pod {index}"
        placed += want.node is not None
    assert placed > 10


def test_a_claim_pod_is_charged_for_the_gpus_its_cpus_strand() -> None:
    """DynamicResources charges the claim pod itself (NodeResourceTopologyMatch cannot: its devices are not in the
    kubelet model's zones): 1 GPU + 1 NIC with 40 CPUs leaves a NUMA node 15 CPUs for 3 GPUs, where the recent
    8-CPU GPU pods fit once; the same pod with 8 CPUs strands nothing."""
    state = DeviceState()
    for body in resource_slices("dgx-0", BUILTIN_SHAPES["dgx"]):
        state.set_slice(body)
    for body in device_classes([BUILTIN_SHAPES["dgx"]]):
        state.set_class(body)
    node = state.with_zone_devices(dgx_node("dgx-0", (55, 55), {}))
    demand = CPUDemand()
    for index in range(4):
        demand.observe(claim_pod(f"g{index}", 8), {GPUS: 1, NICS: 1})
    scores = {}
    for cpus in (8, 40):
        p = claim_pod(f"new-{cpus}", cpus)
        state.set_claim(gpu_nic_claim(f"new-{cpus}-claim"))
        for charged in (False, True):
            plugin = DynamicResources(state, demand if charged else None)
            scores[cpus, charged] = plugin.score(CycleState(), p, node)
    assert scores[8, True] == scores[8, False]
    assert scores[40, True] < scores[40, False]


def gpu_nic_claim(name: str) -> dict[str, object]:
    requests = [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.sim.knuma.io"}},
        {"name": "nic", "exactly": {"deviceClassName": "nic.sim.knuma.io"}},
    ]
    constraints = [{"requests": ["gpu", "nic"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": requests, "constraints": constraints}},
    }


def test_the_daemon_profile_shares_the_device_shapes_with_dynamic_resources() -> None:
    profile = build_profiles(default_config())["topology-aware-scheduler"]
    numa = next(p for p in profile.filters if isinstance(p, NodeResourceTopologyMatch))
    dra = next(p for p in profile.filters if isinstance(p, DynamicResources))
    assert dra.demand is numa.demand
