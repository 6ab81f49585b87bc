"""The vectorised scheduler makes exactly the decisions of the straightforward one, pod after pod."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import Pod
from knuma.scheduler.fast.vectorized import VectorizedScheduler
from knuma.scheduler.framework.assume import assume
from knuma.scheduler.framework.interface import CycleState, NodeInfo, Status, schedule_one
from knuma.scheduler.framework.profiles import default_profile
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.plugins.stranding import CPUDemand
from knuma.scheduler.plugins.strategies import ScoringStrategy, StrategyType
from knuma.scheduler.sequential import SequentialScheduler
from knuma.topology.cpumanager import CPUManagerOptions
from knuma.topology.kubelet import admit
from knuma.topology.node import NodeTopology, NUMAZone

GI = 1 << 30
DEVICE = "example.com/gpu"


def random_cluster(rng: random.Random, count: int) -> list[NodeInfo]:
    nodes = []
    for index in range(count):
        zones = rng.choice([1, 2, 4])
        policy = rng.choice([Policy.SINGLE_NUMA_NODE] * 3 + [Policy.RESTRICTED, Policy.BEST_EFFORT, Policy.NONE])
        scope = rng.choice([Scope.CONTAINER, Scope.CONTAINER, Scope.POD])
        with_memory = rng.random() < 0.7
        allocatable = {}
        for z in range(zones):
            resources = {"cpu": rng.choice([4, 8, 16]) * 1000}
            if with_memory:
                resources["memory"] = rng.choice([8, 16]) * GI
            if rng.random() < 0.3:
                resources[DEVICE] = rng.choice([1, 2])
            allocatable[z] = resources
        topology = NodeTopology.build(f"n{index}", allocatable, policy, scope)
        if rng.random() < 0.25:  # the CPU manager's options: SMTAlignmentError, distributed multi-NUMA CPUs
            options = CPUManagerOptions(
                full_pcpus_only=True, distribute_cpus_across_numa=rng.random() < 0.5, cpus_per_core=2
            )
            topology = replace(topology, cpu_manager=options)
        if rng.random() < 0.15:
            nodes.append(NodeInfo(name=f"plain{index}", allocatable={"cpu": 16000, "memory": 64 * GI, "pods": 110}))
            continue
        node_alloc = topology.available_total() | {"pods": 110}
        if not with_memory:
            node_alloc["memory"] = 64 * GI
        with_object = rng.random() < 0.5
        nodes.append(
            NodeInfo(
                name=topology.name,
                allocatable=node_alloc if with_object else topology.available_total(),
                topology=topology,
                manifest={"kind": "Node"} if with_object else None,
            )
        )
    return nodes


def random_pod(rng: random.Random, index: int) -> Pod:
    kind = rng.choice(
        ["guaranteed", "guaranteed", "guaranteed", "fractional", "burstable", "besteffort", "init", "pod-level"]
    )
    containers = []
    for c in range(rng.choice([1, 1, 2])):
        cpu = rng.choice([1, 2, 3, 4, 6])
        limits = {"cpu": str(cpu), "memory": f"{rng.choice([1, 2, 4])}Gi"}
        if rng.random() < 0.2:
            limits[DEVICE] = "1"
        if kind == "fractional":
            limits["cpu"] = "1500m"
        if kind == "burstable":
            resources = {"requests": {"cpu": "500m", **({DEVICE: "1"} if DEVICE in limits else {})}, "limits": limits}
        elif kind == "besteffort":
            resources = {}
        else:
            resources = {"limits": limits}
        containers.append({"name": f"c{c}", "resources": resources})
    spec: dict[str, object] = {"containers": containers}
    if kind == "init":
        spec["initContainers"] = [{"name": "setup", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]
    if kind == "pod-level":  # Guaranteed by its pod-level resources: requested as a whole, never NUMA-pinned
        spec["resources"] = {"limits": {"cpu": str(rng.choice([4, 8, 12])), "memory": "8Gi"}}
    return Pod.from_manifest({"metadata": {"name": f"p{index}"}, "spec": spec})


@pytest.mark.parametrize("strategy", list(StrategyType))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_decisions_as_the_sequential_scheduler(seed: int, strategy: StrategyType) -> None:
    rng = random.Random(seed)
    nodes = random_cluster(rng, 12)
    scoring = ScoringStrategy(strategy)
    fast, slow = VectorizedScheduler(nodes, scoring), SequentialScheduler(nodes, scoring)
    uncached = VectorizedScheduler(nodes, scoring, cache_shapes=0)
    placed = 0
    for index in range(60):
        pod = random_pod(rng, index)
        expected, got = slow.schedule(pod), fast.schedule(pod)
        assert (got.node, got.score) == (expected.node, expected.score), f"pod {index}: {pod}"
        assert uncached.schedule(pod).node == expected.node
        placed += got.node is not None
    assert placed > 10  # the cluster fills up; both must agree on the pods that no longer fit too


# -- the dynamic API -------------------------------------------------------------------------------------------------

FPGA = "example.com/fpga"


def random_node(rng: random.Random, name: str) -> NodeInfo:
    """A node as `random_cluster` makes them, under `name`; sometimes with a resource or a zone count no other node
    has (the scheduler must grow its arrays)."""
    node = random_cluster(rng, 1)[0]
    topology = node.topology
    if topology is not None and rng.random() < 0.2:
        zones = rng.choice([2, 8])
        per_zone = {
            z: {"cpu": 8000, "memory": 8 * GI, **({FPGA: 1} if rng.random() < 0.5 else {})} for z in range(zones)
        }
        topology = NodeTopology.build(name, per_zone, rng.choice([Policy.SINGLE_NUMA_NODE, Policy.RESTRICTED]))
        return NodeInfo(name, allocatable=topology.available_total() | {"pods": 110}, topology=topology)
    if topology is not None:
        topology = replace(topology, name=name)
    return replace(node, name=name, topology=topology)


def expected(
    profile_scoring: ScoringStrategy, pod: Pod, infos: list[NodeInfo], demand: CPUDemand
) -> tuple[list[bool], list[int]]:
    """`schedule_one`'s per-node results, with the pod sizes the vectorised scheduler has seen (`demand`)."""
    balanced = upstream_scores(profile_scoring.type)
    result = schedule_one(
        default_profile(profile_scoring, demand=demand, balanced_allocation=balanced), pod, infos, explain=False
    )
    return [r.filter.ok for r in result.nodes], [r.score or 0 for r in result.nodes]


