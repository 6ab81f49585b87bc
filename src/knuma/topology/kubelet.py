"""Kubelet admission with the Topology Manager: would this node admit this pod, and where would it put it?

A pure function of (pod, node). It follows `topologymanager/scope_container.go` and `scope_pod.go`: gather hints
from the CPU, memory and device managers, merge them under the node's policy, reject with `TopologyAffinityError`
when the policy says so, otherwise allocate right away so that the next container sees what is left.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import Container, ContainerKind, Pod, long_running_request, without_requests
from knuma.api.resources import CPU
from knuma.errors import KnumaError
from knuma.topology.hints import Hint, HintLists, bits, iterate_masks, mask_of, merge, normalise
from knuma.topology.managers import AllocationError, WorkingNode, exclusive_request, memory_types
from knuma.topology.node import Interned, NodeTopology, NUMAZone, frozen
from knuma.topology.trace import HintStep, ProviderHints

__all__ = [
    "DRA_HINT_RESOURCE",
    "SMT_ALIGNMENT_ERROR",
    "TOPOLOGY_AFFINITY_ERROR",
    "TOPOLOGY_AFFINITY_MESSAGE",
    "UNEXPECTED_ADMISSION_ERROR",
    "Admission",
    "ContainerPlacement",
    "admit",
    "admits",
    "kubelet_view",
    "pinned_request",
]

TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"
TOPOLOGY_AFFINITY_MESSAGE = "Resources cannot be allocated with Topology locality"
UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"
SMT_ALIGNMENT_ERROR = "SMTAlignmentError"
"""`cpumanager.ErrorSMTAlignment`: the admission failure reason `full-pcpus-only` gives (`SMTAlignmentError.Type`)."""
TOPOLOGY_MANAGER_UNSUPPORTED = "TopologyManagerUnsupported"
TOPOLOGY_NOT_MODELLED = "TopologyNotModelled"
"""knuma's own reason: the node has more NUMA nodes than `MAX_MODELLED_NUMA_NODES`."""
MAX_MODELLED_NUMA_NODES = 16
"""The most NUMA nodes knuma models the Topology Manager on. Its hint providers walk every NUMA mask, 2^n of them, as
the kubelet's do (`bitmask.IterateBitMasks`): 65,535 masks a resource at 16 NUMA nodes (40-90 ms an admission
under `restricted`, `make bench`), 4 billion at 32, which would stall the scheduler on one node. The kubelet itself
needs `max-allowable-numa-nodes` beyond 8 and warns of the same growth."""
DRA_HINT_RESOURCE = "resource.k8s.io/devices"
"""The resource name DRA devices' hints are merged under (see `dra_device_hints`)."""

DeviceNUMA = Mapping[str, Mapping[str, int | None]]
"""Container name -> {DRA device (`driver/pool/device`): its NUMA node, None without NUMA affinity}: the devices the
scheduler allocated to the claims each container references."""


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


def dra_device_hints(devices: Mapping[str, int | None], numa_ids: Sequence[int]) -> list[Hint] | None:
    """Topology hints of devices that are already allocated, as the device manager computes them for a container
    whose devices are fixed (`GetTopologyHints` -> `generateDeviceTopologyHints(resource, allocated, {}, len)`):
    every NUMA mask holding all the devices is a hint, preferred when it is as narrow as possible, i.e. exactly the
    devices' NUMA nodes. knuma's model of DRA in the Topology Manager (the kubelet has no DRA hint provider yet):
    DRA devices of a container enter the merge like device-plugin devices whose allocation is already known.
    Devices without NUMA affinity do not constrain the merge; None (no preference) when no device has one."""
    placed = {n for n in devices.values() if n is not None}
    if not placed:
        return None
    needed = mask_of(sorted(placed))
    return [Hint(m, m == needed) for m in iterate_masks(numa_ids) if m & needed == needed]


