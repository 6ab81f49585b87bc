"""`resource.k8s.io/v1` served like kube-apiserver: discovery, validation (422), defaults, immutability, the claim's
status subresource, field selectors and kubectl's columns."""

from __future__ import annotations

import copy
import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from knuma.kube.events import parse_timestamp
from tests.local.apiserver.conftest import Http, Kubectl

V1 = "/apis/resource.k8s.io/v1"
CLAIMS = f"{V1}/namespaces/default/resourceclaims"
SLICES = f"{V1}/resourceslices"


def device_class(name: str = "gpu.example.com") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]},
    }


def claim(name: str = "gpu", **exactly: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", **exactly}}]}
        },
    }


def resource_slice(name: str = "node-a-gpu", devices: list[str] | None = None, node: str = "node-a") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": d,
                    "attributes": {"resource.kubernetes.io/numaNode": {"int": 0}, "model": {"string": "h100"}},
                    "capacity": {"memory": {"value": "80Gi"}},
                }
                for d in (devices if devices is not None else ["gpu-0", "gpu-1"])
            ],
        },
    }


def causes(reply: Any) -> dict[str, str]:
    assert reply.status == 422, reply.json
    return {c["field"]: c["message"] for c in reply.json["details"]["causes"]}


def test_discovery_serves_the_four_kinds_with_kube_apiserver_scopes(http_client: Http) -> None:
    group = http_client.get("/apis/resource.k8s.io").json
    assert group["preferredVersion"] == {"groupVersion": "resource.k8s.io/v1", "version": "v1"}
    resources = {r["name"]: r for r in http_client.get(V1).json["resources"]}
    assert {n: r["namespaced"] for n, r in resources.items()} == {
        "deviceclasses": False,
        "resourceclaims": True,
        "resourceclaims/status": True,
        "resourceclaimtemplates": True,
        "resourceslices": False,
    }
    assert resources["resourceclaims"]["kind"] == "ResourceClaim"
    assert "shortNames" not in resources["resourceslices"]


