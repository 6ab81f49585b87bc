"""Upstream's allocator test cases (`dynamic-resource-allocation/structured/internal/allocatortesting/
allocator_testing.go`, `TestAllocator`), ported as a table: the same verdict on every case, and the same devices
where upstream's answer is the only valid one or the one its device order implies.

Cases where upstream returns an error (unknown class) expect `DeviceAllocationError`; cases where upstream returns an
error that only stops this node (an incomplete pool for `All`, invalid pools, a constraint that `All` devices cannot
meet) expect "not allocatable" with upstream's message in the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from knuma.api.dra.deviceclass import DeviceClass
from knuma.api.dra.resourceclaim import ResourceClaim
from knuma.api.dra.resourceslice import ResourceSlice
from knuma.devices.allocator import DeviceAllocationError, Inventory, NodeView, allocate
from tests.devices.builders import (
    DRIVER_A,
    DRIVER_B,
    LABELS,
    NODE1,
    NODE2,
    claim,
    dev,
    device_class,
    first,
    label_selector,
    local_selector,
    req,
    slice_,
    sub,
)

Result = tuple[str, str, str, str, bool]

A = device_class("class-a", DRIVER_A)
B = device_class("class-b", DRIVER_B)
MEM = 'device.capacity["driver-a"].memory.compareTo(quantity("{}")) >= 0'
TAINT_NS = {"key": "example.com/taint", "value": "tainted", "effect": "NoSchedule"}
TAINT_NE = {"key": "example.com/taint", "value": "tainted2", "effect": "NoExecute"}
TOL_NS = {"key": "example.com/taint", "operator": "Exists", "effect": "NoSchedule"}
TOL_NE = {"key": "example.com/taint", "operator": "Equal", "value": "tainted2", "effect": "NoExecute"}
ALL_ATTRS = {
    "driverVersion": {"version": "1.0.0"},
    "numa": {"int": 1},
    "stringAttribute": {"string": "stringAttributeValue"},
    "boolAttribute": {"bool": True},
}


@dataclass
class Case:
    claims: Sequence[ResourceClaim]
    classes: Sequence[DeviceClass] = (A,)
    slices: Sequence[ResourceSlice] = ()
    node: str = NODE1
    allocated: Sequence[tuple[str, str, str]] = ()
    expect: list[tuple[dict[str, Any] | None, list[Result]]] | None = None
    error: str = ""
    reason: str = ""
    any_valid: bool = False
    """Upstream's exact devices follow from its DFS order; any valid allocation is accepted here."""
    extra: dict[str, Any] = field(default_factory=dict)


def one(
    name: str = "slice-1", node: str | dict[str, Any] = NODE1, pool: str = "pool-1", driver: str = DRIVER_A, **kw: Any
) -> ResourceSlice:
    return slice_(name, node, pool, driver, dev("device-1"), **kw)


def r(
    request: str, pool: str = "pool-1", device: str = "device-1", driver: str = DRIVER_A, admin: bool = False
) -> Result:
    return (request, driver, pool, device, admin)


L1 = local_selector(NODE1)

