"""Pod-level resources (`spec.resources`, KEP-2837, beta and on by default in 1.34) through a running `knuma apiserver`
with the pinned kubectl: refused with kube-apiserver's 422 fields and messages (`validatePodResources`), validated
after the Pod's defaulting but, in a workload's template, as written; immutable on update (`ValidatePodUpdate`)."""

from __future__ import annotations

import json
from typing import Any

from .conftest import Http, Kubectl, pod

PODS = "/api/v1/namespaces/default/pods"


def with_resources(name: str, pod_resources: dict[str, Any], container_resources: dict[str, Any]) -> dict[str, Any]:
    manifest = pod(name)
    manifest["spec"]["resources"] = pod_resources
    manifest["spec"]["containers"][0]["resources"] = container_resources
    return manifest


def test_kubectl_sees_kube_apiservers_pod_level_answers(kubectl: Kubectl, http_client: Http) -> None:
    # a container limit above the pod-level limit; its defaulted request then exceeds the pod-level limit too
    over = with_resources("over", {"limits": {"cpu": "2"}}, {"limits": {"cpu": "3"}})
    refused = kubectl("apply", "-f", "-", stdin=json.dumps(over), check=False)
    assert refused.returncode == 1
    assert 'The Pod "over" is invalid' in refused.stderr
    assert 'spec.resources.requests: Invalid value: "3": must be less than or equal to cpu limit of 2' in refused.stderr
    assert (
        'spec.resources.containers[0][cpu].limits: Invalid value: "3": must be less than or equal to pod limits of 2'
        in refused.stderr
    )

    # containers asking more than the pod-level request
    greedy = with_resources("greedy", {"requests": {"cpu": "1"}}, {"requests": {"cpu": "1500m"}})
    refused = kubectl("apply", "-f", "-", stdin=json.dumps(greedy), check=False)
    assert refused.returncode == 1
    assert (
        'spec.resources.requests[cpu]: Invalid value: "1": must be greater than or equal to aggregate container '
        "requests of 1500m" in refused.stderr
    )

    # only cpu, memory and hugepages at pod level; the 422 names the field as kube-apiserver does
    storage = with_resources("storage", {"limits": {"cpu": "1", "ephemeral-storage": "1Gi"}}, {})
    answer = http_client.post(PODS, storage)
    assert answer.status == 422
    assert answer.json["details"]["causes"] == [
        {
            "reason": "FieldValueNotSupported",
            "field": "spec.resources.limits[ephemeral-storage]",
            "message": 'Unsupported value: "ephemeral-storage": supported values: "cpu", "hugepages-", "memory"',
        }
    ]
    assert kubectl("get", "pods", "-o", "name").stdout == ""  # nothing refused was stored


def test_a_pod_is_validated_after_its_defaulting_and_a_template_as_written(kubectl: Kubectl, http_client: Http) -> None:
    """With pod-level limits only, `defaultPodRequests` gives the Pod the containers' request, so it is valid; a
    Deployment's template gets no Pod defaulting (`SetDefaults_Pod` is the Pod's), so the same spec there has no
    pod-level request and is refused, as kube-apiserver refuses it."""
    limited = with_resources("limited", {"limits": {"cpu": "2"}}, {"requests": {"cpu": "1"}})
    kubectl("apply", "-f", "-", stdin=json.dumps(limited))
    stored = json.loads(kubectl("get", "pod", "limited", "-o", "json").stdout)
    assert stored["spec"]["resources"] == {"limits": {"cpu": "2"}, "requests": {"cpu": "1"}}

    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "limited", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "limited"}},
            "template": {"metadata": {"labels": {"app": "limited"}}, "spec": limited["spec"]},
        },
    }
    refused = kubectl("apply", "-f", "-", stdin=json.dumps(deployment), check=False)
    assert refused.returncode == 1
    assert 'The Deployment "limited" is invalid' in refused.stderr
    assert (
        'spec.template.spec.resources.requests[cpu]: Invalid value: "0": must be greater than or equal to aggregate '
        "container requests of 1" in refused.stderr
    )
    deployment["spec"]["template"]["spec"]["resources"]["requests"] = {"cpu": "1"}
    assert http_client.post("/apis/apps/v1/namespaces/default/deployments", deployment).status == 201


