"""knuma's NRT extension: DRA devices per NUMA zone (`<driver>/devices` resources and a `knuma.io/dra-devices`
zone attribute), free or allocated, from ResourceSlices and ResourceClaims."""

from __future__ import annotations

from knuma.api.nrt import NodeResourceTopology, ResourceInfo, Zone
from knuma.exporter.dra import ZONE_ATTRIBUTE, ZoneDevice, with_dra_devices, zone_devices
from knuma.testbed.dra import resource_slices
from knuma.testbed.shapes import BUILTIN_SHAPES, shape_from_dict

SLICES = resource_slices("dgx-0", BUILTIN_SHAPES["dgx"])


def allocated(*devices: tuple[str, str]) -> dict[str, object]:
    results = [{"request": "r", "driver": d, "pool": "dgx-0", "device": n} for d, n in devices]
    return {"status": {"allocation": {"devices": {"results": results}}}}


def test_devices_are_grouped_by_numa_node_and_allocated_ones_are_not_free() -> None:
    zones = zone_devices(SLICES, [allocated(("gpu.sim.knuma.io", "gpu-5")), {"status": {}}], "dgx-0")
    assert sorted(zones) == [0, 1]
    assert len(zones[0]) == len(zones[1]) == 8
    assert ZoneDevice("gpu.sim.knuma.io", "gpu-5", False, allocated=True) in zones[1]
    assert sum(1 for d in zones[1] if not d.free) == 1
    assert zone_devices(SLICES, [], "another-node") == {}