CASES: dict[str, Case] = {
    "empty": Case(claims=[], expect=[]),
    "simple": Case([claim("claim-0", req("req-0", "class-a"))], slices=[one()], expect=[(L1, [r("req-0")])]),
    "other-node": Case(
        [claim("claim-0", req("req-0", "class-a"))],
        slices=[one(driver=DRIVER_B), one("slice-2", NODE2, "pool-2")],
        node=NODE2,
        expect=[(local_selector(NODE2), [r("req-0", "pool-2")])],
    ),
    "small-and-large": Case(
        [
            claim(
                "claim-0", req("req-0", "class-a", 1, MEM.format("1Gi")), req("req-1", "class-a", 1, MEM.format("2Gi"))
            )
        ],
        slices=[
            slice_(
                "slice-1",
                NODE1,
                "pool-1",
                DRIVER_A,
                dev("device-1", {"memory": "1Gi"}),
                dev("device-2", {"memory": "2Gi"}),
            )
        ],
        expect=[(L1, [r("req-0"), r("req-1", device="device-2")])],
    ),
    "small-and-large-backtrack-requests": Case(
        [
            claim(
                "claim-0", req("req-0", "class-a", 1, MEM.format("1Gi")), req("req-1", "class-a", 1, MEM.format("2Gi"))
            )
        ],
        slices=[
            slice_(
                "slice-1",
                NODE1,
                "pool-1",
                DRIVER_A,
                dev("device-2", {"memory": "2Gi"}),
                dev("device-1", {"memory": "1Gi"}),
            )
        ],
        expect=[(L1, [r("req-0"), r("req-1", device="device-2")])],
    ),
    "small-and-large-backtrack-claims": Case(
        [
            claim("claim-0", req("req-0", "class-a", 1, MEM.format("1Gi"))),
            claim("claim-1", req("req-1", "class-a", 1, MEM.format("2Gi"))),
        ],
        slices=[
            slice_(
                "slice-1",
                NODE1,
                "pool-1",
                DRIVER_A,
                dev("device-2", {"memory": "2Gi"}),
                dev("device-1", {"memory": "1Gi"}),
            )
        ],
        expect=[(L1, [r("req-0")]), (L1, [r("req-1", device="device-2")])],
    ),
    "devices-split-across-different-slices": Case(
        [claim("claim-0", req("req-0", "class-a", 2))],
        slices=[one(), one("slice-2", pool="pool-2")],
        expect=[(L1, [r("req-0"), r("req-0", "pool-2")])],
    ),
    "obsolete-slice": Case(
        [claim("claim-0", req("req-0", "class-a"))],
        slices=[
            slice_("slice-1-obsolete", NODE1, "pool-1", DRIVER_A, dev("device-1"), count=2),
            slice_("slice-1-obsolete", NODE1, "pool-1", DRIVER_A, dev("device-2"), count=2, generation=1),
        ],
    ),
    "duplicate-slice": Case(
        [claim("claim-0", req("req-0", "class-a"))],
        slices=[one(count=2), one("slice-1-2", count=2)],
        reason="invalid resource pools were encountered",
    ),
    "no-slices": Case([claim("claim-0", req("req-0", "class-a"))]),
    "not-enough-suitable-devices": Case(
        [claim("claim-0", req("req-0", "class-a")), claim("claim-0", req("req-1", "class-a"))], slices=[one()]
    ),
    "no-classes": Case(
        [claim("claim-0", req("req-0", "class-a"))],
        classes=[],
        slices=[one()],
        error="could not retrieve device class class-a",
    ),
    "unknown-class": Case(
        [claim("claim-0", req("req-0", "unknown-class"))],
        slices=[one()],
        error="could not retrieve device class unknown-class",
    ),
    "all-devices-single": Case(
        [claim("claim-0", req("req-0", "class-a", mode="All"))], slices=[one()], expect=[(L1, [r("req-0")])]
    ),
    "all-devices-many": Case(
        [claim("claim-0", req("req-0", "class-a", mode="All"))],
        slices=[one(), one(pool="pool-2")],
        expect=[(L1, [r("req-0"), r("req-0", "pool-2")])],
    ),
    "all-devices-of-the-incomplete-pool": Case(
        [claim("claim-0", req("req-0", "class-a", mode="All"))],
        slices=[one(count=2)],
        reason="claim default/claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is "
        "currently being updated",
    ),
    "all-devices-plus-another": Case(
        [claim("claim-0", req("req-0", "class-a", mode="All")), claim("claim-1", req("req-0", "class-b"))],
        classes=[A, B],
        slices=[one(), one(driver=DRIVER_B)],
        expect=[(L1, [r("req-0")]), (L1, [r("req-0", driver=DRIVER_B)])],
    ),
    "all-devices-plus-another-reversed": Case(
        [claim("claim-1", req("req-0", "class-b")), claim("claim-0", req("req-0", "class-a", mode="All"))],
        classes=[A, B],
        slices=[one(), one(driver=DRIVER_B)],
        expect=[(L1, [r("req-0", driver=DRIVER_B)]), (L1, [r("req-0")])],
    ),
    "all-devices-many-plus-another": Case(
        [claim("claim-0", req("req-0", "class-a", mode="All")), claim("claim-1", req("req-0", "class-b"))],
        classes=[A, B],
        slices=[slice_("slice-1", NODE1, "pool-1", DRIVER_A, dev("device-1"), dev("device-2")), one(driver=DRIVER_B)],
        expect=[(L1, [r("req-0"), r("req-0", device="device-2")]), (L1, [r("req-0", driver=DRIVER_B)])],
    ),
    "admin-access-alongside-a-normal-claim": Case(
        [claim("claim-0", req("req-0", "class-a")), claim("claim-1", req("req-0", "class-a", admin=True))],
        slices=[slice_("slice-1", NODE1, "pool-1", DRIVER_A, dev("device-1"), dev("device-2"))],
        expect=[(L1, [r("req-0")]), (L1, [r("req-0", admin=True)])],
        any_valid=True,
    ),
    "all-devices-slice-without-devices-prioritized-list": Case(
        [claim("claim-0", first("req-0", sub("subreq-0", "class-a", None, mode="All"), sub("subreq-1", "class-b")))],
        classes=[A, B],
        slices=[slice_("slice-1", NODE1, "pool-1", DRIVER_A), one("slice-2", pool="pool-2", driver=DRIVER_B)],
        expect=[(L1, [r("req-0/subreq-1", "pool-2", driver=DRIVER_B)])],
    ),
    "all-devices-no-slices-prioritized-list": Case(
        [claim("claim-0", first("req-0", sub("subreq-0", "class-a", None, mode="All"), sub("subreq-1", "class-b")))],
        classes=[A, B],
        slices=[one("slice-2", pool="pool-2", driver=DRIVER_B)],
        expect=[(L1, [r("req-0/subreq-1", "pool-2", driver=DRIVER_B)])],
    ),
    "all-devices-some-allocated-prioritized-list": Case(
        [claim("claim-0", first("req-0", sub("subreq-0", "class-a", None, mode="All"), sub("subreq-1", "class-b")))],
        classes=[A, B],
        slices=[
            slice_("slice-1", NODE1, "pool-1", DRIVER_A, dev("device-1"), dev("device-2")),
            one("slice-2", pool="pool-2", driver=DRIVER_B),
        ],
        allocated=[(DRIVER_A, "pool-1", "device-1")],
        expect=[(L1, [r("req-0/subreq-1", "pool-2", driver=DRIVER_B)])],
    ),
    "network-attached-device": Case(
        [claim("claim-0", req("req-0", "class-a"))],
        slices=[one(node=label_selector("region", "region-1"))],
        expect=[(label_selector("region", "region-1"), [r("req-0")])],
    ),
    "unsuccessful-allocation-network-attached-device": Case(
        [claim("claim-0", req("req-0", "class-a"))], slices=[one(node=label_selector("region", "region-1"))], node=NODE2
    ),
    "many-network-attached-devices": Case(
        [claim("claim-0", req("req-0", "class-a", 4))],
        slices=[
            one(node=label_selector("region", "region-1")),
            one(node="all", pool="pool-2"),
            one(node=label_selector("planet", "earth"), pool="pool-3"),
            one(node=local_selector(NODE1), pool="pool-4"),
        ],
        expect=[
            (
                {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "region", "operator": "In", "values": ["region-1"]},
                                {"key": "planet", "operator": "In", "values": ["earth"]},
                            ],
                            "matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE1]}],
                        }
                    ]
                },
                [r("req-0"), r("req-0", "pool-2"), r("req-0", "pool-3"), r("req-0", "pool-4")],
            )
        ],
    ),
    "local-and-network-attached-devices": Case(
        [claim("claim-0", req("req-0", "class-a", 2))],
        slices=[one(node=label_selector("region", "region-1")), one(pool="pool-2")],
        expect=[(L1, [r("req-0"), r("req-0", "pool-2")])],
    ),
    "all-nodes-only-has-no-node-selector": Case(
        [claim("claim-0", req("req-0", "class-a"))], slices=[one(node="all")], expect=[(None, [r("req-0")])]
    ),
    "several-different-drivers": Case(
        [claim("claim-0", req("req-0", "class-a")), claim("claim-0", req("req-0", "class-b"))],
        classes=[A, B],
        slices=[slice_("slice-1", NODE1, "pool-1", DRIVER_A, dev("device-1"), dev("device-2")), one(driver=DRIVER_B)],
        expect=[(L1, [r("req-0")]), (L1, [r("req-0", driver=DRIVER_B)])],
    ),
    "already-allocated-devices": Case(
        [claim("claim-0", req("req-0", "class-a"))],
        slices=[one()],
        allocated=[(DRIVER_A, "pool-1", "device-1"), (DRIVER_A, "pool-1", "device-2")],
    ),
    "admin-access-enabled": Case(
        [claim("claim-0", req("req-0", "class-a", admin=True))],
        slices=[one()],
        allocated=[(DRIVER_A, "pool-1", "device-1"), (DRIVER_A, "pool-1", "device-2")],
        expect=[(L1, [r("req-0", admin=True)])],
    ),
    "with-constraint": Case(
        [
            claim(
                "claim-0",
                req("req-0", "class-a"),
                req("req-1", "class-a"),
                constraints=[
                    {"matchAttribute": f"{DRIVER_A}/numa"},
                    {"matchAttribute": f"{DRIVER_A}/driverVersion"},
                    {"matchAttribute": f"{DRIVER_A}/stringAttribute"},
                    {"matchAttribute": f"{DRIVER_A}/boolAttribute"},
                ],
            )
        ],
        slices=[
            slice_(
                "slice-1",
                NODE1,
                "pool-1",
                DRIVER_A,
                dev("device-1", attributes=ALL_ATTRS),
                dev("device-2", attributes=ALL_ATTRS),
            )
        ],
        expect=[(L1, [r("req-0"), r("req-1", device="device-2")])],
    ),
    "with-constraint-non-existent-attribute": Case(
        [claim("claim-0", req("req-0", "class-a"), constraints=[{"matchAttribute": "driver-a/nonExistentAttribute"}])],
        slices=[one()],
    ),
    **{
        f"with-constraint-not-matching-{kind}-attribute": Case(
            [claim("claim-0", req("req-0", "class-a", 2), constraints=[{"matchAttribute": f"{DRIVER_A}/{name}"}])],
            slices=[
                slice_(
                    "slice-1",
                    NODE1,
                    "pool-1",
                    DRIVER_A,
                    dev("device-1", attributes={name: {kind: v1}}),
                    dev("device-2", attributes={name: {kind: v2}}),
                )
            ],
        )
        for kind, name, v1, v2 in (
            ("int", "numa", 1, 2),
            ("string", "stringAttribute", "stringAttributeValue", "stringAttributeValue2"),
            ("bool", "boolAttribute", True, False),
            ("version", "driverVersion", "1.0.0", "2.0.0"),
        )
    },
    "with-constraint-not-matching-int-attribute-all-devices": Case(
        [claim("claim-0", req("req-0", "class-a", mode="All"), constraints=[{"matchAttribute": f"{DRIVER_A}/numa"}])],
        slices=[
            slice_(
                "slice-1",
                NODE1,
                "pool-1",
                DRIVER_A,
                dev("device-1", attributes={"numa": {"int": 1}}),
                dev("device-2", attributes={"numa": {"int": 2}}),
            )
        ],
    ),
    "with-constraint-for-request": Case(
        [
            claim(
                "claim-0",
                req("req-0", "class-a"),
                req("req-1", "class-a"),
                constraints=[{"requests": ["req-0"], "matchAttribute": f"{DRIVER_A}/driverVersion"}],
            )
        ],
        slices=[
            slice_(
                "slice-1",
                NODE1,
                "pool-1",
                DRIVER_A,
                dev("device-1", attributes={"driverVersion": {"version": "1.0.0"}}),
                dev("device-2", attributes={"driverVersion": {"version": "2.0.0"}}),
            )
        ],
        expect=[(L1, [r("req-0"), r("req-1", device="device-2")])],
    ),
    "prioritized-list-subrequests-with-allocation-mode-all": Case(
        [claim("claim-0", first("req-0", sub("subreq-0", "class-a", None, mode="All"), sub("subreq-1", "class-a")))],
        slices=[slice_("slice-1", NODE1, "pool-1", DRIVER_A, dev("device-1"), dev("device-2"))],
        allocated=[(DRIVER_A, "pool-1", "device-1")],
        expect=[(L1, [r("req-0/subreq-1", device="device-2")])],
    ),
    "prioritized-list-allocation-mode-all-multiple-requests": Case(
        [
            claim(
                "claim-0",
                req("req-0", "class-a"),
                first("req-1", sub("subreq-0", "class-a", None, mode="All"), sub("subreq-1", "class-a")),
            )
        ],
        slices=[slice_("slice-1", NODE1, "pool-1", DRIVER_A, dev("device-1"), dev("device-2"))],
        expect=[(L1, [r("req-0"), r("req-1/subreq-1", device="device-2")])],
    ),
    "prioritized-list-multi-request": Case(
        [
            claim(
                "claim-0",
                req("req-1", "class-a", 1, MEM.format("8Gi")),
                first(
                    "req-0",
                    sub("subreq-0", "class-a", 1, MEM.format("8Gi")),
                    sub("subreq-1", "class-a", 1, MEM.format("4Gi")),
                ),
            )
        ],
        slices=[
            slice_("slice-1", NODE1, "pool-1", DRIVER_A, dev("device-1", {"memory": "8Gi"})),
            slice_("slice-2", NODE1, "pool-2", DRIVER_A, dev("device-2", {"memory": "4Gi"})),
        ],
        expect=[(L1, [r("req-1"), r("req-0/subreq-1", "pool-2", "device-2")])],
    ),
    "prioritized-list-with-backtracking": Case(
        [
            claim(
                "claim-0",
                first(
                    "req-0",
                    sub("subreq-0", "class-a", 1, MEM.format("8Gi")),
                    sub("subreq-1", "class-a", 1, MEM.format("4Gi")),
                ),
                req("req-1", "class-a", 1, MEM.format("8Gi")),
            )
        ],
        slices=[
            slice_("slice-1", NODE1, "pool-1", DRIVER_A, dev("device-1", {"memory": "8Gi"})),
            slice_("slice-2", NODE1, "pool-2", DRIVER_A, dev("device-2", {"memory": "4Gi"})),
        ],
        expect=[(L1, [r("req-0/subreq-1", "pool-2", "device-2"), r("req-1")])],
    ),
    "prioritized-list-too-many-in-first-subrequest": Case(
        [claim("claim-0", first("req-0", sub("subreq-0", "class-b", 500), sub("subreq-1", "class-a")))],
        classes=[A, B],
        slices=[one()],
        expect=[(L1, [r("req-0/subreq-1")])],
    ),
    "tainted-two-devices": Case(
        [claim("claim-0", req("req-0", "class-a"))],
        slices=[
            slice_(
                "slice-1",
                NODE1,
                "pool-1",
                DRIVER_A,
                dev("device-1", taints=[TAINT_NS]),
                dev("device-2", taints=[TAINT_NE]),
            )
        ],
    ),
    "tainted-one-device-two-taints": Case(
        [claim("claim-0", req("req-0", "class-a"))],
        slices=[slice_("slice-1", NODE1, "pool-1", DRIVER_A, dev("device-1", taints=[TAINT_NS, TAINT_NE]))],
    ),
    "tainted-two-devices-tolerated": Case(
        [claim("claim-0", req("req-0", "class-a", tolerations=[TOL_NE]))],
        slices=[
            slice_(
                "slice-1",
                NODE1,
                "pool-1",
                DRIVER_A,
                dev("device-1", taints=[TAINT_NS]),
                dev("device-2", taints=[TAINT_NE]),
            )
        ],
        expect=[(L1, [r("req-0", device="device-2")])],
    ),
    "tainted-one-device-two-taints-both-tolerated": Case(
        [claim("claim-0", req("req-0", "class-a", tolerations=[TOL_NS, TOL_NE]))],
        slices=[slice_("slice-1", NODE1, "pool-1", DRIVER_A, dev("device-1", taints=[TAINT_NS, TAINT_NE]))],
        expect=[(L1, [r("req-0")])],
    ),
    "tainted-prioritized-list": Case(
        [claim("claim-0", first("req-0", sub("subreq-0", "class-b"), sub("subreq-1", "class-a")))],
        classes=[A, B],
        slices=[slice_("slice-1", NODE1, "pool-1", DRIVER_A, dev("device-1", taints=[TAINT_NS]))],
    ),
    "tainted-admin-access": Case(
        [claim("claim-0", req("req-0", "class-a", admin=True))],
        slices=[slice_("slice-1", NODE1, "pool-1", DRIVER_A, dev("device-1", taints=[TAINT_NS]))],
        allocated=[(DRIVER_A, "pool-1", "device-1"), (DRIVER_A, "pool-1", "device-2")],
    ),
    "tainted-all-devices-single": Case(
        [claim("claim-0", req("req-0", "class-a", mode="All"))],
        slices=[slice_("slice-1", NODE1, "pool-1", DRIVER_A, dev("device-1", taints=[TAINT_NS]))],
    ),
    "taint-effect-none-is-informational": Case(
        [claim("claim-0", req("req-0", "class-a"))],
        slices=[
            slice_(
                "slice-1",
                NODE1,
                "pool-1",
                DRIVER_A,
                dev("device-1", taints=[{"key": "example.com/info", "effect": "None"}]),
            )
        ],
        expect=[(L1, [r("req-0")])],
    ),
}


def _run(case: Case) -> Any:
    inventory = Inventory(case.slices, {c.name: c for c in case.classes}, frozenset(case.allocated))
    return allocate(NodeView(case.node, LABELS[case.node]), case.claims, inventory)


@pytest.mark.parametrize("name", sorted(CASES))
def test_upstream_case(name: str) -> None:
    case = CASES[name]
    if case.error:
        with pytest.raises(DeviceAllocationError, match=case.error):
            _run(case)
        return
    outcome = _run(case)
    assert outcome.allocatable is (case.expect is not None), outcome.reason
    if case.expect is None:
        if case.reason:
            assert case.reason in outcome.reason
        return
    got = [
        (
            a.allocation.node_selector,
            [(d.request, d.driver, d.pool, d.device, d.admin_access) for d in a.allocation.results],
        )
        for a in outcome.results
    ]
    if case.any_valid:
        assert [sorted(x[1]) for x in got] != [] and len(got) == len(case.expect)
        for (_, results), (_, expected) in zip(got, case.expect, strict=True):
            assert [x[0] for x in results] == [x[0] for x in expected]
    else:
        assert got == case.expect
