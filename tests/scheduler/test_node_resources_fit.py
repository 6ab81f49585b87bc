"""NodeResourcesFit's score: kube-scheduler's LeastAllocated over non-zero cpu and memory requests."""

from __future__ import annotations

from knuma.scheduler.framework.assume import assume
from knuma.scheduler.framework.interface import CycleState, NodeInfo, schedule_one
from knuma.scheduler.framework.profiles import default_profile
from knuma.scheduler.plugins.node_resources_fit import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    NodeResourcesFit,
    least_allocated,
    non_zero_request,
)
from tests.scheduler.builders import container, guaranteed, pod

GI = 1 << 30
MI = 1 << 20


def score(p, node: NodeInfo) -> int:
    return NodeResourcesFit().score(CycleState(), p, node)


def test_least_allocated_is_the_weighted_mean_of_free_fractions() -> None:
    node = NodeInfo("n", allocatable={"cpu": 4000, "memory": 8 * GI}, requested={"cpu": 1000, "memory": 2 * GI})
    # cpu: (4000 - 2000) * 100 / 4000 = 50; memory: (8 - 3) * 100 / 8 = 62 (integer division); (50 + 62) / 2 = 56
    assert score(pod(guaranteed("app", "1", "1Gi")), node) == 56


def test_missing_requests_count_as_100m_and_200mi() -> None:
    defaults = {"cpu": DEFAULT_MILLI_CPU_REQUEST, "memory": DEFAULT_MEMORY_REQUEST}
    assert non_zero_request(pod(container("app"))) == defaults
    # a request that is present, even 0, is not replaced
    assert non_zero_request(pod(container("app", requests={"cpu": "0", "memory": "1Gi"}))) == {"cpu": 0, "memory": GI}
    # per container, then kube's aggregation: the larger of the init container and the sum of app containers
    init = container("setup", requests={"memory": "1Gi"})
    two = pod(container("a", requests={"cpu": "50m"}), container("b", requests={"cpu": "20m"}), init=(init,))
    assert non_zero_request(two) == {"cpu": 100, "memory": max(GI, 2 * DEFAULT_MEMORY_REQUEST)}


def test_a_resource_the_node_does_not_have_is_left_out_and_overcommit_scores_zero() -> None:
    assert least_allocated({"cpu": 4000}, {"cpu": 1000, "memory": GI}) == 75
    assert least_allocated({"cpu": 4000, "memory": GI}, {"cpu": 5000, "memory": 0}) == 50
    assert least_allocated({}, {"cpu": 1}) == 0


def test_best_effort_pods_spread_instead_of_piling_on_the_first_node() -> None:
    profile = default_profile()
    nodes = [
        NodeInfo(f"n{i}", allocatable={"cpu": 4000, "memory": 8 * GI, "pods": 110}, manifest={"kind": "Node"})
        for i in range(3)
    ]
    chosen = []
    for index in range(6):
        p = pod(container("app"), name=f"p{index}")
        result = schedule_one(profile, p, nodes, explain=False)
        assert result.selected is not None
        chosen.append(result.selected)
        row = next(i for i, n in enumerate(nodes) if n.name == result.selected)
        nodes[row] = assume(nodes[row], p, None)
    assert chosen == ["n0", "n1", "n2", "n0", "n1", "n2"]
    assert nodes[0].requested == {}  # BestEffort pods request nothing ...
    assert nodes[0].non_zero_requested == {"cpu": 200, "memory": 400 * MI}  # ... but count for scoring


def test_pod_level_requests_replace_the_containers_in_fit_and_score() -> None:
    """`PodRequests` with pod-level resources: the pod's CPU and memory are the pod-level ones, for the filter and
    for scoring (whose defaults for containers without requests they replace)."""
    from knuma.api.pod import Pod

    spec = {"containers": [{"name": "app"}], "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}
    whole = Pod.from_manifest({"metadata": {"name": "p"}, "spec": spec})
    assert non_zero_request(whole) == {"cpu": 3000, "memory": GI}
    node = NodeInfo("n", allocatable={"cpu": 4000, "memory": 8 * GI, "pods": 110}, requested={"cpu": 2000})
    assert not NodeResourcesFit().filter(CycleState(), whole, node).ok  # 2 CPUs free, 3 asked at pod level
    assert NodeResourcesFit().filter(CycleState(), pod(container("app")), node).ok
