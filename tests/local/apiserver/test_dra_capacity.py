"""Consumable capacity (KEP-5075) on a real `knuma apiserver`: a request policy only on a device that allows
multiple allocations (422 with kube-apiserver's message otherwise), a policy checked against its capacity, a
claim's `capacity.requests` and `distinctAttribute` constraint, and an allocation result's `consumedCapacity` and
`shareID` written through `/status` and read back unchanged (not pruned as unknown fields)."""

from __future__ import annotations

import copy
from typing import Any

from tests.local.apiserver.conftest import Http
from tests.local.apiserver.test_dra import CLAIMS, SLICES, V1, causes, device_class

POLICY = {"default": "10G", "validRange": {"min": "10G", "max": "100G", "step": "10G"}}


def nic_slice(*, multiple: bool, policy: dict[str, Any] | None = POLICY) -> dict[str, Any]:
    capacity: dict[str, Any] = {"value": "100G"}
    if policy is not None:
        capacity["requestPolicy"] = policy
    device: dict[str, Any] = {"name": "nic-0", "capacity": {"bandwidth": capacity}}
    if multiple:
        device["allowMultipleAllocations"] = True
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "node-a-nic"},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": "node-a",
            "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1},
            "devices": [device],
        },
    }


def shared_claim(constraints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    def request(name: str, bandwidth: str) -> dict[str, Any]:
        exactly = {"deviceClassName": "gpu.example.com", "capacity": {"requests": {"bandwidth": bandwidth}}}
        return {"name": name, "exactly": exactly}

    devices: dict[str, Any] = {"requests": [request("a", "25G"), request("b", "40G")]}
    if constraints is not None:
        devices["constraints"] = constraints
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "nics", "namespace": "default"},
        "spec": {"devices": devices},
    }


def test_a_request_policy_needs_a_device_that_allows_multiple_allocations(http_client: Http) -> None:
    reply = http_client.post(SLICES, nic_slice(multiple=False))
    assert causes(reply) == {
        "spec.devices[0].capacity[bandwidth].requestPolicy": "Forbidden: allowMultipleAllocations must be true"
    }
    assert reply.json["message"] == (
        'ResourceSlice.resource.k8s.io "node-a-nic" is invalid: '
        "spec.devices[0].capacity[bandwidth].requestPolicy: Forbidden: allowMultipleAllocations must be true"
    )
    assert http_client.post(SLICES, nic_slice(multiple=False, policy=None)).status == 201


def test_a_shared_device_and_its_policy_round_trip(http_client: Http) -> None:
    created = http_client.post(SLICES, nic_slice(multiple=True))
    assert created.status == 201, created.json
    (device,) = http_client.get(f"{SLICES}/node-a-nic").json["spec"]["devices"]
    assert device == {
        "name": "nic-0",
        "allowMultipleAllocations": True,
        "capacity": {"bandwidth": {"value": "100G", "requestPolicy": POLICY}},
    }


def test_a_policy_is_checked_against_its_capacity(http_client: Http) -> None:
    off_step = {"default": "15G", "validRange": {"min": "10G", "max": "120G", "step": "10G"}}
    found = causes(http_client.post(SLICES, nic_slice(multiple=True, policy=off_step)))
    assert found == {
        "spec.devices[0].capacity[bandwidth].requestPolicy.validRange.max": (
            'Invalid value: "120G": max is larger than capacity value: 100G'
        ),
        "spec.devices[0].capacity[bandwidth].requestPolicy.validRange.step": (
            'Invalid value: "15G": value is not a multiple of a given step (10G) from (10G)'
        ),
    }


def test_capacity_requests_consumed_capacity_and_share_ids_round_trip(http_client: Http) -> None:
    assert http_client.post(f"{V1}/deviceclasses", device_class()).status == 201
    assert http_client.post(SLICES, nic_slice(multiple=True)).status == 201
    distinct = [{"requests": ["a", "b"], "distinctAttribute": "gpu.example.com/index"}]
    created = http_client.post(CLAIMS, shared_claim(distinct))
    assert created.status == 201, created.json
    spec = created.json["spec"]["devices"]
    assert spec["requests"][0]["exactly"]["capacity"] == {"requests": {"bandwidth": "25G"}}
    assert spec["constraints"] == distinct
    claim = created.json
    results = [
        {
            "request": name,
            "driver": "gpu.example.com",
            "pool": "node-a",
            "device": "nic-0",
            "consumedCapacity": {"bandwidth": consumed},
            "shareID": share,
        }
        for name, consumed, share in (
            ("a", "30G", "0b4f6a2e-1c3d-4e5f-8a9b-0c1d2e3f4a5b"),
            ("b", "40G", "7d8e9f0a-1b2c-4d3e-9f4a-5b6c7d8e9f0a"),
        )
    ]
    claim["status"] = {"allocation": {"devices": {"results": results}}}
    written = http_client.put(f"{CLAIMS}/nics/status", claim)
    assert written.status == 200, written.json
    assert http_client.get(f"{CLAIMS}/nics").json["status"]["allocation"]["devices"]["results"] == results


def test_a_share_id_must_be_a_lowercase_uuid(http_client: Http) -> None:
    assert http_client.post(f"{V1}/deviceclasses", device_class()).status == 201
    claim = http_client.post(CLAIMS, shared_claim()).json
    result = {"request": "a", "driver": "gpu.example.com", "pool": "node-a", "device": "nic-0"}
    claim["status"] = {"allocation": {"devices": {"results": [{**result, "shareID": "NIC-SHARE-1"}]}}}
    found = causes(http_client.put(f"{CLAIMS}/nics/status", claim))
    assert found["status.allocation.devices.results[0].shareID"].startswith('Invalid value: "NIC-SHARE-1"')


def test_a_constraint_is_either_match_or_distinct(http_client: Http) -> None:
    both = [
        {
            "requests": ["a", "b"],
            "matchAttribute": "gpu.example.com/model",
            "distinctAttribute": "gpu.example.com/index",
        }
    ]
    found = causes(http_client.post(CLAIMS, shared_claim(both)))
    assert "exactly one of `matchAttribute` or `distinctAttribute` is required" in found["spec.devices.constraints[0]"]
    unknown = copy.deepcopy(shared_claim([{"requests": ["a", "c"], "distinctAttribute": "gpu.example.com/index"}]))
    found = causes(http_client.post(CLAIMS, unknown))
    assert "spec.devices.constraints[0].requests[1]" in found
