"""The NUMA model of one node: per-zone capacity, allocatable and available, plus its Topology Manager config.

Built from a NodeResourceTopology object (what the scheduler sees) or by a simulated kubelet (ground truth). Immutable:
admitting a pod returns a new `NodeTopology`.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from knuma.api.nrt import NodeResourceTopology, Policy, Scope, TopologyManagerConfig
from knuma.api.resources import CPU, MEMORY, is_hugepages, is_native
from knuma.topology.cpumanager import CPUManagerOptions

__all__ = ["Interned", "NUMAZone", "NodeTopology", "frozen", "is_device"]

ATTR_PREFER_CLOSEST = "topologyManagerOptionPreferClosestNumaNodes"


def is_device(name: str) -> bool:
    """Device-plugin (extended) resources: a domain-qualified name outside `kubernetes.io`."""
    return not is_native(name) and not name.startswith("requests.")


def frozen(value: object) -> Hashable:
    """`value` as a hashable: mappings become sorted item tuples (recursively), the rest is kept."""
    if isinstance(value, Mapping):
        return tuple(sorted((key, frozen(item)) for key, item in value.items()))
    assert isinstance(value, Hashable)
    return value


class Interned:
    """Small ints standing for equal hashable keys, so that a memo keyed by them hashes an int, not a deep tuple.
    Ids are never reused: when the table is full it starts afresh, and a key seen again gets a new id."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.ids: dict[Hashable, int] = {}
        self.next = itertools.count()

    def __call__(self, key: Hashable) -> int:
        known = self.ids.get(key)
        if known is None:
            if len(self.ids) >= self.limit:
                self.ids.clear()
            known = self.ids[key] = next(self.next)
        return known


_STATES = Interned(1 << 17)
_HARDWARE = Interned(1 << 12)


def _items(flat: Mapping[Any, Any]) -> tuple[tuple[Any, Any], ...]:
    """A flat mapping (unique sortable keys, hashable values) as a hashable."""
    return tuple(sorted(flat.items()))


@dataclass(frozen=True, slots=True)
class NUMAZone:
    id: int
    capacity: Mapping[str, int]
    allocatable: Mapping[str, int]
    available: Mapping[str, int]
    distances: Mapping[int, int] = field(default_factory=dict)

    def total(self, name: str) -> int:
        """What the zone holds on an empty node: allocatable, or capacity when a producer left allocatable out."""
        return self.allocatable.get(name) or self.capacity.get(name) or self.available.get(name, 0)

    def all_units(self, name: str) -> int:
        """Every unit of the zone, reserved ones included (what the CPU and device managers count as "on the
        machine" when they compute the preferred width)."""
        return self.capacity.get(name) or self.allocatable.get(name) or self.available.get(name, 0)


