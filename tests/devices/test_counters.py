"""Partitionable devices: a GPU published whole and as slices that share its counters (`sharedCounters`,
`consumesCounters`). The allocator gives out a device only while its draws fit in what the pool has left, as
upstream's `checkAvailableCounters`: never the whole GPU and one of its slices, never more slices than it holds."""

from __future__ import annotations

from typing import Any

import pytest

from knuma.api.dra.deviceclass import DeviceClass
from knuma.api.dra.resourceslice import ResourceSlice
from knuma.devices.allocator import Inventory, NodeView, allocate, allocation_devices
from knuma.devices.counters import Counters
from knuma.testbed.dra import device_classes, resource_slices
from knuma.testbed.shapes import BUILTIN_SHAPES
from tests.devices.builders import DRIVER_A, LABELS, NODE1, claim, dev, device_class, req

VIEW = NodeView(NODE1, LABELS[NODE1])


def _draw(memory: str, slices: int) -> list[dict[str, Any]]:
    return [{"counterSet": "gpu-0", "counters": {"memory": {"value": memory}, "slices": {"value": str(slices)}}}]


def _gpu(profile: str, name: str, memory: str, slices: int) -> dict[str, Any]:
    return dev(name, attributes={"profile": {"string": profile}}, consumesCounters=_draw(memory, slices))


def _pool(generation: int = 0, memory: str = "40Gi") -> list[ResourceSlice]:
    counters = {
        "driver": DRIVER_A,
        "pool": {"name": "gpus", "generation": generation, "resourceSliceCount": 2},
        "nodeName": NODE1,
        "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": memory}, "slices": {"value": "4"}}}],
    }
    devices = {
        "driver": DRIVER_A,
        "pool": {"name": "gpus", "generation": generation, "resourceSliceCount": 2},
        "nodeName": NODE1,
        "devices": [
            _gpu("whole", "gpu-0", "40Gi", 4),
            _gpu("half", "gpu-0-half-0", "20Gi", 2),
            _gpu("half", "gpu-0-half-1", "20Gi", 2),
            _gpu("quarter", "gpu-0-quarter-0", "10Gi", 1),
            _gpu("quarter", "gpu-0-quarter-1", "10Gi", 1),
        ],
    }
    return [
        ResourceSlice.from_dict({"metadata": {"name": f"counters-{generation}"}, "spec": counters}),
        ResourceSlice.from_dict({"metadata": {"name": f"devices-{generation}"}, "spec": devices}),
    ]


CLASSES = {
    profile: device_class(profile, DRIVER_A, f'device.attributes["{DRIVER_A}"].profile == "{profile}"')
    for profile in ("whole", "half", "quarter")
}


def _names(outcome: Any) -> list[list[str]]:
    return [sorted(r.device for r in result.allocation.results) for result in outcome.results]


def test_the_whole_gpu_leaves_nothing_for_its_slices() -> None:
    slices = _pool()
    whole = allocate(VIEW, [claim("w", req("r", "whole"))], Inventory(slices, CLASSES))
    assert whole.allocatable and _names(whole) == [["gpu-0"]]
    in_use = allocation_devices(whole.results[0].allocation)
    for profile in ("half", "quarter"):
        refused = allocate(VIEW, [claim("s", req("r", profile))], Inventory(slices, CLASSES, in_use))
        assert not refused.allocatable, profile
        assert refused.stage == "counters"
        assert refused.reason.endswith(
            "needs 1 device(s), 0 left after the counters stage (the shared counters of their partitionable devices "
            "are used up)"
        )
        assert dict(refused.stages["default/s/r"])["in use"] == 2  # free devices, but their GPU is given out


def test_slices_fill_the_gpu_and_no_further() -> None:
    """Two halves use all 40Gi; a quarter on top does not fit. In one pass, a half and two quarters fit (40Gi, 4
    slices), but two halves and a quarter do not, nor a half beside the whole GPU."""
    slices = _pool()
    two_halves = allocate(VIEW, [claim("h", req("r", "half", 2))], Inventory(slices, CLASSES))
    assert two_halves.allocatable and _names(two_halves) == [["gpu-0-half-0", "gpu-0-half-1"]]
    in_use = allocation_devices(two_halves.results[0].allocation)
    assert not allocate(VIEW, [claim("q", req("r", "quarter"))], Inventory(slices, CLASSES, in_use)).allocatable
    mixed = allocate(VIEW, [claim("m", req("a", "half"), req("b", "quarter", 2))], Inventory(slices, CLASSES))
    assert mixed.allocatable
    too_much = allocate(VIEW, [claim("t", req("a", "half", 2), req("b", "quarter"))], Inventory(slices, CLASSES))
    assert not too_much.allocatable
    both = allocate(VIEW, [claim("x", req("a", "whole")), claim("y", req("b", "half"))], Inventory(slices, CLASSES))
    assert not both.allocatable