def test_valid_objects_are_created_and_claims_get_their_defaults(http_client: Http) -> None:
    assert http_client.post(f"{V1}/deviceclasses", device_class()).status == 201
    assert http_client.post(SLICES, resource_slice()).status == 201
    created = http_client.post(CLAIMS, claim())
    assert created.status == 201, created.json
    exactly = created.json["spec"]["devices"]["requests"][0]["exactly"]
    assert (exactly["allocationMode"], exactly["count"]) == ("ExactCount", 1)
    assert created.json["status"] == {}
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu-template"},
        "spec": {"spec": claim()["spec"]},
    }
    made = http_client.post(f"{V1}/namespaces/default/resourceclaimtemplates", template)
    assert made.status == 201, made.json
    assert made.json["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1


def test_a_slice_with_duplicate_device_names_is_rejected(http_client: Http) -> None:
    reply = http_client.post(SLICES, resource_slice(devices=["gpu-0", "gpu-0"]))
    assert causes(reply) == {"spec.devices[1].name": 'Duplicate value: "gpu-0"'}
    assert reply.json["message"].startswith('ResourceSlice.resource.k8s.io "node-a-gpu" is invalid:')


def test_slice_structure_is_validated_like_kube_apiserver(http_client: Http) -> None:
    bad = resource_slice(devices=["GPU_0"])
    del bad["spec"]["nodeName"]
    bad["spec"]["pool"]["resourceSliceCount"] = 0
    bad["spec"]["devices"][0]["attributes"]["model"] = {"string": "h100", "int": 3}
    found = causes(http_client.post(SLICES, bad))
    assert "a lowercase RFC 1123 label" in found["spec.devices[0].name"]
    assert found["spec"].startswith("Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`")
    assert found["spec.pool.resourceSliceCount"] == "Invalid value: 0: must be greater than zero"
    assert found["spec.devices[0].attributes[model]"].endswith("exactly one value must be specified")
    both = resource_slice()
    both["spec"]["allNodes"] = True
    assert "exactly one of `nodeName`" in causes(http_client.post(SLICES, both))["spec"]


def test_claim_requests_are_validated(http_client: Http) -> None:
    no_class = claim()
    del no_class["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"]
    assert causes(http_client.post(CLAIMS, no_class)) == {
        "spec.devices.requests[0].exactly.deviceClassName": "Required value"
    }
    # `count: 0` is Go's zero value, defaulted to 1 like an absent count; a negative count is invalid.
    assert causes(http_client.post(CLAIMS, claim(count=-1))) == {
        "spec.devices.requests[0].exactly.count": "Invalid value: -1: must be greater than zero"
    }
    assert (
        "Unsupported value"
        in causes(http_client.post(CLAIMS, claim(allocationMode="Some")))[
            "spec.devices.requests[0].exactly.allocationMode"
        ]
    )
    constrained = claim()
    constrained["spec"]["devices"]["constraints"] = [{"requests": ["nic"], "matchAttribute": "pcieRoot"}]
    found = causes(http_client.post(CLAIMS, constrained))
    assert "must be the name of a request" in found["spec.devices.constraints[0].requests[0]"]
    assert found["spec.devices.constraints[0].matchAttribute"] == 'Invalid value: "pcieRoot": must include a domain'
    twice = claim()
    twice["spec"]["devices"]["requests"].append(copy.deepcopy(twice["spec"]["devices"]["requests"][0]))
    assert causes(http_client.post(CLAIMS, twice)) == {"spec.devices.requests[1].name": 'Duplicate value: "gpu"'}
    neither = claim()
    neither["spec"]["devices"]["requests"][0] = {"name": "gpu"}
    assert (
        "exactly one of `exactly` or `firstAvailable`"
        in causes(http_client.post(CLAIMS, neither))["spec.devices.requests[0]"]
    )
    no_cel = device_class()
    no_cel["spec"]["selectors"] = [{"cel": {"expression": ""}}]
    assert causes(http_client.post(f"{V1}/deviceclasses", no_cel)) == {
        "spec.selectors[0].cel.expression": "Required value"
    }


def test_claim_spec_is_immutable_and_status_follows_the_allocation_rules(http_client: Http) -> None:
    created = http_client.post(CLAIMS, claim()).json
    changed = copy.deepcopy(created)
    changed["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    assert causes(http_client.put(f"{CLAIMS}/gpu", changed)) == {"spec": 'Invalid value: "": field is immutable'}
    # A re-sent spec without the defaulted fields is the same spec.
    resent = copy.deepcopy(created)
    del resent["spec"]["devices"]["requests"][0]["exactly"]["count"]
    resent["metadata"]["labels"] = {"team": "a"}
    assert http_client.put(f"{CLAIMS}/gpu", resent).status == 200

    consumer = {"resource": "pods", "name": "p", "uid": "u-1"}
    orphan = {"status": {"reservedFor": [consumer]}}
    merge = "application/merge-patch+json"
    assert causes(http_client.patch(f"{CLAIMS}/gpu/status", orphan, merge)) == {
        "status.reservedFor": "Forbidden: may not be specified when `allocated` is not set"
    }
    result = {"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0"}
    allocation = {"devices": {"results": [result]}}
    ok = http_client.patch(
        f"{CLAIMS}/gpu/status", {"status": {"allocation": allocation, "reservedFor": [consumer]}}, merge
    )
    assert ok.status == 200, ok.json
    moved = {"devices": {"results": [{**result, "device": "gpu-1"}]}}
    assert causes(http_client.patch(f"{CLAIMS}/gpu/status", {"status": {"allocation": moved}}, merge)) == {
        "status.allocation": 'Invalid value: "": field is immutable'
    }
    twice = {"status": {"reservedFor": [consumer, consumer]}}
    assert causes(http_client.patch(f"{CLAIMS}/gpu/status", twice, merge)) == {
        "status.reservedFor[1]": 'Duplicate value: "u-1"'
    }
    # A driver reports on allocated devices only (`validateDeviceStatus`).
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "Ok",
        "message": "",
        "lastTransitionTime": "2026-11-29T12:00:00Z",
    }
    report = {"driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0", "conditions": [ready]}
    assert http_client.patch(f"{CLAIMS}/gpu/status", {"status": {"devices": [report]}}, merge).status == 200
    other = {**report, "device": "gpu-1"}
    assert causes(http_client.patch(f"{CLAIMS}/gpu/status", {"status": {"devices": [other]}}, merge)) == {
        "status.devices[0]": 'Invalid value: "gpu.example.com/node-a/gpu-1": must be an allocated device in the claim'
    }
    assert causes(http_client.patch(f"{CLAIMS}/gpu/status", {"status": {"devices": [report, report]}}, merge)) == {
        "status.devices[1]": 'Duplicate value: "gpu.example.com/node-a/gpu-0"'
    }
    # The main resource ignores status, like every resource with a status subresource.
    spec_only = http_client.get(f"{CLAIMS}/gpu").json
    spec_only["status"] = {}
    assert http_client.put(f"{CLAIMS}/gpu", spec_only).json["status"]["allocation"] == allocation
    # Deallocation: status cleared through the subresource.
    dropped = {"status": {"allocation": None, "reservedFor": None, "devices": None}}
    cleared = http_client.patch(f"{CLAIMS}/gpu/status", dropped, merge)
    assert cleared.status == 200 and "allocation" not in cleared.json["status"]


def test_unknown_request_in_an_allocation_is_rejected(http_client: Http) -> None:
    http_client.post(CLAIMS, claim())
    result = {"request": "nic", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0"}
    reply = http_client.patch(
        f"{CLAIMS}/gpu/status",
        {"status": {"allocation": {"devices": {"results": [result]}}}},
        "application/merge-patch+json",
    )
    assert "must be the name of a request" in causes(reply)["status.allocation.devices.results[0].request"]


def test_slices_are_selected_by_node_and_driver(http_client: Http) -> None:
    http_client.post(SLICES, resource_slice("a", node="node-a"))
    http_client.post(SLICES, resource_slice("b", node="node-b"))
    names = [
        o["metadata"]["name"] for o in http_client.get(f"{SLICES}?fieldSelector=spec.nodeName%3Dnode-b").json["items"]
    ]
    assert names == ["b"]
    by_driver = http_client.get(f"{SLICES}?fieldSelector=spec.driver%3Dother.example.com").json["items"]
    assert by_driver == []


@pytest.mark.slow
def test_kubectl_columns_match_kube_apiserver(kubectl: Kubectl, http_client: Http, tmp_path: Path) -> None:
    http_client.post(SLICES, resource_slice())
    http_client.post(CLAIMS, claim())
    slices = kubectl("get", "resourceslices").stdout.splitlines()
    assert slices[0].split() == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    assert slices[1].split()[:4] == ["node-a-gpu", "node-a", "gpu.example.com", "node-a"]
    claims = kubectl("get", "resourceclaims").stdout.splitlines()
    assert claims[0].split() == ["NAME", "STATE", "AGE"]
    assert claims[1].split()[:2] == ["gpu", "pending"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: dup}\nspec:\n  driver: gpu.example.com\n"
        "  nodeName: node-a\n  pool: {name: node-a, resourceSliceCount: 1}\n  devices: [{name: gpu-0}, {name: gpu-0}]\n"
    )
    rejected = kubectl("apply", "-f", str(bad), check=False)
    assert rejected.returncode == 1
    assert 'spec.devices[1].name: Duplicate value: "gpu-0"' in rejected.stderr


def test_a_selector_that_does_not_compile_is_a_422_naming_the_field(http_client: Http) -> None:
    broken = device_class()
    broken["spec"]["selectors"] = [{"cel": {"expression": "device.bandwidth = '1G'"}}]
    found = causes(http_client.post(f"{V1}/deviceclasses", broken))
    assert list(found) == ["spec.selectors[0].cel.expression"]
    assert found["spec.selectors[0].cel.expression"].startswith("Invalid value: \"device.bandwidth = '1G'\": ")
    assert "compilation failed" in found["spec.selectors[0].cel.expression"]
    in_claim = claim(selectors=[{"cel": {"expression": "device.attributes['x'].model =="}}])
    assert (
        "compilation failed"
        in causes(http_client.post(CLAIMS, in_claim))["spec.devices.requests[0].exactly.selectors[0].cel.expression"]
    )


RULES = "/apis/resource.k8s.io/v1alpha3/devicetaintrules"


def taint_rule(effect: str = "None") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "DeviceTaintRule",
        "metadata": {"name": "gpu-0-down"},
        "spec": {
            "deviceSelector": {"driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0"},
            "taint": {"key": "example.com/down", "effect": effect},
        },
    }


