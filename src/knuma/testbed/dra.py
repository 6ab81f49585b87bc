"""Simulated DRA drivers: the devices a node shape's `dra` groups describe, the ResourceSlices their drivers publish
and the DeviceClasses that select them.

Every device carries the standard topology attributes real drivers publish (dra-driver-nvidia-gpu, dranet):
`resource.kubernetes.io/numaNode` (int) and `resource.kubernetes.io/pcieRoot` (string), plus the driver's own
`model` and `index` attributes and its capacities (`memory`, `bandwidth`). One slice per driver and node, in a pool
named after the node (`kubeletplugin`'s default), with `nodeName` set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from knuma.api.types import JsonObj
from knuma.testbed.shapes import NodeShape

__all__ = ["NUMA_ATTRIBUTE", "PCIE_ROOT_ATTRIBUTE", "SimDevice", "device_classes", "devices_of", "resource_slices"]

NUMA_ATTRIBUTE = "resource.kubernetes.io/numaNode"
PCIE_ROOT_ATTRIBUTE = "resource.kubernetes.io/pcieRoot"


@dataclass(frozen=True)
class SimDevice:
    driver: str
    name: str
    numa: int
    pcie_root: str
    model: str
    index: int
    capacity: Mapping[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """`driver/device`, unique on a node (the pool is the node)."""
        return f"{self.driver}/{self.name}"

    def to_dict(self) -> JsonObj:
        """The `Device` entry of a `resource.k8s.io/v1` ResourceSlice."""
        out: JsonObj = {
            "name": self.name,
            "attributes": {
                NUMA_ATTRIBUTE: {"int": self.numa},
                PCIE_ROOT_ATTRIBUTE: {"string": self.pcie_root},
                "model": {"string": self.model},
                "index": {"int": self.index},
            },
        }
        if self.capacity:
            out["capacity"] = {name: {"value": value} for name, value in self.capacity.items()}
        return out


def pcie_root(zone: int, slot: int, roots_per_zone: int) -> str:
    """Root complexes numbered across the machine, zone by zone, in the `pci<domain>:<bus>` form of sysfs."""
    return f"pci0000:{zone * roots_per_zone + slot % roots_per_zone:02x}"


def devices_of(shape: NodeShape) -> tuple[SimDevice, ...]:
    """Every DRA device of one machine of `shape`, group by group, zone by zone."""
    found: list[SimDevice] = []
    roots = max(1, shape.pcie_roots_per_zone)
    for group in shape.dra:
        for zone in range(shape.zones):
            for slot in range(group.per_zone):
                index = zone * group.per_zone + slot
                found.append(
                    SimDevice(
                        group.driver,
                        f"{group.prefix}-{index}",
                        zone,
                        pcie_root(zone, slot, roots),
                        group.model,
                        index,
                        dict(group.capacity),
                    )
                )
    return tuple(found)


def resource_slices(node: str, shape: NodeShape) -> list[JsonObj]:
    """The ResourceSlices the node's simulated drivers publish (one per driver)."""
    by_driver: dict[str, list[SimDevice]] = {}
    for device in devices_of(shape):
        by_driver.setdefault(device.driver, []).append(device)
    slices = []
    for driver, devices in by_driver.items():
        prefix = driver.split(".", 1)[0]
        slices.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{node}-{prefix}"},
                "spec": {
                    "driver": driver,
                    "nodeName": node,
                    "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                    "devices": [d.to_dict() for d in devices],
                },
            }
        )
    return slices


def device_classes(shapes: Iterable[NodeShape]) -> list[JsonObj]:
    """One DeviceClass per simulated driver, named like the driver, selecting its devices by `device.driver`."""
    drivers = sorted({group.driver for shape in shapes for group in shape.dra})
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": driver},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{driver}'"}}]},
        }
        for driver in drivers
    ]