def test_an_admin_access_result_does_not_hold_its_device() -> None:
    """A monitoring claim with `adminAccess` sees a GPU another claim may hold; upstream's `foreachAllocatedDevice`
    skips such results, so the GPU stays free for an ordinary claim (it was counted as used)."""
    monitor = allocated(("gpu.sim.knuma.io", "gpu-5"))
    monitor["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = True  # type: ignore[index]
    zones = zone_devices(SLICES, [monitor], "dgx-0")
    assert ZoneDevice("gpu.sim.knuma.io", "gpu-5", True) in zones[1]
    assert all(d.free and not d.allocated for d in zones[0] + zones[1])


def test_the_nrt_gets_resources_and_an_attribute_per_zone() -> None:
    cpu = ResourceInfo("cpu", 56000, 55000, 55000)
    nrt = NodeResourceTopology("dgx-0", (Zone("node-0", resources=(cpu,)), Zone("node-1", resources=(cpu,))))
    out = with_dra_devices(nrt, zone_devices(SLICES, [allocated(("gpu.sim.knuma.io", "gpu-5"))], "dgx-0"))
    one = {r.name: r for r in out.zones[1].resources}
    assert one["gpu.sim.knuma.io/devices"] == ResourceInfo("gpu.sim.knuma.io/devices", 4, 4, 3)
    assert one["nic.sim.knuma.io/devices"] == ResourceInfo("nic.sim.knuma.io/devices", 4, 4, 4)
    assert one["cpu"] == cpu
    free = out.zones[1].attributes[ZONE_ATTRIBUTE].split(",")
    assert "gpu.sim.knuma.io/gpu-4" in free and "gpu.sim.knuma.io/gpu-5" not in free and len(free) == 7
    document = out.to_dict()
    assert {"name": ZONE_ATTRIBUTE, "value": out.zones[0].attributes[ZONE_ATTRIBUTE]} in document["zones"][0][
        "attributes"
    ]
    assert with_dra_devices(nrt, {}) is nrt


def test_partitions_whose_counters_are_used_up_are_not_free() -> None:
    """`mig` shape: each GPU is published whole and as 2 x 3g.40gb and 7 x 1g.10gb partitions sharing its counters.
    With gpu-0 given out whole, none of its 9 partitions is free; with one 3g.40gb partition of gpu-1 taken, the
    other 3g.40gb and each 1g.10gb partition still fit on their own (40Gi and 4 compute slices left), the whole GPU
    does not."""
    slices = resource_slices("mig-0", BUILTIN_SHAPES["mig"])
    taken = [allocated(("gpu.sim.knuma.io", "gpu-0"), ("gpu.sim.knuma.io", "gpu-1-3g-40gb-0"))]
    for claim in taken:
        for result in claim["status"]["allocation"]["devices"]["results"]:  # type: ignore[index]
            result["pool"] = "mig-0"
    zones = zone_devices(slices, taken, "mig-0")
    zone0 = {d.device: d.free for d in zones[0]}
    assert len(zone0) == 20  # two GPUs, each whole and 9 partitions
    assert not any(free for name, free in zone0.items() if name.startswith("gpu-0"))
    gpu1 = {name: free for name, free in zone0.items() if name.startswith("gpu-1-")}
    assert gpu1["gpu-1-3g-40gb-1"] is True
    assert sum(gpu1[f"gpu-1-1g-10gb-{k}"] for k in range(7)) == 7  # 10Gi each fits alone in the 40Gi left
    assert zone0["gpu-1"] is False  # the whole GPU no longer fits
    assert all(d.free for d in zones[1])


def test_a_partitionable_gpu_counts_once_in_the_nrt_and_is_available_while_nothing_of_it_is_allocated() -> None:
    """Same state as above: zone 0's two GPUs are gpu-0 (given whole) and gpu-1 (one 3g.40gb partition taken), so
    the zone holds 2 devices and none available, though 8 of gpu-1's partitions are still listed free; zone 1's
    two GPUs are untouched."""
    slices = resource_slices("mig-0", BUILTIN_SHAPES["mig"])
    taken = [allocated(("gpu.sim.knuma.io", "gpu-0"), ("gpu.sim.knuma.io", "gpu-1-3g-40gb-0"))]
    for claim in taken:
        for result in claim["status"]["allocation"]["devices"]["results"]:  # type: ignore[index]
            result["pool"] = "mig-0"
    cpu = ResourceInfo("cpu", 56000, 55000, 55000)
    nrt = NodeResourceTopology("mig-0", (Zone("node-0", resources=(cpu,)), Zone("node-1", resources=(cpu,))))
    out = with_dra_devices(nrt, zone_devices(slices, taken, "mig-0"))
    gpus = [{r.name: r for r in zone.resources}["gpu.sim.knuma.io/devices"] for zone in out.zones]
    assert gpus == [
        ResourceInfo("gpu.sim.knuma.io/devices", 2, 2, 0),
        ResourceInfo("gpu.sim.knuma.io/devices", 2, 2, 2),
    ]
    assert len(out.zones[0].attributes[ZONE_ATTRIBUTE].split(",")) == 8  # gpu-1's other partitions still fit


NIC = "nic.sim.knuma.io"
SHARED = resource_slices("nic-0", BUILTIN_SHAPES["shared-nic"])
"""One 100G NIC per zone, shared: each allocation takes 10G to 100G of bandwidth, in 10G steps."""


def share(
    device: str, bandwidth: str | None, share_id: str = "6f1c2e4a-0000-4000-8000-000000000001"
) -> dict[str, object]:
    result: dict[str, object] = {"request": "nic", "driver": NIC, "pool": "nic-0", "device": device}
    if bandwidth is not None:
        result["consumedCapacity"] = {"bandwidth": bandwidth}
        result["shareID"] = share_id
    return {"status": {"allocation": {"devices": {"results": [result]}}}}


def nics(claims: list[dict[str, object]]) -> tuple[dict[str, ZoneDevice], list[ResourceInfo]]:
    zones = zone_devices(SHARED, claims, "nic-0")
    cpu = ResourceInfo("cpu", 32000, 31000, 31000)
    nrt = NodeResourceTopology("nic-0", (Zone("node-0", resources=(cpu,)), Zone("node-1", resources=(cpu,))))
    out = with_dra_devices(nrt, zones)
    counted = [{r.name: r for r in zone.resources}[f"{NIC}/devices"] for zone in out.zones]
    return {d.device: d for ds in zones.values() for d in ds}, counted


def test_a_shared_nic_with_bandwidth_left_stays_available() -> None:
    """nic-0 carries two shares (40G + 30G: 30G left, more than the 10G minimum): allocated, yet free and counted
    available; nic-1 untouched."""
    devices, counted = nics([share("nic-0", "40G"), share("nic-0", "30G", "6f1c2e4a-0000-4000-8000-000000000002")])
    assert devices["nic-0"] == ZoneDevice(NIC, "nic-0", True, allocated=True, shared=True)
    assert devices["nic-1"] == ZoneDevice(NIC, "nic-1", True, shared=True)
    assert counted == [ResourceInfo(f"{NIC}/devices", 1, 1, 1), ResourceInfo(f"{NIC}/devices", 1, 1, 1)]


def test_a_shared_nic_is_used_up_when_its_bandwidth_is_and_free_again_when_a_share_goes() -> None:
    """nic-1's shares take 60G + 40G, all of its 100G: neither free nor available. Its 40G claim gone, it is again."""
    claims = [share("nic-1", "60G"), share("nic-1", "40G", "6f1c2e4a-0000-4000-8000-000000000002")]
    devices, counted = nics(claims)
    assert not devices["nic-1"].free and devices["nic-1"].allocated
    assert counted == [ResourceInfo(f"{NIC}/devices", 1, 1, 1), ResourceInfo(f"{NIC}/devices", 1, 1, 0)]
    devices, counted = nics(claims[:1])
    assert devices["nic-1"].free and devices["nic-1"].allocated
    assert counted[1] == ResourceInfo(f"{NIC}/devices", 1, 1, 1)


def test_a_shared_device_with_less_left_than_its_smallest_valid_value_is_used_up() -> None:
    """validValues 30G, 50G on 100G: after 50G + 30G the 20G left is below what any allocation takes (a request is
    rounded up to a valid value), so the device is used up though not full."""
    policy = {"default": "30G", "validValues": ["30G", "50G"]}
    group = {
        "driver": NIC,
        "prefix": "nic",
        "perZone": 1,
        "model": "e810",
        "shared": True,
        "capacity": {"bandwidth": {"value": "100G", "requestPolicy": policy}},
    }
    box = shape_from_dict("box", {"numaZones": 1, "cpusPerZone": 4, "memoryPerZone": "8Gi", "dra": [group]})
    slices = resource_slices("nic-0", box)
    first = share("nic-0", "50G")
    assert [d.free for d in zone_devices(slices, [first], "nic-0")[0]] == [True]
    second = share("nic-0", "30G", "6f1c2e4a-0000-4000-8000-000000000002")
    assert [d.free for d in zone_devices(slices, [first, second], "nic-0")[0]] == [False]


def test_a_result_without_a_share_id_holds_even_a_shared_device_alone() -> None:
    """As the scheduler's `foreachAllocatedDevice`: only a result with a `shareID` is a share."""
    devices, counted = nics([share("nic-1", None)])
    assert devices["nic-1"] == ZoneDevice(NIC, "nic-1", False, allocated=True, shared=True)
    assert counted[1] == ResourceInfo(f"{NIC}/devices", 1, 1, 0)


def test_a_shared_device_with_a_share_draws_its_counters_once() -> None:
    """A shared NIC drawing on counters it shares with a partition of it: one share allocated takes the draw (as the
    allocator counts it), so the partition no longer fits, while the NIC itself still has room for more shares."""
    numa = {"resource.kubernetes.io/numaNode": {"int": 0}}
    draw = [{"counterSet": "port-0", "counters": {"lanes": {"value": "4"}}}]
    pool = {"name": "nic-0", "generation": 1, "resourceSliceCount": 2}
    devices = [
        {
            "name": "nic-0",
            "attributes": numa,
            "allowMultipleAllocations": True,
            "capacity": {"bandwidth": {"value": "100G"}},
            "consumesCounters": draw,
        },
        {"name": "nic-0-half", "attributes": numa, "consumesCounters": draw},
    ]
    slices = [
        {"metadata": {"name": "d"}, "spec": {"driver": NIC, "nodeName": "nic-0", "pool": pool, "devices": devices}},
        {
            "metadata": {"name": "c"},
            "spec": {
                "driver": NIC,
                "nodeName": "nic-0",
                "pool": pool,
                "sharedCounters": [{"name": "port-0", "counters": {"lanes": {"value": "4"}}}],
            },
        },
    ]
    free = {d.device: d.free for d in zone_devices(slices, [], "nic-0")[0]}
    assert free == {"nic-0": True, "nic-0-half": True}
    free = {d.device: d.free for d in zone_devices(slices, [share("nic-0", "10G")], "nic-0")[0]}
    assert free == {"nic-0": True, "nic-0-half": False}
