"""DRA devices in the NUMA zones the scheduler scores: `<driver>/devices` per zone, from the scheduler's own claims.

`KnumaBinPacking`'s device term (`knuma.scheduler.plugins.device_stranding`) charges a placement for the devices it
leaves a zone without the CPUs or memory the recent device pods need with them. It reads devices as zone resources,
which device-plugin devices are (the NRT lists them) and DRA devices are not: with DRA, a pod without claims took
the CPUs of a NUMA node whose GPUs then stayed free for want of CPUs (scenario `dra` oversubscribed, 43 pods placed
where 53 fit). Here DRA devices become zone resources under the names knuma's exporter publishes with
`--dra-devices` (`knuma.exporter.dra.with_dra_devices`: `<driver>/devices`, capacity = allocatable = the node's
devices on that NUMA node, available = the free ones), but counted from the scheduler's `DeviceState`: allocated
claims and the allocations still in flight (Reserve before PreBind), which the exporter cannot see yet. The
scheduler's count replaces a published one.

A claim pod's share of the mix is what its claims were allocated, per driver (`claimed_devices`): the shape
`DeviceDemand` remembers is those counts with its CPUs and memory, the same shape a device-plugin pod has.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from knuma.api.dra.resourceclaim import AllocationResult
from knuma.api.pod import Pod
from knuma.topology.node import NodeTopology, NUMAZone

__all__ = ["ZoneDevices", "claimed_devices", "device_resource", "has_claims", "with_zone_devices"]

ZoneDevices = Mapping[int, Mapping[str, tuple[int, int]]]
"""NUMA node -> {`<driver>/devices`: (devices on that NUMA node, free ones)}."""


def device_resource(driver: str) -> str:
    """The zone resource a driver's devices count under (`knuma.exporter.dra`'s name)."""
    return f"{driver}/devices"


def has_claims(pod: Pod) -> bool:
    """The pod has ResourceClaims: its DRA devices are allocated by DynamicResources, not held in the zones the
    kubelet model predicts, so `KnumaBinPacking` leaves its device stranding out (both paths)."""
    return bool(pod.spec.get("resourceClaims"))


def claimed_devices(allocations: Iterable[AllocationResult]) -> dict[str, int]:
    """`<driver>/devices` -> devices the allocations hold (admin access takes none: it shares a device in use)."""
    out: dict[str, int] = {}
    for allocation in allocations:
        for result in allocation.results:
            if not result.admin_access:
                name = device_resource(result.driver)
                out[name] = out.get(name, 0) + 1
    return out


def with_zone_devices(topology: NodeTopology, devices: ZoneDevices) -> NodeTopology:
    """`topology` with each zone's DRA device counts set (replacing published ones; zones without DRA devices keep
    what they had). Unchanged (the same object) when `devices` is empty."""
    if not devices:
        return topology
    zones = []
    for zone in topology.zones:
        here = devices.get(zone.id)
        if not here:
            zones.append(zone)
            continue
        capacity, allocatable, available = dict(zone.capacity), dict(zone.allocatable), dict(zone.available)
        for name, (total, free) in here.items():
            capacity[name] = allocatable[name] = total
            available[name] = free
        zones.append(NUMAZone(zone.id, capacity, allocatable, available, zone.distances))
    return replace(topology, zones=tuple(zones))
