"""Which devices a node can reach: ResourceSlices grouped into pools, as the allocator's `GatherPools` does
(`dynamic-resource-allocation/structured/internal/stable/pools_stable.go`).

A slice applies to a node through `nodeName`, `allNodes` or its `nodeSelector`; with `perDeviceNodeSelection` each
device says so itself. Slices group into pools by (driver, pool name); only the newest generation counts. A pool with
fewer slices than `resourceSliceCount` is incomplete, one with a device name twice is invalid; the allocator takes no
device from either (and a request for `All` devices fails on them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from knuma.api.dra.device import Device
from knuma.api.dra.resourceslice import ResourceSlice

__all__ = ["Candidate", "DeviceID", "Pool", "gather_pools"]

DeviceID = tuple[str, str, str]
"""(driver, pool, device): a device's identity across the cluster."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One device reachable from the node, with the slice it was published in."""

    id: DeviceID
    device: Device
    slice: ResourceSlice

    @property
    def driver(self) -> str:
        return self.id[0]

    def __str__(self) -> str:
        return "/".join(self.id)


@dataclass(frozen=True)
class Pool:
    driver: str
    name: str
    slices: tuple[ResourceSlice, ...]
    incomplete: bool
    invalid_reason: str = ""

    @property
    def usable(self) -> bool:
        return not self.incomplete and not self.invalid_reason

    def candidates(self, node: str, labels: Mapping[str, str]) -> list[Candidate]:
        """The pool's devices reachable from `node`, in slice order (per-device node selection applied)."""
        out = []
        for s in self.slices:
            for device in s.devices:
                if s.node.per_device and (device.node is None or not device.node.matches(node, labels)):
                    continue
                out.append(Candidate((self.driver, self.name, device.name), device, s))
        return out

    def __str__(self) -> str:
        return f"{self.driver}/{self.name}"


def gather_pools(slices: Sequence[ResourceSlice], node: str, labels: Mapping[str, str]) -> list[Pool]:
    """The pools with devices reachable from `node`, in the order their first slice appears."""
    newest: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in slices:
        if s.node.per_device:
            if not any(d.node is not None and d.node.matches(node, labels) for d in s.devices):
                continue
        elif not s.node.matches(node, labels):
            continue
        key = (s.driver, s.pool.name)
        current = newest.get(key)
        if current is None or s.pool.generation > current[0].pool.generation:
            newest[key] = [s]
        elif s.pool.generation == current[0].pool.generation:
            current.append(s)
    pools = []
    for (driver, name), members in newest.items():
        seen: set[str] = set()
        invalid = ""
        for s in members:
            for device in s.devices:
                if device.name in seen and not invalid:
                    invalid = f"duplicate device name {device.name}"
                seen.add(device.name)
        incomplete = len(members) != members[0].pool.resource_slice_count
        pools.append(Pool(driver, name, tuple(members), incomplete, invalid))
    return pools
