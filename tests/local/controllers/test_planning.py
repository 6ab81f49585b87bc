"""Deployment and ReplicaSet planning: pure decisions over plain objects."""

from __future__ import annotations

from typing import Any

from knuma.local.controllers.deployment import (
    REVISION_ANNOTATION,
    TEMPLATE_HASH_LABEL,
    plan_deployment,
    replicaset_for,
    template_hash,
)
from knuma.local.controllers.replicaset import MAX_BACKOFF, Backoff, plan_replicaset, pod_from_template


def deployment(replicas: int = 3, image: str = "app:1") -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "default", "uid": "d-uid", "generation": 2},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
        },
    }


def pod(
    name: str, phase: str = "Running", *, ready: bool = True, node: str = "n0", created: str = "2024-01-01T00:00:00Z"
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": created},
        "spec": {"nodeName": node},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def test_replicaset_of_a_deployment_is_named_by_template_hash() -> None:
    rs = replicaset_for(deployment())
    digest = template_hash(deployment()["spec"]["template"])
    assert (rs["metadata"]["name"] == f"web-{digest}" and len(digest) == 10) or len(digest) > 5
    assert set(digest) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", TEMPLATE_HASH_LABEL: digest}
    assert rs["spec"]["template"]["metadata"]["labels"][TEMPLATE_HASH_LABEL] == digest
    assert rs["metadata"]["ownerReferences"][0]["uid"] == "d-uid"
    assert template_hash(deployment(image="app:2")["spec"]["template"]) != digest


def test_deployment_creates_its_replicaset_then_scales_old_ones_down() -> None:
    plan = plan_deployment(deployment(), [])
    assert plan.create is not None and plan.scale == {}
    current = {**plan.create, "status": {"replicas": 3, "readyReplicas": 3, "availableReplicas": 3}}
    old = {"metadata": {"name": "web-old"}, "spec": {"replicas": 3}, "status": {"replicas": 3}}
    plan = plan_deployment(deployment(replicas=5), [current, old])
    assert plan.create is None
    assert plan.scale == {current["metadata"]["name"]: 5, "web-old": 0}
    assert plan.status["updatedReplicas"] == 3 and plan.status["replicas"] == 6
    assert plan.status["observedGeneration"] == 2


def test_revisions_count_up_and_a_template_that_comes_back_is_renumbered() -> None:
    first = plan_deployment(deployment(), [])
    assert first.create is not None and first.create["metadata"]["annotations"][REVISION_ANNOTATION] == "1"
    assert first.revision == "1" and first.renumber is None
    second = plan_deployment(deployment(image="app:2"), [first.create])
    assert second.create is not None and second.create["metadata"]["annotations"][REVISION_ANNOTATION] == "2"
    back = plan_deployment(deployment(), [first.create, second.create])  # kubectl rollout undo
    assert back.create is None and back.renumber == (first.create["metadata"]["name"], "3") and back.revision == "3"
    recorded = deployment()
    recorded["metadata"]["annotations"] = {REVISION_ANNOTATION: "1"}
    assert plan_deployment(recorded, [first.create]).revision is None  # already recorded: nothing to write


def test_a_paused_deployment_only_scales_until_it_is_resumed() -> None:
    first = plan_deployment(deployment(), [])
    assert first.create is not None
    current = {**first.create, "spec": {**first.create["spec"], "replicas": 3}}
    paused = deployment(replicas=5, image="app:2")
    paused["spec"]["paused"] = True
    plan = plan_deployment(paused, [current])
    assert plan.create is None and plan.scale == {current["metadata"]["name"]: 5}  # the new template waits
    assert plan.status["conditions"][1]["reason"] == "DeploymentPaused" and plan.revision == "1"
    del paused["spec"]["paused"]
    resumed = plan_deployment(paused, [current])
    assert resumed.create is not None and resumed.scale == {current["metadata"]["name"]: 0}


def test_replicaset_creates_missing_and_deletes_extra_pods_pending_first() -> None:
    rs: dict[str, Any] = {"metadata": {"name": "web-x", "generation": 1}, "spec": {"replicas": 3}}
    plan = plan_replicaset(rs, [pod("a")], Backoff(), now=0.0)
    assert (plan.create, plan.delete) == (2, ())
    assert plan.status["replicas"] == 1 and plan.status["readyReplicas"] == 1
    pods = [pod("a"), pod("b", "Pending", ready=False, node=""), pod("c"), pod("d", created="2024-01-02T00:00:00Z")]
    rs["spec"]["replicas"] = 2
    plan = plan_replicaset(rs, pods, Backoff(), now=0.0)
    assert plan.delete == ("b", "d")  # the unscheduled one, then the newest


def test_failed_pods_are_replaced_with_growing_pauses() -> None:
    """TopologyAffinityError pods are not active: replaced, but each new failure doubles the wait (up to a cap)."""
    rs: dict[str, Any] = {"metadata": {"name": "web-x"}, "spec": {"replicas": 1}}
    backoff = Backoff()
    failed = [pod("f1", "Failed")]
    plan = plan_replicaset(rs, failed, backoff, now=100.0)
    assert plan.create == 0 and plan.retry_after == 1.0
    assert plan_replicaset(rs, failed, backoff, now=101.0).create == 1
    failed.append(pod("f2", "Failed"))
    assert plan_replicaset(rs, failed, backoff, now=102.0).retry_after == 2.0
    for i in range(3, 12):
        failed.append(pod(f"f{i}", "Failed"))
        plan = plan_replicaset(rs, failed, backoff, now=200.0)
    assert plan.retry_after == MAX_BACKOFF
    # pods that keep running do not reset the pacing; a pod that newly runs does
    plan_replicaset(rs, [*failed, pod("old-ok")], backoff, now=300.0)
    assert backoff.streak == 0
    failed.append(pod("f12", "Failed"))
    failed.append(pod("f13", "Failed"))
    rs["spec"]["replicas"] = 2
    assert plan_replicaset(rs, [*failed, pod("old-ok")], backoff, now=400.0).retry_after == 2.0


def test_pod_from_template_is_controlled_by_the_replicaset() -> None:
    rs = replicaset_for(deployment())
    rs["metadata"]["uid"] = "rs-uid"
    new = pod_from_template(rs)
    assert new["metadata"]["generateName"] == rs["metadata"]["name"] + "-"
    assert new["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": rs["metadata"]["name"],
            "uid": "rs-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert new["metadata"]["labels"][TEMPLATE_HASH_LABEL] == rs["metadata"]["labels"][TEMPLATE_HASH_LABEL]
    assert new["spec"]["containers"][0]["image"] == "app:1"


def test_the_new_replicaset_is_found_by_its_template_not_by_the_hash_of_the_template_as_written() -> None:
    """`FindNewReplicaSet` / `EqualIgnoreHash`: a template written differently but equal as Go's structs compare
    (`1000m` for `1`, `ports: []`) keeps its ReplicaSet, where its hash would start a rollout of every pod; the
    oldest of two equal ones is taken; a real change still gets a ReplicaSet of its own."""
    written = deployment()
    written["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1"}}
    first = plan_deployment(written, [])
    assert first.create is not None
    current = {**first.create, "status": {"replicas": 3, "readyReplicas": 3, "availableReplicas": 3}}
    current["metadata"] = {**current["metadata"], "creationTimestamp": "2024-01-02T00:00:00Z"}
    respelt = deployment()
    respelt["spec"]["template"]["spec"]["containers"][0].update(resources={"limits": {"cpu": "1000m"}}, ports=[])
    assert template_hash(respelt["spec"]["template"]) != template_hash(written["spec"]["template"])
    plan = plan_deployment(respelt, [current])
    assert plan.create is None and plan.scale == {} and plan.status["updatedReplicas"] == 3
    older = {
        **current,
        "metadata": {**current["metadata"], "name": "web-older", "creationTimestamp": "2024-01-01T00:00:00Z"},
    }
    assert plan_deployment(respelt, [current, older]).scale == {current["metadata"]["name"]: 0}
    changed = deployment(image="app:2")
    assert plan_deployment(changed, [current]).create is not None


def test_a_replicaset_named_by_the_hash_but_edited_since_is_still_the_deployments() -> None:
    """Its name is taken: creating it again would fail for ever (upstream renames with `collisionCount`)."""
    first = plan_deployment(deployment(), [])
    assert first.create is not None
    edited = {
        **first.create,
        "spec": {**first.create["spec"], "template": deployment(image="hand:1")["spec"]["template"]},
    }
    plan = plan_deployment(deployment(), [edited])
    assert plan.create is None and plan.scale == {}