def eviction_condition(**changes: Any) -> dict[str, Any]:
    return {
        "type": "EvictionInProgress",
        "status": "False",
        "reason": "NoEffect",
        "message": "1 published device selected.",
        "observedGeneration": 1,
        "lastTransitionTime": "2026-11-29T12:00:00Z",
        **changes,
    }


def test_a_device_taint_rule_status_is_written_through_its_subresource_only(http_client: Http) -> None:
    resources = {r["name"] for r in http_client.get("/apis/resource.k8s.io/v1alpha3").json["resources"]}
    assert "devicetaintrules/status" in resources
    # `PrepareForCreate`: status is not the user's to set.
    sent = {**taint_rule(), "status": {"conditions": [eviction_condition()]}}
    created = http_client.post(RULES, sent).json
    assert created["status"] == {} and created["metadata"]["generation"] == 1
    created["status"] = {"conditions": [eviction_condition()]}
    written = http_client.put(f"{RULES}/gpu-0-down/status", created)
    assert written.status == 200, written.json
    assert written.json["status"]["conditions"] == [eviction_condition()]
    assert written.json["metadata"]["generation"] == 1  # status is not what generation tracks
    # The main resource keeps the stored status and bumps generation on a spec change.
    changed = copy.deepcopy(written.json)
    changed["spec"]["taint"]["effect"] = "NoExecute"
    changed["status"] = {}
    updated = http_client.put(f"{RULES}/gpu-0-down", changed).json
    assert updated["status"]["conditions"] == [eviction_condition()]
    assert updated["metadata"]["generation"] == 2
    # A status write keeps the stored spec.
    sneaky = copy.deepcopy(updated)
    sneaky["spec"]["taint"]["effect"] = "NoSchedule"
    assert http_client.put(f"{RULES}/gpu-0-down/status", sneaky).json["spec"]["taint"]["effect"] == "NoExecute"


