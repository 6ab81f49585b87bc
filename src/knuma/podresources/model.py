"""What the kubelet reports through PodResources v1, as immutable plain data (and conversion from/to protobuf).

The builder works on these types only, so it can be tested with literals and reused by a simulated kubelet. NUMA
ids are kept as reported; `-1` ("no locality") and an empty topology both become an empty `numa_ids`.
"""

from __future__ import annotations

from dataclasses import dataclass

from knuma.podresources import api_pb2

__all__ = [
    "Allocatable",
    "ClaimResource",
    "Container",
    "Devices",
    "DynamicResource",
    "Memory",
    "Pod",
    "allocatable_from_proto",
    "allocatable_to_proto",
    "pod_from_proto",
    "pod_to_proto",
]


@dataclass(frozen=True, slots=True)
class Memory:
    memory_type: str
    """`memory` or `hugepages-<size>` (`hugepages-2Mi`)."""
    size: int
    """Bytes."""
    numa_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Devices:
    resource_name: str
    device_ids: tuple[str, ...]
    numa_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ClaimResource:
    """One device of a ResourceClaim as the node's DRA driver prepared it (`ClaimResource`)."""

    driver_name: str
    pool_name: str
    device_name: str
    cdi_devices: tuple[str, ...] = ()
    """Fully qualified CDI device names (`vendor.com/class=name`); empty for a driver that uses no CDI."""


@dataclass(frozen=True, slots=True)
class DynamicResource:
    """A ResourceClaim a container uses, with its devices prepared on this node (`DynamicResource`; kubelet 1.34+,
    `KubeletPodResourcesDynamicResources` beta)."""

    claim_name: str
    claim_namespace: str
    claim_resources: tuple[ClaimResource, ...] = ()


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    cpu_ids: tuple[int, ...] = ()
    """Exclusive CPUs (a kubelet older than 1.22 may list the shared pool here; see the reference container)."""
    devices: tuple[Devices, ...] = ()
    memory: tuple[Memory, ...] = ()
    dynamic_resources: tuple[DynamicResource, ...] = ()
    """DRA claims (`spec.resourceClaims`, and the claim of DRA-backed extended resources) the container uses."""


@dataclass(frozen=True, slots=True)
class Pod:
    namespace: str
    name: str
    containers: tuple[Container, ...] = ()


@dataclass(frozen=True, slots=True)
class Allocatable:
    """`GetAllocatableResources`: what the kubelet's managers may hand out (reserved CPUs and memory excluded)."""

    cpu_ids: tuple[int, ...] = ()
    devices: tuple[Devices, ...] = ()
    memory: tuple[Memory, ...] = ()


def _numa_ids(topology: api_pb2.TopologyInfo) -> tuple[int, ...]:
    return tuple(sorted({node.ID for node in topology.nodes if node.ID >= 0}))


def _topology(numa_ids: tuple[int, ...]) -> api_pb2.TopologyInfo:
    return api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=i) for i in numa_ids])


def _devices_from_proto(raw: api_pb2.ContainerDevices) -> Devices:
    return Devices(raw.resource_name, tuple(raw.device_ids), _numa_ids(raw.topology))


def _memory_from_proto(raw: api_pb2.ContainerMemory) -> Memory:
    return Memory(raw.memory_type, raw.size, _numa_ids(raw.topology))


def _devices_to_proto(devices: Devices) -> api_pb2.ContainerDevices:
    return api_pb2.ContainerDevices(
        resource_name=devices.resource_name, device_ids=list(devices.device_ids), topology=_topology(devices.numa_ids)
    )


def _memory_to_proto(memory: Memory) -> api_pb2.ContainerMemory:
    return api_pb2.ContainerMemory(
        memory_type=memory.memory_type, size=memory.size, topology=_topology(memory.numa_ids)
    )


def _dynamic_from_proto(raw: api_pb2.DynamicResource) -> DynamicResource:
    return DynamicResource(
        raw.claim_name,
        raw.claim_namespace,
        tuple(
            ClaimResource(r.driver_name, r.pool_name, r.device_name, tuple(c.name for c in r.cdi_devices))
            for r in raw.claim_resources
        ),
    )


def _dynamic_to_proto(dynamic: DynamicResource) -> api_pb2.DynamicResource:
    return api_pb2.DynamicResource(
        claim_name=dynamic.claim_name,
        claim_namespace=dynamic.claim_namespace,
        claim_resources=[
            api_pb2.ClaimResource(
                driver_name=r.driver_name,
                pool_name=r.pool_name,
                device_name=r.device_name,
                cdi_devices=[api_pb2.CDIDevice(name=n) for n in r.cdi_devices],
            )
            for r in dynamic.claim_resources
        ],
    )


def pod_from_proto(raw: api_pb2.PodResources) -> Pod:
    return Pod(
        namespace=raw.namespace,
        name=raw.name,
        containers=tuple(
            Container(
                name=c.name,
                cpu_ids=tuple(c.cpu_ids),
                devices=tuple(_devices_from_proto(d) for d in c.devices),
                memory=tuple(_memory_from_proto(m) for m in c.memory),
                dynamic_resources=tuple(_dynamic_from_proto(d) for d in c.dynamic_resources),
            )
            for c in raw.containers
        ),
    )


def pod_to_proto(pod: Pod) -> api_pb2.PodResources:
    return api_pb2.PodResources(
        namespace=pod.namespace,
        name=pod.name,
        containers=[
            api_pb2.ContainerResources(
                name=c.name,
                cpu_ids=list(c.cpu_ids),
                devices=[_devices_to_proto(d) for d in c.devices],
                memory=[_memory_to_proto(m) for m in c.memory],
                dynamic_resources=[_dynamic_to_proto(d) for d in c.dynamic_resources],
            )
            for c in pod.containers
        ],
    )


def allocatable_from_proto(raw: api_pb2.AllocatableResourcesResponse) -> Allocatable:
    return Allocatable(
        cpu_ids=tuple(raw.cpu_ids),
        devices=tuple(_devices_from_proto(d) for d in raw.devices),
        memory=tuple(_memory_from_proto(m) for m in raw.memory),
    )


def allocatable_to_proto(allocatable: Allocatable) -> api_pb2.AllocatableResourcesResponse:
    return api_pb2.AllocatableResourcesResponse(
        cpu_ids=list(allocatable.cpu_ids),
        devices=[_devices_to_proto(d) for d in allocatable.devices],
        memory=[_memory_to_proto(m) for m in allocatable.memory],
    )
