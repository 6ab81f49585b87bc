from __future__ import annotations

from typing import Any

import pytest

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import Pod
from knuma.sim.optimal import Objective, OptimalUnsupported, solve
from knuma.testbed.shapes import BUILTIN_SHAPES
from knuma.testbed.simkubelet import SimKubelet


def _node(name: str = "n0", policy: Policy = Policy.SINGLE_NUMA_NODE, scope: Scope = Scope.CONTAINER) -> SimKubelet:
    shape = BUILTIN_SHAPES["small"]  # 2 zones x 8 CPUs, 32Gi
    return SimKubelet(name, shape.allocatable(), shape.topology(name, policy, scope))


def _pod(name: str, *cpus: int, qos: str = "Guaranteed") -> Pod:
    containers: list[dict[str, Any]] = []
    for index, cpu in enumerate(cpus):
        resources: dict[str, Any] = {"requests": {"cpu": str(cpu), "memory": "1Gi"}}
        if qos == "Guaranteed":
            resources["limits"] = dict(resources["requests"])
        containers.append({"name": f"c{index}", "resources": resources})
    return Pod.from_manifest({"metadata": {"name": name}, "spec": {"containers": containers}})


def test_one_five_cpu_pod_per_zone() -> None:
    # 3 x 5 CPUs = 15 <= 16 at node level, but two never share an 8-CPU zone.
    result = solve([_pod(f"p{i}", 5) for i in range(3)], [_node()])
    assert (result.placed, result.proven, result.bound) == (2, True, 2)


def test_mixed_sizes_pack_exactly() -> None:
    # zone 0: 5 + 3, zone 1: 5 + 3
    pods = [_pod("a", 5), _pod("b", 5), _pod("c", 3), _pod("d", 3)]
    result = solve(pods, [_node()])
    assert result.placed == 4 and result.proven
    assert result.cpu_used == 16_000


def test_the_cpu_objective_places_the_most_cpus_then_the_most_pods() -> None:
    # Two 8-CPU zones; a 7-CPU pod and five 3-CPU pods. The most pods: four 3s (two per zone, 12 CPUs). The most
    # CPUs: 7 + 3 + 3 (13 CPUs); among those, the most pods is three (7 alone in a zone with 3 + 3 beside it).
    pods = [_pod("big", 7), *(_pod(f"s{i}", 3) for i in range(5))]
    by_pods = solve(pods, [_node()])
    assert (by_pods.placed, by_pods.cpu_used, by_pods.bound, by_pods.proven) == (4, 12_000, 4, True)
    by_cpus = solve(pods, [_node()], objective=Objective.CPUS)
    assert (by_cpus.placed, by_cpus.cpu_used, by_cpus.bound, by_cpus.proven) == (3, 13_000, 13_000, True)
    assert by_cpus.placement == {"n0": {"g0": 1, "g1": 2}}


def test_wider_than_a_zone_never_fits_single_numa_node() -> None:
    assert solve([_pod("wide", 10)], [_node()]).placed == 0


def test_burstable_pods_are_node_level_only() -> None:
    pods = [_pod(f"b{i}", 1, qos="Burstable") for i in range(20)]
    assert solve(pods, [_node()]).placed == 16


def test_container_scope_splits_containers_pod_scope_does_not() -> None:
    pod = _pod("two", 5, 5)
    assert solve([pod], [_node(scope=Scope.CONTAINER)]).placed == 1
    assert solve([pod], [_node(scope=Scope.POD)]).placed == 0


def test_prefers_more_pods_across_nodes() -> None:
    # Two nodes, four 6-CPU pods and four 2-CPU pods: every zone takes 6 + 2.
    pods = [_pod(f"l{i}", 6) for i in range(4)] + [_pod(f"s{i}", 2) for i in range(4)]
    result = solve(pods, [_node("n0"), _node("n1")], pools={"n0": "p", "n1": "p"})
    assert result.placed == 8 and result.proven


def test_restricted_wide_pods_are_not_modelled() -> None:
    with pytest.raises(OptimalUnsupported):
        solve([_pod("wide", 10)], [_node(policy=Policy.RESTRICTED)])


def test_online_placement_is_a_starting_solution() -> None:
    """With little search time, the hint (an online run's final state) is what CP-SAT returns at least."""
    from knuma.sim.engine import build_kubelets, run
    from knuma.sim.spec import scenario_from_dict

    from .conftest import small_scenario

    scenario = scenario_from_dict(small_scenario())
    online = run(scenario, "knuma", seed=0)
    placed = sum(len(k.running) for k in online.kubelets.values())
    pods = [a.pod for a in scenario.workload.generate(0)]
    pools = {n: p.name for p in scenario.cluster.pools for n in p.node_names()}
    empty = list(build_kubelets(scenario).values())
    # A short limit, but not so short that a loaded CI machine stops CP-SAT before it has loaded the hint.
    result = solve(pods, empty, time_limit=0.5, pools=pools, hint=list(online.kubelets.values()))
    assert result.placed >= placed
    assert result.bound >= result.placed
