"""`physical_devices`: the cuts of one partitionable device (the counter set they draw from) are one device."""

from __future__ import annotations

from typing import Any

from knuma.api.dra.resourceslice import ResourceSlice
from knuma.devices.counters import physical_devices


def device(name: str, *sets: str) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name}
    if sets:
        body["consumesCounters"] = [{"counterSet": s, "counters": {"memory": {"value": "1Gi"}}} for s in sets]
    return body


def pool_slices(generation: int, devices: list[dict[str, Any]], sets: list[str]) -> list[ResourceSlice]:
    pool = {"name": "node-a", "generation": generation, "resourceSliceCount": 2}
    counters = [{"name": s, "counters": {"memory": {"value": "80Gi"}}} for s in sets]
    return [
        ResourceSlice.from_dict(
            {
                "metadata": {"name": f"counters-{generation}"},
                "spec": {"driver": "gpu.example.com", "nodeName": "node-a", "pool": pool, "sharedCounters": counters},
            }
        ),
        ResourceSlice.from_dict(
            {
                "metadata": {"name": f"devices-{generation}"},
                "spec": {"driver": "gpu.example.com", "nodeName": "node-a", "pool": pool, "devices": devices},
            }
        ),
    ]


def test_cuts_of_one_gpu_share_its_counter_set_and_plain_devices_are_left_out() -> None:
    slices = pool_slices(
        1,
        [
            device("gpu-0", "gpu-0-set"),
            device("gpu-0-half-0", "gpu-0-set"),
            device("gpu-1", "gpu-1-set"),
            device("nic-0"),
            device("odd", "undefined-set"),
        ],
        ["gpu-0-set", "gpu-1-set"],
    )
    groups = physical_devices(slices)
    key = ("gpu.example.com", "node-a")
    assert groups == {
        (*key, "gpu-0"): (*key, "gpu-0-set"),
        (*key, "gpu-0-half-0"): (*key, "gpu-0-set"),
        (*key, "gpu-1"): (*key, "gpu-1-set"),
    }


def test_a_device_drawing_on_two_sets_joins_them_and_old_generations_are_ignored() -> None:
    old = pool_slices(1, [device("gpu-9", "gpu-9-set")], ["gpu-9-set"])
    new = pool_slices(
        2,
        [device("a", "set-a"), device("b", "set-b"), device("bridge", "set-b", "set-a")],
        ["set-a", "set-b"],
    )
    groups = physical_devices(old + new)
    assert len(set(groups.values())) == 1 and len(groups) == 3
    assert physical_devices(pool_slices(1, [device("nic-0")], [])) == {}
