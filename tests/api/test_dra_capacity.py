"""Consumable capacity on the wire: request policies on shared devices, capacity requests, consumed capacity and
share IDs in allocation results, validated as kube-apiserver validates them."""

from __future__ import annotations

from typing import Any

import pytest

from knuma.api.dra.fields import ValidationError
from knuma.api.dra.resourceclaim import ResourceClaim
from knuma.api.dra.resourceslice import ResourceSlice
from knuma.quantity import parse_quantity


def shared_nic(policy: dict[str, Any] | None, *, multiple: bool = True, value: str = "100G") -> dict[str, Any]:
    capacity: dict[str, Any] = {"value": value}
    if policy is not None:
        capacity["requestPolicy"] = policy
    device: dict[str, Any] = {"name": "nic-0", "capacity": {"bandwidth": capacity}}
    if multiple:
        device["allowMultipleAllocations"] = True
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s1"},
        "spec": {
            "driver": "nic.example.com",
            "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
            "nodeName": "node-1",
            "devices": [device],
        },
    }


def problems(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as exc:
        ResourceSlice.from_dict(doc)
    return [str(e) for e in exc.value.errors]


def test_a_valid_range_policy_parses_and_round_trips() -> None:
    policy = {"default": "10G", "validRange": {"min": "10G", "max": "50G", "step": "10G"}}
    device = ResourceSlice.from_dict(shared_nic(policy)).devices[0]
    parsed = device.request_policies["bandwidth"]
    assert parsed.default == parse_quantity("10G") and parsed.valid_range is not None
    assert parsed.valid_range.step == parse_quantity("10G")
    assert device.to_dict()["capacity"]["bandwidth"] == {"value": "100G", "requestPolicy": policy}


def test_a_policy_needs_allow_multiple_allocations() -> None:
    found = problems(shared_nic({"default": "10G"}, multiple=False))
    assert found == [
        "spec.devices[0].capacity[bandwidth].requestPolicy: Forbidden: allowMultipleAllocations must be true"
    ]


def test_valid_values_and_valid_range_are_exclusive() -> None:
    found = problems(shared_nic({"default": "1G", "validValues": ["1G"], "validRange": {"min": "1G"}}))
    assert any("exactly one policy can be specified" in p for p in found)


def test_valid_values_need_a_default_among_them_sorted_and_within_the_capacity() -> None:
    assert any("default: Required value" in p for p in problems(shared_nic({"validValues": ["1G"]})))
    found = problems(shared_nic({"default": "3G", "validValues": ["5G", "1G", "200G"]}))
    where = "spec.devices[0].capacity[bandwidth].requestPolicy.validValues"
    assert f'{where}[1]: Invalid value: "1G": values must be sorted in ascending order' in found
    assert f'{where}[2]: Invalid value: "200G": option is larger than capacity value: 100G' in found
    assert f'{where}: Invalid value: "3G": default value is not valid according to the requestPolicy' in found


def test_a_range_is_checked_against_the_capacity_and_its_step() -> None:
    found = problems(shared_nic({"default": "15G", "validRange": {"min": "10G", "max": "200G", "step": "10G"}}))
    where = "spec.devices[0].capacity[bandwidth].requestPolicy.validRange"
    assert f'{where}.max: Invalid value: "200G": max is larger than capacity value: 100G' in found
    assert f'{where}.step: Invalid value: "15G": value is not a multiple of a given step (10G) from (10G)' in found
    found = problems(shared_nic({"default": "5G", "validRange": {"min": "10G"}}))
    assert f'{where}.min: Invalid value: "5G": default is less than min: 10G' in found
    assert any("validRange.min: Required value" in p for p in problems(shared_nic({"default": "5G", "validRange": {}})))


def claim_doc(request: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "nic", **request}}]}},
    }
    if status is not None:
        doc["status"] = status
    return doc


def test_capacity_requests_parse_and_reject_negative_amounts() -> None:
    claim = ResourceClaim.from_dict(claim_doc({"capacity": {"requests": {"bandwidth": "10G"}}}))
    exact = claim.spec.requests[0].exactly
    assert exact is not None and exact.capacity == {"bandwidth": parse_quantity("10G")}
    assert exact.to_dict()["capacity"] == {"requests": {"bandwidth": "10G"}}
    with pytest.raises(ValidationError, match=r"capacity.requests\[bandwidth\]: Invalid value"):
        ResourceClaim.from_dict(claim_doc({"capacity": {"requests": {"bandwidth": "-1"}}}))


def test_allocation_results_carry_consumed_capacity_and_a_uuid_share_id() -> None:
    result = {
        "request": "nic",
        "driver": "nic.example.com",
        "pool": "node-1",
        "device": "nic-0",
        "consumedCapacity": {"bandwidth": "10G"},
        "shareID": "0b7c5a52-4c1e-4d8e-9a43-5f0f4e1d2c3b",
    }
    claim = ResourceClaim.from_dict(claim_doc({}, {"allocation": {"devices": {"results": [result]}}}))
    assert claim.allocation is not None
    parsed = claim.allocation.results[0]
    assert parsed.consumed_capacity == {"bandwidth": parse_quantity("10G")} and parsed.share_id == result["shareID"]
    assert parsed.to_dict() == result
    bad = {**result, "shareID": "not-a-uuid"}
    with pytest.raises(ValidationError, match="shareID: Invalid value"):
        ResourceClaim.from_dict(claim_doc({}, {"allocation": {"devices": {"results": [bad]}}}))
