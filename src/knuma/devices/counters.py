"""Shared counters during allocation: partitionable devices are given out only while their draws fit.

As upstream's allocator (`checkAvailableCounters` and `deallocateCountersForDevice` of the structured allocator in
`staging/src/k8s.io/dynamic-resource-allocation/structured/`): a pool's counters are the counter sets its slices share
(`sharedCounters`, newest generation of the pool), less what every device already allocated draws from them
(`consumesCounters`); during one allocation the devices chosen so far draw too, and a device fits only while no
counter of the pool would go below zero. So a GPU given out whole leaves nothing for its MIG slices, and two slices
that together need more memory than the GPU has are not given to one pod.

Differences: counters are keyed by (driver, pool, counter set, counter); upstream keys a pool's counters by the pool
name alone, so two drivers publishing pools of the same name (each node's name, as the simulated drivers do) would
share them. Draws on a counter the pool does not define are ignored, as upstream ignores them. Admin-access requests
draw nothing (they do not hold devices).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from knuma.api.dra.resourceslice import ResourceSlice
from knuma.devices.pools import DeviceID

__all__ = ["CounterKey", "Counters", "physical_devices"]

CounterKey = tuple[str, str, str, str]
"""(driver, pool, counter set, counter)."""
Draw = tuple[tuple[CounterKey, int], ...]


@dataclass(frozen=True)
class Counters:
    """What is left of every shared counter (in thousandths of its unit), and what each device draws."""

    left: Mapping[CounterKey, int]
    draws: Mapping[DeviceID, Draw]
    drawn: frozenset[DeviceID] = frozenset()
    """Devices that allow multiple allocations with a share allocated: their draws are already taken."""

    @classmethod
    def of(
        cls, slices: Sequence[ResourceSlice], in_use: Iterable[DeviceID], shared: Iterable[DeviceID] = ()
    ) -> Counters | None:
        """The counters of the pools `slices` publish, less the draws of the devices `in_use` and of the devices
        that allow multiple allocations with a share allocated (`shared`: a shared device draws its counters once,
        upstream's `allocateDevice` skips the check for one whose capacity is in use); None when no pool shares
        counters (the allocator then skips every check)."""
        if not any(s.shared_counters for s in slices):
            return None
        current = _newest_generation(slices)
        left: dict[CounterKey, int] = {}
        for s in current:
            for counter_set in s.shared_counters:
                for name, quantity in counter_set.counters.items():
                    left[(s.driver, s.pool.name, counter_set.name, name)] = quantity.milli_value()
        if not left:
            return None
        draws: dict[DeviceID, Draw] = {}
        for s in current:
            for device in s.devices:
                draw = tuple(
                    ((s.driver, s.pool.name, c.name, name), quantity.milli_value())
                    for c in device.consumes
                    for name, quantity in c.counters.items()
                    if (s.driver, s.pool.name, c.name, name) in left
                )
                if draw:
                    draws[(s.driver, s.pool.name, device.name)] = draw
        drawn = frozenset(shared)
        for device_id in {*in_use, *drawn}:
            for counter, amount in draws.get(device_id, ()):
                left[counter] -= amount  # may go negative (a pool republished smaller): then nothing is left
        return cls(left, draws, drawn)

    def fits(self, devices: Iterable[DeviceID]) -> bool:
        """Whether these devices, taken together on top of those already allocated, stay within every counter (a
        device named twice, two shares of one shared device, draws once)."""
        taken: dict[CounterKey, int] = {}
        for device_id in set(devices) - self.drawn:
            for key, amount in self.draws.get(device_id, ()):
                taken[key] = taken.get(key, 0) + amount
                if taken[key] > self.left[key]:
                    return False
        return True


def physical_devices(slices: Sequence[ResourceSlice]) -> dict[DeviceID, tuple[str, str, str]]:
    """Partitionable devices grouped into the hardware they share: device -> (driver, pool, counter set).

    A GPU published whole and as MIG-like partitions is one piece of hardware: the whole device and each partition
    draw from the same counter set, and however it is cut it is one GPU. Counting it as ten devices (as a plain list
    of devices does) tells `kubectl get nrt` and `KnumaBinPacking`'s device term that a zone holds ten GPUs. Devices
    that draw from several counter sets join those sets into one group (named by the first set met). Devices that
    draw on no shared counter are not in the result: each is its own piece of hardware."""
    current = _newest_generation(slices)
    defined = {(s.driver, s.pool.name, c.name) for s in current for c in s.shared_counters}
    if not defined:
        return {}
    parent: dict[tuple[str, str, str], tuple[str, str, str]] = {key: key for key in defined}

    def root(key: tuple[str, str, str]) -> tuple[str, str, str]:
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    members: dict[DeviceID, tuple[str, str, str]] = {}
    for s in current:
        for device in s.devices:
            sets = [key for c in device.consumes if (key := (s.driver, s.pool.name, c.name)) in defined]
            if not sets:
                continue
            for other in sets[1:]:
                parent[root(other)] = root(sets[0])
            members[(s.driver, s.pool.name, device.name)] = sets[0]
    return {device: root(key) for device, key in members.items()}


def _newest_generation(slices: Sequence[ResourceSlice]) -> list[ResourceSlice]:
    """The slices of each pool's newest generation (older ones are being replaced: upstream ignores them)."""
    newest: dict[tuple[str, str], int] = {}
    for s in slices:
        pool = (s.driver, s.pool.name)
        newest[pool] = max(newest.get(pool, s.pool.generation), s.pool.generation)
    return [s for s in slices if s.pool.generation == newest[(s.driver, s.pool.name)]]
