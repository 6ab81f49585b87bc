"""The node lifecycle and taint eviction decisions (`knuma.local.controllers.nodelifecycle`), case by case against
kube-controller-manager's `tryUpdateNodeHealth`, `SwapNodeControllerTaint` / `doNoScheduleTaintingPass` /
`markNodeAsReachable`, `processPodOnNode` with `GetMatchingTolerations` and `getMinTolerationTime`, and
`MarkPodsNotReady`."""

from __future__ import annotations

from typing import Any

import pytest

from knuma.local.controllers.nodelifecycle import (
    NOT_READY,
    UNREACHABLE,
    UNSCHEDULABLE,
    HealthProbes,
    eviction_delay,
    has_taint,
    no_execute_swap,
    no_schedule_taints,
    pod_not_ready_status,
    reachable_taints,
    unknown_conditions,
)

NOW = "2026-11-29T05:00:00Z"


def node(ready: str | None = "True", taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    conditions = []
    if ready is not None:
        conditions = [
            {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "2026-11-29T04:59:00Z"},
            {"type": "Ready", "status": ready, "lastHeartbeatTime": "2026-11-29T04:59:00Z", "reason": "KubeletReady"},
        ]
    return {
        "metadata": {"name": "n1", "creationTimestamp": "2026-11-29T04:00:00Z"},
        "spec": {"taints": taints} if taints else {},
        "status": {"conditions": conditions},
    }


def lease(renewed: str) -> dict[str, Any]:
    return {"metadata": {"name": "n1", "namespace": "kube-node-lease"}, "spec": {"renewTime": renewed}}


def test_a_node_is_silent_only_after_the_grace_period_without_a_new_heartbeat_on_the_controllers_clock() -> None:
    probes = HealthProbes()
    healthy = node()
    assert not probes.silent("n1", healthy, lease("t1"), now=100.0, grace=40)  # first sight: a full grace period
    assert not probes.silent("n1", healthy, lease("t1"), now=140.0, grace=40)
    assert probes.silent("n1", healthy, lease("t1"), now=140.5, grace=40)
    assert not probes.silent("n1", healthy, lease("t2"), now=141.0, grace=40)  # renewed: the clock restarts
    assert not probes.silent("n1", healthy, lease("t2"), now=180.0, grace=40)
    assert probes.silent("n1", healthy, lease("t2"), now=181.5, grace=40)
    # a node that never reported its Ready condition gets the startup grace
    assert not probes.silent("n2", node(ready=None), None, now=0.0, grace=40, startup_grace=60)
    assert not probes.silent("n2", node(ready=None), None, now=59.0, grace=40, startup_grace=60)
    assert probes.silent("n2", node(ready=None), None, now=61.0, grace=40, startup_grace=60)
    probes.forget(["n1"])
    assert set(probes.seen) == {"n1"}


def test_unknown_conditions_keep_the_last_heartbeat_and_add_the_missing_ones_once() -> None:
    conditions = unknown_conditions(node(), NOW)
    assert conditions is not None
    by_type = {c["type"]: c for c in conditions}
    assert set(by_type) == {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}
    ready = by_type["Ready"]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "Unknown",
        "NodeStatusUnknown",
        "Kubelet stopped posting node status.",
    )
    assert ready["lastHeartbeatTime"] == "2026-11-29T04:59:00Z" and ready["lastTransitionTime"] == NOW
    never = by_type["DiskPressure"]  # the kubelet never posted it: tryUpdateNodeHealth's other reason
    assert (never["status"], never["reason"], never["message"]) == (
        "Unknown",
        "NodeStatusNeverUpdated",
        "Kubelet never posted node status.",
    )
    assert never["lastHeartbeatTime"] == "2026-11-29T04:00:00Z" and never["lastTransitionTime"] == NOW
    again = {**node(), "status": {"conditions": conditions}}
    assert unknown_conditions(again, NOW) is None


@pytest.mark.parametrize(
    ("ready", "wanted"),
    [("Unknown", UNREACHABLE), ("False", NOT_READY), ("True", None)],
)
def test_no_schedule_taints_follow_the_ready_condition_and_keep_the_others(ready: str, wanted: str | None) -> None:
    other = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    stale = {"key": NOT_READY if wanted == UNREACHABLE else UNREACHABLE, "effect": "NoSchedule", "timeAdded": NOW}
    evicting = {"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": NOW}  # not this pass's business
    taints = no_schedule_taints(node(ready, [other, stale, evicting]), NOW)
    assert taints is not None
    assert other in taints and evicting in taints and stale not in taints
    ours = {(t["key"], t["effect"]) for t in taints if t["key"] in (UNREACHABLE, NOT_READY) and t != evicting}
    assert ours == ({(wanted, "NoSchedule")} if wanted else set())
    if wanted:
        assert next(t for t in taints if t["effect"] == "NoSchedule" and t["key"] == wanted)["timeAdded"] == NOW
        assert no_schedule_taints(node(ready, taints), NOW) is None  # already right: nothing to write