def test_the_search_looks_past_a_first_choice_that_overdraws() -> None:
    """A pool with 30Gi left after a quarter went: a half plus a quarter fits (30Gi), although the flow's first
    answer for "any two devices" might take both halves (40Gi)."""
    slices = _pool()
    taken = frozenset({(DRIVER_A, "gpus", "gpu-0-quarter-0")})
    any_gpu = device_class("any", DRIVER_A, f'device.attributes["{DRIVER_A}"].profile != "whole"')
    outcome = allocate(VIEW, [claim("c", req("r", "any", 2))], Inventory(slices, {"any": any_gpu}, taken))
    assert outcome.allocatable
    (chosen,) = _names(outcome)
    assert chosen == ["gpu-0-half-0", "gpu-0-quarter-1"]


def test_counters_follow_the_newest_generation_and_ignore_unknown_names() -> None:
    old, new = _pool(generation=0, memory="40Gi"), _pool(generation=1, memory="20Gi")
    counters = Counters.of([*old, *new], frozenset())
    assert counters is not None
    assert counters.left[(DRIVER_A, "gpus", "gpu-0", "memory")] == 20 * 2**30 * 1000
    assert not counters.fits([(DRIVER_A, "gpus", "gpu-0")])  # 40Gi no longer fits in the republished 20Gi
    assert counters.fits([(DRIVER_A, "gpus", "unknown-device")])
    assert Counters.of([], frozenset()) is None


def test_a_slice_cannot_have_both_devices_and_counters() -> None:
    spec = {
        "driver": DRIVER_A,
        "pool": {"name": "gpus", "resourceSliceCount": 1},
        "nodeName": NODE1,
        "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}],
        "devices": [dev("d")],
    }
    with pytest.raises(Exception, match="only one of `sharedCounters` or `devices` is allowed"):
        ResourceSlice.from_dict({"metadata": {"name": "s"}, "spec": spec})
    bad = {**spec, "devices": None, "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "lots"}}}]}
    with pytest.raises(Exception, match=r"sharedCounters\[0\]\.counters\[memory\]\.value"):
        ResourceSlice.from_dict({"metadata": {"name": "s"}, "spec": bad})


def test_all_devices_of_a_partitioned_gpu_cannot_be_had() -> None:
    """`allocationMode: All` on every partition of a GPU: each fits alone, together they overdraw."""
    slices = _pool()
    every = device_class("every", DRIVER_A)
    outcome = allocate(VIEW, [claim("a", req("r", "every", mode="All"))], Inventory(slices, {"every": every}))
    assert not outcome.allocatable
    taken = frozenset({(DRIVER_A, "gpus", "gpu-0-quarter-0")})
    blocked = allocate(VIEW, [claim("a", req("r", "every", mode="All"))], Inventory(slices, {"every": every}, taken))
    assert not blocked.allocatable and "out of shared counters" in blocked.reason


MIG = BUILTIN_SHAPES["mig"]
MIG_CLASSES = {c["metadata"]["name"]: DeviceClass.from_dict(c) for c in device_classes([MIG])}


@pytest.mark.parametrize(("three_g", "one_g", "fits"), [(7, 3, True), (7, 5, False), (6, 9, False), (4, 14, True)])
def test_many_identical_slices_are_searched_by_how_many_not_which(three_g: int, one_g: int, fits: bool) -> None:
    """`mig` node: four GPUs, each whole, 2 x 3g.40gb and 7 x 1g.10gb drawing on its own counters (80Gi, 7 compute
    slices). Seven 3g leave one GPU with 40Gi and 4 compute slices: 3 x 1g fit, 5 do not; six 3g leave at most 8
    slices of 1g (two GPUs with one 3g each), so 9 do not; four 3g on two GPUs leave two GPUs for 14 x 1g. The
    impossible ones are proved so within the default budget (before: "search budget exhausted" after trying
    combinations of 1g slices that differ only in which of a GPU's identical slices they name)."""
    slices = [ResourceSlice.from_dict(body) for body in resource_slices(NODE1, MIG)]
    requests = (req("a", "3g-40gb.gpu.sim.knuma.io", three_g), req("b", "1g-10gb.gpu.sim.knuma.io", one_g))
    outcome = allocate(VIEW, [claim("c", *requests)], Inventory(slices, MIG_CLASSES))
    assert outcome.allocatable is fits, outcome.reason
    if fits:
        chosen = allocation_devices(outcome.results[0].allocation)
        assert len(chosen) == three_g + one_g
        counters = Counters.of(slices, ())
        assert counters is not None and counters.fits(chosen)
    else:
        assert outcome.stage == "capacity" and "exhausted" not in outcome.reason
        assert "together they draw more than is left of the shared counters" in outcome.reason
