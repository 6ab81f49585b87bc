"""Stranded devices: the free devices of a NUMA zone that no combination of the workload's device pods can use.

Under `single-numa-node` a device pod needs its devices *and* its exclusive CPUs, memory and hugepages from one zone.
A zone whose GPUs are free but whose CPUs or memory went to other pods (CPU-only pods, or device pods with a high
CPU-to-device ratio) keeps GPUs nobody can use: the `devices` simulator scenario lost pods that way although the
cluster had GPUs left. This is the device counterpart of `knuma.scheduler.plugins.stranding` (zones with devices are
exempt there): `DeviceDemand` keeps the shapes of the last `WINDOW` device pods (devices, whole CPUs, memory, ...
the pod requests of the NUMA-aligned resources), and a zone strands `free devices - usable(zone's free amounts)`
devices, where `usable` is the most devices a multiset of those shapes can take within the zone.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence

from knuma.api.pod import Pod
from knuma.api.resources import CPU, is_numa_affine
from knuma.topology.node import NodeTopology, NUMAZone, is_device

__all__ = [
    "DEVICE_STRANDING_WEIGHT",
    "DeviceDemand",
    "device_shape",
    "device_stranding_penalty",
    "zone_device_total",
    "zone_free",
]

WINDOW = 1000
"""Device pods whose shapes `DeviceDemand` remembers (the most recent ones, each counted once)."""
DEVICE_STRANDING_WEIGHT = 3
"""Score points per percent of a zone's devices stranded, as `STRANDING_WEIGHT` for CPUs: stranding one GPU of a
4-GPU zone costs 75 points, more than any difference in CPU packing between two nodes."""


def device_shape(pod: Pod) -> tuple[tuple[str, int], ...]:
    """What a device pod takes from its zone under single-numa-node: its devices and NUMA-aligned resources (whole
    CPUs), sorted by name; empty for a pod without devices."""
    request = pod.effective_request
    if not any(is_device(name) and amount > 0 for name, amount in request.items()):
        return ()
    shape = []
    for name, amount in sorted(request.items()):
        if amount <= 0:
            continue
        if is_device(name):
            shape.append((name, amount))
        elif pod.is_guaranteed and is_numa_affine(name):
            shape.append((name, amount // 1000 if name == CPU else amount))
    return tuple(shape)


def zone_free(available: Mapping[str, int], names: Sequence[str]) -> tuple[int, ...]:
    """A zone's free amounts on `names` (whole CPUs for cpu, as the CPU manager pins them)."""
    return tuple(available.get(name, 0) // 1000 if name == CPU else available.get(name, 0) for name in names)


def zone_device_total(zone: NUMAZone) -> int:
    """Devices the zone holds (0: not a device zone)."""
    return sum(zone.total(name) for name in zone.capacity if is_device(name))


class DeviceDemand:
    """The shapes of the last `window` device pods the scheduler saw, and what a zone's free amounts can hold.

    `names` are the resources any shape names (sorted); `stranded(free)` takes a zone's free amounts on `names`
    (`zone_free`). With no device pod seen, nothing is stranded. `version` changes whenever the set of shapes does."""

    def __init__(self, window: int = WINDOW) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1 pod, got {window}")
        self.window = window
        self.version = 0
        self._pods: OrderedDict[str, tuple[tuple[str, int], ...]] = OrderedDict()
        self._counts: dict[tuple[tuple[str, int], ...], int] = {}
        self.names: tuple[str, ...] = ()
        self._vectors: list[tuple[tuple[int, ...], int]] = []
        self._usable: dict[tuple[int, ...], int] = {}

    def __bool__(self) -> bool:
        return bool(self._counts)

    def observe(self, pod: Pod) -> bool:
        """Remember `pod`'s shape (once per pod); True when the set of shapes changed."""
        key = pod.uid or pod.key
        if key in self._pods:
            return False
        shape = device_shape(pod)
        if not shape:
            return False
        before = set(self._counts)
        self._pods[key] = shape
        self._counts[shape] = self._counts.get(shape, 0) + 1
        if len(self._pods) > self.window:
            _, gone = self._pods.popitem(last=False)
            self._counts[gone] -= 1
            if not self._counts[gone]:
                del self._counts[gone]
        if self._counts.keys() == before:
            return False
        self.version += 1
        self.names = tuple(sorted({name for shape in self._counts for name, _ in shape}))
        self._vectors = []
        for shape in self._counts:
            amounts = dict(shape)
            devices = sum(amount for name, amount in shape if is_device(name))
            self._vectors.append((tuple(amounts.get(name, 0) for name in self.names), devices))
        self._usable = {}
        return True

    def stranded(self, free: tuple[int, ...]) -> int:
        """Free devices of a zone with these free amounts that no multiset of the shapes can use."""
        if not self._vectors:
            return 0
        devices = sum(amount for name, amount in zip(self.names, free, strict=True) if is_device(name))
        return max(0, devices - self._most_devices(free))

    def _most_devices(self, free: tuple[int, ...]) -> int:
        """Unbounded multi-dimensional knapsack: the most devices shapes can take within `free` (every shape takes
        at least one device, so the depth is at most the zone's free devices)."""
        known = self._usable.get(free)
        if known is not None:
            return known
        best = 0
        for vector, devices in self._vectors:
            if all(need <= have for need, have in zip(vector, free, strict=True)):
                rest = tuple(have - need for need, have in zip(vector, free, strict=True))
                best = max(best, devices + self._most_devices(rest))
        self._usable[free] = best
        return best


def device_stranding_penalty(before: NodeTopology, after: NodeTopology, demand: DeviceDemand) -> int:
    """Score points a placement loses for the devices it strands: per device zone whose free amounts it changes, the
    increase in stranded devices as a share of the zone's devices, times `DEVICE_STRANDING_WEIGHT` (integer
    arithmetic, zone by zone, as the vectorised path computes it)."""
    if not demand:
        return 0
    penalty = 0
    for old, new in zip(before.zones, after.zones, strict=True):
        devices = zone_device_total(old)
        if devices <= 0:
            continue
        free_before = zone_free(old.available, demand.names)
        free_after = zone_free(new.available, demand.names)
        if free_before == free_after:
            continue
        added = demand.stranded(free_after) - demand.stranded(free_before)
        if added > 0:
            penalty += DEVICE_STRANDING_WEIGHT * 100 * added // devices
    return penalty
