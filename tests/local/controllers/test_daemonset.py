"""DaemonSet planning: pure decisions over plain objects, as kube-controller-manager's daemon controller makes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from knuma.local.controllers.daemonset import (
    HASH_LABEL,
    TEMPLATE_GENERATION_LABEL,
    FailedPodBackoff,
    daemon_pod,
    daemonset_hash,
    plan_daemonset,
    should_run,
    target_node,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def daemonset(
    *,
    image: str = "exporter:1",
    generation: int = 1,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    affinity: dict[str, Any] | None = None,
    strategy: dict[str, Any] | None = None,
    min_ready: int = 0,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": image}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    if affinity:
        spec["affinity"] = affinity
    ds: dict[str, Any] = {
        "metadata": {"name": "rte", "namespace": "tas", "uid": "ds-uid", "generation": generation},
        "spec": {
            "selector": {"matchLabels": {"name": "rte"}},
            "template": {"metadata": {"labels": {"name": "rte"}}, "spec": spec},
            "minReadySeconds": min_ready,
        },
    }
    if strategy:
        ds["spec"]["updateStrategy"] = strategy
    return ds


def node(name: str, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []}}


def pod_of(
    ds: dict[str, Any],
    node_name: str,
    name: str,
    *,
    phase: str = "Running",
    ready: bool = True,
    bound: bool = True,
    created: str = "2026-01-01T11:00:00Z",
    ready_since: datetime = NOW - timedelta(hours=1),
) -> dict[str, Any]:
    pod = daemon_pod(ds, node_name, daemonset_hash(ds))
    pod["metadata"].update(name=name, creationTimestamp=created)
    if bound:
        pod["spec"]["nodeName"] = node_name
    since = ready_since.strftime("%Y-%m-%dT%H:%M:%SZ")
    pod["status"] = {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": since}],
    }
    return pod


def plan(ds: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]], **kw: Any) -> Any:
    return plan_daemonset(ds, nodes, pods, kw.get("backoff", FailedPodBackoff()), kw.get("now", 0.0), NOW)


def test_one_pod_per_matching_node_with_the_upstream_template() -> None:
    ds = daemonset(node_selector={"numa": "yes"})
    nodes = [node("a", {"numa": "yes"}), node("b", {"numa": "no"}), node("c", {"numa": "yes"})]
    result = plan(ds, nodes, [])
    assert result.create == ("a", "c") and result.delete == ()
    assert result.status["desiredNumberScheduled"] == 2 and result.status["currentNumberScheduled"] == 0
    pod = daemon_pod(ds, "a", daemonset_hash(ds))
    labels = pod["metadata"]["labels"]
    assert labels == {"name": "rte", HASH_LABEL: daemonset_hash(ds), TEMPLATE_GENERATION_LABEL: "1"}
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]}]
    }
    assert target_node(pod) == "a" and "nodeName" not in pod["spec"]
    keys = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
    assert ("node.kubernetes.io/not-ready", "NoExecute") in keys
    assert ("node.kubernetes.io/unschedulable", "NoSchedule") in keys


def test_node_affinity_and_taints_are_honoured() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}]
            }
        }
    }
    ds = daemonset(affinity=affinity)
    assert should_run(node("a", {"zone": "z1"}), ds) == (True, True)
    assert should_run(node("b", {"zone": "z2"}), ds) == (False, False)
    # a NoSchedule taint: no new pod, but a pod already there keeps running; NoExecute: it must go
    no_schedule = node("c", {"zone": "z1"}, [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}])
    no_execute = node("d", {"zone": "z1"}, [{"key": "dedicated", "value": "db", "effect": "NoExecute"}])
    assert should_run(no_schedule, ds) == (False, True)
    assert should_run(no_execute, ds) == (False, False)
    tolerant = daemonset(affinity=affinity, tolerations=[{"key": "dedicated", "operator": "Exists"}])
    assert should_run(no_execute, tolerant) == (True, True)
    # the daemon tolerations: an unschedulable (cordoned) node still runs daemon pods
    cordoned = node("e", {"zone": "z1"}, [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}])
    assert should_run(cordoned, ds) == (True, True)
    pods = [pod_of(ds, "c", "rte-c"), pod_of(ds, "d", "rte-d")]
    result = plan(ds, [no_schedule, no_execute], pods)
    assert result.delete == ("rte-d",) and result.create == ()
    assert result.status["numberMisscheduled"] == 2 and result.status["desiredNumberScheduled"] == 0


def test_failed_pods_are_replaced_with_backoff_and_extra_pods_pruned() -> None:
    ds = daemonset()
    nodes = [node("a"), node("b")]
    backoff = FailedPodBackoff()
    failed = pod_of(ds, "a", "rte-a", phase="Failed", ready=False)
    extra = [pod_of(ds, "b", "rte-b1"), pod_of(ds, "b", "rte-b2", created="2026-01-01T11:30:00Z")]
    result = plan(ds, nodes, [failed, *extra], backoff=backoff, now=100.0)
    assert result.delete == ("rte-a", "rte-b2")  # the failed one, and all but the oldest on b
    again = plan(ds, nodes, [failed, extra[0]], backoff=backoff, now=100.5)
    assert again.delete == () and again.retry_after is not None and 0 < again.retry_after <= 2.0
    later = plan(ds, nodes, [failed, extra[0]], backoff=backoff, now=102.5)
    assert later.delete == ("rte-a",)
    # an unscheduled pod aimed at a node that is gone is deleted
    orphan = pod_of(ds, "gone", "rte-gone", bound=False)
    assert "rte-gone" in plan(ds, nodes, [extra[0], pod_of(ds, "a", "rte-a2"), orphan]).delete


def test_status_counts_as_kube_controller_manager() -> None:
    ds = daemonset(min_ready=30)
    nodes = [node("a"), node("b"), node("c"), node("d")]
    pods = [
        pod_of(ds, "a", "rte-a"),  # ready for an hour: available
        pod_of(ds, "b", "rte-b", ready_since=NOW - timedelta(seconds=5)),  # ready, not yet available
        pod_of(ds, "c", "rte-c", phase="Pending", ready=False),
    ]
    status = plan(ds, nodes, pods).status
    assert status == {
        "observedGeneration": 1,
        "desiredNumberScheduled": 4,
        "currentNumberScheduled": 3,
        "numberMisscheduled": 0,
        "numberReady": 2,
        "updatedNumberScheduled": 3,
        "numberAvailable": 1,
        "numberUnavailable": 3,
    }


def test_rolling_update_replaces_old_pods_max_unavailable_at_a_time() -> None:
    old = daemonset(image="exporter:1")
    new = daemonset(image="exporter:2", generation=2)
    assert daemonset_hash(old) != daemonset_hash(new)
    nodes = [node("a"), node("b"), node("c")]
    pods = [pod_of(old, n["metadata"]["name"], f"old-{n['metadata']['name']}") for n in nodes]
    first = plan(new, nodes, pods)
    assert first.delete == ("old-a",) and first.create == ()
    assert first.status["updatedNumberScheduled"] == 0 and first.status["observedGeneration"] == 2
    # a's pod is gone: the manage step creates the new one; nothing else is deleted meanwhile
    assert plan(new, nodes, pods[1:]).create == ("a",)
    starting = pod_of(new, "a", "new-a", phase="Pending", ready=False)
    assert plan(new, nodes, [starting, *pods[1:]]).delete == ()
    # once it is available, the next old pod goes
    running = pod_of(new, "a", "new-a")
    step = plan(new, nodes, [running, *pods[1:]])
    assert step.delete == ("old-b",) and step.status["updatedNumberScheduled"] == 1
    # maxUnavailable 100%: every old pod at once; OnDelete: none
    everything = daemonset(
        image="exporter:2",
        generation=2,
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}},
    )
    assert set(plan(everything, nodes, pods).delete) == {"old-a", "old-b", "old-c"}
    on_delete = daemonset(image="exporter:2", generation=2, strategy={"type": "OnDelete"})
    assert plan(on_delete, nodes, pods).delete == ()