def test_pod_level_resources_are_immutable(kubectl: Kubectl) -> None:
    fixed = with_resources("fixed", {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}, {"requests": {"cpu": "1"}})
    kubectl("apply", "-f", "-", stdin=json.dumps(fixed))
    patch = json.dumps({"spec": {"resources": {"limits": {"cpu": "4"}}}})
    refused = kubectl("patch", "pod", "fixed", "--type=merge", "-p", patch, check=False)
    assert refused.returncode == 1
    assert 'The Pod "fixed" is invalid: spec: Forbidden: pod updates may not change fields other than' in (
        refused.stderr
    )
    # the same amounts written differently are no change; labels stay mutable
    same = json.dumps({"spec": {"resources": {"limits": {"cpu": "2000m"}}}, "metadata": {"labels": {"tier": "a"}}})
    kubectl("patch", "pod", "fixed", "--type=merge", "-p", same)
    stored = json.loads(kubectl("get", "pod", "fixed", "-o", "json").stdout)
    assert stored["spec"]["resources"] == {"limits": {"cpu": "2000m"}, "requests": {"cpu": "1"}}
    assert stored["metadata"]["labels"]["tier"] == "a"
    # re-applying the manifest, as written, is no change either
    kubectl("apply", "-f", "-", stdin=json.dumps(fixed))
    stored = json.loads(kubectl("get", "pod", "fixed", "-o", "json").stdout)
    assert stored["spec"]["resources"] == {"limits": {"cpu": "2"}, "requests": {"cpu": "1"}}


def test_an_update_body_is_defaulted_before_it_is_compared(http_client: Http) -> None:
    """kube-apiserver defaults every decoded Pod body, so a PUT of the manifest as first written (without the
    pod-level requests its create defaulted) changes nothing and is accepted; one that changes a limit is not."""
    limited = with_resources("limited", {"limits": {"cpu": "2", "memory": "1Gi"}}, {"limits": {"cpu": "1"}})
    created = http_client.post(PODS, limited)
    assert created.status == 201
    assert created.json["spec"]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    again = {
        **limited,
        "metadata": {**limited["metadata"], "resourceVersion": created.json["metadata"]["resourceVersion"]},
    }
    assert http_client.put(f"{PODS}/limited", again).status == 200
    limited["spec"]["resources"] = {"limits": {"cpu": "2", "memory": "2Gi"}}
    refused = http_client.put(f"{PODS}/limited", limited)
    assert refused.status == 422
    assert [(c["reason"], c["field"]) for c in refused.json["details"]["causes"]] == [("FieldValueForbidden", "spec")]


def test_a_pod_update_may_change_images_but_not_its_node_or_scheduler(kubectl: Kubectl, http_client: Http) -> None:
    """`ValidatePodUpdate` through kubectl: an edited manifest that moves the pod to another node or scheduler is
    refused naming what changed; one that changes the image is applied; a PUT of the manifest as first written
    (without the defaults its create filled in: `schedulerName`, `dnsPolicy`, ...) is no change."""
    placed = pod("placed", nodeName="node-a")
    kubectl("apply", "-f", "-", stdin=json.dumps(placed))
    for field, value, shown in (
        ("nodeName", "node-b", 'spec.nodeName: "node-a" -> "node-b"'),
        ("schedulerName", "topology-aware-scheduler", 'spec.schedulerName: "default-scheduler" -> "topology'),
    ):
        moved = json.loads(json.dumps(placed))
        moved["spec"][field] = value
        refused = kubectl("apply", "-f", "-", stdin=json.dumps(moved), check=False)
        assert refused.returncode == 1, field
        assert 'The Pod "placed" is invalid: spec: Forbidden: pod updates may not change fields other than' in (
            refused.stderr
        )
        assert shown in refused.stderr
    newer = json.loads(json.dumps(placed))
    newer["spec"]["containers"][0]["image"] = "busybox:1.37"
    kubectl("apply", "-f", "-", stdin=json.dumps(newer))
    stored = json.loads(kubectl("get", "pod", "placed", "-o", "json").stdout)
    assert (stored["spec"]["nodeName"], stored["spec"]["containers"][0]["image"]) == ("node-a", "busybox:1.37")
    as_written = {**newer, "metadata": {**newer["metadata"], "resourceVersion": stored["metadata"]["resourceVersion"]}}
    assert http_client.put(f"{PODS}/placed", as_written).status == 200
