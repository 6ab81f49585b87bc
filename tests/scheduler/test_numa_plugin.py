"""NodeResourceTopologyMatch: Filter predicts the kubelet for every policy, with upstream's messages; Score matches
upstream's strategies."""

from __future__ import annotations

import pytest

from knuma.scheduler.framework.interface import Code, CycleState, NodeInfo, schedule_one
from knuma.scheduler.framework.profiles import default_profile
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.plugins.numa_upstream import upstream_filter
from knuma.scheduler.plugins.strategies import ScoringStrategy, StrategyType
from tests.scheduler.builders import container, guaranteed, node_info, nrt, pod

GI = "Gi"


def two_by_four(policy: str, scope: str = "container", available: str = "4") -> NodeInfo:
    return node_info(nrt("n", {0: {"cpu": ("4", available)}, 1: {"cpu": ("4", available)}}, policy, scope))


def run_filter(p, node: NodeInfo):
    return NodeResourceTopologyMatch().filter(CycleState(), p, node)


@pytest.mark.parametrize(
    ("policy", "admitted"),
    [("none", True), ("best-effort", True), ("restricted", True), ("single-numa-node", False)],
)
def test_six_cpus_on_two_four_cpu_zones(policy: str, admitted: bool) -> None:
    status = run_filter(pod(guaranteed("app", "6")), two_by_four(policy))
    assert status.ok is admitted
    if not admitted:
        assert status.code is Code.UNSCHEDULABLE
        assert status.reason == "cannot align container"


def test_restricted_rejects_when_the_narrowest_width_is_not_free() -> None:
    """2 CPUs fit one 4-CPU zone on an empty node, but only 1 is free per zone: restricted rejects (upstream #885
    lets this node through and the kubelet answers TopologyAffinityError)."""
    node = two_by_four("restricted", available="1")
    p = pod(guaranteed("app", "2"))
    assert not run_filter(p, node).ok
    assert upstream_filter(p, node).ok  # the upstream bug we fix


def test_pod_scope_message_and_sidecar_messages() -> None:
    node = node_info(nrt("n", {0: {"cpu": "4"}, 1: {"cpu": "4"}}, scope="pod"))
    assert run_filter(pod(guaranteed("a", "3"), guaranteed("b", "3")), node).reason == "cannot align pod"
    node = node_info(nrt("n", {0: {"cpu": "4"}, 1: {"cpu": "4"}}))
    sidecar = guaranteed("proxy", "6", restartPolicy="Always")
    assert run_filter(pod(guaranteed("a", "1"), init=(sidecar,)), node).reason == "cannot align sidecar container"
    init = guaranteed("setup", "6")
    assert run_filter(pod(guaranteed("a", "1"), init=(init,)), node).reason == "cannot align init container"


def test_sidecar_resources_are_held_for_the_app_containers() -> None:
    """A 3-CPU sidecar and a 3-CPU app container cannot share one 4-CPU zone; with two zones they go one each."""
    one_zone = node_info(nrt("n", {0: {"cpu": "4", "memory": "8Gi"}}))
    both = pod(guaranteed("app", "3"), init=(guaranteed("proxy", "3", restartPolicy="Always"),))
    assert not run_filter(both, one_zone).ok
    assert upstream_filter(both, one_zone).ok  # upstream does not hold sidecars
    two_zones = node_info(nrt("n", {0: {"cpu": "4"}, 1: {"cpu": "4"}}))
    state = CycleState()
    plugin = NodeResourceTopologyMatch()
    assert plugin.filter(state, both, two_zones).ok
    admission = plugin.admission(state, "n")
    assert admission is not None
    assert {p.name: p.numa_ids for p in admission.placements} == {"proxy": (0,), "app": (1,)}


def test_nodes_without_nrt_pass_and_score_zero() -> None:
    node = NodeInfo(name="plain", allocatable={"cpu": 8000, "memory": 8 << 30})
    p = pod(guaranteed("app", "2"))
    plugin = NodeResourceTopologyMatch()
    assert plugin.filter(CycleState(), p, node).ok
    assert plugin.score(CycleState(), p, node) == 0


def test_best_effort_pods_pass_and_non_guaranteed_score_100() -> None:
    node = two_by_four("single-numa-node", available="0")
    best_effort = pod(container("app"))
    burstable = pod(container("app", requests={"cpu": "100"}))
    plugin = NodeResourceTopologyMatch()
    assert plugin.filter(CycleState(), best_effort, node).ok
    assert plugin.filter(CycleState(), burstable, node).ok  # cpu is not aligned for Burstable pods
    assert plugin.score(CycleState(), burstable, node) == 100


def test_devices_are_aligned_for_every_qos_class() -> None:
    node = node_info(
        nrt("n", {0: {"cpu": "4", "example.com/nic": "1"}, 1: {"cpu": "4", "example.com/nic": "1"}}),
        allocatable={"cpu": 8000, "example.com/nic": 2},
    )
    burstable = pod(container("app", requests={"cpu": "1", "example.com/nic": "2"}, limits={"example.com/nic": "2"}))
    assert not run_filter(burstable, node).ok
    assert run_filter(
        pod(container("app", requests={"example.com/nic": "1"}, limits={"example.com/nic": "1"})), node
    ).ok