def test_a_device_taints_time_added_is_defaulted_and_follows_an_effect_change(http_client: Http) -> None:
    """`SetDefaults_DeviceTaint` (`timeAdded` now, when the writer gives none) and `deviceTaintRuleStrategy`'s
    `PrepareForUpdate` (a new effect with the old `timeAdded` gets the current time): `tolerationSeconds` count from
    when the effect was added, not from when the rule was created."""
    merge = "application/merge-patch+json"
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    created = http_client.post(RULES, taint_rule()).json
    stamped = parse_timestamp(created["spec"]["taint"]["timeAdded"])
    assert stamped is not None and before <= stamped <= dt.datetime.now(dt.UTC)
    old = "2026-01-01T00:00:00Z"
    kept = http_client.patch(f"{RULES}/gpu-0-down", {"spec": {"taint": {"timeAdded": old}}}, merge).json
    assert kept["spec"]["taint"]["timeAdded"] == old and kept["metadata"]["generation"] == 2
    # the effect changes and the client leaves timeAdded alone: the server stamps it
    switched = http_client.patch(f"{RULES}/gpu-0-down", {"spec": {"taint": {"effect": "NoExecute"}}}, merge).json
    assert switched["spec"]["taint"]["effect"] == "NoExecute"
    bumped = parse_timestamp(switched["spec"]["taint"]["timeAdded"])
    assert bumped is not None and bumped >= before and switched["metadata"]["generation"] == 3
    # ... unless the client sets it along with the effect
    chosen = {"spec": {"taint": {"effect": "NoSchedule", "timeAdded": old}}}
    assert http_client.patch(f"{RULES}/gpu-0-down", chosen, merge).json["spec"]["taint"]["timeAdded"] == old
    # a device's own taints in a ResourceSlice are defaulted too
    body = resource_slice(devices=["gpu-0"])
    body["spec"]["devices"][0]["taints"] = [{"key": "example.com/down", "effect": "NoSchedule"}]
    published = http_client.post(SLICES, body)
    assert published.status == 201, published.json
    assert parse_timestamp(published.json["spec"]["devices"][0]["taints"][0]["timeAdded"]) is not None