@pytest.mark.parametrize("strategy", [StrategyType.KNUMA_BIN_PACKING, StrategyType.LEAST_ALLOCATED])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_upserts_removes_and_reserves_match_a_fresh_scheduler_and_schedule_one(
    seed: int, strategy: StrategyType
) -> None:
    rng = random.Random(seed)
    scoring = ScoringStrategy(strategy)
    infos = random_cluster(rng, 6)
    balanced = int(upstream_scores(strategy))
    dynamic = VectorizedScheduler(infos, scoring, balanced_weight=balanced)
    probes = [random_pod(rng, 1000 + i) for i in range(3)]
    added = compared = 0
    for step in range(50):
        op = rng.random()
        if op < 0.25:  # replace a node's row (fresh NRT, Node update)
            row = rng.randrange(len(infos))
            infos[row] = random_node(rng, infos[row].name)
            dynamic.upsert_node(infos[row])
        elif op < 0.4:  # a new node
            added += 1
            infos.append(random_node(rng, f"new{added}"))
            dynamic.upsert_node(infos[-1])
        elif op < 0.5 and len(infos) > 1:
            gone = infos.pop(rng.randrange(len(infos)))
            dynamic.remove_node(gone.name)
        elif op < 0.6:  # reserve on a given node, as the daemon does after its own selection
            row = rng.randrange(len(infos))
            pod = random_pod(rng, step)
            topology = infos[row].numa
            admission = admit(pod, topology) if topology is not None else None
            got = dynamic.reserve(infos[row].name, pod)
            assert (got is None) == (admission is None)
            assert got is None or got.placements == admission.placements  # type: ignore[union-attr]
            infos[row] = assume(infos[row], pod, admission)
        else:  # a whole cycle
            pod = random_pod(rng, step)
            profile = default_profile(scoring, demand=dynamic.demand, balanced_allocation=bool(balanced))
            want = schedule_one(profile, pod, infos, explain=False)
            decision = dynamic.schedule(pod)
            assert decision.node == want.selected, f"step {step}"
            if want.selected is not None:
                row = [i.name for i in infos].index(want.selected)
                topology = infos[row].numa
                infos[row] = assume(infos[row], pod, admit(pod, topology) if topology is not None else None)
        assert list(dynamic.names) == [i.name for i in infos]
        assert [dynamic.node(i.name) for i in infos] == infos
        fresh = VectorizedScheduler(infos, scoring, demand=dynamic.demand, balanced_weight=balanced)
        compared += assert_same_rows(dynamic, fresh)
        for probe in probes:
            feasible, scores = dynamic.filter_and_score(probe)
            want_feasible, want_scores = expected(scoring, probe, infos, dynamic.demand)
            assert feasible.tolist() == want_feasible, f"step {step}"
            assert scores.tolist() == want_scores, f"step {step}"
            again, again_scores = fresh.filter_and_score(probe)
            assert again.tolist() == want_feasible and again_scores.tolist() == want_scores
    assert compared > 5