def test_no_schedule_taints_for_pressure_and_a_cordoned_node() -> None:
    pressured = node()
    pressured["status"]["conditions"][0]["status"] = "True"  # MemoryPressure
    pressured["spec"]["unschedulable"] = True
    taints = no_schedule_taints(pressured, NOW)
    assert taints is not None
    assert {t["key"] for t in taints} == {"node.kubernetes.io/memory-pressure", UNSCHEDULABLE}
    relieved = node(taints=taints)  # pressure gone, uncordoned
    assert no_schedule_taints(relieved, NOW) == []


def test_no_execute_taints_swap_with_the_ready_condition_and_go_when_reachable() -> None:
    unreachable = no_execute_swap(node("Unknown", [{"key": NOT_READY, "effect": "NoExecute", "timeAdded": "t0"}]), NOW)
    assert unreachable == [{"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": NOW}]
    assert no_execute_swap(node("Unknown", unreachable), "later") is None  # kept with its first timeAdded
    assert no_execute_swap(node("True", []), NOW) is None
    assert has_taint(node("Unknown", unreachable), UNREACHABLE, "NoExecute")
    assert not has_taint(node("Unknown", unreachable), UNREACHABLE, "NoSchedule")
    both = [*unreachable, {"key": UNREACHABLE, "effect": "NoSchedule"}, {"key": "dedicated", "effect": "NoExecute"}]
    assert reachable_taints(node("True", both)) == both[1:]
    assert reachable_taints(node("True", both[1:])) is None


def test_probes_restart_gives_every_node_a_new_grace_period() -> None:
    probes = HealthProbes()
    assert not probes.silent("n1", node(), lease("t1"), now=0.0, grace=40)
    assert probes.silent("n1", node(), lease("t1"), now=50.0, grace=40)
    probes.restart(now=50.0)
    assert not probes.silent("n1", node(), lease("t1"), now=89.0, grace=40)
    assert probes.silent("n1", node(), lease("t1"), now=91.0, grace=40)


def tolerations(*items: dict[str, Any]) -> dict[str, Any]:
    return {"tolerations": list(items)}


UNREACHABLE_TAINT = [{"key": UNREACHABLE, "effect": "NoExecute"}, {"key": UNREACHABLE, "effect": "NoSchedule"}]


def test_eviction_delay_follows_process_pod_on_node() -> None:
    both = [*UNREACHABLE_TAINT, {"key": NOT_READY, "effect": "NoExecute"}]
    assert eviction_delay({}, UNREACHABLE_TAINT) == 0.0  # not tolerated: at once
    assert eviction_delay({}, [{"key": UNREACHABLE, "effect": "NoSchedule"}]) is None  # no NoExecute taint
    forever = {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}
    assert eviction_delay(tolerations(forever), UNREACHABLE_TAINT) is None
    assert eviction_delay(tolerations({**forever, "tolerationSeconds": 300}), UNREACHABLE_TAINT) == 300
    assert eviction_delay(tolerations({**forever, "tolerationSeconds": -5}), UNREACHABLE_TAINT) == 0.0
    # every NoExecute taint must be tolerated; the smallest seconds of the tolerations used wins
    not_ready = {"key": NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
    assert eviction_delay(tolerations({**forever, "tolerationSeconds": 300}), both) == 0.0
    assert eviction_delay(tolerations({**forever, "tolerationSeconds": 300}, not_ready), both) == 30
    # the toleration used for a taint is the first that tolerates it (GetMatchingTolerations' break)
    everything = {"operator": "Exists"}
    assert eviction_delay(tolerations(everything, {**forever, "tolerationSeconds": 5}), UNREACHABLE_TAINT) is None
    assert eviction_delay(tolerations({**forever, "tolerationSeconds": 5}, everything), UNREACHABLE_TAINT) == 5


def test_pods_on_a_silent_node_become_not_ready_once() -> None:
    running = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    patch = pod_not_ready_status(running, NOW)
    assert patch == {"status": {"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": NOW}]}}
    assert (
        pod_not_ready_status(
            {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}}, NOW
        )
        is None
    )
    assert pod_not_ready_status({"status": {"phase": "Succeeded"}}, NOW) is None
