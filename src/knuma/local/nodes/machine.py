"""A node shape made concrete: CPU ids, thread siblings, reserved CPUs, hugepages and device ids per NUMA zone.

The simulator's `NodeShape` counts resources per zone; a simulated kubelet must hand out real CPU ids and device ids,
the exporter must read a sysfs tree, and PodResources must report allocatable CPUs. `Machine` fixes those ids the way
a common two-socket x86 server numbers them:

- logical CPU `c` is on NUMA zone `c % zones` (interleaved, as BIOSes enumerate sockets), and the second hardware
  thread of CPU `c` is `c + total/2` (so both threads of a core are on the same zone);
- `reservedSystemCPUs` are the CPUs `0..reserved-1`, which is one per zone round-robin from NUMA 0, exactly the
  spread `NodeShape.reserved_per_zone()` counts;
- hugepages come from the shape's `hugepages-<size>` resources; other resources are devices with NUMA affinity
  (`<resource suffix>-<zone>-<index>`, e.g. `gpu-0-1`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from knuma.api.resources import MEMORY, is_hugepages
from knuma.exporter.sysfs import MachineTopology, NUMANode, format_cpulist
from knuma.podresources.model import Allocatable, Devices, Memory
from knuma.quantity import parse_quantity
from knuma.testbed.shapes import NodeShape

__all__ = ["STANDARD_HUGEPAGE_SIZES", "Machine", "hugepage_size"]

KIB = 1024
STANDARD_HUGEPAGE_SIZES = (2 * 1024 * KIB, 1024 * 1024 * KIB)
"""x86-64 page sizes the kernel lists under `hugepages/` even when none are reserved (2 MiB and 1 GiB)."""


def hugepage_size(resource: str) -> int:
    """Bytes per page of a `hugepages-<size>` resource: `hugepages-1Gi` -> 1073741824."""
    return parse_quantity(resource.removeprefix("hugepages-")).value()


@dataclass(frozen=True)
class Machine:
    shape: NodeShape

    @property
    def zones(self) -> int:
        return self.shape.zones

    @cached_property
    def total_cpus(self) -> int:
        return self.shape.zones * self.shape.cpus

    @cached_property
    def cpus_by_zone(self) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(range(zone, self.total_cpus, self.zones)) for zone in range(self.zones))

    @cached_property
    def zone_of_cpu(self) -> dict[int, int]:
        return {cpu: cpu % self.zones for cpu in range(self.total_cpus)}

    def siblings(self, cpu: int) -> frozenset[int]:
        """The hardware threads of `cpu`'s core (two when the zone has an even number of CPUs, else one)."""
        if self.shape.threads_per_core == 1:
            return frozenset({cpu})
        half = self.total_cpus // 2
        return frozenset({cpu % half, cpu % half + half})

    @cached_property
    def reserved_cpus(self) -> frozenset[int]:
        return frozenset(range(self.shape.reserved_cpus))

    @property
    def reserved_cpus_text(self) -> str:
        """`reservedSystemCPUs` as the kubelet configuration spells it (`0-1`)."""
        return format_cpulist(set(self.reserved_cpus))

    @cached_property
    def hugepages(self) -> dict[int, int]:
        """Page size in bytes -> pages reserved per zone (the standard sizes listed with 0 pages, as sysfs does)."""
        pages = dict.fromkeys(STANDARD_HUGEPAGE_SIZES, 0)
        for name, amount in self.shape.resources.items():
            if is_hugepages(name):
                size = hugepage_size(name)
                pages[size] = pages.get(size, 0) + amount // size
        return dict(sorted(pages.items()))

    @cached_property
    def devices(self) -> dict[str, tuple[tuple[str, ...], ...]]:
        """Device resource -> device ids per zone."""
        out: dict[str, tuple[tuple[str, ...], ...]] = {}
        for name, amount in sorted(self.shape.resources.items()):
            if is_hugepages(name) or name == MEMORY:
                continue
            stem = name.rsplit("/", 1)[-1]
            out[name] = tuple(tuple(f"{stem}-{zone}-{i}" for i in range(amount)) for zone in range(self.zones))
        return out

    @cached_property
    def zone_of_device(self) -> dict[tuple[str, str], int]:
        return {
            (name, device): zone
            for name, per_zone in self.devices.items()
            for zone, ids in enumerate(per_zone)
            for device in ids
        }

    def topology(self) -> MachineTopology:
        """What `knuma.exporter.sysfs.discover` reads from this machine's sysfs tree."""
        distances = {z.id: dict(z.distances) for z in self.shape.topology("machine").zones}
        nodes = tuple(
            NUMANode(
                id=zone,
                cpus=frozenset(self.cpus_by_zone[zone]),
                memory_bytes=self.shape.memory,
                hugepages=dict(self.hugepages),
                distances=distances[zone],
            )
            for zone in range(self.zones)
        )
        siblings = {cpu: self.siblings(cpu) for cpu in range(self.total_cpus)}
        packages = {cpu: self.shape.socket_of(self.zone_of_cpu[cpu]) for cpu in range(self.total_cpus)}
        return MachineTopology(nodes=nodes, thread_siblings=siblings, packages=packages)

    def allocatable(self) -> Allocatable:
        """`GetAllocatableResources`: the static CPU manager's CPUs (reserved ones excluded), the memory manager's
        memory and hugepages per zone (`reservedMemory` excluded), the device plugins' devices."""
        memory: list[Memory] = []
        for zone in range(self.zones):
            for name, amount in sorted(self.shape.zone_allocatable(zone).items()):
                if name == MEMORY or is_hugepages(name):
                    memory.append(Memory(name, amount, (zone,)))
        devices = [
            Devices(name, ids, (zone,)) for name, per_zone in self.devices.items() for zone, ids in enumerate(per_zone)
        ]
        cpus = tuple(c for c in range(self.total_cpus) if c not in self.reserved_cpus)
        return Allocatable(cpu_ids=cpus, devices=tuple(devices), memory=tuple(memory))
