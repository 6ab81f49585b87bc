"""Graceful pod deletion (`rest.BeforeDelete` with the pod strategy's `CheckGracefulDelete`): a pod on a node stays,
marked with the end of its grace period, until its kubelet deletes it with a grace period of 0."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.local.apiserver.conftest import Http, Kubectl

PODS = "/api/v1/namespaces/default/pods"
MERGE = "application/merge-patch+json"


def pod(name: str, *, node: str | None = "n1", grace: int | None = None, phase: str = "Running") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    if node:
        spec["nodeName"] = node
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec, "status": {"phase": phase}}


def create(http_client: Http, body: dict[str, Any]) -> dict[str, Any]:
    created = http_client.post(PODS, body)
    assert created.status == 201, created.json
    phase = body["status"]["phase"]
    name = body["metadata"]["name"]
    assert http_client.patch(f"{PODS}/{name}/status", {"status": {"phase": phase}}, MERGE).status == 200
    obj: dict[str, Any] = created.json
    return obj


def deadline(obj: dict[str, Any]) -> datetime:
    return datetime.strptime(obj["metadata"]["deletionTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def test_a_running_pod_stays_until_its_kubelet_deletes_it(http_client: Http) -> None:
    uid = create(http_client, pod("web", grace=45))["metadata"]["uid"]
    before = datetime.now(UTC)
    reply = http_client.delete(f"{PODS}/web")
    assert reply.status == 200
    marked = reply.json
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 45
    assert before + timedelta(seconds=44) <= deadline(marked) <= datetime.now(UTC) + timedelta(seconds=46)
    assert (
        http_client.get(f"{PODS}/web").json["metadata"]["deletionTimestamp"] == marked["metadata"]["deletionTimestamp"]
    )
    # the kubelet writes status while the containers stop: the pod is not removed by it (no finalizers, but grace)
    assert http_client.patch(f"{PODS}/web/status", {"status": {"phase": "Running"}}, MERGE).status == 200
    assert http_client.get(f"{PODS}/web").status == 200
    # deleting again with a longer grace period changes nothing; a shorter one moves the deadline earlier
    assert http_client.delete(f"{PODS}/web", {"gracePeriodSeconds": 60}).json["metadata"] == marked["metadata"]
    shorter = http_client.delete(f"{PODS}/web?gracePeriodSeconds=10").json
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 10
    assert deadline(marked) - deadline(shorter) == timedelta(seconds=35)
    wrong = http_client.delete(f"{PODS}/web", {"gracePeriodSeconds": 0, "preconditions": {"uid": "another-pod"}})
    assert wrong.status == 409
    assert http_client.get(f"{PODS}/web").status == 200
    # the kubelet's final delete once the containers stopped
    assert http_client.delete(f"{PODS}/web", {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}).status == 200
    assert http_client.get(f"{PODS}/web").status == 404


def test_pods_with_nothing_to_stop_go_at_once(http_client: Http) -> None:
    """Not bound to a node, or finished: period 0 whatever was asked; the default grace period is 30 s."""
    create(http_client, pod("pending", node=None))
    create(http_client, pod("done", phase="Succeeded"))
    create(http_client, pod("failed", phase="Failed"))
    create(http_client, pod("default-grace"))
    for name in ("pending", "done", "failed"):
        assert http_client.delete(f"{PODS}/{name}", {"gracePeriodSeconds": 30}).status == 200
        assert http_client.get(f"{PODS}/{name}").status == 404, name
    marked = http_client.delete(f"{PODS}/default-grace").json
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 30


def test_grace_period_options(http_client: Http) -> None:
    create(http_client, pod("forced", grace=30))
    assert http_client.delete(f"{PODS}/forced?gracePeriodSeconds=0").status == 200
    assert http_client.get(f"{PODS}/forced").status == 404
    create(http_client, pod("negative", grace=30))
    marked = http_client.delete(f"{PODS}/negative", {"gracePeriodSeconds": -5}).json
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 1  # "treated as the value `1s`"
    create(http_client, pod("dry", grace=30))
    dry = http_client.delete(f"{PODS}/dry?dryRun=All")
    assert dry.json["metadata"]["deletionGracePeriodSeconds"] == 30
    assert "deletionTimestamp" not in http_client.get(f"{PODS}/dry").json["metadata"]
    bad = http_client.delete(f"{PODS}/dry", {"gracePeriodSeconds": "soon"})
    assert bad.status == 400 and "gracePeriodSeconds" in bad.json["message"]
    assert http_client.delete(f"{PODS}/dry?gracePeriodSeconds=soon").status == 400
    assert "deletionTimestamp" not in http_client.get(f"{PODS}/dry").json["metadata"]


def test_finalizers_and_grace_period_both_hold_a_pod(http_client: Http) -> None:
    """Removing the last finalizer does not remove a pod whose grace period runs (`ShouldDeleteDuringUpdate`); the
    kubelet's delete with period 0 then does."""
    body = pod("held", grace=30)
    body["metadata"]["finalizers"] = ["example.com/keep"]
    uid = create(http_client, body)["metadata"]["uid"]
    assert http_client.delete(f"{PODS}/held").json["metadata"]["deletionGracePeriodSeconds"] == 30
    assert http_client.patch(f"{PODS}/held", {"metadata": {"finalizers": None}}, MERGE).status == 200
    assert http_client.get(f"{PODS}/held").status == 200
    assert http_client.delete(f"{PODS}/held", {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}).status == 200
    assert http_client.get(f"{PODS}/held").status == 404
    body = pod("held-after", grace=30)
    body["metadata"]["finalizers"] = ["example.com/keep"]
    create(http_client, body)
    http_client.delete(f"{PODS}/held-after")
    assert http_client.delete(f"{PODS}/held-after", {"gracePeriodSeconds": 0}).status == 200
    kept = http_client.get(f"{PODS}/held-after").json["metadata"]  # now only the finalizer holds it
    assert kept["deletionGracePeriodSeconds"] == 0
    assert http_client.patch(f"{PODS}/held-after", {"metadata": {"finalizers": None}}, MERGE).status == 200
    assert http_client.get(f"{PODS}/held-after").status == 404


def test_kubectl_shows_a_terminating_pod(http_client: Http, kubectl: Kubectl) -> None:
    create(http_client, pod("web", grace=30))
    out = kubectl("delete", "pod", "web", "--wait=false").stdout
    assert 'pod "web" deleted' in out
    assert "Terminating" in kubectl("get", "pod", "web").stdout
    kubectl("delete", "pod", "web", "--grace-period=0", "--force")
    assert http_client.get(f"{PODS}/web").status == 404