def assert_same_rows(kept: VectorizedScheduler, fresh: VectorizedScheduler) -> bool:
    """Every row array of a scheduler kept up to date (reservations reload only the usage part of a row) equals that
    of one built from scratch on the same NodeInfos (the row versions aside). False when the layouts differ (the
    kept one still has columns or zones of removed nodes): nothing to compare."""
    if kept.resources != fresh.resources or kept.zone_count != fresh.zone_count:
        return False
    n = len(fresh)
    for name, array in fresh._buffers.items():
        if name != "version":
            assert np.array_equal(kept._buffers[name][:n], array[:n]), name
    return True


class RecordingNUMAPlugin(NodeResourceTopologyMatch):
    """The real plugin, remembering which nodes it was asked about."""

    def __init__(self, scoring: ScoringStrategy) -> None:
        super().__init__(scoring)
        self.seen: list[str] = []

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        self.seen.append(node.name)
        return super().filter(state, pod, node)


def test_candidates_mask_out_nodes_without_evaluating_them() -> None:
    nodes = [
        NodeInfo(
            f"r{i}",
            allocatable={"cpu": 8000, "memory": 8 * GI, "pods": 110},
            manifest={"kind": "Node"},
            topology=NodeTopology.build(
                f"r{i}", {0: {"cpu": 4000, "memory": 4 * GI}, 1: {"cpu": 4000, "memory": 4 * GI}}, Policy.RESTRICTED
            ),
        )
        for i in range(5)
    ]
    scheduler = VectorizedScheduler(nodes)
    spy = RecordingNUMAPlugin(scheduler.scoring)
    scheduler._numa = spy  # the rows of restricted nodes are decided by the plugin itself
    pod = random_pod(random.Random(0), 0)
    pod = Pod.from_manifest(
        {
            "metadata": {"name": "g"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]},
        }
    )
    candidates = np.array([True, False, True, False, False])
    feasible, scores = scheduler.filter_and_score(pod, candidates)
    assert spy.seen == ["r0", "r2"]
    assert feasible.tolist() == [True, False, True, False, False]
    assert scores[1] == scores[3] == 0 and scores[0] > 0
    decision = scheduler.schedule(pod, np.array([False, False, False, True, False]))
    assert decision.node == "r3"
    assert spy.seen == ["r0", "r2", "r3"]
    full, _ = scheduler.filter_and_score(pod)
    assert full.all()


def test_bad_candidates_and_unknown_nodes_are_clear_errors() -> None:
    scheduler = VectorizedScheduler(random_cluster(random.Random(5), 3))
    pod = random_pod(random.Random(5), 0)
    with pytest.raises(ValueError, match="one entry per node \\(3\\)"):
        scheduler.filter_and_score(pod, np.array([True, False]))
    with pytest.raises(ValueError, match="bool array"):
        scheduler.filter_and_score(pod, np.array([1, 0, 1]))
    with pytest.raises(KeyError, match="node nope is not in the scheduler"):
        scheduler.remove_node("nope")
    with pytest.raises(KeyError, match="node nope"):
        scheduler.reserve("nope", pod)
    infos = random_cluster(random.Random(5), 2)
    with pytest.raises(ValueError, match="given twice"):
        VectorizedScheduler([infos[0], infos[0]])


def test_an_empty_scheduler_grows_node_by_node() -> None:
    rng = random.Random(9)
    infos = random_cluster(rng, 40)
    scheduler = VectorizedScheduler()
    pod = random_pod(rng, 0)
    assert scheduler.schedule(pod).node is None
    for info in infos:
        scheduler.upsert_node(info)
    assert len(scheduler) == 40 and infos[7].name in scheduler and scheduler.row(infos[7].name) == 7
    for index in range(30):
        pod = random_pod(rng, index)
        want = expected(scheduler.scoring, pod, infos, scheduler.demand)
        feasible, scores = scheduler.filter_and_score(pod)
        assert (feasible.tolist(), scores.tolist()) == want


