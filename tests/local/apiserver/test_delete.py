"""Deletion: finalizers and deletionTimestamp, garbage collection through ownerReferences, namespace deletion."""

from __future__ import annotations

from typing import Any

from knuma.testing.polling import eventually
from tests.local.apiserver.conftest import Http, configmap

CM = "/api/v1/namespaces/default/configmaps"
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"


def owned_by(owner: dict[str, Any], name: str) -> dict[str, Any]:
    cm = configmap(name)
    cm["metadata"]["ownerReferences"] = [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "blockOwnerDeletion": True,
        }
    ]
    return cm


def deployment(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
    }


def test_finalizers_hold_deletion_until_removed(http_client: Http) -> None:
    cm = configmap("held")
    cm["metadata"]["finalizers"] = ["example.com/cleanup"]
    http_client.post(CM, cm)
    first = http_client.delete(f"{CM}/held")
    assert first.status == 200  # 202 only for `orphanDependents: false` (handlers/delete.go)
    assert first.json["metadata"]["deletionTimestamp"]
    still = http_client.get(f"{CM}/held").json
    assert still["metadata"]["finalizers"] == ["example.com/cleanup"]
    added = http_client.patch(
        f"{CM}/held", {"metadata": {"finalizers": ["example.com/cleanup", "new"]}}, "application/merge-patch+json"
    )
    assert added.status == 422
    removed = http_client.patch(f"{CM}/held", {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    assert removed.status == 200
    assert http_client.get(f"{CM}/held").status == 404


def test_background_garbage_collection(http_client: Http) -> None:
    owner = http_client.post(DEPLOY, deployment("web")).json
    http_client.post(CM, owned_by(owner, "child-1"))
    http_client.post(CM, owned_by(owner, "child-2"))
    http_client.post(CM, configmap("unrelated"))
    assert http_client.delete(f"{DEPLOY}/web", {"propagationPolicy": "Background"}).status == 200
    eventually(lambda: [i["metadata"]["name"] for i in http_client.get(CM).json["items"]] == ["unrelated"])


def test_dependent_with_another_live_owner_survives(http_client: Http) -> None:
    a = http_client.post(DEPLOY, deployment("a")).json
    b = http_client.post(DEPLOY, deployment("b")).json
    shared = owned_by(a, "shared")
    shared["metadata"]["ownerReferences"] += owned_by(b, "x")["metadata"]["ownerReferences"]
    http_client.post(CM, shared)
    http_client.delete(f"{DEPLOY}/a")
    eventually(lambda: len(http_client.get(f"{CM}/shared").json["metadata"]["ownerReferences"]) == 1)
    assert http_client.get(f"{CM}/shared").json["metadata"]["ownerReferences"][0]["name"] == "b"


def test_foreground_deletion_waits_for_dependents(http_client: Http) -> None:
    owner = http_client.post(DEPLOY, deployment("web")).json
    child = owned_by(owner, "child")
    child["metadata"]["finalizers"] = ["example.com/slow"]
    http_client.post(CM, child)
    reply = http_client.delete(f"{DEPLOY}/web", {"propagationPolicy": "Foreground"})
    assert reply.status == 200
    assert "foregroundDeletion" in reply.json["metadata"]["finalizers"]
    eventually(lambda: bool(http_client.get(f"{CM}/child").json["metadata"].get("deletionTimestamp")))
    assert http_client.get(f"{DEPLOY}/web").status == 200
    http_client.patch(f"{CM}/child", {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    eventually(lambda: http_client.get(f"{DEPLOY}/web").status == 404)


def test_orphan_propagation_keeps_dependents(http_client: Http) -> None:
    owner = http_client.post(DEPLOY, deployment("web")).json
    http_client.post(CM, owned_by(owner, "child"))
    http_client.delete(f"{DEPLOY}/web", {"propagationPolicy": "Orphan"})
    assert http_client.get(f"{DEPLOY}/web").status == 404
    child = http_client.get(f"{CM}/child").json
    assert "ownerReferences" not in child["metadata"]


def test_namespace_deletion_deletes_contents(http_client: Http) -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    created = http_client.post("/api/v1/namespaces", ns).json
    assert created["status"]["phase"] == "Active"
    path = "/api/v1/namespaces/team/configmaps"
    http_client.post(path, configmap("a", namespace="team"))
    held = configmap("held", namespace="team")
    held["metadata"]["finalizers"] = ["example.com/x"]
    http_client.post(path, held)
    reply = http_client.delete("/api/v1/namespaces/team")
    assert reply.status == 200
    assert reply.json["status"]["phase"] == "Terminating"
    refused = http_client.post(path, configmap("late", namespace="team"))
    assert (refused.status, refused.json["reason"]) == (403, "Forbidden")
    assert "being terminated" in refused.json["message"]
    eventually(lambda: [i["metadata"]["name"] for i in http_client.get(path).json["items"]] == ["held"])
    assert http_client.get("/api/v1/namespaces/team").status == 200
    http_client.patch(f"{path}/held", {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    eventually(lambda: http_client.get("/api/v1/namespaces/team").status == 404)


def test_delete_collection_with_label_selector(http_client: Http) -> None:
    http_client.post(CM, configmap("a", labels={"x": "1"}))
    http_client.post(CM, configmap("b", labels={"x": "1"}))
    http_client.post(CM, configmap("c"))
    reply = http_client.delete(f"{CM}?labelSelector=x%3D1")
    assert reply.status == 200
    assert [i["metadata"]["name"] for i in http_client.get(CM).json["items"]] == ["c"]


def test_a_dependent_written_after_its_owner_is_gone_is_collected(http_client: Http) -> None:
    """A controller acting on a stale copy creates an object owned by a pod deleted a moment before (the
    resourceclaim controller and a preempted pod): as kube's garbage collector, the server deletes it; a dependent
    with another live owner only loses the dangling reference."""
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gone"}}
    pod["spec"] = {"containers": [{"name": "c", "image": "x"}]}
    owner = http_client.post("/api/v1/namespaces/default/pods", pod).json
    assert http_client.delete("/api/v1/namespaces/default/pods/gone").status == 200
    assert http_client.post(CM, owned_by(owner, "orphan")).status == 201
    eventually(lambda: http_client.get(f"{CM}/orphan").status == 404, timeout=10)
    live = http_client.post(DEPLOY, deployment("live")).json
    both = owned_by(owner, "shared")
    both["metadata"]["ownerReferences"].append(owned_by(live, "x")["metadata"]["ownerReferences"][0])
    assert http_client.post(CM, both).status == 201

    def only_live_owner() -> bool:
        refs = http_client.get(f"{CM}/shared").json["metadata"].get("ownerReferences") or []
        return [r["uid"] for r in refs] == [live["metadata"]["uid"]]

    eventually(only_live_owner, timeout=10)


def test_a_cascading_delete_that_waits_answers_202(http_client: Http) -> None:
    """kube-apiserver's one 202: the object stays and the client asked for cascading with `orphanDependents: false`."""
    cm = configmap("held")
    cm["metadata"]["finalizers"] = ["example.com/cleanup"]
    http_client.post(CM, cm)
    assert http_client.delete(f"{CM}/held?orphanDependents=false").status == 202