@dataclass(frozen=True)
class NodeTopology:
    name: str
    zones: tuple[NUMAZone, ...]
    config: TopologyManagerConfig = field(default_factory=TopologyManagerConfig)
    prefer_closest: bool = False
    memory_groups: Mapping[int, frozenset[int]] = field(default_factory=dict)
    """NUMA id -> the multi-NUMA group the memory manager already used it in (its `Cells`)."""
    cpu_manager: CPUManagerOptions = field(default_factory=CPUManagerOptions)
    """The static CPU manager's policy options and the CPU topology facts they need."""

    @cached_property
    def hardware_key(self) -> Hashable:
        """What only a reconfiguration changes (zones with their capacity, allocatable and distances, the Topology
        Manager and CPU manager configuration), as a hashable; `with_available` and `with_zones` carry it over."""
        zones = tuple((z.id, _items(z.capacity), _items(z.allocatable), _items(z.distances)) for z in self.zones)
        return (zones, self.config, self.prefer_closest, self.cpu_manager.key)

    @cached_property
    def hardware_id(self) -> int:
        """`hardware_key` interned (carried over with it): admission keys hold this int, so that hashing and comparing
        them does not walk every zone's capacity, allocatable and distances each time."""
        return _HARDWARE(self.hardware_key)

    @cached_property
    def admission_key(self) -> Hashable:
        """Everything `knuma.topology.admit` reads of the node, i.e. all but its name: nodes with equal keys admit
        the same pods on the same zones (what lets admission verdicts be memoised across nodes and calls). Each
        zone's available amounts are taken in the zone's own key order, unsorted: equal tuples are equal zones, and
        equal zones listed in another order only cost a memo miss."""
        available = tuple(tuple(z.available.items()) for z in self.zones)
        return (self.hardware_id, available, _items(self.memory_groups))

    @cached_property
    def admission_id(self) -> int:
        """`admission_key` interned: equal keys, equal ids (for as long as the table keeps them)."""
        return _STATES(self.admission_key)

    @cached_property
    def numa_ids(self) -> tuple[int, ...]:
        return tuple(z.id for z in self.zones)

    @cached_property
    def zone_by_id(self) -> dict[int, NUMAZone]:
        return {z.id: z for z in self.zones}

    @cached_property
    def numa_managed(self) -> frozenset[str]:
        """Resources some zone reports: the ones the kubelet's managers align on this node."""
        return frozenset(name for z in self.zones for name in (*z.capacity, *z.allocatable, *z.available))

    @property
    def cpu_managed(self) -> bool:
        return CPU in self.numa_managed

    def memory_managed(self, name: str) -> bool:
        return (name == MEMORY or is_hugepages(name)) and name in self.numa_managed

    @cached_property
    def distances(self) -> dict[int, Mapping[int, int]]:
        return {z.id: z.distances for z in self.zones}

    def available_total(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for zone in self.zones:
            for name, amount in zone.available.items():
                total[name] = total.get(name, 0) + amount
        return total

    def with_available(
        self,
        available: Mapping[int, Mapping[str, int]],
        memory_groups: Mapping[int, frozenset[int]] | None = None,
    ) -> NodeTopology:
        """The node with other available amounts per zone (zones not in `available` keep theirs) and, if given,
        other memory groups."""
        zones = tuple(
            NUMAZone(z.id, z.capacity, z.allocatable, dict(available.get(z.id, z.available)), z.distances)
            for z in self.zones
        )
        return self.with_zones(zones, memory_groups)

    def with_zones(
        self, zones: tuple[NUMAZone, ...], memory_groups: Mapping[int, frozenset[int]] | None = None
    ) -> NodeTopology:
        """The node with `zones` (the same hardware, other available amounts) and, if given, other memory groups."""
        if memory_groups is None:
            out = replace(self, zones=zones)
        else:
            out = replace(self, zones=zones, memory_groups=memory_groups)
        for carried in ("hardware_key", "hardware_id"):
            known = self.__dict__.get(carried)
            if known is not None:
                out.__dict__[carried] = known
        return out

    @classmethod
    def from_nrt(cls, nrt: NodeResourceTopology) -> NodeTopology:
        zones = []
        names = {zone.name: numa_id for numa_id, zone in nrt.numa_zones()}
        for numa_id, zone in nrt.numa_zones():
            distances = {names[k]: v for k, v in zone.costs.items() if k in names}
            zones.append(
                NUMAZone(
                    id=numa_id,
                    capacity={r.name: r.capacity for r in zone.resources},
                    allocatable={r.name: r.allocatable for r in zone.resources},
                    available={r.name: r.available for r in zone.resources},
                    distances=distances,
                )
            )
        prefer_closest = nrt.attributes.get(ATTR_PREFER_CLOSEST, "").lower() == "true"
        cpu_manager = CPUManagerOptions.from_attributes(nrt.attributes)
        return cls(nrt.name, tuple(zones), nrt.topology_manager, prefer_closest, cpu_manager=cpu_manager)

    @classmethod
    def build(
        cls,
        name: str,
        zones: Mapping[int, Mapping[str, int]],
        policy: Policy = Policy.SINGLE_NUMA_NODE,
        scope: Scope = Scope.CONTAINER,
        *,
        available: Mapping[int, Mapping[str, int]] | None = None,
        distances: Mapping[int, Mapping[int, int]] | None = None,
        cpu_manager: CPUManagerOptions | None = None,
    ) -> NodeTopology:
        """A node from per-zone allocatable amounts (tests and simulated shapes): capacity = allocatable, and
        available = allocatable unless given."""
        built = tuple(
            NUMAZone(
                id=numa_id,
                capacity=dict(resources),
                allocatable=dict(resources),
                available=dict((available or {}).get(numa_id, resources)),
                distances=dict((distances or {}).get(numa_id, {n: 10 if n == numa_id else 20 for n in zones})),
            )
            for numa_id, resources in sorted(zones.items())
        )
        return cls(name, built, TopologyManagerConfig(policy, scope), cpu_manager=cpu_manager or CPUManagerOptions())