def test_full_pcpus_only_nodes_stay_on_the_array_path_and_agree_with_the_plugin() -> None:
    """SMTAlignmentError in arrays: each container's CPUs a multiple of the CPUs per core, and the pod's within the
    free physical CPUs (free whole CPUs less the reserved CPUs' siblings)."""
    options = CPUManagerOptions(full_pcpus_only=True, cpus_per_core=2, reserved_core_siblings=2)
    zones = {0: {"cpu": 8000, "memory": 16 * GI}, 1: {"cpu": 8000, "memory": 16 * GI}}
    smt = replace(NodeTopology.build("smt", zones), cpu_manager=options)
    plain = NodeTopology.build("plain", zones)
    nodes = [NodeInfo(t.name, allocatable=t.available_total() | {"pods": 110}, topology=t) for t in (smt, plain)]
    fast = VectorizedScheduler(nodes, ScoringStrategy(StrategyType.KNUMA_BIN_PACKING))
    assert fast.simple_node.all()

    def pod(*cpus: int) -> Pod:
        containers = [
            {"name": f"c{i}", "resources": {"limits": {"cpu": str(c), "memory": "1Gi"}}} for i, c in enumerate(cpus)
        ]
        return Pod.from_manifest({"metadata": {"name": "p"}, "spec": {"containers": containers}})

    for cpus, expected in [
        ((3,), [False, True]),
        ((4,), [True, True]),
        ((2, 1), [False, True]),
        ((8, 6), [True, True]),
    ]:
        feasible, _ = fast.filter_and_score(pod(*cpus))
        slow = [NodeResourceTopologyMatch().filter(CycleState(), pod(*cpus), n).ok for n in nodes]
        assert list(feasible) == expected == slow, cpus
    # 16 free CPUs, 2 of them siblings of reserved ones: 8 + 8 fit the zones but not the 14 free physical CPUs
    feasible, _ = fast.filter_and_score(pod(8, 8))
    slow = [NodeResourceTopologyMatch().filter(CycleState(), pod(8, 8), n).ok for n in nodes]
    assert list(feasible) == slow == [False, True]


# -- every pod a new shape (the per-shape cache never hits; every row evaluated in arrays) ----------------------------


