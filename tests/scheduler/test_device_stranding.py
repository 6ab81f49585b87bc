"""Stranded devices: KnumaBinPacking charges placements that leave a zone's GPUs without the CPUs or memory any recent
device pod needs with them."""

from __future__ import annotations

import random

import pytest

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import Pod
from knuma.scheduler.fast.vectorized import VectorizedScheduler
from knuma.scheduler.framework.interface import NodeInfo, schedule_one
from knuma.scheduler.framework.profiles import default_profile
from knuma.scheduler.plugins.device_stranding import DeviceDemand, device_shape, device_stranding_penalty
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


def test_stranded_devices_are_those_no_multiset_of_shapes_can_use() -> None:
    demand = DeviceDemand()
    for index, (gpus, cpus) in enumerate([(1, 8), (2, 16)]):
        demand.observe(gpu_pod(gpus, cpus, f"seen-{index}"))
    assert demand.names == ("cpu", GPU, "memory")
    assert demand.stranded((32, 4, 256 * GI)) == 0  # four 1-GPU pods, or two 2-GPU pods
    assert demand.stranded((10, 2, 256 * GI)) == 1  # CPUs for one 8-CPU pod: the second GPU is stuck
    assert demand.stranded((7, 4, 256 * GI)) == 4  # not even one pod's CPUs
    assert demand.stranded((47, 4, 64 * GI)) == 2  # memory for two 1-GPU pods only
    assert DeviceDemand().stranded((0, 4, 0)) == 0  # nothing seen: no penalty
    with pytest.raises(ValueError, match="window must be at least 1 pod"):
        DeviceDemand(window=0)


def test_the_window_forgets_old_shapes() -> None:
    demand = DeviceDemand(window=1)
    assert demand.observe(gpu_pod(1, 8, "a"))
    assert not demand.observe(gpu_pod(1, 8, "a"))  # a retry
    assert demand.observe(gpu_pod(4, 24, "b"))  # "a" leaves
    assert demand.stranded((30, 3, 256 * GI)) == 3  # only the 4-GPU shape is known now


def test_a_cpu_pod_that_would_strand_gpus_goes_where_it_strands_none() -> None:
    """A 16-CPU pod: CPU packing prefers the fuller GPU node, but there it leaves 2 GPUs with 10 CPUs, enough for
    one 8-CPU GPU pod; on the emptier node the GPUs keep their CPUs."""
    demand = seen(gpu_pod(1, 8, "g1"), gpu_pod(2, 16, "g2"))
    fuller, emptier = gpu_node("fuller", (2, 26)), gpu_node("emptier", (4, 48))
    p = cpu_pod(16, "cpu16")
    assert fuller.topology is not None
    admission = admit(p, fuller.topology)
    assert device_stranding_penalty(fuller.topology, admission.node, demand.devices) == 3 * 100 * 1 // 4
    nodes = [fuller, emptier]
    assert schedule_one(default_profile(PACKING), p, nodes).selected == "fuller"  # no device pod seen
    exact = schedule_one(default_profile(PACKING, demand=demand), p, nodes, explain=False)
    assert exact.selected == "emptier"
    vectorized = VectorizedScheduler(nodes, PACKING, demand=seen(gpu_pod(1, 8, "g1"), gpu_pod(2, 16, "g2")))
    _, scores = vectorized.filter_and_score(p)
    assert scores.tolist() == [r.score for r in exact.nodes]
    assert vectorized.schedule(p).node == "emptier"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_vectorized_and_sequential_agree_on_a_gpu_cluster(seed: int) -> None:
    """GPU nodes (both scopes) next to CPU nodes, GPU pods of several CPU-to-GPU ratios and CPU-only pods: the
    penalty decides many placements, and both paths must make the same ones."""
    rng = random.Random(seed)
    nodes = []
    for index in range(8):
        with_gpus = index < 6
        zones = {
            z: {"cpu": 24_000 if with_gpus else 32_000, "memory": 96 * GI, **({GPU: 4} if with_gpus else {})}
            for z in range(2)
        }
        scope = Scope.POD if index % 3 == 0 else Scope.CONTAINER
        topology = NodeTopology.build(f"n{index}", zones, Policy.SINGLE_NUMA_NODE, scope)
        nodes.append(NodeInfo(f"n{index}", allocatable=topology.available_total() | {"pods": 110}, topology=topology))
    sequential, vectorized = SequentialScheduler(nodes, PACKING), VectorizedScheduler(nodes, PACKING)
    plugin = next(f for f in sequential.profile.filters if isinstance(f, NodeResourceTopologyMatch))
    penalised = 0
    for index in range(80):
        if rng.random() < 0.7:
            gpus = rng.choice([1, 1, 2, 3, 4])
            p = gpu_pod(gpus, gpus * rng.choice([3, 4, 6]), f"p{index}")
        else:
            p = cpu_pod(rng.choice([4, 8, 12]), f"p{index}")
        want, got = sequential.schedule(p), vectorized.schedule(p)
        assert (got.node, got.score) == (want.node, want.score), f"pod {index}"
        for node in sequential.nodes:
            if node.topology is None:
                continue
            admission = admit(p, node.topology)
            if admission.admitted and device_stranding_penalty(node.topology, admission.node, plugin.demand.devices):
                penalised += 1
                break
    assert penalised > 5


def test_new_device_shapes_do_not_rebuild_the_cpu_stranding_table() -> None:
    """Device shapes change `CPUDemand.version` (cached scores must be recomputed) but not the CPU sizes: the
    stranding table stays as it was (the CPU table once doubled on every version change, and 40 new shapes hung the
    scheduler)."""
    demand = seen(cpu_pod(4, "four"))
    table = demand.stranded_table(10)
    for index in range(40):
        demand.observe(gpu_pod(1 + index, 4, f"g{index}"))  # 4 CPUs: a size seen already
    assert demand.stranded_table(10) is table and len(table) <= 1 + 64
