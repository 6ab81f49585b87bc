"""The vectorised scheduler makes exactly the decisions of the straightforward one, pod after pod."""

from __future__ import annotations

import random

import pytest

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import Pod
from knuma.scheduler.framework import NodeInfo
from knuma.scheduler.sequential import SequentialScheduler
from knuma.scheduler.strategies import ScoringStrategy, StrategyType
from knuma.scheduler.vectorized import VectorizedScheduler
from knuma.topology.node import NodeTopology

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
    kind = rng.choice(["guaranteed", "guaranteed", "guaranteed", "fractional", "burstable", "besteffort", "init"])
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
    return Pod.from_manifest({"metadata": {"name": f"p{index}"}, "spec": spec})


@pytest.mark.parametrize("strategy", list(StrategyType))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_decisions_as_the_sequential_scheduler(seed: int, strategy: StrategyType) -> None:
    rng = random.Random(seed)
    nodes = random_cluster(rng, 12)
    scoring = ScoringStrategy(strategy)
    fast, slow = VectorizedScheduler(nodes, scoring), SequentialScheduler(nodes, scoring)
    placed = 0
    for index in range(60):
        pod = random_pod(rng, index)
        expected, got = slow.schedule(pod), fast.schedule(pod)
        assert (got.node, got.score) == (expected.node, expected.score), f"pod {index}: {pod}"
        placed += got.node is not None
    assert placed > 10  # the cluster fills up; both must agree on the pods that no longer fit too
