"""Simulated DRA drivers: the devices a node shape's `dra` groups describe, the ResourceSlices their drivers publish
and the DeviceClasses that select them.

Every device carries the standard topology attributes real drivers publish (dra-driver-nvidia-gpu, dranet):
`resource.kubernetes.io/numaNode` (int) and `resource.kubernetes.io/pcieRoot` (string), plus the driver's own
`model` and `index` attributes and its capacities (`memory`, `bandwidth`). One slice per driver and node, in a pool
named after the node (`kubeletplugin`'s default), with `nodeName` set.

A shared group's devices (`DraDeviceGroup.shared`) set `allowMultipleAllocations` and carry their capacities' request
policies, like a NIC whose bandwidth many pods share (consumable capacity, KEP-5075).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from knuma.api.dra.capacity import CapacityRequestPolicy
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
    profile: str = ""
    """A partition's profile (`3g.40gb`); empty for a device given out whole."""
    counter_set: str = ""
    """The shared counters it draws on (its whole device's name), if partitionable."""
    draws: Mapping[str, str] = field(default_factory=dict)
    """What it draws from `counter_set` (`compute`, `memory`)."""
    shared: bool = False
    """`allowMultipleAllocations`: many claims may hold it at once, each taking part of its capacities."""
    request_policies: Mapping[str, CapacityRequestPolicy] = field(default_factory=dict)
    """Capacity name -> its `requestPolicy` (shared devices only)."""

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
        if self.profile:
            out["attributes"]["profile"] = {"string": self.profile}
        if self.capacity:
            out["capacity"] = {name: self._capacity(name, value) for name, value in self.capacity.items()}
        if self.shared:
            out["allowMultipleAllocations"] = True
        if self.draws:
            counters = {name: {"value": value} for name, value in self.draws.items()}
            out["consumesCounters"] = [{"counterSet": self.counter_set, "counters": counters}]
        return out

    def _capacity(self, name: str, value: str) -> JsonObj:
        policy = self.request_policies.get(name)
        return {"value": value, "requestPolicy": policy.to_dict()} if policy is not None else {"value": value}

    def shared_counters(self) -> JsonObj | None:
        """The counter set a partitionable whole device shares with its partitions (`sharedCounters` entry)."""
        if not self.draws or self.profile:
            return None
        return {"name": self.name, "counters": {name: {"value": value} for name, value in self.draws.items()}}


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
                name = f"{group.prefix}-{index}"
                root = pcie_root(zone, slot, roots)
                device = SimDevice(
                    group.driver,
                    name,
                    zone,
                    root,
                    group.model,
                    index,
                    dict(group.capacity),
                    shared=group.shared,
                    request_policies=dict(group.request_policies),
                )
                if group.partitions:  # the whole device draws everything its partitions share
                    whole = {"compute": str(group.compute_slices), "memory": group.capacity.get("memory", "0")}
                    device = dataclasses.replace(device, counter_set=name, draws=whole)
                found.append(device)
                for partition in group.partitions:
                    label = partition.profile.replace(".", "-")
                    draws = {"compute": str(partition.compute), "memory": partition.memory}
                    found.extend(
                        dataclasses.replace(
                            device,
                            name=f"{name}-{label}-{k}",
                            capacity={"memory": partition.memory},
                            profile=partition.profile,
                            draws=draws,
                        )
                        for k in range(partition.count)
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
        counter_sets = [c for d in devices if (c := d.shared_counters()) is not None]
        pool = {"name": node, "generation": 1, "resourceSliceCount": 2 if counter_sets else 1}
        slices.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{node}-{prefix}"},
                "spec": {"driver": driver, "nodeName": node, "pool": pool, "devices": [d.to_dict() for d in devices]},
            }
        )
        if counter_sets:  # a slice has devices or shared counters, not both
            slices.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{node}-{prefix}-counters"},
                    "spec": {"driver": driver, "nodeName": node, "pool": dict(pool), "sharedCounters": counter_sets},
                }
            )
    return slices


def device_classes(shapes: Iterable[NodeShape]) -> list[JsonObj]:
    """One DeviceClass per simulated driver, named like the driver, selecting its devices by `device.driver` (whole
    devices only, when some shape partitions them), and one per partition profile (`3g-40gb.gpu.sim.knuma.io`)."""
    groups = [group for shape in shapes for group in shape.dra]
    partitioned = {g.driver for g in groups if g.partitions}
    classes: dict[str, str] = {}
    for driver in sorted({g.driver for g in groups}):
        whole = f" && !has(device.attributes['{driver}'].profile)" if driver in partitioned else ""
        classes[driver] = f"device.driver == '{driver}'{whole}"
    for group in groups:
        for partition in group.partitions:
            name = f"{partition.profile.replace('.', '-')}.{group.driver}"
            attribute = f"device.attributes['{group.driver}'].profile"
            classes[name] = (
                f"device.driver == '{group.driver}' && has({attribute}) && {attribute} == '{partition.profile}'"
            )
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]},
        }
        for name, expression in classes.items()
    ]
