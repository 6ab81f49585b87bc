"""The `pods/resize` subresource (in-place resize, KEP-1287) through a running `knuma apiserver` with the pinned
kubectl: a pod's container resources change only through it (`ValidatePodUpdate` refuses them on the pod), it changes
nothing else (`dropNonResizeUpdates`), and it refuses what `ValidatePodResize` refuses, in kube-apiserver's words."""

from __future__ import annotations

import json
from typing import Any

from .conftest import Http, Kubectl, pod

PODS = "/api/v1/namespaces/default/pods"


def _sized(name: str, cpu: str, memory: str = "1Gi", **container: Any) -> dict[str, Any]:
    manifest = pod(name)
    amounts = {"cpu": cpu, "memory": memory}
    manifest["spec"]["containers"][0].update(resources={"requests": amounts, "limits": amounts}, **container)
    return manifest


def _resize(cpu: str, memory: str = "1Gi", name: str = "main") -> str:
    amounts = {"cpu": cpu, "memory": memory}
    return json.dumps({"spec": {"containers": [{"name": name, "resources": {"requests": amounts, "limits": amounts}}]}})


def test_kubectl_resizes_through_the_subresource_only(kubectl: Kubectl, http_client: Http) -> None:
    kubectl("apply", "-f", "-", stdin=json.dumps(_sized("web", "2")))
    refused = kubectl("patch", "pod", "web", "--patch", _resize("4"), check=False)
    assert refused.returncode == 1
    assert "pod updates may not change fields other than" in refused.stderr
    assert "spec.containers[0].resources" in refused.stderr and "--subresource resize" in refused.stderr

    patch = json.dumps(
        {
            "metadata": {"labels": {"sneaked": "in"}},
            "spec": {
                "activeDeadlineSeconds": 30,
                "containers": [
                    {"name": "main", "resources": {"requests": {"cpu": "4", "memory": "1Gi"}, "limits": {"cpu": "4"}}}
                ],
            },
        }
    )
    kubectl("patch", "pod", "web", "--subresource", "resize", "--patch", patch)
    stored = http_client.get(f"{PODS}/web").json
    assert stored["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "4", "memory": "1Gi"},
        "limits": {"cpu": "4", "memory": "1Gi"},
    }
    assert "sneaked" not in stored["metadata"]["labels"]  # a resize changes the containers' resources only
    assert "activeDeadlineSeconds" not in stored["spec"]
    assert stored["metadata"]["generation"] == 2
    resized = http_client.get(f"{PODS}/web/resize").json
    assert resized["spec"] == stored["spec"]
    discovery = http_client.get("/api/v1").json
    entry = next(r for r in discovery["resources"] if r["name"] == "pods/resize")
    assert entry["kind"] == "Pod" and sorted(entry["verbs"]) == ["get", "patch", "update"]


def test_kube_apiservers_resize_refusals(kubectl: Kubectl, http_client: Http) -> None:
    kubectl("apply", "-f", "-", stdin=json.dumps(_sized("db", "2", "2Gi")))
    # lowering a Guaranteed pod's requests alone would make it Burstable
    qos = json.dumps({"spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}]}})
    refused = kubectl("patch", "pod", "db", "--subresource", "resize", "--patch", qos, check=False)
    assert refused.returncode == 1
    assert 'The Pod "db" is invalid' in refused.stderr
    assert "Pod QOS Class may not change as a result of resizing" in refused.stderr

    answer = http_client.patch(
        f"{PODS}/db/resize", json.loads(_resize("2", "1Gi")), "application/strategic-merge-patch+json"
    )
    assert answer.status == 422
    assert answer.json["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "field": "spec.containers[0].resources.limits[memory]",
            "message": "Forbidden: memory limits cannot be decreased unless resizePolicy is RestartContainer",
        }
    ]

    storage = json.loads(_resize("2", "2Gi"))
    storage["spec"]["containers"][0]["resources"]["limits"]["ephemeral-storage"] = "1Gi"
    answer = http_client.patch(f"{PODS}/db/resize", storage, "application/strategic-merge-patch+json")
    assert answer.status == 422
    assert [c["message"] for c in answer.json["details"]["causes"]] == [
        "Forbidden: only cpu and memory resources are mutable"
    ]

    level = _sized("level", "1")
    level["spec"]["resources"] = {"limits": {"cpu": "2", "memory": "2Gi"}}
    kubectl("apply", "-f", "-", stdin=json.dumps(level))
    refused = kubectl("patch", "pod", "level", "--subresource", "resize", "--patch", _resize("2"), check=False)
    assert refused.returncode == 1 and "pods with pod-level resources cannot be resized" in refused.stderr

    # nothing refused was stored
    assert http_client.get(f"{PODS}/db").json["spec"]["containers"][0]["resources"]["limits"] == {
        "cpu": "2",
        "memory": "2Gi",
    }


def test_a_memory_limit_goes_down_when_the_container_restarts_for_it(http_client: Http) -> None:
    policy = [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]
    assert http_client.post(PODS, _sized("cache", "1", "2Gi", resizePolicy=policy)).status == 201
    answer = http_client.patch(
        f"{PODS}/cache/resize", json.loads(_resize("1", "1Gi")), "application/strategic-merge-patch+json"
    )
    assert answer.status == 200, answer.json
    assert answer.json["spec"]["containers"][0]["resources"]["limits"]["memory"] == "1Gi"