def test_memory_not_reported_by_zones_does_not_constrain() -> None:
    """Upstream rejects the node when no zone reports `memory` (issue #249); the kubelet has no memory manager then."""
    node = node_info(nrt("n", {0: {"cpu": "4"}, 1: {"cpu": "4"}}))
    p = pod(guaranteed("app", "2", memory="4Gi"))
    assert run_filter(p, node).ok
    assert not upstream_filter(p, node).ok


def test_request_missing_from_node_allocatable_rejects() -> None:
    nrt_obj = nrt("n", {0: {"cpu": "4"}})
    node = node_info(nrt_obj)
    node = NodeInfo(name="n", allocatable={"cpu": 4000}, topology=node.topology, manifest={"kind": "Node"})
    p = pod(container("app", limits={"cpu": "1", "memory": "1Gi", "example.com/gpu": "1"}))
    status = run_filter(p, node)
    assert status.reason == "cannot align container"
    assert "example.com/gpu" in status.detail


def test_non_contiguous_numa_ids() -> None:
    node = node_info(nrt("n", {0: {"cpu": "2", "memory": "4Gi"}, 2: {"cpu": "8", "memory": "16Gi"}}))
    plugin = NodeResourceTopologyMatch()
    state = CycleState()
    p = pod(guaranteed("app", "6", memory="8Gi"))
    assert plugin.filter(state, p, node).ok
    admission = plugin.admission(state, "n")
    assert admission is not None and admission.placements[0].numa_ids == (2,)
    # Upstream panics here (numaScores indexed by NUMA id); we score the zones by their real ids.
    # LeastAllocated: node-0 cannot hold it (0); node-2 scores (cpu 25 + memory 50) / 2.
    assert plugin.score(state, p, node) == 37


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        (StrategyType.MOST_ALLOCATED, 25),  # zone 0: 2/4 and 4/8 -> 50; zone 1: 2/8 and 4/16 -> 25; min non-zero
        (StrategyType.LEAST_ALLOCATED, 50),  # zone 0: 50; zone 1: 75
        (StrategyType.BALANCED_ALLOCATION, 100),  # equal fractions in both zones: variance 0
    ],
)
def test_strategies_take_the_minimum_non_zero_zone(strategy: StrategyType, expected: int) -> None:
    node = node_info(nrt("n", {0: {"cpu": "4", "memory": "8Gi"}, 1: {"cpu": "8", "memory": "16Gi"}}))
    p = pod(guaranteed("app", "2", memory="4Gi"))
    assert NodeResourceTopologyMatch(ScoringStrategy(strategy)).score(CycleState(), p, node) == expected


def test_scores_are_zero_for_non_single_numa_policies_except_least_numa_nodes() -> None:
    node = two_by_four("restricted")
    p = pod(guaranteed("app", "2"))
    assert NodeResourceTopologyMatch().score(CycleState(), p, node) == 0
    least = NodeResourceTopologyMatch(ScoringStrategy(StrategyType.LEAST_NUMA_NODES))
    # one zone suffices, and a single zone is always at minimum distance: 100 - 1*12 + 6
    assert least.score(CycleState(), p, node) == 94
    assert least.score(CycleState(), pod(guaranteed("app", "6")), node) == 100 - 2 * 12 + 6


def test_weights_change_the_ranking() -> None:
    cpu_rich = node_info(nrt("a", {0: {"cpu": "16", "memory": "4Gi"}}))
    mem_rich = node_info(nrt("b", {0: {"cpu": "4", "memory": "64Gi"}}))
    p = pod(guaranteed("app", "2", memory="2Gi"))
    cpu_heavy = default_profile(ScoringStrategy(StrategyType.LEAST_ALLOCATED, {"cpu": 10, "memory": 1}))
    mem_heavy = default_profile(ScoringStrategy(StrategyType.LEAST_ALLOCATED, {"cpu": 1, "memory": 10}))
    assert schedule_one(cpu_heavy, p, [cpu_rich, mem_rich]).selected == "a"
    assert schedule_one(mem_heavy, p, [cpu_rich, mem_rich]).selected == "b"


def test_failed_scheduling_message_counts_reasons() -> None:
    nodes = [two_by_four("single-numa-node", available="1") for _ in range(2)]
    nodes = [NodeInfo(name=f"n{i}", allocatable=n.allocatable, topology=n.topology) for i, n in enumerate(nodes)]
    nodes.append(NodeInfo(name="small", allocatable={"cpu": 1000, "memory": 1 << 30}))
    result = schedule_one(default_profile(), pod(guaranteed("app", "2")), nodes)
    assert result.selected is None
    assert result.failure_summary() == "0/3 nodes are available: 2 cannot align container, 1 Insufficient cpu."


def test_nrt_without_valid_numa_zones_is_like_no_nrt() -> None:
    """Zones named `numa-node-0` (the upstream README demo) are ignored; the node then has nothing to align against
    and must not reject every pod."""
    obj = nrt("n", {0: {"cpu": "4", "memory": "8Gi"}})
    obj["zones"][0]["name"] = "numa-node-0"
    node = node_info(obj, allocatable={"cpu": 4000, "memory": 8 << 30})
    p = pod(guaranteed("app", "2"))
    plugin = NodeResourceTopologyMatch()
    assert plugin.filter(CycleState(), p, node).ok
    assert plugin.score(CycleState(), p, node) == 0
