"""DRA devices per NUMA zone in the NodeResourceTopology: a knuma extension of the NRT object.

The NRT CRD counts device-plugin resources per zone; DRA devices (ResourceSlices) are invisible to it, so users of
scheduler-plugins' NodeResourceTopologyMatch, `kubectl get nrt` and dashboards see no GPU where a DRA driver
publishes them. With this extension every zone also lists, per DRA driver, the node's devices whose
`resource.kubernetes.io/numaNode` is that zone:

- a resource `<driver>/devices` (e.g. `gpu.sim.knuma.io/devices`): capacity = allocatable = the devices published,
  available = those not in an allocated ResourceClaim (a claim's results name driver, pool and device). A
  partitionable device (a GPU published whole and as partitions drawing on one counter set,
  `knuma.devices.counters.physical_devices`) counts once, and is available while nothing of it is allocated: a zone
  with one MIG-capable GPU has 1 device, not the ten ways of cutting it;
- a zone attribute `knuma.io/dra-devices`: the free devices as `driver/device`, comma-separated, sorted; a
  partition is free while its draws still fit in what is left of its shared counters (a GPU given out whole leaves
  none of its partitions free, one 3g.40gb partition taken leaves the others that still fit).

No pod requests `<driver>/devices` as an extended resource, so NodeResourceTopologyMatch's filter and score (which
look only at what a pod requests) are unchanged by it. Devices without a NUMA node (or with a list, whose first entry
is the device's own node) are listed under their node when it is a zone of the NRT, else left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from knuma.api.dra.resourceslice import ResourceSlice
from knuma.api.nrt import NodeResourceTopology, ResourceInfo
from knuma.devices.counters import Counters, physical_devices
from knuma.errors import KnumaError

__all__ = ["ZONE_ATTRIBUTE", "ZoneDevice", "with_dra_devices", "zone_devices"]

ZONE_ATTRIBUTE = "knuma.io/dra-devices"
NUMA_ATTRIBUTE = "resource.kubernetes.io/numaNode"


@dataclass(frozen=True, slots=True, order=True)
class ZoneDevice:
    driver: str
    device: str
    free: bool
    hardware: str = ""
    """`pool/counter set` a partitionable device shares with its other cuts ("": the device is its own hardware)."""
    allocated: bool = False
    """In an allocated claim (a free partition's hardware may still be partly allocated)."""

    @property
    def unit(self) -> tuple[str, str]:
        """The piece of hardware `<driver>/devices` counts it under."""
        return self.driver, self.hardware or self.device


def _numa(attributes: Mapping[str, Any]) -> int | None:
    value = attributes.get(NUMA_ATTRIBUTE)
    if not isinstance(value, Mapping):
        return None
    raw = value.get("int")
    if raw is None and isinstance(value.get("list"), list) and value["list"]:  # the distance-ordered list form
        raw = value["list"][0]
    return raw if isinstance(raw, int) and not isinstance(raw, bool) else None


def zone_devices(
    slices: Iterable[Mapping[str, Any]], claims: Iterable[Mapping[str, Any]], node: str
) -> dict[int, list[ZoneDevice]]:
    """NUMA id -> the node's DRA devices (from slices with `spec.nodeName == node`), free or not."""
    taken = {
        (r.get("driver"), r.get("pool"), r.get("device"))
        for claim in claims
        for r in (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    }
    mine = [body for body in slices if (body.get("spec") or {}).get("nodeName") == node]
    parsed = _parsed(mine)
    counters = Counters.of(parsed, taken) if parsed else None
    hardware = physical_devices(parsed) if parsed else {}
    out: dict[int, list[ZoneDevice]] = {}
    for body in mine:
        spec = body.get("spec") or {}
        driver, pool = spec.get("driver"), (spec.get("pool") or {}).get("name")
        for device in spec.get("devices") or []:
            numa = _numa(device.get("attributes") or {})
            if numa is None:
                continue
            key = (str(driver), str(pool), str(device.get("name")))
            allocated = key in taken
            free = not allocated and (counters is None or counters.fits((key,)))
            shared = hardware.get(key)
            out.setdefault(numa, []).append(
                ZoneDevice(
                    str(driver), str(device.get("name")), free, "/".join(shared[1:]) if shared else "", allocated
                )
            )
    return {numa: sorted(devices) for numa, devices in out.items()}


def _parsed(slices: list[Mapping[str, Any]]) -> list[ResourceSlice]:
    """The node's slices parsed, when some share counters (partitionable devices); else [] (nothing to group)."""
    if not any((body.get("spec") or {}).get("sharedCounters") for body in slices):
        return []
    try:
        return [ResourceSlice.from_dict(body) for body in slices]
    except KnumaError:
        return []  # an invalid slice gives no devices to the allocator either; count devices only


def with_dra_devices(nrt: NodeResourceTopology, devices: Mapping[int, list[ZoneDevice]]) -> NodeResourceTopology:
    """`nrt` with each zone's DRA devices added (zones named `node-<id>`); unchanged without devices."""
    if not devices:
        return nrt
    zones = []
    for zone in nrt.zones:
        numa = int(zone.name.rsplit("-", 1)[-1]) if zone.name.rsplit("-", 1)[-1].isdigit() else None
        here = devices.get(numa) if numa is not None else None
        if not here:
            zones.append(zone)
            continue
        units = {d.unit for d in here}
        used = {d.unit for d in here if d.allocated}
        drivers = sorted({d.driver for d in here})
        added = tuple(
            ResourceInfo(
                f"{driver}/devices",
                sum(1 for unit in units if unit[0] == driver),
                sum(1 for unit in units if unit[0] == driver),
                sum(1 for unit in units - used if unit[0] == driver),
            )
            for driver in drivers
        )
        free = ",".join(f"{d.driver}/{d.device}" for d in here if d.free)
        resources = tuple(sorted((*zone.resources, *added), key=lambda r: r.name))
        zones.append(replace(zone, resources=resources, attributes={**zone.attributes, ZONE_ATTRIBUTE: free}))
    return replace(nrt, zones=tuple(zones))
