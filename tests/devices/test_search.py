"""The bounded search: counting proves infeasibility before searching, and running out of budget is reported apart
from "impossible"."""

from __future__ import annotations

from knuma.api.dra.resourceclaim import ResourceClaim
from knuma.devices.allocator import Inventory, NodeView, allocate
from knuma.devices.matching import assign
from tests.devices.builders import DRIVER_A, LABELS, NODE1, claim, dev, device_class, req, slice_

A = device_class("class-a", DRIVER_A)


def groups(count: int, per_group: int) -> list[dict[str, object]]:
    return [dev(f"d-{g}-{i}", attributes={"group": {"int": g}}) for g in range(count) for i in range(per_group)]


def two_requests_sharing_a_group(need: int) -> ResourceClaim:
    return claim(
        "c",
        req("r0", "class-a", need),
        req("r1", "class-a", need),
        constraints=[{"matchAttribute": f"{DRIVER_A}/group"}],
    )


def test_impossible_is_proved_and_exhaustion_is_reported_separately() -> None:
    # 10 groups of one "x" and two "y" devices; r0 and r1 both want the group's only "x": every count passes,
    # every group fails only when the requests are matched together.
    devices = [
        dev(f"d-{g}-{i}", attributes={"group": {"int": g}, "kind": {"string": "x" if i == 0 else "y"}})
        for g in range(10)
        for i in range(3)
    ]
    inventory = Inventory([slice_("s", NODE1, "p", DRIVER_A, *devices)], {"class-a": A})
    x = 'device.attributes["driver-a"].kind == "x"'
    hard = claim(
        "c",
        req("r0", "class-a", 1, x),
        req("r1", "class-a", 1, x),
        req("r2", "class-a", 1),
        constraints=[{"matchAttribute": f"{DRIVER_A}/group"}],
    )
    view = NodeView(NODE1, LABELS[NODE1])
    proved = allocate(view, [hard], inventory)
    assert not proved.allocatable and not proved.exhausted and proved.stage == "constraint"
    assert 10 <= proved.leaves <= 12  # one flow per value (and one relaxed flow per pass), nothing more
    exhausted = allocate(view, [hard], inventory, budget=3)
    assert not exhausted.allocatable and exhausted.exhausted
    assert exhausted.reason.startswith("search budget exhausted after 3 attempts")
    easy = claim(
        "c", req("r0", "class-a", 1, x), req("r2", "class-a", 2), constraints=[{"matchAttribute": f"{DRIVER_A}/group"}]
    )
    fits = allocate(view, [easy], inventory)
    assert fits.allocatable and fits.leaves <= 3


def test_counting_rejects_without_any_leaf() -> None:
    devices = groups(1000, 1)
    slices = [slice_(f"s{i}", NODE1, "p", DRIVER_A, *devices[i * 125 : (i + 1) * 125], count=8) for i in range(8)]
    inventory = Inventory(slices, {"class-a": A})
    outcome = allocate(NodeView(NODE1, LABELS[NODE1]), [two_requests_sharing_a_group(1)], inventory)
    assert not outcome.allocatable and outcome.leaves == 0 and outcome.stage == "constraint"
    assert "no single value is shared by enough devices" in outcome.reason


def test_matching_is_exact_where_greedy_fails() -> None:
    # Greedy in list order gives x to "a" and leaves "b" nothing; the flow finds a->y, b->x.
    assigned = assign([("a", 1), ("b", 1)], {"a": ["x", "y"], "b": ["x"]})
    assert assigned == {"a": ["y"], "b": ["x"]}
    assert assign([("a", 2), ("b", 1)], {"a": ["x", "y"], "b": ["x", "y"]}) is None
    assert assign([("a", 0)], {}) == {"a": []}