def admit(
    pod: Pod, node: NodeTopology, dra_devices: DeviceNUMA | None = None, *, trace: list[HintStep] | None = None
) -> Admission:
    """Admit `pod` on `node` as the kubelet's Topology Manager and resource managers would. `dra_devices`: the
    NUMA nodes of the DRA devices allocated to each container (see `dra_device_hints`). `trace`: receives every
    provider's full hint lists and each merge (`knuma.topology.trace`).

    A pure function of what it reads, so verdicts are memoised (`_Memo`): a scheduler asks the same question of
    many nodes in the same state (same shape, same free zones), and again at every attempt."""
    if trace is not None:
        return _admit(pod, node, dra_devices, trace)
    key = (_pod_id(pod), None if dra_devices is None else frozen(dra_devices), node.admission_id)
    known = _MEMO.get(key)
    if known is not None:
        return known.on(node)
    admission = _admit(pod, node, dra_devices, None)
    _MEMO.put(key, _Verdict.of(admission))
    return admission


def admits(pod: Pod, node: NodeTopology) -> bool:
    """`admit(pod, node).admitted`, without building the admission when the verdict is known."""
    known = _MEMO.get((_pod_id(pod), None, node.admission_id))
    if known is not None:
        return known.admission.admitted
    return admit(pod, node).admitted


@dataclass(frozen=True, slots=True)
class _Verdict:
    """An `Admission` without the node it was decided on: the zones and memory groups after it, if admitted."""

    admission: Admission
    zones: tuple[NUMAZone, ...]
    memory_groups: Mapping[int, frozenset[int]]

    @classmethod
    def of(cls, admission: Admission) -> _Verdict:
        return cls(admission, admission.node.zones, admission.node.memory_groups)

    def on(self, node: NodeTopology) -> Admission:
        """The same admission on `node` (equal `admission_key`, maybe another name)."""
        a = self.admission
        if a.admitted:
            node = node.with_zones(self.zones, self.memory_groups)
        elif a.node is node:
            return a
        return Admission(a.admitted, node, a.placements, a.reason, a.message, a.container, a.hint, a.details)