def test_device_taint_rule_conditions_are_validated_like_kube_apiserver(http_client: Http) -> None:
    """`ValidateDeviceTaintRuleStatusUpdate`: `metav1validation.ValidateConditions`, at most 8 conditions."""
    rule = http_client.post(RULES, taint_rule()).json

    def put(*conditions: dict[str, Any]) -> Any:
        return http_client.put(f"{RULES}/gpu-0-down/status", {**rule, "status": {"conditions": list(conditions)}})

    bad = eviction_condition(status="Maybe", reason="no effect", observedGeneration=-1)
    del bad["lastTransitionTime"]
    assert causes(put(bad)) == {
        "status.conditions[0].status": 'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"',
        "status.conditions[0].observedGeneration": "Invalid value: -1: must be greater than or equal to zero",
        "status.conditions[0].lastTransitionTime": "Required value: must be set",
        "status.conditions[0].reason": 'Invalid value: "no effect": a condition reason must start with alphabetic '
        "character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an "
        "alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or "
        "'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')",
    }
    assert causes(put(eviction_condition(), eviction_condition(reason=""))) == {
        "status.conditions[1].type": 'Duplicate value: "EvictionInProgress"',
        "status.conditions[1].reason": "Required value: must be set",
    }
    assert "status.conditions[0].message" in causes(put(eviction_condition(message="x" * (32 * 1024 + 1))))
    many = [eviction_condition(type=f"example.com/c{i}") for i in range(9)]
    assert causes(put(*many)) == {"status.conditions": "Too many: 9: must have at most 8 items"}
    assert put(*many[:8]).status == 200


@pytest.mark.slow
def test_kubectl_shows_and_waits_for_a_device_taint_rule_condition(kubectl: Kubectl, http_client: Http) -> None:
    rule = http_client.post(RULES, taint_rule()).json
    http_client.put(f"{RULES}/gpu-0-down/status", {**rule, "status": {"conditions": [eviction_condition()]}})
    assert kubectl("get", "devicetaintrules").stdout.split()[:3] == ["NAME", "AGE", "gpu-0-down"]
    shown = kubectl("get", "devicetaintrule", "gpu-0-down", "-o", "yaml").stdout
    assert "reason: NoEffect" in shown and "message: 1 published device selected." in shown
    path = '{.status.conditions[?(@.type=="EvictionInProgress")].message}'
    assert kubectl("get", "devicetaintrule", "gpu-0-down", "-o", f"jsonpath={path}").stdout == (
        "1 published device selected."
    )
    # The KEP's way of waiting for an eviction to complete.
    waited = kubectl("wait", "--for=condition=EvictionInProgress=false", "devicetaintrule/gpu-0-down", "--timeout=5s")
    assert waited.stdout.strip() == "devicetaintrule.resource.k8s.io/gpu-0-down condition met"
