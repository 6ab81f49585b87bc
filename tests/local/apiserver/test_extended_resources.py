"""DRA-backed extended resources (KEP-5004) on `knuma apiserver`: a DeviceClass's `spec.extendedResourceName` is
validated as kube-apiserver does, and a pod's `status.extendedResourceClaimStatus` (what kube-scheduler writes in
PreBind) is stored by merge and strategic merge patches of the status and refused when it does not fit the spec."""

from __future__ import annotations

import json
from typing import Any

from tests.local.apiserver.conftest import Http

CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"
PODS = "/api/v1/namespaces/default/pods"
MERGE = "application/merge-patch+json"
SMP = "application/strategic-merge-patch+json"
GPU = "deviceclass.resource.kubernetes.io/gpu.example.com"


def device_class(name: str, extended: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}
    if extended is not None:
        spec["extendedResourceName"] = extended
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def causes(reply: Any) -> dict[str, str]:
    assert reply.status == 422, reply.json
    return {c["field"]: c["message"] for c in reply.json["details"]["causes"]}


def test_a_device_class_names_a_valid_extended_resource(http_client: Http) -> None:
    made = http_client.post(CLASSES, device_class("gpu", "example.com/gpu"))
    assert made.status == 201, made.json
    assert made.json["spec"]["extendedResourceName"] == "example.com/gpu"
    for bad in ("gpu", "kubernetes.io/gpu", "deviceclass.resource.kubernetes.io/gpu", "example.com/g pu", ""):
        found = causes(http_client.post(CLASSES, device_class("bad", bad)))
        assert found == {
            "spec.extendedResourceName": f"Invalid value: {json.dumps(bad)}: must be a valid extended resource name"
        }
    updated = made.json
    updated["spec"]["extendedResourceName"] = "requests.example.com/gpu"
    assert "spec.extendedResourceName" in causes(http_client.put(f"{CLASSES}/gpu", updated))


def pod(name: str) -> dict[str, Any]:
    limits = {"cpu": "1", "memory": "1Gi", GPU: "1"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "busybox", "resources": {"limits": limits}}]},
    }


def claim_status(claim: str = "p-extended-resources-abcde", **mapping: str) -> dict[str, Any]:
    request = {"containerName": "app", "resourceName": GPU, "requestName": "container-0-request-0", **mapping}
    return {"status": {"extendedResourceClaimStatus": {"resourceClaimName": claim, "requestMappings": [request]}}}


def test_the_schedulers_status_patch_is_stored(http_client: Http) -> None:
    assert http_client.post(PODS, pod("p")).status == 201
    patched = http_client.patch(f"{PODS}/p/status", claim_status(), SMP)
    assert patched.status == 200, patched.json
    assert (
        patched.json["status"]["extendedResourceClaimStatus"] == claim_status()["status"]["extendedResourceClaimStatus"]
    )
    # requestMappings is an atomic list: a strategic merge patch replaces it whole
    again = claim_status(requestName="container-0-request-1")
    replaced = http_client.patch(f"{PODS}/p/status", again, SMP)
    assert replaced.json["status"]["extendedResourceClaimStatus"]["requestMappings"] == [
        {"containerName": "app", "resourceName": GPU, "requestName": "container-0-request-1"}
    ]
    assert http_client.post(PODS, pod("q")).status == 201
    merged = http_client.patch(f"{PODS}/q/status", claim_status("q-extended-resources-fghij"), MERGE)
    assert merged.status == 200, merged.json
    stored = http_client.get(f"{PODS}/q").json["status"]["extendedResourceClaimStatus"]
    assert stored["resourceClaimName"] == "q-extended-resources-fghij"
    # a write of the pod itself keeps the status the scheduler wrote
    current = http_client.get(f"{PODS}/q").json
    current["metadata"]["labels"] = {"seen": "yes"}
    current["status"] = {}
    assert http_client.put(f"{PODS}/q", current).json["status"]["extendedResourceClaimStatus"] == stored


def test_a_status_that_does_not_fit_the_spec_is_refused(http_client: Http) -> None:
    assert http_client.post(PODS, pod("r")).status == 201
    prefix = "status.extendedResourceClaimStatus"
    found = causes(http_client.patch(f"{PODS}/r/status", claim_status(containerName="sidecar"), MERGE))
    assert found == {
        f"{prefix}.requestMappings[0].containerName": 'Invalid value: "sidecar": must match the name of an entry in '
        "spec.initContainers.name or spec.containers.name"
    }
    found = causes(http_client.patch(f"{PODS}/r/status", claim_status(resourceName="example.com/nic"), MERGE))
    assert found == {
        f"{prefix}.requestMappings[0].resourceName": 'Invalid value: "example.com/nic": must match the extended '
        "resource name of an entry in spec.initContainers.resources.requests or spec.containers.resources.requests"
    }
    found = causes(http_client.patch(f"{PODS}/r/status", claim_status("Bad_Name", requestName="Request"), MERGE))
    assert found[f"{prefix}.requestName"].startswith('Invalid value: "Request": a lowercase RFC 1123 label')
    assert found[f"{prefix}.resourceClaimName"].startswith('Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain')
    empty = {"status": {"extendedResourceClaimStatus": {"resourceClaimName": "", "requestMappings": []}}}
    assert causes(http_client.patch(f"{PODS}/r/status", empty, MERGE)) == {
        f"{prefix}.requestMappings": "Required value: at least one request mapping is required",
        f"{prefix}.resourceClaimName": "Required value",
    }
    twice = claim_status()
    mappings = twice["status"]["extendedResourceClaimStatus"]["requestMappings"]
    mappings.append(dict(mappings[0]))
    assert causes(http_client.patch(f"{PODS}/r/status", twice, MERGE)) == {
        f"{prefix}.requestMappings[1].containerName": 'Duplicate value: "app"',
        f"{prefix}.requestMappings[1].resourceName": f'Duplicate value: "{GPU}"',
        f"{prefix}.requestMappings[1].requestName": 'Duplicate value: "container-0-request-0"',
    }
    assert "extendedResourceClaimStatus" not in http_client.get(f"{PODS}/r").json["status"]
