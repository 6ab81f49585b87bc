"""Build the NodeResourceTopology object of a node: a pure function of sysfs data and what the kubelet reports.

Per NUMA zone (`node-<id>`, type `Node`, costs from the kernel distances):

- **capacity** comes from sysfs: online CPUs, `MemTotal`, huge pages reserved per size;
- **allocatable** comes from `GetAllocatableResources`: the CPUs of the static CPU manager's pool (so capacity -
  allocatable = the reserved CPUs), the memory manager's per-NUMA memory and huge pages, the device plugins' devices;
- **available** = allocatable - what `List` reports as exclusively allocated (exclusive CPUs, memory-manager blocks,
  devices), never below zero.

Resources appear only when the kubelet manages them per NUMA: `cpu` only with the static CPU manager (otherwise
`cpu_ids` is empty and no CPU is NUMA-pinned), `memory` / `hugepages-*` only with the static memory manager. Device
capacity equals device allocatable (there is no way to see unhealthy or unregistered devices).

Differences from resource-topology-exporter, on purpose:
- zones are keyed by real NUMA ids, and distance columns map to real ids (RTE uses list positions);
- a device or memory block spanning several NUMA nodes is counted once, not in every node it lists: allocatable
  devices go to their lowest NUMA node (an under-estimate never makes the scheduler send a pod the kubelet rejects),
  allocatable memory is split evenly, and allocated memory drains the listed nodes in ascending order as the memory
  manager does;
- output is deterministic (zones by id, resources by name), so unchanged data gives a byte-identical object.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from knuma.api.fingerprint import Method, compute
from knuma.api.nrt import (
    ANNOTATION_FINGERPRINT,
    ATTR_FINGERPRINT,
    ATTR_FINGERPRINT_METHOD,
    NodeResourceTopology,
    ResourceInfo,
    Zone,
)
from knuma.api.resources import CPU, MEMORY, is_hugepages
from knuma.exporter.podset import select_pods
from knuma.exporter.sysfs import MachineTopology, hugepages_resource_name
from knuma.exporter.tmconfig import PodPattern, TopologyManagerSettings
from knuma.podresources.model import Allocatable, Container, Memory, Pod
from knuma.topology.cpumanager import CPUManagerOptions

__all__ = ["BuildOptions", "BuildResult", "KubeletState", "build", "zone_name"]


@dataclass(frozen=True, slots=True)
class KubeletState:
    """One scan of the kubelet PodResources API."""

    allocatable: Allocatable
    pods: Sequence[Pod]


@dataclass(frozen=True, slots=True)
class BuildOptions:
    node_name: str
    topology_manager: TopologyManagerSettings = field(default_factory=TopologyManagerSettings)
    fingerprint: bool = True
    fingerprint_method: Method = Method.WITH_EXCLUSIVE_RESOURCES
    reference_container: tuple[str, str, str] | None = None
    """`(namespace, pod, container)` of a container that never gets exclusive CPUs: on kubelets older than 1.22 its
    `cpu_ids` are the shared pool, which is then removed from every container (RTE's `--reference-container`)."""
    pod_exclude: tuple[PodPattern, ...] = ()
    resource_exclude: frozenset[str] = frozenset()
    reserved_cpus: frozenset[int] = frozenset()
    """Only without the kubelet (`--no-podresources`): CPUs to leave out of allocatable (`reservedSystemCPUs`)."""
    cpu_manager: CPUManagerOptions | None = None
    """The static CPU manager's options from the kubelet configuration; published with the CPU topology facts they
    need (threads per core, siblings of reserved CPUs)."""
    namespace: str | None = None
    """`--watch-namespace`: only pods of this namespace are subtracted from allocatable. As in RTE, the fingerprint
    still covers the pods of every namespace: the scheduler computes it over all pods of the node."""


@dataclass(frozen=True, slots=True)
class BuildResult:
    nrt: NodeResourceTopology
    warnings: tuple[str, ...] = ()
    fingerprinted: tuple[tuple[str, str], ...] = ()
    """`(namespace, name)` of the pods that entered the fingerprint, sorted."""

    @property
    def pods(self) -> int:
        """How many pods entered the fingerprint."""
        return len(self.fingerprinted)


def cpu_manager_facts(
    machine: MachineTopology, options: CPUManagerOptions, reserved: frozenset[int]
) -> CPUManagerOptions:
    """`options` with what the machine says: `CPUsPerCore` (threads of the widest core, as cadvisor's topology gives
    the kubelet) and the CPUs that share a core with a reserved CPU without being reserved (`reservedPhysicalCPUs`
    minus the reserved set of `NewStaticPolicy`), and each NUMA node's socket (for `align-by-socket`, and for the order
    in which the kubelet takes CPUs on machines with more NUMA nodes than sockets)."""
    per_core = max((len(siblings) for siblings in machine.thread_siblings.values()), default=1)
    siblings = {cpu for r in reserved for cpu in machine.thread_siblings.get(r, frozenset({r}))} - reserved
    sockets: dict[int, int] = {}
    for node in machine.nodes:  # the socket of each NUMA node, from its CPUs' physical_package_id
        found = {machine.packages[cpu] for cpu in node.cpus if cpu in machine.packages}
        if len(found) == 1:
            sockets[node.id] = found.pop()
    return replace(options, cpus_per_core=per_core, reserved_core_siblings=len(siblings), numa_sockets=sockets)


def zone_name(numa_id: int) -> str:
    return f"node-{numa_id}"


def build(machine: MachineTopology, kubelet: KubeletState | None, options: BuildOptions) -> BuildResult:
    """The NRT object to publish; `kubelet=None` describes the bare machine (allocatable = available = capacity)."""
    warnings: list[str] = []
    attributes = options.topology_manager.attributes()
    if options.cpu_manager is not None:
        attributes |= cpu_manager_facts(machine, options.cpu_manager, options.reserved_cpus).attributes()
    annotations: dict[str, str] = {}
    fingerprinted: tuple[tuple[str, str], ...] = ()
    if kubelet is None:
        allocatable, used = _machine_only(machine, options.reserved_cpus), {}
        capacity = _capacity(machine)
    else:
        pods = _prepare_pods(kubelet.pods, options, warnings)
        if options.fingerprint:
            selected = select_pods(pods, options.fingerprint_method)
            fingerprint = compute((p.namespace, p.name) for p in selected)
            attributes[ATTR_FINGERPRINT] = fingerprint
            attributes[ATTR_FINGERPRINT_METHOD] = options.fingerprint_method.value
            annotations[ANNOTATION_FINGERPRINT] = fingerprint
            fingerprinted = tuple((p.namespace, p.name) for p in selected)
        capacity = _capacity(machine)
        allocatable, device_numa = _allocatable(machine, kubelet.allocatable, warnings)
        accounted = pods if options.namespace is None else [p for p in pods if p.namespace == options.namespace]
        used = _used(machine, accounted, allocatable, device_numa, kubelet.allocatable, warnings)
        for numa_id, resources in allocatable.items():
            for name, amount in resources.items():
                # no way to see devices the kubelet does not report: their capacity is what it can hand out
                if name not in capacity[numa_id] or capacity[numa_id][name] < amount:
                    capacity[numa_id][name] = amount
    zones = []
    for node in machine.nodes:
        infos = []
        node_alloc = allocatable.get(node.id, {})
        node_used = used.get(node.id, {})
        for name in sorted(node_alloc):
            if name in options.resource_exclude:
                continue
            alloc = node_alloc[name]
            infos.append(
                ResourceInfo(
                    name=name,
                    capacity=capacity[node.id].get(name, alloc),
                    allocatable=alloc,
                    available=max(0, alloc - node_used.get(name, 0)),
                )
            )
        zones.append(
            Zone(
                name=zone_name(node.id),
                costs={zone_name(other): distance for other, distance in sorted(node.distances.items())},
                resources=tuple(infos),
            )
        )
    nrt = NodeResourceTopology(
        name=options.node_name, zones=tuple(zones), attributes=attributes, annotations=annotations
    )
    return BuildResult(nrt=nrt, warnings=tuple(warnings), fingerprinted=fingerprinted)


def _capacity(machine: MachineTopology) -> dict[int, dict[str, int]]:
    capacity: dict[int, dict[str, int]] = {}
    for node in machine.nodes:
        resources = {CPU: len(node.cpus) * 1000}
        if node.memory_bytes is not None:
            resources[MEMORY] = node.memory_bytes
        for size, count in node.hugepages.items():
            resources[hugepages_resource_name(size)] = size * count
        capacity[node.id] = resources
    return capacity


def _machine_only(machine: MachineTopology, reserved: frozenset[int]) -> dict[int, dict[str, int]]:
    allocatable = _capacity(machine)
    for node in machine.nodes:
        allocatable[node.id][CPU] = len(node.cpus - reserved) * 1000
    return allocatable


def _prepare_pods(pods: Sequence[Pod], options: BuildOptions, warnings: list[str]) -> list[Pod]:
    """Drop excluded pods, sort, and strip the shared CPU pool learnt from the reference container."""
    kept = sorted(
        (p for p in pods if not any(pattern.matches(p.namespace, p.name) for pattern in options.pod_exclude)),
        key=lambda p: (p.namespace, p.name),
    )
    if options.reference_container is None:
        return kept
    namespace, pod_name, container_name = options.reference_container
    shared: frozenset[int] | None = None
    for pod in kept:
        if (pod.namespace, pod.name) == (namespace, pod_name):
            for container in pod.containers:
                if container.name == container_name:
                    shared = frozenset(container.cpu_ids)
    if shared is None:
        warnings.append(f"reference container {namespace}/{pod_name}/{container_name} not found in List")
        return kept
    if not shared:
        return kept

    def strip(container: Container) -> Container:
        if not shared.intersection(container.cpu_ids):
            return container
        return replace(container, cpu_ids=tuple(c for c in container.cpu_ids if c not in shared))

    return [replace(p, containers=tuple(strip(c) for c in p.containers)) for p in kept]


def _allocatable(
    machine: MachineTopology, reported: Allocatable, warnings: list[str]
) -> tuple[dict[int, dict[str, int]], dict[tuple[str, str], int]]:
    """Per-NUMA allocatable, and the NUMA node each allocatable device was counted in."""
    per_node: dict[int, dict[str, int]] = {node.id: {} for node in machine.nodes}
    known = machine.cpu_to_node
    if reported.cpu_ids:
        for node in machine.nodes:
            per_node[node.id][CPU] = 0
        unknown = sorted(c for c in set(reported.cpu_ids) if c not in known)
        if unknown:
            warnings.append(f"allocatable CPUs {unknown} are not online CPUs of any NUMA node in sysfs; ignored")
        for cpu in set(reported.cpu_ids):
            if cpu in known:
                per_node[known[cpu]][CPU] += 1000
    memory_types = _memory_types(reported.memory)
    for memory in memory_types:
        for node in machine.nodes:
            per_node[node.id].setdefault(memory, 0)
    for block in reported.memory:
        if block.memory_type not in memory_types:
            warnings.append(f"allocatable memory of unknown type {block.memory_type!r}; ignored")
            continue
        ids = sorted(i for i in block.numa_ids if i in per_node)
        if not ids or block.size <= 0:
            if block.size > 0:
                warnings.append(f"allocatable {block.memory_type} block without a known NUMA node; ignored")
            continue
        share, extra = divmod(block.size, len(ids))
        for k, numa_id in enumerate(ids):
            per_node[numa_id][block.memory_type] += share + (extra if k == 0 else 0)
    device_numa: dict[tuple[str, str], int] = {}
    for devices in reported.devices:
        ids = sorted(i for i in devices.numa_ids if i in per_node)
        if not ids:
            continue  # no NUMA locality: a node-level resource, not a zone's
        for device_id in devices.device_ids:
            key = (devices.resource_name, device_id)
            if key in device_numa:
                continue
            device_numa[key] = ids[0]
            zone = per_node[ids[0]]
            zone[devices.resource_name] = zone.get(devices.resource_name, 0) + 1
    return per_node, device_numa


def _memory_types(blocks: Iterable[Memory]) -> set[str]:
    return set({b.memory_type for b in blocks if b.memory_type == MEMORY or is_hugepages(b.memory_type)})


def _used(
    machine: MachineTopology,
    pods: Sequence[Pod],
    allocatable: Mapping[int, Mapping[str, int]],
    device_numa: Mapping[tuple[str, str], int],
    reported: Allocatable,
    warnings: list[str],
) -> dict[int, dict[str, int]]:
    used: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    known = machine.cpu_to_node
    pool = set(reported.cpu_ids)
    exclusive: set[int] = set()
    devices_seen: set[tuple[str, str]] = set()
    for pod in pods:
        for container in pod.containers:
            exclusive.update(c for c in container.cpu_ids if c in pool)
            for devices in container.devices:
                for device_id in devices.device_ids:
                    key = (devices.resource_name, device_id)
                    if key in devices_seen:
                        continue
                    devices_seen.add(key)
                    numa_id = device_numa.get(key)
                    if numa_id is None:
                        local = sorted(i for i in devices.numa_ids if i in allocatable)
                        if not local:
                            continue
                        numa_id = local[0]
                    used[numa_id][devices.resource_name] += 1
            for block in container.memory:
                _drain(block, allocatable, used, pod, warnings)
    for cpu in exclusive:
        if cpu in known:
            used[known[cpu]][CPU] += 1000
    return {k: dict(v) for k, v in used.items()}


def _drain(
    block: Memory,
    allocatable: Mapping[int, Mapping[str, int]],
    used: dict[int, dict[str, int]],
    pod: Pod,
    warnings: list[str],
) -> None:
    """Charge a memory block to its NUMA nodes in ascending order, as the memory manager fills them."""
    ids = sorted(i for i in block.numa_ids if i in allocatable)
    if not ids:
        if block.size > 0 and block.numa_ids:
            warnings.append(f"pod {pod.namespace}/{pod.name}: {block.memory_type} on unknown NUMA nodes; ignored")
        return
    remaining = block.size
    for k, numa_id in enumerate(ids):
        free = max(0, allocatable[numa_id].get(block.memory_type, 0) - used[numa_id][block.memory_type])
        take = remaining if k == len(ids) - 1 else min(remaining, free)
        used[numa_id][block.memory_type] += take
        remaining -= take
        if remaining <= 0:
            break
