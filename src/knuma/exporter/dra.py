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

A shared device (`allowMultipleAllocations`, consumable capacity, KEP-5075) is held by many claims at once, each taking
part of its capacities (a result's `consumedCapacity`, with a `shareID`). It counts as available, and is listed free,
while one more allocation still fits: for every capacity, what is left after the shares (their `consumedCapacity`
summed) is at least the least an allocation can take under the capacity's request policy (the first of `validValues`,
the `validRange` minimum) and more than nothing (`knuma.devices.capacity.has_room`, which the scheduler's per-zone
count uses too). The allocator decides whether a given request fits (`CmpRequestOverCapacity`,
`knuma.devices.capacity.consumption`); this says only that the device is not used up. Results are
split as the scheduler's allocated-device tracking splits them (`foreachAllocatedDevice`,
`pkg/scheduler/framework/plugins/dynamicresources/allocateddevices.go`): one with a `shareID` is a share, adding its
consumed capacity to the device; one without holds the device alone; one with `adminAccess` (a monitoring tool's view
of a device other claims may hold) is no allocation at all. Upstream publishes no per-NUMA view of DRA devices
at all (the NRT CRD does not know them); this follows the scheduler's notion of a device still available. A shared
device that also draws on shared counters (partitionable) draws once while any share is allocated, as the allocator
counts it.

No pod requests `<driver>/devices` as an extended resource, so NodeResourceTopologyMatch's filter and score (which
look only at what a pod requests) are unchanged by it. Devices without a NUMA node (or with a list, whose first entry
is the device's own node) are listed under their node when it is a zone of the NRT, else left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from knuma.api.dra.device import Device, parse_device
from knuma.api.dra.fields import FieldErrors
from knuma.api.dra.resourceslice import ResourceSlice
from knuma.api.nrt import NodeResourceTopology, ResourceInfo
from knuma.devices.capacity import has_room
from knuma.devices.counters import Counters, physical_devices
from knuma.errors import KnumaError
from knuma.quantity import QuantityError, parse_quantity

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
    """In an allocated claim (a free partition's hardware may still be partly allocated, a free shared device
    partly consumed)."""
    shared: bool = False
    """Allows multiple allocations: `allocated` by some claims, it may still be `free` for one more."""

    @property
    def used_up(self) -> bool:
        """Counts against `<driver>/devices` available: allocated, and for a shared device, with no room left."""
        return self.allocated and not (self.shared and self.free)

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
    taken, consumed = _allocated(claims)
    mine = [body for body in slices if (body.get("spec") or {}).get("nodeName") == node]
    parsed = _parsed(mine)
    # a shared device draws its counters once while any share of it is allocated, as the allocator counts it
    counters = Counters.of(parsed, taken, consumed.keys()) if parsed else None
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
            multiple = device.get("allowMultipleAllocations") is True
            # a share of a device that does not allow multiple allocations is no state the scheduler writes: counted
            # as held, the safe side
            allocated = key in taken or key in consumed
            if multiple:
                free = key not in taken and _room(device, consumed.get(key, {}))
            else:
                free = not allocated and (counters is None or counters.fits((key,)))
            cut = hardware.get(key)
            out.setdefault(numa, []).append(
                ZoneDevice(
                    str(driver),
                    str(device.get("name")),
                    free,
                    "/".join(cut[1:]) if cut else "",
                    allocated,
                    multiple,
                )
            )
    return {numa: sorted(devices) for numa, devices in out.items()}


DeviceKey = tuple[str, str, str]
"""(driver, pool, device)."""


def _allocated(claims: Iterable[Mapping[str, Any]]) -> tuple[set[DeviceKey], dict[DeviceKey, dict[str, int]]]:
    """Devices held alone, and per shared device what its shares consume (capacity name -> nanos), from the claims'
    allocation results (`foreachAllocatedDevice`: a result with a `shareID` is a share, one with `adminAccess` is
    skipped)."""
    taken: set[DeviceKey] = set()
    consumed: dict[DeviceKey, dict[str, int]] = {}
    for claim in claims:
        results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        for result in results:
            if result.get("adminAccess") is True:
                continue  # monitoring access to a device others hold: not an allocation (`foreachAllocatedDevice`)
            key = (str(result.get("driver")), str(result.get("pool")), str(result.get("device")))
            if not result.get("shareID"):
                taken.add(key)
                continue
            amounts = consumed.setdefault(key, {})
            for name, amount in (result.get("consumedCapacity") or {}).items():
                try:
                    amounts[str(name)] = amounts.get(str(name), 0) + parse_quantity(amount).nanos
                except QuantityError:
                    continue  # the API server rejects such a status; nothing to add
    return taken, consumed


def _room(raw: Mapping[str, Any], consumed: Mapping[str, int]) -> bool:
    """Whether one more allocation of the shared device `raw` (a slice's device entry) fits beside `consumed`: every
    capacity has something left, and at least the least one allocation takes under its request policy (the smallest
    of `validValues`, the `validRange` minimum; `calculateConsumedCapacity` rounds any request up to those). A device
    the API server would not accept has room while nothing of it is consumed."""
    errors = FieldErrors()
    device: Device | None = parse_device(raw, "device", errors, per_device_selection=False)
    if device is None or errors.errors:
        return not any(consumed.values())
    return has_room(device, consumed)


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
        used = {d.unit for d in here if d.used_up}
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
