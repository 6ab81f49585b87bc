"""Kubelet admission with the Topology Manager: would this node admit this pod, and where would it put it?

A pure function of (pod, node). It follows `topologymanager/scope_container.go` and `scope_pod.go`: gather hints
from the CPU, memory and device managers, merge them under the node's policy, reject with `TopologyAffinityError`
when the policy says so, otherwise allocate right away so that the next container sees what is left.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import Container, ContainerKind, Pod, long_running_request
from knuma.api.resources import CPU
from knuma.topology.hints import Hint, HintLists, bits, merge, normalise
from knuma.topology.managers import AllocationError, WorkingNode, exclusive_request, memory_types
from knuma.topology.node import NodeTopology

__all__ = [
    "TOPOLOGY_AFFINITY_ERROR",
    "TOPOLOGY_AFFINITY_MESSAGE",
    "UNEXPECTED_ADMISSION_ERROR",
    "Admission",
    "ContainerPlacement",
    "admit",
]

TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"
TOPOLOGY_AFFINITY_MESSAGE = "Resources cannot be allocated with Topology locality"
UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"
TOPOLOGY_MANAGER_UNSUPPORTED = "TopologyManagerUnsupported"


@dataclass(frozen=True, slots=True)
class ContainerPlacement:
    name: str
    kind: ContainerKind
    affinity: tuple[int, ...] | None
    """NUMA ids of the merged hint; None when the container has no NUMA preference."""
    allocated: Mapping[str, Mapping[int, int]]
    """Exclusive resources taken per NUMA id (cpu in milli-CPU)."""

    @property
    def numa_ids(self) -> tuple[int, ...]:
        """Where the container's exclusive resources are, or its affinity when it holds none."""
        held = sorted({n for per_numa in self.allocated.values() for n, amount in per_numa.items() if amount})
        return tuple(held) if held else (self.affinity or ())


@dataclass(frozen=True)
class Admission:
    admitted: bool
    node: NodeTopology
    """The node after admission (exclusive resources of app and sidecar containers taken); unchanged if rejected."""
    placements: tuple[ContainerPlacement, ...] = ()
    reason: str = ""
    message: str = ""
    container: str = ""
    """The container whose hints could not be merged or allocated, when rejected."""
    hint: Hint | None = None
    details: Sequence[str] = field(default_factory=tuple)

    def placement(self, container: str) -> ContainerPlacement | None:
        return next((p for p in self.placements if p.name == container), None)


def admit(pod: Pod, node: NodeTopology) -> Admission:
    """Admit `pod` on `node` as the kubelet's Topology Manager and resource managers would."""
    config = node.config
    if config.policy is not Policy.NONE and len(node.zones) > config.max_numa_nodes:
        return Admission(
            False,
            node,
            reason=TOPOLOGY_MANAGER_UNSUPPORTED,
            message=f"topology manager is unsupported on machines with more than {config.max_numa_nodes} NUMA nodes",
        )
    work = WorkingNode.of(node)
    try:
        if config.policy is not Policy.NONE and config.scope is Scope.POD:
            placements = _admit_pod_scope(pod, work)
        else:
            placements = _admit_container_scope(pod, work)
    except _Rejected as rejected:
        return Admission(
            False,
            node,
            reason=rejected.reason,
            message=rejected.message,
            container=rejected.container,
            hint=rejected.hint,
        )
    return Admission(True, replace(_held_after(node, placements), memory_groups=work.groups), placements)


class _Rejected(Exception):
    def __init__(self, reason: str, message: str, container: str, hint: Hint | None = None) -> None:
        super().__init__(message)
        self.reason, self.message, self.container, self.hint = reason, message, container, hint


def _container_hints(pod: Pod, container: Container, work: WorkingNode) -> HintLists:
    request = exclusive_request(work.node, container.requests, pod.exclusive_cpus(container), pod.is_guaranteed)
    return _hints_for(request, work)