class _Memo:
    """A bounded map of admission verdicts; the oldest entries go first when it is full."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.entries: dict[Hashable, _Verdict] = {}

    def get(self, key: Hashable) -> _Verdict | None:
        return self.entries.get(key)

    def put(self, key: Hashable, verdict: _Verdict) -> None:
        entries = self.entries
        if len(entries) >= self.size:
            for old in list(itertools.islice(entries, self.size // 4)):
                entries.pop(old, None)
        entries[key] = verdict

    def clear(self) -> None:
        self.entries.clear()


_POD_SHAPES = Interned(1 << 16)


def _pod_id(pod: Pod) -> int:
    """`pod.admission_key` interned, kept on the pod (a frozen dataclass: set as a cached property would be)."""
    known: int | None = pod.__dict__.get("_admission_id")
    if known is None:
        known = pod.__dict__["_admission_id"] = _POD_SHAPES(pod.admission_key)
    return known


MEMO_SIZE = 1 << 16
"""Verdicts kept (a few hundred MB at most; a 5000-node simulation reuses most within a few thousand pods)."""
_MEMO = _Memo(MEMO_SIZE)


def kubelet_view(pod: Pod) -> Pod:
    """`pod` without the requests DRA backs (`Pod.dra_backed`): the kubelet's admission leaves out every request its
    extended resource claim maps to a container (`removeMissingExtendedResources`' `isResourceBackedByDRA`,
    `pkg/kubelet/lifecycle/predicate.go`, KEP-5004), and its device manager aligns and allocates only device-plugin
    resources (`isDevicePluginResource`); the devices themselves are aligned as DRA devices (`Pod.dra_devices`).
    NUMA zones that still list such a resource (an NRT exporter behind a node's move to DRA) hold none of it.
    Each container's requests are those the kubelet allocated it (`Pod.as_allocated`, the allocation manager's
    `UpdatePodFromAllocation`): a resize it has not accepted does not move what a running pod holds."""
    pod = pod.as_allocated
    backed = pod.dra_backed
    if not backed:
        return pod
    stripped = without_requests(pod, lambda c: {resource for name, resource in backed if name == c.name})
    return replace(stripped, dra_backed=frozenset())


def _admit(pod: Pod, node: NodeTopology, dra_devices: DeviceNUMA | None, trace: list[HintStep] | None) -> Admission:
    pod = kubelet_view(pod)
    config = node.config
    if config.policy is not Policy.NONE and len(node.zones) > config.max_numa_nodes:
        return Admission(
            False,
            node,
            reason=TOPOLOGY_MANAGER_UNSUPPORTED,
            message=f"topology manager is unsupported on machines with more than {config.max_numa_nodes} NUMA nodes",
        )
    walks_masks = config.policy is not Policy.NONE or any(node.memory_managed(name) for name in node.numa_managed)
    if len(node.zones) > MAX_MODELLED_NUMA_NODES and walks_masks:  # no hints under none, but getDefaultHint walks
        return Admission(
            False,
            node,
            reason=TOPOLOGY_NOT_MODELLED,
            message=(
                f"knuma models the Topology Manager on at most {MAX_MODELLED_NUMA_NODES} NUMA nodes and this node has "
                f"{len(node.zones)} (hint generation walks all 2^n NUMA masks, as the kubelet's does)"
            ),
        )
    work = WorkingNode.of(node)
    work.full_hints = trace is not None
    devices = dra_devices if dra_devices is not None else pod.dra_devices
    try:
        if config.policy is not Policy.NONE and config.scope is Scope.POD:
            placements = _admit_pod_scope(pod, work, devices, trace)
        else:
            placements = _admit_container_scope(pod, work, devices, trace)
    except _Rejected as rejected:
        return Admission(
            False,
            node,
            reason=rejected.reason,
            message=rejected.message,
            container=rejected.container,
            hint=rejected.hint,
        )
    return Admission(True, _held_after(node, placements, work.groups), placements)


class _Rejected(KnumaError):
    def __init__(self, reason: str, message: str, container: str, hint: Hint | None = None) -> None:
        super().__init__(message)
        self.reason, self.message, self.container, self.hint = reason, message, container, hint


def _container_hints(
    pod: Pod, container: Container, work: WorkingNode, devices: DeviceNUMA, record: list[ProviderHints] | None
) -> HintLists:
    request = exclusive_request(work.node, container.requests, pod.exclusive_cpus(container), pod.pinned_by_managers)
    return _hints_for(request, work, devices.get(container.name) or {}, record)


def _hints_for(
    request: Mapping[str, int],
    work: WorkingNode,
    dra: Mapping[str, int | None],
    record: list[ProviderHints] | None = None,
) -> HintLists:
    """Hints of the three providers, normalised as `filterProvidersHints` does (resources without a request from a
    provider are don't-care); `record` receives them as each provider returned them."""
    lists: list[list[Hint]] = []
    cpu: dict[str, list[Hint] | None] = {}
    if CPU in request:
        cpu[CPU] = work.countable_hints(CPU, request[CPU])
    lists += normalise(cpu)
    memory = memory_types(request)
    memory_hints = work.memory_hints(memory) if memory else []
    # calculateHints returns an empty map when no mask fits: the Topology Manager reads "no preference", and the
    # memory manager's Allocate fails afterwards (UnexpectedAdmissionError, not TopologyAffinityError).
    memory_map: dict[str, list[Hint] | None] = dict.fromkeys(memory, memory_hints) if memory_hints else {}
    lists += normalise(memory_map)
    devices = {name: work.countable_hints(name, amount) for name, amount in request.items() if _is_countable(name)}
    lists += normalise(dict(devices))
    dra_hints: dict[str, list[Hint] | None] = {}
    if dra:
        dra_hints[DRA_HINT_RESOURCE] = dra_device_hints(dra, work.node.numa_ids)
        lists += normalise(dra_hints)
    if record is not None:
        for provider, by_resource in (
            ("cpu manager", cpu),
            ("memory manager", memory_map),
            ("device manager", dict(devices)),
            ("dra", dra_hints),
        ):
            for resource, hints in by_resource.items():
                record.append(ProviderHints(provider, resource, None if hints is None else tuple(hints)))
    return lists


def _is_countable(name: str) -> bool:
    return name != CPU and not name.startswith("hugepages-") and name != "memory"


def _allocate(pod: Pod, container: Container, work: WorkingNode, hint: Hint) -> ContainerPlacement:
    request = exclusive_request(work.node, container.requests, pod.exclusive_cpus(container), pod.pinned_by_managers)
    reusable_after = container.kind is ContainerKind.INIT
    if CPU in request:
        # staticPolicy.Allocate checks full-pcpus-only before taking any CPU; the free count is the default set
        # minus reserved CPUs, which does not hold CPUs the pod's init containers left reusable.
        free = sum(work.free[n].get(CPU, 0) // 1000 for n in work.node.numa_ids)
        smt = work.node.cpu_manager.smt_alignment_error(request[CPU], free)
        if smt:
            raise _Rejected(SMT_ALIGNMENT_ERROR, smt, container.name, hint)
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


NO_PREFERENCE = Hint(None, False)
"""`nonePolicy.Merge`'s `TopologyHint{}`: what every container gets under policy `none`."""


def _merge(lists: HintLists, work: WorkingNode) -> tuple[Hint, bool]:
    node = work.node
    return merge(lists, node.numa_ids, node.config.policy, prefer_closest=node.prefer_closest, distances=node.distances)


def _admit_container_scope(
    pod: Pod, work: WorkingNode, devices: DeviceNUMA, trace: list[HintStep] | None
) -> tuple[ContainerPlacement, ...]:
    placements = []
    for container in pod.all_containers:
        record: list[ProviderHints] | None = [] if trace is not None else None
        # scope.admitPolicyNone: the kubelet allocates without asking for hints (so there are none to trace)
        if work.node.config.policy is Policy.NONE:
            hint, admitted = NO_PREFERENCE, True
        else:
            hint, admitted = _merge(_container_hints(pod, container, work, devices, record), work)
        if trace is not None and record is not None:
            trace.append(HintStep(container.name, container.kind.value, tuple(record), hint, admitted))
        if not admitted:
            raise _Rejected(TOPOLOGY_AFFINITY_ERROR, TOPOLOGY_AFFINITY_MESSAGE, container.name, hint)
        placements.append(_allocate(pod, container, work, hint))
    return tuple(placements)


def _admit_pod_scope(
    pod: Pod, work: WorkingNode, devices: DeviceNUMA, trace: list[HintStep] | None
) -> tuple[ContainerPlacement, ...]:
    request = _pod_exclusive_request(pod, work.node)
    pod_devices = {key: numa for per_container in devices.values() for key, numa in per_container.items()}
    record: list[ProviderHints] | None = [] if trace is not None else None
    hint, admitted = _merge(_hints_for(request, work, pod_devices, record), work)
    if trace is not None and record is not None:
        trace.append(HintStep("", "pod", tuple(record), hint, admitted))
    if not admitted:
        raise _Rejected(TOPOLOGY_AFFINITY_ERROR, TOPOLOGY_AFFINITY_MESSAGE, "", hint)
    return tuple(_allocate(pod, container, work, hint) for container in pod.all_containers)


def pinned_request(pod: Pod, node: NodeTopology) -> dict[str, int]:
    """What the pod's exclusive resources take from `node`'s zones in all, in the zones' units (milli-CPU): an upper
    bound for holding a pod whose zones are unknown."""
    request = _pod_exclusive_request(kubelet_view(pod), node)
    if CPU in request:
        request[CPU] *= 1000
    return request


def _pod_exclusive_request(pod: Pod, node: NodeTopology) -> dict[str, int]:
    """Pod-scope requests (`GetPodTopologyHints`): each manager's per-container amounts combined with the sidecar
    rules; the CPU manager counts only exclusive CPUs, the memory manager only memory types some app container
    requests, and overhead is not included."""
    per_container = {
        c.name: exclusive_request(node, c.requests, pod.exclusive_cpus(c), pod.pinned_by_managers)
        for c in pod.all_containers
    }
    init = [replace(c, requests=per_container[c.name]) for c in pod.init_containers]
    apps = [replace(c, requests=per_container[c.name]) for c in pod.containers]
    in_apps = {name for c in apps for name in c.requests}
    return {
        name: amount
        for name, amount in long_running_request(init, apps).items()
        # memorymanager getPodRequestedResources ranges over the app containers' resources only: hugepages that
        # only init or sidecar containers request are left out of the pod's hint (1.21 to 1.33 alike)
        if amount and (name in in_apps or not memory_types({name: amount}))
    }


def _held_after(
    node: NodeTopology, placements: Sequence[ContainerPlacement], memory_groups: Mapping[int, frozenset[int]]
) -> NodeTopology:
    """Steady state after admission: app and sidecar containers hold their exclusive resources; init containers
    have run to completion and released what the app containers did not reuse."""
    available = {z.id: dict(z.available) for z in node.zones}
    for placement in placements:
        if placement.kind is ContainerKind.INIT:
            continue
        for name, per_numa in placement.allocated.items():
            for numa_id, amount in per_numa.items():
                available[numa_id][name] = available[numa_id].get(name, 0) - amount
    return node.with_available(available, memory_groups)
