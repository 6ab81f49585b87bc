"""Where a device sits: its NUMA node, PCIe root and socket, and the locality ladder knuma scores with.

A device's NUMA node comes from the standard attribute `resource.kubernetes.io/numaNode` (KEP-6072): an int, or the
list form whose first element is the device's own node followed by the same-socket nodes at minimum distance; drivers
that predate it publish vendor names (`dra.net/numaNode`, `dra.cpu/numaNodeID`, the prototype's `numa`), read as
aliases. `resource.kubernetes.io/pcieRoot` groups devices behind one PCIe root complex (a GPU and its NIC).
Sockets are not an attribute: two NUMA nodes share a socket when the NRT distance between them is the smallest
off-diagonal distance of the first one (the rule the list form of `numaNode` uses).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from knuma.api.dra.device import Device

__all__ = [
    "NUMA_ALIASES",
    "NUMA_NODE",
    "PCIE_ROOT",
    "Locality",
    "Placement",
    "locality_of",
    "placement_of",
    "sockets_from_distances",
]

NUMA_NODE = "resource.kubernetes.io/numaNode"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
NUMA_ALIASES = (NUMA_NODE, "dra.net/numaNode", "dra.cpu/numaNodeID", "numaNode", "numa")
"""Checked in order; a bare name is looked up in the driver's domain as DRA does."""
PCIE_ALIASES = (PCIE_ROOT, "pcieRoot", "pciRoot")


class Locality(enum.IntEnum):
    """The locality ladder, best first; the score is what `knuma claims schedule` reports."""

    PCIE_ROOT = 100
    NUMA_NODE = 75
    SOCKET = 50
    NODE = 25

    @property
    def label(self) -> str:
        return {100: "same PCIe root", 75: "same NUMA node", 50: "same socket", 25: "same node"}[self.value]


@dataclass(frozen=True, slots=True)
class Placement:
    numa: int | None
    """The device's own NUMA node; None when the driver does not say."""
    pcie_root: str | None


def _lookup(device: Device, driver: str, names: Iterable[str]) -> object | None:
    for name in names:
        attribute = device.attributes.get(name)
        if attribute is None and "/" not in name:
            attribute = device.attributes.get(f"{driver}/{name}")
        if attribute is not None:
            return attribute.value
    return None


def placement_of(device: Device, driver: str) -> Placement:
    numa_value = _lookup(device, driver, NUMA_ALIASES)
    numa: int | None = None
    if isinstance(numa_value, tuple) and numa_value:
        numa_value = numa_value[0]
    if isinstance(numa_value, int) and not isinstance(numa_value, bool) and numa_value >= 0:
        numa = numa_value
    elif isinstance(numa_value, str) and numa_value.isdigit():
        numa = int(numa_value)
    root = _lookup(device, driver, PCIE_ALIASES)
    return Placement(numa, root if isinstance(root, str) else None)


def sockets_from_distances(distances: Mapping[int, Mapping[int, int]]) -> dict[int, int]:
    """NUMA id -> socket id (the lowest NUMA id of its group)."""
    socket: dict[int, int] = {}
    for numa in sorted(distances):
        others = {n: d for n, d in distances[numa].items() if n != numa}
        if numa in socket:
            continue
        socket[numa] = numa
        if not others:
            continue
        nearest = min(others.values())
        for other, distance in others.items():
            if distance == nearest and other not in socket:
                socket[other] = numa
    return socket


def locality_of(placements: Iterable[Placement], sockets: Mapping[int, int]) -> Locality:
    """The best rung every device of a set reaches together (devices without NUMA information do not count)."""
    located = [p for p in placements if p.numa is not None or p.pcie_root is not None]
    if not located:
        return Locality.NODE
    roots = {p.pcie_root for p in located}
    numas = {p.numa for p in located if p.numa is not None}
    if len(roots) == 1 and None not in roots and len(numas) <= 1:
        return Locality.PCIE_ROOT
    if len(numas) == 1 and all(p.numa is not None for p in located):
        return Locality.NUMA_NODE
    if numas and all(p.numa is not None for p in located) and len({sockets.get(n, n) for n in numas}) == 1:
        return Locality.SOCKET
    return Locality.NODE