def _hints_for(request: Mapping[str, int], work: WorkingNode) -> HintLists:
    """Hints of the three providers, normalised as `filterProvidersHints` does (resources without a request from a
    provider are don't-care)."""
    lists: list[list[Hint]] = []
    cpu: dict[str, list[Hint] | None] = {}
    if CPU in request:
        cpu[CPU] = work.countable_hints(CPU, request[CPU])
    lists += normalise(cpu)
    memory = memory_types(request)
    memory_hints = work.memory_hints(memory) if memory else []
    # calculateHints returns an empty map when no mask fits: the Topology Manager reads "no preference", and the
    # memory manager's Allocate fails afterwards (UnexpectedAdmissionError, not TopologyAffinityError).
    lists += normalise(dict.fromkeys(memory, memory_hints) if memory_hints else {})
    devices = {name: work.countable_hints(name, amount) for name, amount in request.items() if _is_countable(name)}
    lists += normalise(dict(devices))
    return lists


def _is_countable(name: str) -> bool:
    return name != CPU and not name.startswith("hugepages-") and name != "memory"


def _allocate(pod: Pod, container: Container, work: WorkingNode, hint: Hint) -> ContainerPlacement:
    request = exclusive_request(work.node, container.requests, pod.exclusive_cpus(container), pod.is_guaranteed)
    reusable_after = container.kind is ContainerKind.INIT
    allocated: dict[str, dict[int, int]] = {}
    try:
        for name, amount in request.items():
            if _is_countable(name) or name == CPU:
                allocated[name] = work.allocate_countable(name, amount, hint.mask, reusable_after=reusable_after)
        memory = memory_types(request)
        if memory:
            allocated.update(work.allocate_memory(memory, hint.mask, hint.preferred, reusable_after=reusable_after))
    except AllocationError as err:
        raise _Rejected(UNEXPECTED_ADMISSION_ERROR, f"Allocate failed due to {err}", container.name, hint) from None
    affinity = None if hint.mask is None else bits(hint.mask)
    return ContainerPlacement(container.name, container.kind, affinity, allocated)


def _merge(lists: HintLists, work: WorkingNode) -> tuple[Hint, bool]:
    node = work.node
    return merge(lists, node.numa_ids, node.config.policy, prefer_closest=node.prefer_closest, distances=node.distances)


def _admit_container_scope(pod: Pod, work: WorkingNode) -> tuple[ContainerPlacement, ...]:
    placements = []
    for container in pod.all_containers:
        hint, admitted = _merge(_container_hints(pod, container, work), work)
        if not admitted:
            raise _Rejected(TOPOLOGY_AFFINITY_ERROR, TOPOLOGY_AFFINITY_MESSAGE, container.name, hint)
        placements.append(_allocate(pod, container, work, hint))
    return tuple(placements)


def _admit_pod_scope(pod: Pod, work: WorkingNode) -> tuple[ContainerPlacement, ...]:
    request = _pod_exclusive_request(pod, work.node)
    hint, admitted = _merge(_hints_for(request, work), work)
    if not admitted:
        raise _Rejected(TOPOLOGY_AFFINITY_ERROR, TOPOLOGY_AFFINITY_MESSAGE, "", hint)
    return tuple(_allocate(pod, container, work, hint) for container in pod.all_containers)


def _pod_exclusive_request(pod: Pod, node: NodeTopology) -> dict[str, int]:
    """Pod-scope requests (`GetPodTopologyHints`): each manager's per-container amounts combined with the sidecar
    rules; the CPU manager counts only exclusive CPUs, and overhead is not included."""
    per_container = {
        c.name: exclusive_request(node, c.requests, pod.exclusive_cpus(c), pod.is_guaranteed)
        for c in pod.all_containers
    }
    init = [replace(c, requests=per_container[c.name]) for c in pod.init_containers]
    apps = [replace(c, requests=per_container[c.name]) for c in pod.containers]
    return {name: amount for name, amount in long_running_request(init, apps).items() if amount}


def _held_after(node: NodeTopology, placements: Sequence[ContainerPlacement]) -> NodeTopology:
    """Steady state after admission: app and sidecar containers hold their exclusive resources; init containers
    have run to completion and released what the app containers did not reuse."""
    available = {z.id: dict(z.available) for z in node.zones}
    for placement in placements:
        if placement.kind is ContainerKind.INIT:
            continue
        for name, per_numa in placement.allocated.items():
            for numa_id, amount in per_numa.items():
                available[numa_id][name] = available[numa_id].get(name, 0) - amount
    return node.with_available(available)
