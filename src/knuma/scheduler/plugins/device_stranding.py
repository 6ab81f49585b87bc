"""Stranded devices: the free devices of a NUMA zone the workload's device pods are not expected to use.

Under `single-numa-node` a device pod needs its devices *and* its exclusive CPUs, memory and hugepages from one zone.
A zone whose GPUs are free but whose CPUs or memory went to other pods (CPU-only pods, or device pods with a high
CPU-to-device ratio) keeps GPUs nobody can use: the `devices` simulator scenario lost pods that way although the
cluster had GPUs left. This is the device counterpart of `knuma.scheduler.plugins.stranding` (zones with devices are
exempt there), with the same expectation: `DeviceDemand` keeps the shapes of the last `WINDOW` device pods (devices,
whole CPUs, memory, ... the pod requests of the NUMA-aligned resources) and how often each came, and a zone is
expected to strand `E(free)` devices: its free devices when no shape fits in its free amounts, else the
count-weighted mean of `E(free - shape)` over the shapes that fit (the zone keeps receiving device pods drawn from
the recent mix until none fits). A CPU-only pod that leaves a GPU zone 31 CPUs where 1-GPU pods of 8 CPUs are
common strands a GPU in expectation, although a 4-GPU pod of 24 CPUs could still use all four: whether *some*
multiset of shapes uses every device (the previous rule) missed that, and CPU-only pods took the GPU zones' CPUs.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping, Sequence

from knuma.api.pod import Pod
from knuma.api.resources import CPU, is_numa_affine
from knuma.topology.node import NodeTopology, NUMAZone, is_device

__all__ = [
    "DEVICE_STRANDING_WEIGHT",
    "GAP_WEIGHT",
    "MIX_REFRESH",
    "STRANDED_UNIT",
    "DeviceDemand",
    "ZoneChange",
    "device_shape",
    "device_stranding_penalty",
    "gap_counts",
    "gap_penalty",
    "stranding_charge",
    "zone_changes",
    "zone_device_free",
    "zone_device_total",
    "zone_free",
]

WINDOW = 1000
"""Device pods whose shapes `DeviceDemand` remembers (the most recent ones, each counted once)."""
DEVICE_STRANDING_WEIGHT = 3
"""Score points per percent of a zone's devices stranded, as `STRANDING_WEIGHT` for CPUs: stranding one GPU of a
4-GPU zone costs 75 points, more than any difference in CPU packing between two nodes."""
GAP_WEIGHT = 10
"""Score points per unit of change in the sum of squares of the device gap counts (`gap_penalty`). Measured on the
`devices` scenario (docs/placement.md): every weight from 2 to 20 placed more pods than none at seeds 0-59 and
fewer at none; 10 left no seed of 0-89 below 98% of the optimum. Creating a gap size two other zones already have
costs 50 points, less than stranding a GPU of a 4-GPU zone in expectation (75): the expectation decides first."""
STRANDED_UNIT = 100
"""Expected stranded CPUs and devices are counted in hundredths (integers, so that the plugin and the vectorised
path compute the same scores)."""
MIX_REFRESH = 10
"""The expectations follow the window's mix of sizes and shapes when the set of sizes (shapes) changes, and otherwise
once the pods seen since the mix was last read reach 1/MIX_REFRESH of the window's pods: a change may invalidate every
cached score (the vectorised path re-evaluates its rows), and the mix of the last thousand pods drifts slowly."""


def device_shape(
    pod: Pod, claimed: Mapping[str, int] | None = None, served: Collection[str] = ()
) -> tuple[tuple[str, int], ...]:
    """What a device pod takes from its zone under single-numa-node: its devices and NUMA-aligned resources (whole
    CPUs), sorted by name; empty for a pod without devices. `claimed`: the DRA devices its claims were allocated
    (`knuma.scheduler.plugins.dra_zones.claimed_devices`, `<driver>/devices` -> count), which its requests do not
    name. `served`: its extended resources those claims provide (KEP-5004), which its requests name but no zone
    holds: the claimed devices stand for them."""
    request = {name: amount for name, amount in pod.effective_request.items() if name not in served}
    for name, amount in (claimed or {}).items():
        request[name] = request.get(name, 0) + amount
    if not any(is_device(name) and amount > 0 for name, amount in request.items()):
        return ()
    shape = []
    for name, amount in sorted(request.items()):
        if amount <= 0:
            continue
        if is_device(name):
            shape.append((name, amount))
        elif pod.pinned_by_managers and is_numa_affine(name):
            shape.append((name, amount // 1000 if name == CPU else amount))
    return tuple(shape)


def zone_free(available: Mapping[str, int], names: Sequence[str]) -> tuple[int, ...]:
    """A zone's free amounts on `names` (whole CPUs for cpu, as the CPU manager pins them)."""
    return tuple(available.get(name, 0) // 1000 if name == CPU else available.get(name, 0) for name in names)


def zone_device_total(zone: NUMAZone) -> int:
    """Devices the zone holds (0: not a device zone)."""
    return sum(zone.total(name) for name in zone.capacity if is_device(name))


class DeviceDemand:
    """The shapes of the last `window` device pods the scheduler saw, how often each came, and the devices a zone's
    free amounts are expected to strand under that mix.

    `names` are the resources any shape names (sorted); `expected_stranded(free)` takes a zone's free amounts on
    `names` (`zone_free`) and answers in `STRANDED_UNIT`s. With no device pod seen, nothing is stranded. The mix is
    re-read as `knuma.scheduler.plugins.stranding.CPUDemand`'s (`MIX_REFRESH`); `observe` says when the answers
    given so far changed, so cached scores know when to recompute."""

    def __init__(self, window: int = WINDOW) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1 pod, got {window}")
        self.window = window
        self._pods: OrderedDict[str, tuple[tuple[str, int], ...]] = OrderedDict()
        self._counts: dict[tuple[tuple[str, int], ...], int] = {}
        self._mix: dict[tuple[tuple[str, int], ...], int] = {}
        self._since_refresh = 0
        self.names: tuple[str, ...] = ()
        self._vectors: list[tuple[tuple[int, ...], int]] = []
        """Per shape of the mix: its amounts on `names`, and how often it came."""
        self._expected: dict[tuple[int, ...], float] = {}

    def __bool__(self) -> bool:
        return bool(self._mix)

    @property
    def mix(self) -> dict[tuple[tuple[str, int], ...], int]:
        """Shape -> device pods of that shape the expectation is computed from."""
        return dict(self._mix)

    def observe(self, pod: Pod, claimed: Mapping[str, int] | None = None, served: Collection[str] = ()) -> bool:
        """Remember `pod`'s shape (once per pod; `claimed`: its DRA devices, known once Reserve allocated its claims,
        and `served`: its extended resources they provide, `device_shape`); True when the expected stranding the
        scheduler read may change. Reserve's shape replaces the one Filter saw: a pod whose extended resources DRA
        serves (KEP-5004) looks like a device-plugin pod until its node is chosen."""
        key = pod.uid or pod.key
        known = self._pods.get(key)
        if known is not None and claimed is None:
            return False
        shape = device_shape(pod, claimed, served)
        if known == shape or (known is None and not shape):
            return False
        if known is not None:
            self._forget(known)
            if not shape:
                del self._pods[key]
        if shape:
            self._pods[key] = shape
            self._counts[shape] = self._counts.get(shape, 0) + 1
        if len(self._pods) > self.window:
            _, gone = self._pods.popitem(last=False)
            self._forget(gone)
        self._since_refresh += 1
        if self._counts.keys() == self._mix.keys() and self._since_refresh * MIX_REFRESH < len(self._pods):
            return False
        return self._refresh()

    def _forget(self, shape: tuple[tuple[str, int], ...]) -> None:
        self._counts[shape] -= 1
        if not self._counts[shape]:
            del self._counts[shape]

    def _refresh(self) -> bool:
        """Read the window's mix; True unless every expectation computed so far keeps its value (in units)."""
        shapes_changed = self._counts.keys() != self._mix.keys()
        seen = list(self._expected)
        old = {free: _units(self._expected[free]) for free in seen}
        self._mix = dict(self._counts)
        self._since_refresh = 0
        self.names = tuple(sorted({name for shape in self._mix for name, _ in shape}))
        self._vectors = []
        for shape, count in self._mix.items():
            amounts = dict(shape)
            self._vectors.append((tuple(amounts.get(name, 0) for name in self.names), count))
        self._expected = {}
        if shapes_changed:
            return True
        return any(_units(self._expect(free)) != value for free, value in old.items())

    def expected_stranded(self, free: tuple[int, ...]) -> int:
        """Devices (in `STRANDED_UNIT`s) a zone with these free amounts on `names` is expected to strand."""
        if not self._vectors:
            return 0
        return _units(self._expect(free))

    def _expect(self, free: tuple[int, ...]) -> float:
        """`E(free)`, memoised per free vector (every shape takes at least one device, so the depth is at most the
        zone's free devices)."""
        known = self._expected.get(free)
        if known is not None:
            return known
        total = 0.0
        weight = 0
        for vector, count in self._vectors:
            if all(need <= have for need, have in zip(vector, free, strict=True)):
                rest = tuple(have - need for need, have in zip(vector, free, strict=True))
                total += count * self._expect(rest)
                weight += count
        if weight:
            value = total / weight
        else:
            value = float(sum(amount for name, amount in zip(self.names, free, strict=True) if is_device(name)))
        self._expected[free] = value
        return value


def _units(expected: float) -> int:
    return round(expected * STRANDED_UNIT)


ZoneChange = tuple[int, tuple[int, ...], tuple[int, ...]]
"""A device zone a placement changes: (its devices, free amounts on `DeviceDemand.names` before, after)."""


def zone_changes(before: NodeTopology, after: NodeTopology, names: Sequence[str]) -> tuple[ZoneChange, ...]:
    """The device zones whose free amounts on `names` differ between `before` and `after`: what
    `device_stranding_penalty` charges, apart from the mix (so a caller may keep them while the mix changes)."""
    out = []
    for old, new in zip(before.zones, after.zones, strict=True):
        devices = zone_device_total(old)
        if devices <= 0:
            continue
        free_before = zone_free(old.available, names)
        free_after = zone_free(new.available, names)
        if free_before != free_after:
            out.append((devices, free_before, free_after))
    return tuple(out)


def stranding_charge(changes: Sequence[ZoneChange], demand: DeviceDemand) -> int:
    """`device_stranding_penalty` of `zone_changes` computed on `demand.names`."""
    if not demand:
        return 0
    penalty = 0
    for devices, free_before, free_after in changes:
        added = demand.expected_stranded(free_after) - demand.expected_stranded(free_before)
        penalty += DEVICE_STRANDING_WEIGHT * added // devices
    return penalty


def device_stranding_penalty(before: NodeTopology, after: NodeTopology, demand: DeviceDemand) -> int:
    """Score points a placement loses for the devices it is expected to strand: per device zone whose free amounts
    it changes, the change in expected stranded devices as a share of the zone's devices, times
    `DEVICE_STRANDING_WEIGHT` (negative: a credit; integer arithmetic, zone by zone, as the vectorised path computes
    it)."""
    if not demand:
        return 0
    return stranding_charge(zone_changes(before, after, demand.names), demand)


def zone_device_free(zone: NUMAZone) -> int:
    """Free devices of the zone (every device resource it holds)."""
    return sum(zone.available.get(name, 0) for name in zone.capacity if is_device(name))


def gap_counts(topologies: Iterable[NodeTopology]) -> dict[int, int]:
    """How many device zones of the cluster have each gap: free devices strictly between none and all (a full zone
    and an empty one are no gap). The Sum-of-Squares packing rule (Csirik, Johnson, Kenyon, Orlin, Shor and Weber,
    "On the Sum-of-Squares algorithm for bin packing", J. ACM 53(1), 2006) keeps these counts even: an arriving
    device pod then finds a zone its size fills, where piling up gaps of one size (three zones with one free GPU
    when 2-GPU pods come) strands devices once the cluster is full. The expected stranding cannot see this: with
    1-GPU pods in the mix every gap is expected to fill, eventually."""
    counts: dict[int, int] = {}
    for topology in topologies:
        for zone in topology.zones:
            total = zone_device_total(zone)
            free = zone_device_free(zone)
            if 0 < free < total:
                counts[free] = counts.get(free, 0) + 1
    return counts


def gap_penalty(before: NodeTopology, after: NodeTopology, counts: Mapping[int, int]) -> int:
    """Points a placement loses for the change it makes to the sum of the squared gap counts (`gap_counts`, the
    cluster before it): per device zone whose free devices it changes from `g` to `h`, `2 * counts[h] + 1` when `h`
    is a gap (one more zone with that gap) less `2 * counts[g] - 1` when `g` was one, times `GAP_WEIGHT` (negative:
    it evens the counts out). Zones are taken one by one against the same counts, as the vectorised path does."""
    delta = 0
    for old, new in zip(before.zones, after.zones, strict=True):
        total = zone_device_total(old)
        if total <= 0:
            continue
        gap, left = zone_device_free(old), zone_device_free(new)
        if gap == left:
            continue
        if 0 < gap < total:
            delta -= 2 * counts.get(gap, 0) - 1
        if 0 < left < total:
            delta += 2 * counts.get(left, 0) + 1
    return GAP_WEIGHT * delta
