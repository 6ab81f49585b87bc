"""Preemption in the simulator: the compared schedulers run the daemon's cycle (`knuma.scheduler.cycle`) with
DefaultPreemption, and the engine plays the evictions (grace period, informer delay, the controller's replacement)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from knuma.api.resources import CPU
from knuma.sim.comparison import compare
from knuma.sim.comparison_table import comparison_table
from knuma.sim.engine import build_kubelets, run, snapshot
from knuma.sim.metrics import compute
from knuma.sim.scenarios import builtin_scenario
from knuma.sim.schedulers import ListedPod, NodeSetup, make_scheduler
from knuma.sim.spec import Scenario, scenario_from_dict
from knuma.testbed.cluster import SpecError

from .conftest import small_scenario
from .test_kubelet import _guaranteed


def _one_node(**overrides: Any) -> dict[str, Any]:
    """One node of two 8-CPU zones, four 4-CPU batch pods (priority 0) and one 8-CPU critical pod (priority 1000)
    that fits only on a zone emptied of two batch pods."""
    raw: dict[str, Any] = {
        "name": "one-node",
        "cluster": {
            "shapes": {"two-by-eight": {"numaZones": 2, "cpusPerZone": 8, "memoryPerZone": "32Gi"}},
            "pools": [{"name": "n", "shape": "two-by-eight", "count": 1}],
        },
        "workload": {
            "arrival": {"process": "poisson", "rate": 1},
            "templates": [
                {
                    "name": "batch",
                    "requests": {"cpu": "4", "memory": "1Gi"},
                    "count": 4,
                    "priority": 0,
                    "terminationGracePeriodSeconds": 3,
                },
                {"name": "critical", "requests": {"cpu": "8", "memory": "1Gi"}, "count": 1, "priority": 1000},
            ],
        },
        "nrtPeriod": 30,
        "duration": 120,
    }
    raw.update(overrides)
    return raw


def _critical_last(scenario: Scenario) -> int:
    """A seed whose arrivals put the critical pod after the four batch pods (the cluster is full when it comes)."""
    return next(s for s in range(100) if scenario.workload.generate(s)[-1].template == "critical")


def test_knuma_evicts_exactly_the_pods_on_one_zone_and_the_critical_pod_runs_there() -> None:
    scenario = scenario_from_dict(_one_node())
    seed = _critical_last(scenario)
    result = run(scenario, "knuma", seed=seed, check_conservation=True)
    pods = result.pods
    critical = next(r for r in pods.values() if r.template == "critical")
    victims = [r for r in pods.values() if r.evicted_at is not None]
    assert critical.admitted_at is not None and not critical.failure
    assert len(victims) == 2  # the fewest that free one zone, not one pod per zone
    assert all(v.evicted_at is not None and v.finished_at == pytest.approx(v.evicted_at + 3) for v in victims)
    assert critical.admitted_at >= max(v.finished_at or 0 for v in victims)  # it waited for its victims
    zones = result.kubelets["n-000"].topology.zones  # one zone the critical pod's, the other the two batch pods left
    assert [z.available.get(CPU, 0) for z in zones] == [0, 0]
    metrics = compute(result, [t.pod for t in scenario.workload.templates])
    assert metrics["preempted"] == 2
    assert (metrics["top_priority_running"], metrics["top_priority_pods"]) == (1, 1)
    assert metrics["topology_affinity_errors"] == 0


def test_victims_are_replaced_by_their_controller_when_recreate_is_on() -> None:
    scenario = scenario_from_dict(_one_node(recreate={"enabled": True, "delay": 5}))
    result = run(scenario, "knuma", seed=_critical_last(scenario))
    replacements = [r for r in result.pods.values() if r.origin]
    assert len(replacements) == 2
    assert all(r.bound_at is None and r.pod.priority == 0 for r in replacements)  # no room: pending, not evicting


def test_a_pod_that_may_not_preempt_stays_pending() -> None:
    raw = _one_node()
    raw["workload"]["templates"][1]["preemptionPolicy"] = "Never"
    scenario = scenario_from_dict(raw)
    result = run(scenario, "knuma", seed=_critical_last(scenario))
    critical = next(r for r in result.pods.values() if r.template == "critical")
    assert critical.bound_at is None
    assert not any(r.evicted_at is not None for r in result.pods.values())


def test_a_restarted_scheduler_keeps_the_nomination_it_wrote() -> None:
    """Restarted while the victims stop (their grace period is 20 s): the new scheduler lists the preemptor's
    `status.nominatedNodeName` and holds its room, so it goes there without a second preemption."""
    raw = _one_node()
    raw["workload"]["templates"][0]["terminationGracePeriodSeconds"] = 20
    scenario = scenario_from_dict(raw)
    seed = _critical_last(scenario)
    steady = run(scenario, "knuma", seed=seed)
    critical = next(r for r in steady.pods.values() if r.template == "critical")
    evicted_at = next(r.evicted_at for r in steady.pods.values() if r.evicted_at is not None)
    assert evicted_at is not None and critical.admitted_at is not None
    restarted = run(scenario_from_dict({**raw, "schedulerRestarts": [evicted_at + 5]}), "knuma", seed=seed)
    assert restarted.stats["scheduler_restarts"] == 1
    assert sum(1 for r in restarted.pods.values() if r.evicted_at is not None) == 2
    assert next(r for r in restarted.pods.values() if r.template == "critical").admitted_at is not None


def test_the_preemption_scenario_runs_every_critical_pod_with_knuma_and_not_with_the_others() -> None:
    """The built-in scenario at seed 0: knuma runs all latency-critical pods without a TopologyAffinityError;
    kube-scheduler's node-level preemption evicts pods whose room is on the wrong zones, and the NUMA plugin with
    upstream's caches judges candidates on the published NRT, which does not free the victims' zones."""
    scenario = builtin_scenario("preemption")
    assert not scenario.optimal_supported  # the optimum counts pods whatever their priority
    comparison = compare(scenario, ["default", "nrt-passthrough", "knuma"], seed=0, jobs=1)
    knuma, default, passthrough = (comparison.results[n] for n in ("knuma", "default", "nrt-passthrough"))
    wanted = knuma["top_priority_pods"]
    assert knuma["top_priority_running"] == wanted > 0
    assert knuma["topology_affinity_errors"] == 0 and knuma["preempted"] > 0
    for other in (default, passthrough):
        assert other["top_priority_running"] < wanted
        assert other["topology_affinity_errors"] > 0
    rows = dict(comparison_table(comparison).rows)
    assert rows["highest-priority pods running"][-1] == f"{wanted} of {wanted}"
    assert rows["preempted (victims evicted)"][-1] == str(knuma["preempted"])
    document = comparison.to_json()["results"]["knuma"]
    assert (document["top_priority_running"], document["preempted"]) == (wanted, knuma["preempted"])
    assert f"highest-priority pods running {wanted} of {wanted}" in comparison.verdict()


def test_without_priorities_there_are_no_preemption_rows(tiny: Scenario) -> None:
    comparison = compare(tiny, ["knuma"], seed=0, jobs=1)
    assert "preempted" not in comparison.results["knuma"]
    assert "preempted" not in comparison.to_json()["results"]["knuma"]
    assert all("priority" not in label for label, _ in comparison_table(comparison).rows)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("priority", "high", r"templates\[0\]\.priority: expected an integer"),
        ("priority", 2**31, r"templates\[0\]\.priority: expected an integer \(a 32-bit priority value\)"),
        ("priority", True, r"templates\[0\]\.priority: expected an integer"),
        ("preemptionPolicy", "Always", r"templates\[0\]\.preemptionPolicy: expected PreemptLowerPriority or Never"),
        ("terminationGracePeriodSeconds", -1, r"templates\[0\]\.terminationGracePeriodSeconds: expected a non-neg"),
    ],
)
def test_bad_pod_fields_are_refused_with_their_path(field: str, value: Any, message: str) -> None:
    raw = small_scenario()
    raw["workload"]["templates"][0][field] = value
    with pytest.raises(SpecError, match=message):
        scenario_from_dict(raw)


def test_a_restarted_scheduler_holds_the_room_of_the_nominations_it_lists() -> None:
    """A pending pod listed with `status.nominatedNodeName` (a preemption before the restart): its room stays held
    against pods of lower priority, and it goes to its node itself."""
    kubelets = build_kubelets(scenario_from_dict(_one_node()))
    name, kubelet = next(iter(kubelets.items()))
    running = _guaranteed("running", 4)
    assert kubelet.admit(running).admitted
    setups = [NodeSetup(name, kubelet.allocatable, snapshot(kubelet, 0.0))]
    listed = [ListedPod(running, name, started=True)]
    critical = dataclasses.replace(_guaranteed("critical", 8), priority=1000)
    scheduler = make_scheduler("knuma", setups, pods=listed, nominated=[(critical, name)])
    assert scheduler.cache.nominated_node(critical.key) == name
    assert scheduler.attempt(_guaranteed("batch", 6), 1.0).node is None  # 16 - 4 - 8 held: no room for 6
    assert scheduler.attempt(critical, 1.0).node == name
    fresh = make_scheduler("knuma", setups, pods=listed)
    assert fresh.attempt(_guaranteed("batch", 6), 1.0).node == name
