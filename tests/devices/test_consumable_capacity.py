"""Consumable capacity (KEP-5075) in the allocator: shares of a device that allows multiple allocations, rounded by
its request policy, within what earlier claims left of it; distinctAttribute constraints; and the same verdict as
the port of upstream's depth-first search on random inputs."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knuma.api.dra.resourceclaim import ResourceClaim
from knuma.api.dra.resourceslice import ResourceSlice
from knuma.devices.allocator import (
    Inventory,
    NodeView,
    allocate,
    allocation_devices,
    consumed_capacity,
    with_new_share_ids,
)
from knuma.devices.capacity import consumption
from knuma.devices.demand import DeviceAllocationError
from knuma.devices.reference import reference_allocate
from knuma.quantity import parse_quantity
from tests.devices.builders import DRIVER_A, LABELS, NODE1, claim, device_class, req, slice_

CLASSES = {"nic": device_class("nic", DRIVER_A)}
VIEW = NodeView(NODE1, LABELS[NODE1])
G = 10**9 * 10**9  # one G in nano units


def nic(name: str, policy: dict[str, Any] | None = None, *, value: str = "100G", index: int = 0) -> dict[str, Any]:
    bandwidth: dict[str, Any] = {"value": value}
    if policy is not None:
        bandwidth["requestPolicy"] = policy
    return {
        "name": name,
        "allowMultipleAllocations": True,
        "attributes": {"index": {"int": index}},
        "capacity": {"bandwidth": bandwidth},
    }


STEP_10G = {"default": "10G", "validRange": {"min": "10G", "max": "100G", "step": "10G"}}


def asks(name: str, bandwidth: str | None, count: int = 1) -> ResourceClaim:
    body = req("nic", "nic", count)
    if bandwidth is not None:
        body["exactly"]["capacity"] = {"requests": {"bandwidth": bandwidth}}
    return claim(name, body)


def request(name: str, bandwidth: str, count: int = 1) -> dict[str, Any]:
    body = req(name, "nic", count)
    body["exactly"]["capacity"] = {"requests": {"bandwidth": bandwidth}}
    return body


def device_of(policy: dict[str, Any] | None, value: str = "100G") -> Any:
    return slice_("s", NODE1, "pool", DRIVER_A, nic("nic-0", policy, value=value)).devices[0]


def test_consumption_rounds_up_to_the_policy() -> None:
    device = device_of(STEP_10G)
    assert consumption({"bandwidth": parse_quantity("25G")}, DRIVER_A, device) == (("bandwidth", 30 * G),)
    assert consumption({"bandwidth": parse_quantity("1G")}, DRIVER_A, device) == (("bandwidth", 10 * G),)  # min
    assert consumption({}, DRIVER_A, device) == (("bandwidth", 10 * G),)  # the default
    assert consumption({"bandwidth": parse_quantity("101G")}, DRIVER_A, device) is None  # above max
    assert consumption({f"{DRIVER_A}/bandwidth": parse_quantity("20G")}, DRIVER_A, device) == (("bandwidth", 20 * G),)
    assert consumption({"other.example.com/bandwidth": parse_quantity("1")}, DRIVER_A, device) is None
    assert consumption({"memory": parse_quantity("1")}, DRIVER_A, device) is None  # not published
    values = device_of({"default": "5G", "validValues": ["5G", "25G", "50G"]})
    assert consumption({"bandwidth": parse_quantity("26G")}, DRIVER_A, values) == (("bandwidth", 50 * G),)
    assert consumption({"bandwidth": parse_quantity("60G")}, DRIVER_A, values) is None
    bare = device_of(None)
    assert consumption({}, DRIVER_A, bare) == (("bandwidth", 100 * G),)  # no policy, no request: all of it
    assert consumption({"bandwidth": parse_quantity("7G")}, DRIVER_A, bare) == (("bandwidth", 7 * G),)


def inventory(*devices: dict[str, Any], claims: tuple[ResourceClaim, ...] = ()) -> Inventory:
    slices = [slice_("s", NODE1, "pool", DRIVER_A, *devices)]
    return Inventory(slices, CLASSES, frozenset(), consumed=consumed_capacity(claims))


def test_claims_share_one_device_each_with_its_rounded_consumption_and_own_share_id() -> None:
    outcome = allocate(VIEW, [asks("a", "25G"), asks("b", "40G"), asks("c", "30G")], inventory(nic("nic-0", STEP_10G)))
    assert outcome.allocatable, outcome.reason
    results = [c.allocation.results[0] for c in outcome.results]
    assert {r.device for r in results} == {"nic-0"}
    assert [r.consumed_capacity["bandwidth"].value() for r in results] == [30 * 10**9, 40 * 10**9, 30 * 10**9]
    assert len({r.share_id for r in results}) == 3 and all(uuid.UUID(r.share_id).version == 4 for r in results)
    assert all(not allocation_devices(c.allocation) for c in outcome.results)  # nothing held whole


def test_a_share_that_does_not_fit_what_is_left_fails_and_says_why() -> None:
    together = allocate(VIEW, [asks("a", "60G"), asks("b", "50G")], inventory(nic("nic-0", STEP_10G)))
    assert not together.allocatable
    assert "need more than is left of the capacity of their shared devices" in together.reason
    first = allocate(VIEW, [asks("a", "60G")], inventory(nic("nic-0", STEP_10G)))
    assert first.allocatable
    written = ResourceClaim.from_dict(
        {
            "metadata": {"name": "a", "namespace": "default"},
            "spec": {"devices": {"requests": [request("nic", "60G")]}},
            "status": {"allocation": first.results[0].allocation.to_dict()},
        }
    )
    later = allocate(VIEW, [asks("b", "50G")], inventory(nic("nic-0", STEP_10G), claims=(written,)))
    assert not later.allocatable and later.stage == "device capacity"
    assert dict(later.stages["default/b/nic"])["device capacity"] == 0
    assert allocate(VIEW, [asks("b", "40G")], inventory(nic("nic-0", STEP_10G), claims=(written,))).allocatable


def test_the_second_share_goes_to_another_device_when_the_first_is_full() -> None:
    devices = (nic("nic-0", STEP_10G, index=0), nic("nic-1", STEP_10G, index=1))
    outcome = allocate(VIEW, [asks("a", "70G"), asks("b", "70G")], inventory(*devices))
    assert outcome.allocatable, outcome.reason
    assert sorted(c.allocation.results[0].device for c in outcome.results) == ["nic-0", "nic-1"]


def test_one_request_takes_a_shared_device_once() -> None:
    assert not allocate(VIEW, [asks("a", "10G", count=2)], inventory(nic("nic-0", STEP_10G))).allocatable
    two = inventory(nic("nic-0", STEP_10G, index=0), nic("nic-1", STEP_10G, index=1))
    outcome = allocate(VIEW, [asks("a", "10G", count=2)], two)
    assert outcome.allocatable and len({r.device for r in outcome.results[0].allocation.results}) == 2


def test_distinct_attribute_keeps_two_requests_on_different_devices() -> None:
    spread = [{"distinctAttribute": f"{DRIVER_A}/index"}]
    pair = claim("a", request("x", "10G"), request("y", "10G"), constraints=spread)
    assert not allocate(VIEW, [pair], inventory(nic("nic-0", STEP_10G))).allocatable
    outcome = allocate(VIEW, [pair], inventory(nic("nic-0", STEP_10G, index=0), nic("nic-1", STEP_10G, index=1)))
    assert outcome.allocatable, outcome.reason
    assert sorted(r.device for r in outcome.results[0].allocation.results) == ["nic-0", "nic-1"]
    same = allocate(VIEW, [claim("b", request("x", "10G"), request("y", "10G"))], inventory(nic("nic-0", STEP_10G)))
    assert same.allocatable  # without the constraint both requests share the one NIC


def test_a_capacity_request_on_a_device_given_whole_is_a_lower_bound() -> None:
    whole = {"name": "gpu-0", "capacity": {"bandwidth": {"value": "40G"}}}
    small = allocate(VIEW, [asks("a", "20G")], inventory(whole))
    assert small.allocatable
    result = small.results[0].allocation.results[0]
    assert not result.share_id and not result.consumed_capacity and allocation_devices(small.results[0].allocation)
    big = allocate(VIEW, [asks("a", "80G")], inventory(whole))
    assert not big.allocatable and big.stage == "device capacity"


def test_a_capacity_named_twice_cannot_be_allocated_anywhere() -> None:
    body = req("nic", "nic")
    body["exactly"]["capacity"] = {"requests": {"bandwidth": "1G", f"{DRIVER_A}/bandwidth": "2G"}}
    with pytest.raises(DeviceAllocationError, match="requested both"):
        allocate(VIEW, [claim("a", body)], inventory(nic("nic-0", STEP_10G)))


@st.composite
def shared_scenarios(draw: st.DrawFn) -> tuple[list[ResourceSlice], list[ResourceClaim]]:
    devices = []
    for i in range(draw(st.integers(1, 4))):
        steps = {"default": "10G", "validRange": {"min": "10G", "step": "10G"}}
        policy = draw(st.sampled_from([None, steps, {"default": "20G", "validValues": ["20G", "50G"]}]))
        device = nic(f"d{i}", policy, value=draw(st.sampled_from(["50G", "100G"])), index=draw(st.integers(0, 2)))
        if draw(st.integers(0, 3)) == 0:
            del device["allowMultipleAllocations"]
            device["capacity"]["bandwidth"].pop("requestPolicy", None)
        devices.append(device)
    claims = []
    for c in range(draw(st.integers(1, 3))):
        requests = []
        for r in range(draw(st.integers(1, 2))):
            amount = draw(st.sampled_from([None, "5G", "20G", "35G", "60G"]))
            body = req(f"r{r}", "nic", draw(st.integers(1, 2)))
            if amount is not None:
                body["exactly"]["capacity"] = {"requests": {"bandwidth": amount}}
            requests.append(body)
        constraints = None
        if len(requests) > 1 and draw(st.booleans()):
            kind = draw(st.sampled_from(["distinctAttribute", "matchAttribute"]))
            constraints = [{kind: f"{DRIVER_A}/index"}]
        claims.append(claim(f"c{c}", *requests, constraints=constraints))
    return [slice_("s", NODE1, "pool", DRIVER_A, *devices)], claims


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shared_scenarios())
def test_same_verdict_as_upstream_search_with_shared_devices(
    scenario: tuple[list[ResourceSlice], list[ResourceClaim]],
) -> None:
    slices, claims = scenario
    stock = Inventory(slices, CLASSES)
    ours = allocate(VIEW, claims, stock, budget=1_000_000)
    theirs = reference_allocate(VIEW, claims, stock)
    assert ours.allocatable == theirs.allocatable, (ours.reason, theirs)
    if not ours.allocatable:
        assert ours.reason and not ours.exhausted
        return
    devices = {d.name: d for d in slices[0].devices}
    taken: dict[str, int] = {}
    whole: list[str] = []
    for result in ours.results:
        for r in result.allocation.results:
            if devices[r.device].allow_multiple_allocations:
                assert r.share_id
                taken[r.device] = taken.get(r.device, 0) + r.consumed_capacity["bandwidth"].nanos
            else:
                assert not r.share_id
                whole.append(r.device)
    assert len(whole) == len(set(whole))
    assert all(amount <= devices[name].capacity["bandwidth"].nanos for name, amount in taken.items())


def test_an_outcome_given_again_gets_new_share_ids() -> None:
    outcome = allocate(VIEW, [asks("a", "20G"), asks("b", "20G")], inventory(nic("nic-0", STEP_10G)))
    for result in outcome.results:
        again = with_new_share_ids(result.allocation)
        before, after = result.allocation.results[0], again.results[0]
        assert after.share_id != before.share_id and uuid.UUID(after.share_id)
        assert replace(after, share_id=before.share_id) == before
    whole = allocate(
        VIEW, [asks("a", "20G")], inventory({"name": "gpu-0", "capacity": {"bandwidth": {"value": "40G"}}})
    )
    assert with_new_share_ids(whole.results[0].allocation) is whole.results[0].allocation