def odd_zone_node(rng: random.Random, index: int) -> NodeInfo:
    """A single-numa-node node with a zone count the arrays pad (3, 5, 6) or fill (8), partly used, sometimes pod
    scope, sometimes with devices or `full-pcpus-only`."""
    zones = rng.choice([3, 5, 6, 8])
    allocatable = {
        z: {"cpu": rng.choice([4, 8, 12]) * 1000, "memory": rng.choice([8, 16]) * GI, **({DEVICE: 2} if z < 2 else {})}
        for z in range(zones)
    }
    available = {
        z: {
            name: rng.randrange(0, amount + 1) if name != "cpu" else rng.randrange(0, amount // 1000 + 1) * 1000
            for name, amount in resources.items()
        }
        for z, resources in allocatable.items()
    }
    scope = rng.choice([Scope.CONTAINER, Scope.POD])
    topology = NodeTopology.build(f"odd{index}", allocatable, Policy.SINGLE_NUMA_NODE, scope, available=available)
    if rng.random() < 0.2:
        topology = replace(topology, cpu_manager=CPUManagerOptions(full_pcpus_only=True, cpus_per_core=2))
    return NodeInfo(topology.name, allocatable=topology.available_total() | {"pods": 110}, topology=topology)


def new_shape_pod(rng: random.Random, index: int, sizes: tuple[int, ...] = (1, 2, 3, 4, 6)) -> Pod:
    """`random_pod`'s kinds with up to three containers of `sizes` CPUs, each container's memory unique to this pod
    (without a 1-CPU size, CPU remainders strand and KnumaBinPacking's stranding term counts)."""
    kind = rng.choice(["guaranteed"] * 5 + ["fractional", "burstable", "besteffort", "init"])
    containers = []
    for c in range(rng.choice([1, 1, 2, 3])):
        limits = {"cpu": str(rng.choice(sizes)), "memory": f"{rng.choice([1, 2, 4]) * 1024 + index}Mi"}
        if rng.random() < 0.2:
            limits[DEVICE] = "1"
        if kind == "fractional":
            limits["cpu"] = f"{1000 + 10 * index + c}m"
        resources: dict[str, object] = {"limits": limits}
        if kind == "burstable":
            resources = {"requests": {"cpu": f"{100 + index}m", "memory": limits["memory"]}, "limits": limits}
        elif kind == "besteffort":
            resources = {}
        containers.append({"name": f"c{c}", "resources": resources})
    spec: dict[str, object] = {"containers": containers}
    if kind == "init":
        spec["initContainers"] = [{"name": "setup", "resources": {"limits": {"cpu": "2", "memory": f"{index}Mi"}}}]
    return Pod.from_manifest({"metadata": {"name": f"new{index}"}, "spec": spec})


@pytest.mark.parametrize("strategy", list(StrategyType))
@pytest.mark.parametrize(("seed", "sizes"), [(4, (1, 2, 3, 4, 6)), (5, (1, 2, 4, 8)), (6, (2, 3, 5, 6))])
def test_every_pod_a_new_shape_scores_every_node_as_schedule_one(
    seed: int, sizes: tuple[int, ...], strategy: StrategyType
) -> None:
    """Randomized agreement where no pod shape repeats: every node's verdict and score from `filter_and_score` and
    every decision from `schedule` equal `schedule_one`'s, as the cluster fills (odd zone counts, pod scope,
    devices, `full-pcpus-only` included)."""
    rng = random.Random(seed)
    scoring = ScoringStrategy(strategy)
    infos = random_cluster(rng, 16) + [odd_zone_node(rng, i) for i in range(16)]
    balanced = upstream_scores(strategy)
    fast = VectorizedScheduler(infos, scoring, balanced_weight=int(balanced))
    placed = 0
    for index in range(70):
        pod = new_shape_pod(rng, index, sizes)
        profile = default_profile(scoring, demand=fast.demand, balanced_allocation=balanced)
        want = schedule_one(profile, pod, infos, explain=False)
        if index % 2:  # a cold shape through filter_and_score: every row's verdict and score
            feasible, scores = fast.filter_and_score(pod)
            assert feasible.tolist() == [r.filter.ok for r in want.nodes], f"pod {index}: {pod}"
            assert scores.tolist() == [r.score or 0 for r in want.nodes], f"pod {index}: {pod}"
        decision = fast.schedule(pod)  # odd pods: from the cached rows; even ones: a cold shape
        assert decision.node == want.selected, f"pod {index}: {pod}"
        if want.selected is not None:
            row = [i.name for i in infos].index(want.selected)
            topology = infos[row].numa
            infos[row] = assume(infos[row], pod, admit(pod, topology) if topology is not None else None)
            placed += 1
    assert placed > 20
    assert [fast.node(i.name) for i in infos] == infos
    assert assert_same_rows(fast, VectorizedScheduler(infos, scoring, balanced_weight=int(balanced)))


def upstream_scores(strategy: StrategyType) -> bool:
    """Upstream's strategies are compared with upstream's default scores (NodeResourcesBalancedAllocation too), as
    the simulator runs them; knuma's without it, as its default configuration does."""
    return strategy is not StrategyType.KNUMA_BIN_PACKING


@pytest.mark.parametrize("seed", range(4))
def test_usage_only_upserts_keep_the_static_part_as_a_fresh_scheduler_loads_it(seed: int) -> None:
    """An upsert whose zones share capacity and allocatable with the row's (a view derived from the same NRT: a
    reservation, a flush, a fresh NRT of the same node) reloads only the usage part of the row; the arrays stay equal
    to those of a scheduler built from scratch, NRT freshness flips included."""
    rng = random.Random(seed)
    infos = random_cluster(rng, 8)
    dynamic = VectorizedScheduler(infos)
    compared = 0
    for _ in range(40):
        row = rng.randrange(len(infos))
        info = infos[row]
        topology = info.topology
        if topology is not None and topology.zones and rng.random() < 0.8:
            available = {
                z.id: {name: rng.randrange(0, amount + 1) for name, amount in z.allocatable.items()}
                for z in topology.zones
            }
            info = replace(info, topology=topology.with_available(available))
        if rng.random() < 0.2:
            info = replace(info, nrt_fresh=not info.nrt_fresh)
        infos[row] = info
        dynamic.upsert_node(info)
        compared += assert_same_rows(dynamic, VectorizedScheduler(infos, demand=dynamic.demand))
    assert compared == 40


def test_a_zone_total_read_from_available_is_reloaded() -> None:
    """A zone that reports CPUs only as available (no capacity, no allocatable: `NUMAZone.total` falls back to
    available) changes its totals with its available amounts: such an upsert reloads the whole row."""
    zone = NUMAZone(0, {}, {}, {"cpu": 8000})
    first = NodeInfo(name="n", allocatable={"cpu": 8000, "pods": 110}, topology=NodeTopology("n", (zone,)))
    dynamic = VectorizedScheduler([first])
    second = replace(first, topology=first.topology.with_available({0: {"cpu": 4000}}))  # type: ignore[union-attr]
    dynamic.upsert_node(second)
    assert assert_same_rows(dynamic, VectorizedScheduler([second], demand=dynamic.demand))
    assert dynamic.numa_cpu_total.tolist() == [4000]
