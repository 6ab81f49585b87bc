"""Stranded CPUs: the free CPUs of a NUMA zone that no combination of the workload's exclusive CPU sizes can use.

The CPU manager pins whole CPUs of one zone to a Guaranteed container. When the pods come in a few sizes, a zone's
leftover matters more than its amount: with pods of 3, 5, 6, 7 and 10 CPUs, a zone left with 4 free CPUs can take
one 3-CPU pod and strands the last CPU, and one left with 2 strands both, while 8 (5 + 3) can be filled exactly.
Bin packing alone (`KnumaBinPacking` without this term) leaves such remainders in most zones of a full cluster; the
`fragmented` simulator scenario lost 8 of 239 pods to them. An online scheduler cannot know the future pods, but it
sees the sizes of the recent ones: `CPUDemand` keeps them (a window of the last `WINDOW` pods), and
`stranding_penalty` charges a placement for the CPUs it strands, relative to the zone's size.

Zones with devices are exempt: there the devices are the scarce resource and the CPUs are provisioned for the
device pods; charging their CPU remainders packed GPUs worse in the `devices` scenario. Their remainders are charged
in devices instead (`knuma.scheduler.plugins.device_stranding`: GPUs left without the CPUs or memory any recent
device pod needs), from the device pod shapes `CPUDemand.devices` keeps.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import numpy.typing as npt

from knuma.api.pod import ContainerKind, Pod
from knuma.api.resources import CPU
from knuma.scheduler.plugins.device_stranding import DeviceDemand
from knuma.topology.node import NodeTopology, NUMAZone, is_device

__all__ = ["STRANDING_WEIGHT", "WINDOW", "CPUDemand", "exclusive_cpu_sizes", "stranding_penalty", "zone_strands_cpus"]

WINDOW = 1000
"""Pods whose sizes `CPUDemand` remembers (the most recent ones, each counted once however often it is retried)."""
STRANDING_WEIGHT = 3
"""Score points per percent of a zone's CPUs stranded: one stranded CPU of a 12-CPU zone costs 25 of the 100 points
the packing term gives, about what using a quarter of the node's CPUs earns."""


def exclusive_cpu_sizes(pod: Pod) -> tuple[int, ...]:
    """Whole CPUs each long-running container of a Guaranteed pod pins (app and sidecar containers with integral
    CPUs; init containers end before the app starts). Pod-scope alignment asks for their sum, which is a sum of
    sizes too."""
    long_running = (c for c in pod.all_containers if c.kind is not ContainerKind.INIT)
    return tuple(cpus for cpus in map(pod.exclusive_cpus, long_running) if cpus)


class CPUDemand:
    """The exclusive CPU sizes of the last `window` Guaranteed pods the scheduler saw, and what they can fill.

    `fill(g)` is the largest sum of sizes (each usable any number of times) not above `g`; a zone with `g` free
    CPUs strands `g - fill(g)`. With no sizes seen, nothing is stranded (no information, no penalty). `version`
    changes whenever the set of sizes does, so cached scores know when to recompute."""

    def __init__(self, window: int = WINDOW) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1 pod, got {window}")
        self.window = window
        self.version = 0
        self._pods: OrderedDict[str, tuple[int, ...]] = OrderedDict()
        self._counts: dict[int, int] = {}
        self._fill: npt.NDArray[np.int64] = np.zeros(1, dtype=np.int64)
        self._fill_version = -1
        self._sizes_version = 0
        """Changes with the CPU sizes only (`version` also with the device shapes): when the fill table is stale."""
        self.devices = DeviceDemand(window)
        """The device pods' shapes (`knuma.scheduler.plugins.device_stranding`), observed with the CPU sizes."""

    @property
    def sizes(self) -> frozenset[int]:
        return frozenset(self._counts)

    def observe(self, pod: Pod) -> None:
        """Remember `pod`'s sizes (once per pod: retries and every node of a cycle call this)."""
        if self.devices.observe(pod):
            self.version += 1
        key = pod.uid or pod.key
        if key in self._pods:
            return
        sizes = exclusive_cpu_sizes(pod)
        if not sizes:
            return
        before = set(self._counts)
        self._pods[key] = sizes
        for size in sizes:
            self._counts[size] = self._counts.get(size, 0) + 1
        if len(self._pods) > self.window:
            _, gone = self._pods.popitem(last=False)
            for size in gone:
                self._counts[size] -= 1
                if not self._counts[size]:
                    del self._counts[size]
        if self._counts.keys() != before:
            self.version += 1
            self._sizes_version += 1

    def fill_table(self, up_to: int) -> npt.NDArray[np.int64]:
        """`fill(g)` for every `g` in `0..up_to` (at least; the table grows as needed and is shared)."""
        if self._fill_version != self._sizes_version or len(self._fill) <= up_to:
            length = max(len(self._fill) - 1, 64)
            while length < up_to:
                length *= 2
            self._fill = _fill_table(self.sizes, length)
            self._fill_version = self._sizes_version
        return self._fill

    def stranded(self, free: int) -> int:
        """CPUs of a zone with `free` whole CPUs that no sum of sizes fills."""
        if free <= 0 or not self._counts:
            return 0
        return free - int(self.fill_table(free)[free])


def _fill_table(sizes: frozenset[int], up_to: int) -> npt.NDArray[np.int64]:
    """Unbounded knapsack reachability over `sizes`, as the largest reachable sum <= g for each g."""
    reachable = np.zeros(up_to + 1, dtype=np.bool_)
    reachable[0] = True
    if not sizes:
        reachable[:] = True
    for g in range(1, up_to + 1):
        reachable[g] = reachable[g] or any(size <= g and reachable[g - size] for size in sizes)
    indices = np.where(reachable, np.arange(up_to + 1), 0)
    return np.maximum.accumulate(indices).astype(np.int64)


def zone_strands_cpus(zone: NUMAZone) -> bool:
    """Whether CPU remainders count on this zone: it has CPUs and no devices."""
    return zone.total(CPU) >= 1000 and not any(is_device(name) and zone.total(name) > 0 for name in zone.capacity)


def stranding_penalty(before: NodeTopology, after: NodeTopology, demand: CPUDemand) -> int:
    """Score points a placement loses for the CPUs it strands: per zone whose free CPUs it changes, the increase
    in stranded CPUs as a share of the zone's CPUs, times `STRANDING_WEIGHT` (integer arithmetic, zone by zone, as
    the vectorised path computes it)."""
    if not demand.sizes:
        return 0
    penalty = 0
    for old, new in zip(before.zones, after.zones, strict=True):
        free_before = old.available.get(CPU, 0) // 1000
        free_after = new.available.get(CPU, 0) // 1000
        if free_before == free_after or not zone_strands_cpus(old):
            continue
        added = demand.stranded(free_after) - demand.stranded(free_before)
        if added > 0:
            penalty += STRANDING_WEIGHT * 100 * added // (old.total(CPU) // 1000)
    return penalty
