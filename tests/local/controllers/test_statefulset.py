"""StatefulSet planning (`knuma.local.controllers.statefulset`): ordered creation, reverse-order scale-down, failed
pods re-created under their name, rolling updates from the highest ordinal down to the partition, and the status
`kubectl rollout status sts` reads."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from knuma.local.controllers.replicaset import Backoff
from knuma.local.controllers.statefulset import (
    POD_INDEX_LABEL,
    POD_NAME_LABEL,
    REVISION_LABEL,
    StatefulSetPlan,
    plan_statefulset,
    revision_name,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def statefulset(replicas: int = 3, image: str = "db:1", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "db", "namespace": "default", "uid": "s-uid", "generation": 4},
        "spec": {
            "replicas": replicas,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "c", "image": image}], "volumes": [{"name": "data", "emptyDir": {}}]},
            },
            "volumeClaimTemplates": [{"metadata": {"name": "data"}}],
            **spec,
        },
    }


def pod(
    sts: dict[str, Any], ordinal: int, phase: str = "Running", *, ready: bool = True, **meta: Any
) -> dict[str, Any]:
    since = (NOW - timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "metadata": {
            "name": f"db-{ordinal}",
            "labels": {"app": "db", REVISION_LABEL: revision_name(sts)},
            **meta,
        },
        "spec": {"nodeName": "n0"},
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": since}],
        },
    }


def plan(sts: dict[str, Any], pods: list[dict[str, Any]], backoff: Backoff | None = None) -> StatefulSetPlan:
    templates = {revision_name(sts): sts["spec"]["template"]}
    return plan_statefulset(sts, pods, templates, backoff or Backoff(), 100.0, NOW)


def test_ordered_ready_creates_one_pod_at_a_time_with_its_identity() -> None:
    sts = statefulset()
    first = plan(sts, [])
    assert [p["metadata"]["name"] for p in first.create] == ["db-0"] and not first.delete
    created = first.create[0]
    assert created["metadata"]["labels"] == {
        "app": "db",
        POD_NAME_LABEL: "db-0",
        POD_INDEX_LABEL: "0",
        REVISION_LABEL: revision_name(sts),
    }
    assert created["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
    assert created["spec"]["hostname"] == "db-0" and created["spec"]["subdomain"] == "db"
    assert created["spec"]["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}]
    assert plan(sts, [pod(sts, 0, "Pending", ready=False)]).create == ()  # waits for db-0
    assert [p["metadata"]["name"] for p in plan(sts, [pod(sts, 0)]).create] == ["db-1"]


def test_parallel_creates_every_missing_pod_at_once() -> None:
    sts = statefulset(podManagementPolicy="Parallel")
    assert [p["metadata"]["name"] for p in plan(sts, [pod(sts, 1, "Pending", ready=False)]).create] == ["db-0", "db-2"]


def test_min_ready_seconds_holds_the_next_pod_and_asks_to_look_again() -> None:
    sts = statefulset(minReadySeconds=30)
    held = plan(sts, [pod(sts, 0)])  # ready for 5 s of 30
    assert held.create == () and held.retry_after is not None
    assert held.status["readyReplicas"] == 1 and held.status["availableReplicas"] == 0


def test_scale_down_deletes_the_highest_ordinal_and_waits_for_it_to_go() -> None:
    sts = statefulset(replicas=1)
    pods = [pod(sts, 0), pod(sts, 1), pod(sts, 2)]
    assert plan(sts, pods).delete == ("db-2",)
    pods[2]["metadata"]["deletionTimestamp"] = "2026-01-01T12:00:30Z"
    assert plan(sts, pods).delete == ()  # db-1 only once db-2 is gone
    assert plan(sts, pods[:2]).delete == ("db-1",)
    parallel = statefulset(replicas=1, podManagementPolicy="Parallel")
    assert set(plan(parallel, [pod(parallel, 0), pod(parallel, 1), pod(parallel, 2)]).delete) == {"db-1", "db-2"}


def test_a_failed_pod_is_deleted_then_created_again_under_its_name_after_a_pause() -> None:
    sts = statefulset()
    backoff = Backoff()
    failed = plan_statefulset(sts, [pod(sts, 0), pod(sts, 1, "Failed", ready=False)], {}, backoff, 100.0, NOW)
    assert failed.delete == ("db-1",) and failed.create == ()
    paused = plan_statefulset(sts, [pod(sts, 0)], {}, backoff, 100.5, NOW)
    assert paused.create == () and paused.retry_after == 0.5
    again = plan_statefulset(sts, [pod(sts, 0)], {}, backoff, 101.0, NOW)
    assert [p["metadata"]["name"] for p in again.create] == ["db-1"]


def test_rolling_update_replaces_from_the_highest_ordinal_down_to_the_partition() -> None:
    old = statefulset(image="db:1")
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "db:2"
    new["status"] = {"currentRevision": revision_name(old)}
    templates = {revision_name(old): old["spec"]["template"], revision_name(new): new["spec"]["template"]}

    def step(sts: dict[str, Any], pods: list[dict[str, Any]]) -> StatefulSetPlan:
        return plan_statefulset(sts, pods, templates, Backoff(), 100.0, NOW)

    pods = [pod(old, 0), pod(old, 1), pod(old, 2)]
    first = step(new, pods)
    assert first.delete == ("db-2",) and first.status["currentRevision"] == revision_name(old)
    assert first.status["updateRevision"] == revision_name(new) and first.status["currentReplicas"] == 2
    recreated = step(new, pods[:2])
    assert [p["metadata"]["labels"][REVISION_LABEL] for p in recreated.create] == [revision_name(new)]
    assert step(new, [*pods[:2], pod(new, 2, "Pending", ready=False)]).delete == ()  # waits for the new db-2
    assert step(new, [*pods[:2], pod(new, 2)]).delete == ("db-1",)
    done = step(new, [pod(new, 0), pod(new, 1), pod(new, 2)])
    assert done.delete == () and done.status["currentRevision"] == revision_name(new)
    assert done.status["updatedReplicas"] == done.status["currentReplicas"] == 3

    partitioned = copy.deepcopy(new)
    partitioned["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}
    assert step(partitioned, [pod(old, 0), pod(old, 1), pod(new, 2)]).delete == ()  # below the partition: kept
    below = step(partitioned, [pod(new, 2)])
    assert [p["metadata"]["labels"][REVISION_LABEL] for p in below.create] == [revision_name(old)]
    assert below.create[0]["spec"]["containers"][0]["image"] == "db:1"  # the current revision's template


def test_on_delete_never_replaces_pods_by_itself_and_status_counts_revisions() -> None:
    old = statefulset(image="db:1")
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "db:2"
    new["spec"]["updateStrategy"] = {"type": "OnDelete"}
    new["status"] = {"currentRevision": revision_name(old)}
    out = plan(new, [pod(old, 0), pod(old, 1), pod(new, 2, "Pending", ready=False)])
    assert out.delete == () and out.create == ()
    assert out.status == {
        "observedGeneration": 4,
        "replicas": 3,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "currentReplicas": 2,
        "updatedReplicas": 1,
        "currentRevision": revision_name(old),
        "updateRevision": revision_name(new),
        "collisionCount": 0,
    }
