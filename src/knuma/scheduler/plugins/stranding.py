"""Stranded CPUs: the free CPUs of a NUMA zone the workload's exclusive CPU sizes are not expected to use.

The CPU manager pins whole CPUs of one zone to a Guaranteed container. When the pods come in a few sizes, a zone's
leftover matters more than its amount: with pods of 3, 5, 6, 7 and 10 CPUs, a zone left with 4 free CPUs can take
one 3-CPU pod and strands the last CPU, and one left with 2 strands both, while 8 (5 + 3) can be filled exactly.
Bin packing alone (`KnumaBinPacking` without this term) leaves such remainders in most zones of a full cluster; the
`fragmented` simulator scenario lost 8 of 239 pods to them. An online scheduler cannot know the future pods, but it
sees the sizes of the recent ones and how often each came: `CPUDemand` keeps them (a window of the last `WINDOW`
pods).

Whether *some* sum of sizes fills a remainder is not enough: 8 = 5 + 3 only if a 3 comes before a 5 or a 6 takes
the zone down to 3 or 2. `CPUDemand.expected_stranded` is the CPUs a zone is expected to strand if it keeps
receiving pods drawn from the recent mix (each size that still fits, as often as it was seen) until none fits:
`E(g) = g` when no size fits in `g` free CPUs, `E(g) = 0` when `g` is itself one of the sizes, else the mean of
`E(g - s)` over the sizes `s <= g`, weighted by their counts. A remainder equal to a recent size is taken as filled
because the zone is not alone: `KnumaBinPacking` sends a pod to where it leaves the least expected stranding, so a
pod of that size goes to the zone it fills exactly, and smaller pods go to the remainders they fill, not into it
(the zone waits for its size instead of taking whatever fits first). Without that rule a 12-CPU zone holding a
7-CPU pod counted its 5 free CPUs as 0.66 stranded under the `fragmented` mix, barely better than the 1 of a
6 + 5 pair, and knuma paired 6s with 5s in 12-CPU zones (13 zones at seed 7, one CPU stranded in each): the
scenario placed 98.5% of the optimum over seeds 0-29 with six seeds below 98%, and 99.3% with one after. The rule
does not weigh how often the size came: a size seen once in the window makes its remainders count as filled. `E` is
never below the CPUs no sum of sizes fills (`g - max sum <= g`). `stranding_penalty` charges a placement for the
change in expected stranded CPUs of the zones it takes from, relative to the zone's size, and credits it when that
change is negative (a placement that leaves its zone easier to fill exactly than before).

Zones with devices are exempt: there the devices are the scarce resource and the CPUs are provisioned for the
device pods; charging their CPU remainders packed GPUs worse in the `devices` scenario. Their remainders are charged
in devices instead (`knuma.scheduler.plugins.device_stranding`: GPUs left without the CPUs or memory any recent
device pod needs), from the device pod shapes `CPUDemand.devices` keeps.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Mapping

import numpy as np
import numpy.typing as npt

from knuma.api.pod import ContainerKind, Pod
from knuma.api.resources import CPU
from knuma.scheduler.plugins.device_stranding import MIX_REFRESH, STRANDED_UNIT, DeviceDemand
from knuma.topology.node import NodeTopology, NUMAZone, is_device

__all__ = [
    "MIX_REFRESH",
    "STRANDED_UNIT",
    "STRANDING_WEIGHT",
    "WINDOW",
    "CPUDemand",
    "exclusive_cpu_sizes",
    "expected_stranded_table",
    "stranding_penalty",
    "zone_strands_cpus",
]

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


def expected_stranded_table(mix: Mapping[int, int], up_to: int) -> npt.NDArray[np.int64]:
    """`E(g)` for `g` in `0..up_to`, in `STRANDED_UNIT`s: the CPUs a zone with `g` free CPUs is expected to strand
    when pods keep arriving with sizes drawn from `mix` (size -> how often it was seen), each placed there if it
    fits, until none fits; a remainder that is itself a size of the mix waits for a pod of that size and ends full
    (the scheduler sends that pod where it fits exactly). With an empty mix nothing is stranded (no information, no
    penalty)."""
    expected = np.zeros(up_to + 1, dtype=np.float64)
    if mix:
        sizes = sorted(mix)
        for free in range(1, up_to + 1):
            fitting = [size for size in sizes if size <= free]
            if not fitting:
                expected[free] = free
                continue
            if free in mix:
                continue  # filled exactly by a pod of its size: E = 0
            weight = sum(mix[size] for size in fitting)
            expected[free] = sum(mix[size] * expected[free - size] for size in fitting) / weight
    return np.rint(expected * STRANDED_UNIT).astype(np.int64)


class CPUDemand:
    """The exclusive CPU sizes of the last `window` Guaranteed pods the scheduler saw, how often each came, and the
    CPUs a zone remainder is expected to strand under that mix.

    `expected_stranded(g)`: hundredths of a CPU a zone with `g` free CPUs is expected to strand
    (`expected_stranded_table`), from the mix as of the last refresh (`MIX_REFRESH`). `version` changes whenever
    the table or the device shapes do, so cached scores know when to recompute."""

    def __init__(self, window: int = WINDOW) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1 pod, got {window}")
        self.window = window
        self.version = 0
        self._pods: OrderedDict[str, tuple[int, ...]] = OrderedDict()
        self._counts: dict[int, int] = {}
        self._mix: dict[int, int] = {}
        """The counts the table was computed from."""
        self._since_refresh = 0
        self._table: npt.NDArray[np.int64] = expected_stranded_table({}, 64)
        self.devices = DeviceDemand(window)
        """The device pods' shapes (`knuma.scheduler.plugins.device_stranding`), observed with the CPU sizes."""

    @property
    def sizes(self) -> frozenset[int]:
        return frozenset(self._counts)

    @property
    def strands_nothing(self) -> bool:
        """The mix has a 1-CPU size: every remainder can end exactly full, so `expected_stranded` is 0 everywhere
        (the vectorised path skips the term)."""
        return 1 in self._mix

    @property
    def mix(self) -> dict[int, int]:
        """Size -> pods (containers) of that size the stranding table was computed from."""
        return dict(self._mix)

    def observe(self, pod: Pod, claimed: Mapping[str, int] | None = None, served: Collection[str] = ()) -> None:
        """Remember `pod`'s sizes (once per pod: retries and every node of a cycle call this); `claimed`: the DRA
        devices its claims were allocated, and `served`: its extended resources they provide, for its device shape
        (`DeviceDemand.observe`)."""
        if self.devices.observe(pod, claimed, served):
            self.version += 1
        key = pod.uid or pod.key
        if key in self._pods:
            return
        sizes = exclusive_cpu_sizes(pod)
        if not sizes:
            return
        self._pods[key] = sizes
        for size in sizes:
            self._counts[size] = self._counts.get(size, 0) + 1
        if len(self._pods) > self.window:
            _, gone = self._pods.popitem(last=False)
            for size in gone:
                self._counts[size] -= 1
                if not self._counts[size]:
                    del self._counts[size]
        self._since_refresh += 1
        if self._counts.keys() != self._mix.keys() or self._since_refresh * MIX_REFRESH >= len(self._pods):
            self._refresh()

    def _refresh(self) -> None:
        self._mix = dict(self._counts)
        self._since_refresh = 0
        table = expected_stranded_table(self._mix, len(self._table) - 1)
        if not np.array_equal(table, self._table):
            self._table = table
            self.version += 1

    def stranded_table(self, up_to: int) -> npt.NDArray[np.int64]:
        """`expected_stranded(g)` for every `g` in `0..up_to` (at least; the table grows as needed and is shared;
        growing it does not change the entries already there)."""
        if len(self._table) <= up_to:
            length = len(self._table) - 1
            while length < up_to:
                length *= 2
            self._table = expected_stranded_table(self._mix, length)
        return self._table

    def expected_stranded(self, free: int) -> int:
        """Hundredths of a CPU a zone with `free` whole CPUs is expected to strand."""
        if free <= 0:
            return 0
        return int(self.stranded_table(free)[free])


def zone_strands_cpus(zone: NUMAZone) -> bool:
    """Whether CPU remainders count on this zone: it has CPUs and no devices."""
    return zone.total(CPU) >= 1000 and not any(is_device(name) and zone.total(name) > 0 for name in zone.capacity)


def stranding_penalty(before: NodeTopology, after: NodeTopology, demand: CPUDemand) -> int:
    """Score points a placement loses for the CPUs it is expected to strand: per zone whose free CPUs it changes,
    the change in expected stranded CPUs as a share of the zone's CPUs, times `STRANDING_WEIGHT` (negative: a
    credit; integer arithmetic, zone by zone, as the vectorised path computes it)."""
    if not demand.sizes:
        return 0
    penalty = 0
    for old, new in zip(before.zones, after.zones, strict=True):
        free_before = old.available.get(CPU, 0) // 1000
        free_after = new.available.get(CPU, 0) // 1000
        if free_before == free_after or not zone_strands_cpus(old):
            continue
        added = demand.expected_stranded(free_after) - demand.expected_stranded(free_before)
        penalty += STRANDING_WEIGHT * added // (old.total(CPU) // 1000)
    return penalty
