"""Allocator details beyond upstream's table: configs in the result, per-device node selection, stale allocations,
admin-access gating, CEL run-time errors, sub-requests named by constraints."""

from __future__ import annotations

import pytest

from knuma.api.dra.deviceclass import DeviceClass
from knuma.api.dra.resourceclaim import ResourceClaim
from knuma.devices.allocator import DeviceAllocationError, Inventory, NodeView, allocate, allocated_devices
from tests.devices.builders import (
    DRIVER_A,
    LABELS,
    NODE1,
    NODE2,
    claim,
    dev,
    device_class,
    first,
    label_selector,
    req,
    slice_,
    sub,
)

VIEW = NodeView(NODE1, LABELS[NODE1])


def configured_class(name: str, parameter: str) -> DeviceClass:
    return DeviceClass.from_dict(
        {
            "metadata": {"name": name},
            "spec": {
                "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER_A}"'}}],
                "config": [{"opaque": {"driver": DRIVER_A, "parameters": {"p": parameter}}}],
            },
        }
    )


def test_configs_from_class_once_and_from_claim() -> None:
    classes = {"a": configured_class("a", "x"), "b": configured_class("b", "y")}
    two = ResourceClaim.from_dict(
        {
            "metadata": {"name": "c"},
            "spec": {
                "devices": {
                    "requests": [req("r0", "a"), req("r1", "a"), req("r2", "b")],
                    "config": [
                        {"requests": ["r2"], "opaque": {"driver": DRIVER_A, "parameters": {"q": 1}}},
                        {"opaque": {"driver": DRIVER_A, "parameters": {"all": True}}},
                    ],
                }
            },
        }
    )
    s = slice_("s", NODE1, "p", DRIVER_A, dev("d0"), dev("d1"), dev("d2"))
    outcome = allocate(VIEW, [two], Inventory([s], classes))
    assert outcome.allocatable
    configs = [c.to_dict() for c in outcome.results[0].allocation.config]
    assert configs == [
        {"source": "FromClass", "requests": ["r0", "r1"], "opaque": {"driver": DRIVER_A, "parameters": {"p": "x"}}},
        {"source": "FromClass", "requests": ["r2"], "opaque": {"driver": DRIVER_A, "parameters": {"p": "y"}}},
        {"source": "FromClaim", "requests": ["r2"], "opaque": {"driver": DRIVER_A, "parameters": {"q": 1}}},
        {"source": "FromClaim", "opaque": {"driver": DRIVER_A, "parameters": {"all": True}}},
    ]


def test_per_device_node_selection() -> None:
    s = slice_(
        "s",
        "per-device",
        "p",
        DRIVER_A,
        dev("elsewhere", nodeName=NODE2),
        dev("regional", nodeSelector=label_selector("region", "region-1")),
    )
    outcome = allocate(
        VIEW, [claim("c", req("r", "class-a"))], Inventory([s], {"class-a": device_class("class-a", DRIVER_A)})
    )
    assert outcome.allocatable
    allocation = outcome.results[0].allocation
    assert [r.device for r in allocation.results] == ["regional"]
    assert allocation.node_selector == label_selector("region", "region-1")


def test_stale_allocations_hold_devices_and_are_tolerated() -> None:
    stale = ResourceClaim.from_dict(
        {
            "metadata": {"name": "old"},
            "spec": {"devices": {"requests": [req("r", "class-a")]}},
            "status": {
                "allocation": {
                    "devices": {
                        "results": [
                            {"request": "r", "driver": DRIVER_A, "pool": "p", "device": "d0"},
                            {"request": "r", "driver": DRIVER_A, "pool": "gone", "device": "vanished"},
                            {"request": "r", "driver": DRIVER_A, "pool": "p", "device": "d1", "adminAccess": True},
                        ]
                    }
                }
            },
        }
    )
    held = allocated_devices([stale])
    assert held == {(DRIVER_A, "p", "d0"), (DRIVER_A, "gone", "vanished")}
    s = slice_("s", NODE1, "p", DRIVER_A, dev("d0"), dev("d1"))
    outcome = allocate(
        VIEW,
        [stale, claim("new", req("r", "class-a"))],
        Inventory([s], {"class-a": device_class("class-a", DRIVER_A)}, held),
    )
    assert outcome.allocatable and [a.claim for a in outcome.results] == ["default/new"]
    assert outcome.results[0].allocation.results[0].device == "d1"


def test_admin_access_needs_the_namespace_label() -> None:
    s = slice_("s", NODE1, "p", DRIVER_A, dev("d0"))
    admin = claim("c", req("r", "class-a", admin=True), namespace="team")
    inventory = Inventory([s], {"class-a": device_class("class-a", DRIVER_A)})
    with pytest.raises(DeviceAllocationError, match="label on namespace team"):
        allocate(VIEW, [admin], inventory, admin_access_allowed=lambda ns: ns == "monitoring")
    assert allocate(VIEW, [admin], inventory, admin_access_allowed=lambda ns: ns == "team").allocatable


def test_cel_runtime_error_stops_the_node_and_names_the_class() -> None:
    cls = device_class("class-a", DRIVER_A, 'device.attributes["driver-a"].model == "x"')
    s = slice_("s", NODE1, "p", DRIVER_A, dev("d0"))
    outcome = allocate(VIEW, [claim("c", req("r", "class-a"))], Inventory([s], {"class-a": cls}))
    assert not outcome.allocatable and outcome.stage == "selector"
    assert outcome.reason.startswith(
        "class class-a: selector #1 on device driver-a/p/d0: CEL runtime error: no such key"
    )


def test_constraint_naming_a_sub_request() -> None:
    cls = device_class("class-a", DRIVER_A)
    s = slice_(
        "s",
        NODE1,
        "p",
        DRIVER_A,
        dev("a0", attributes={"numa": {"int": 0}}),
        dev("b0", attributes={"numa": {"int": 1}}),
        dev("b1", attributes={"numa": {"int": 1}}),
        dev("b2", attributes={"numa": {"int": 1}}),
    )
    c = claim(
        "c",
        req("main", "class-a"),
        first("extra", sub("two", "class-a", 2), sub("one", "class-a", 1)),
        constraints=[{"requests": ["main", "extra/two"], "matchAttribute": f"{DRIVER_A}/numa"}],
    )
    outcome = allocate(VIEW, [c], Inventory([s], {"class-a": cls}))
    assert outcome.allocatable
    results = [(r.request, r.device) for r in outcome.results[0].allocation.results]
    assert [r for r, _ in results] == ["main", "extra/two", "extra/two"]  # the preferred sub-request fits on NUMA 1
    assert {d for _, d in results} == {"b0", "b1", "b2"}
    # Without b2 the constrained sub-request cannot fit; the unconstrained one is taken, as upstream does.
    three = slice_(
        "s",
        NODE1,
        "p",
        DRIVER_A,
        dev("a0", attributes={"numa": {"int": 0}}),
        dev("b0", attributes={"numa": {"int": 1}}),
        dev("b1", attributes={"numa": {"int": 1}}),
    )
    fallback = allocate(VIEW, [c], Inventory([three], {"class-a": cls}))
    assert fallback.allocatable
    assert [r.request for r in fallback.results[0].allocation.results] == ["main", "extra/one"]
