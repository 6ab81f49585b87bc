"""NodeResourcesBalancedAllocation: kube-scheduler's `(1 - std) * 100` of the used cpu and memory fractions, over the
actual requests, on the exact path and in the vectorised path's arrays."""

from __future__ import annotations

from typing import Any, NoReturn

import pytest

from knuma.scheduler.fast.vectorized import VectorizedScheduler
from knuma.scheduler.framework.interface import CycleState, NodeInfo, schedule_one
from knuma.scheduler.framework.profiles import node_level_profile
from knuma.scheduler.plugins.node_resources_balanced_allocation import (
    NodeResourcesBalancedAllocation,
    balanced_score,
)
from knuma.scheduler.plugins.node_resources_balanced_allocation_args import (
    NodeResourcesBalancedAllocationArgs,
    parse_node_resources_balanced_allocation_args,
)
from knuma.scheduler.plugins.node_resources_fit import NodeResourcesFit
from tests.scheduler.builders import container, guaranteed, pod

GI = 1 << 30


def _args(raw: dict[str, Any]) -> NodeResourcesBalancedAllocationArgs:
    def fail(path: str, problem: str) -> NoReturn:
        raise ValueError(f"{path}: {problem}")

    return parse_node_resources_balanced_allocation_args(raw, "args", fail)


def _node(name: str = "n", /, **requested: int) -> NodeInfo:
    return NodeInfo(
        name,
        allocatable={"cpu": 4000, "memory": 8 * GI, "pods": 110, "example.com/nic": 4},
        requested=requested,
        manifest={"kind": "Node"},
    )


def test_the_score_is_one_minus_half_the_gap_between_the_two_fractions() -> None:
    # cpu (1000 + 1000) / 4000 = 0.5, memory (1 + 1) / 8 = 0.25: std 0.125, (1 - 0.125) * 100 = 87.5 -> 87
    node = _node(cpu=1000, memory=GI)
    assert NodeResourcesBalancedAllocation().score(CycleState(), pod(guaranteed("app", "1", "1Gi")), node) == 87
    assert balanced_score([2000, 2 * GI], [4000, 8 * GI]) == 87
    # over capacity counts as full; a resource the node has none of is left out (one fraction: std 0)
    assert balanced_score([9000, 0], [4000, 8 * GI]) == 50
    assert balanced_score([1000, GI], [4000, 0]) == 100
    # three resources: the population standard deviation; fractions 0, 0.5, 1: sqrt(1/6) = 0.408 -> 59
    assert balanced_score([0, 2, 4], [4, 4, 4]) == 59


def test_it_reads_actual_requests_not_nodeResourcesFits_non_zero_defaults() -> None:
    """A container without requests counts 100m and 200Mi in NodeResourcesFit's score, nothing here (`useRequested`):
    a pod requesting memory only is balanced against the node's actual cpu requests."""
    node = NodeInfo(
        "n",
        allocatable={"cpu": 4000, "memory": 8 * GI},
        requested={"cpu": 2000, "memory": 2 * GI},
        non_zero_requested={"cpu": 2100, "memory": 2 * GI + 200 * (1 << 20)},
    )
    memory_only = pod(container("app", requests={"memory": "2Gi"}))
    # cpu 2000 / 4000 = 0.5, memory 4 / 8 = 0.5: perfectly balanced
    assert NodeResourcesBalancedAllocation().score(CycleState(), memory_only, node) == 100


def test_a_pod_requesting_neither_resource_scores_zero_everywhere() -> None:
    """Upstream's PreScore skips the plugin for it (kubernetes issue 129138: best-effort pods piling on one node)."""
    plugin = NodeResourcesBalancedAllocation()
    for node in (_node(), _node(cpu=3000)):
        assert plugin.score(CycleState(), pod(container("app")), node) == 0


def test_args_default_and_validate_as_upstream() -> None:
    assert _args({}) == NodeResourcesBalancedAllocationArgs() == _args({"resources": []})
    assert _args({"resources": [{"name": "cpu"}, {"name": "example.com/nic", "weight": 0}]}).resources == (
        ("cpu", 1),
        ("example.com/nic", 1),
    )
    with pytest.raises(ValueError, match=r"args.resources\[0\].weight: Invalid value: 3: must be 1"):
        _args({"resources": [{"name": "cpu", "weight": 3}]})
    with pytest.raises(ValueError, match=r'args.resources\[1\].name: Duplicate value: "memory"'):
        _args({"resources": [{"name": "memory"}, {"name": "memory"}]})
    with pytest.raises(ValueError, match=r"args.resourcs: unknown field"):
        _args({"resourcs": []})


def test_an_extended_resource_counts_only_for_pods_that_request_it() -> None:
    """`calculateResourceAllocatableRequest`: a scalar resource the pod does not request is (0, 0), left out."""
    plugin = NodeResourcesBalancedAllocation(_args({"resources": [{"name": "cpu"}, {"name": "example.com/nic"}]}))
    node = _node(cpu=1000, **{"example.com/nic": 3})
    # cpu (1000 + 1000) / 4000 = 0.5, nic (3 + 1) / 4 = 1: std 0.25 -> 75
    assert plugin.score(CycleState(), pod(guaranteed("app", "1", "1Gi", limits={"example.com/nic": "1"})), node) == 75
    assert plugin.score(CycleState(), pod(guaranteed("app", "1", "1Gi")), node) == 100


@pytest.mark.parametrize("resources", [None, [{"name": "cpu"}, {"name": "memory"}, {"name": "example.com/nic"}]])
def test_the_vectorised_path_decides_as_the_exact_path(resources: list[dict[str, str]] | None) -> None:
    """Nodes that differ only in how their cpu and memory are used: LeastAllocated alone cannot tell some of them
    apart; with BalancedAllocation the node whose use stays balanced wins, in arrays as node by node (with other
    resources than the default, the arrays ask the plugin row by row)."""
    balanced = NodeResourcesBalancedAllocation(_args({"resources": resources}) if resources else None)
    fit = NodeResourcesFit()
    nodes = [
        _node("a", cpu=3000, memory=GI),
        _node("b", cpu=1000, memory=5 * GI),
        _node("c", cpu=2000, memory=3 * GI, **{"example.com/nic": 2}),
        _node("d", cpu=2500, memory=4 * GI),
    ]
    profile = node_level_profile()
    profile = type(profile)(profile.name, profile.filters, ((fit, 1), (balanced, 1)))
    fast = VectorizedScheduler(nodes, numa=False, fit=fit, numa_weight=0, balanced=balanced, balanced_weight=1)
    selected = []
    for wanted in (
        pod(guaranteed("app", "1", "1Gi")),
        pod(guaranteed("app", "500m", "3Gi", limits={"example.com/nic": "1"})),
        pod(container("app", requests={"memory": "1Gi"})),
        pod(container("app")),
    ):
        exact = schedule_one(profile, wanted, nodes, explain=False)
        feasible, scores = fast.filter_and_score(wanted)
        assert feasible.tolist() == [True] * 4
        assert dict(zip(fast.names, scores.tolist(), strict=True)) == {r.name: r.score for r in exact.nodes}
        selected.append(exact.selected)
    # 1 CPU and 1Gi: a, b and c tie at 37 for LeastAllocated; a would end at cpu 100% and memory 25%, b and c at
    # 50% / 75% and 75% / 50%: BalancedAllocation takes the first of those
    assert selected[0] == "b"
