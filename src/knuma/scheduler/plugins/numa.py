"""NodeResourceTopologyMatch: the NUMA plugin (Filter + Score), registered under upstream's name.

Filter asks the kubelet model "would this node admit this pod, given its NRT?" for every Topology Manager policy
(upstream only filters `single-numa-node` nodes, issue #885) and keeps upstream's messages. Score uses upstream's
strategies and special cases so that rankings match NodeResourceTopologyMatch.

On a node where a DeviceClass serves some of the pod's extended resources (KEP-5004: the node's allocatable has none
of them), both ask about the pod as the kubelet admits it there, without those resources (`kubelet_pod`,
`dra_extended.as_admitted`): NUMA zones that still list them (an NRT exporter behind a node's move from a device
plugin to DRA) neither refuse the pod nor steer its CPUs, and do not weigh in its score.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import ContainerKind, Pod, QOSClass
from knuma.api.resources import ALWAYS_ON_NODE, is_native
from knuma.scheduler.cache.interface import NRTCache
from knuma.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    SUCCESS,
    Code,
    CycleState,
    FastPathKind,
    NodeInfo,
    PreFilterResult,
    Status,
)
from knuma.scheduler.plugins.device_stranding import gap_counts
from knuma.scheduler.plugins.dra_extended import ExtendedResourceMap, as_admitted, served_on_node
from knuma.scheduler.plugins.dra_zones import has_claims
from knuma.scheduler.plugins.stranding import CPUDemand
from knuma.scheduler.plugins.strategies import (
    ScoringStrategy,
    StrategyType,
    bin_packing_score,
    least_numa_nodes_required,
    node_score_from_numa,
    normalize_numa_count,
    numa_score,
)
from knuma.topology.kubelet import (
    SMT_ALIGNMENT_ERROR,
    TOPOLOGY_MANAGER_UNSUPPORTED,
    TOPOLOGY_NOT_MODELLED,
    Admission,
    admit,
)
from knuma.topology.node import NodeTopology, is_device

NAME = "NodeResourceTopologyMatch"

CANNOT_ALIGN_POD = "cannot align pod"
CANNOT_ALIGN_CONTAINER = "cannot align container"
CANNOT_ALIGN_INIT_CONTAINER = "cannot align init container"
CANNOT_ALIGN_SIDECAR_CONTAINER = "cannot align sidecar container"
UNSUPPORTED_TOPOLOGY = "node has more NUMA nodes than its Topology Manager supports"
NOT_MODELLED_TOPOLOGY = "node has more NUMA nodes than knuma models"
SMT_NOT_MULTIPLE = "cpus not a multiple of the node's CPUs per core (SMTAlignmentError)"
"""The kubelet's `full-pcpus-only` rejects a container whose exclusive CPUs are not whole physical cores; no
preemption changes that, so the status is UnschedulableAndUnresolvable."""
SMT_NO_FREE_CORES = "not enough free physical cores (SMTAlignmentError)"
INVALID_TOPOLOGY_DATA = "invalid node topology data"


class NodeResourceTopologyMatch:
    name = NAME
    fast_path = FastPathKind.NUMA

    def __init__(
        self,
        scoring: ScoringStrategy | None = None,
        demand: CPUDemand | None = None,
        cache: NRTCache | None = None,
        extended: ExtendedResourceMap | None = None,
    ) -> None:
        self.scoring = scoring or ScoringStrategy()
        self.extended = extended
        """The DeviceClasses' extended resources: one the node has none of comes from DRA (DynamicResources aligns
        its devices), not from the zones; None: no DRA."""
        self.demand = demand or CPUDemand()
        """The pod sizes this plugin has seen, for KnumaBinPacking's stranding term (shared with the vectorised
        path when the daemon runs both)."""
        self.cache = cache
        """The NRT cache (any mode): the views arrive in `NodeInfo.topology` / `nrt_fresh`, and a rejection is
        reported back (`NodeMaybeOverReserved`). None: nothing to report to (offline explanations, tests)."""

    @property
    def reports_rejections(self) -> bool:
        """The cache wants to hear of rejections (`rejected`)."""
        return self.cache is not None and self.cache.tracks_rejections

    def rejected(self, nodes: Iterable[str]) -> None:
        """Filter rejected the pod on `nodes` for lack of aligned resources (the fast path reports its rejections
        here too): the cache may be over-reserving them."""
        if self.cache is not None:
            self.cache.nodes_maybe_over_reserved(nodes)

    # -- PreFilter / Filter ------------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult:
        """Count the pod into the demand before any node is looked at: a pod that no node fits (NodeResourcesFit
        rejects it everywhere, so Filter never runs here) still says which sizes the zones are asked for, as the
        vectorised path counts it."""
        self._observe(state, pod)
        return PreFilterResult()

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        self._observe(state, pod)
        if pod.qos is QOSClass.BEST_EFFORT and all(is_native(name) for name in pod.requested_names):
            return SUCCESS
        if not node.nrt_fresh:
            return Status(
                Code.UNSCHEDULABLE, INVALID_TOPOLOGY_DATA, NAME, f"the {self._mode} cache marks the node's NRT stale"
            )
        topology = node.numa
        if topology is None:
            return SUCCESS  # no NRT data: nothing to align against
        if node.has_node_object:
            missing = sorted(
                n
                for n in pod.requested_names
                if n not in node.allocatable
                and n not in ALWAYS_ON_NODE
                and not (self.extended is not None and self.extended.maps(n))
            )
            if missing:
                return Status(
                    Code.UNSCHEDULABLE,
                    _align_message(topology, ContainerKind.APP),
                    NAME,
                    f"{missing[0]} is not in the node's allocatable",
                )
        admission = admit(self._kubelet_pod(state, pod, node), topology)
        state[NAME, node.name] = admission
        if admission.admitted:
            return SUCCESS
        if admission.reason == TOPOLOGY_MANAGER_UNSUPPORTED:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, UNSUPPORTED_TOPOLOGY, NAME, admission.message)
        if admission.reason == TOPOLOGY_NOT_MODELLED:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NOT_MODELLED_TOPOLOGY, NAME, admission.message)
        if admission.reason == SMT_ALIGNMENT_ERROR:
            detail = f"{admission.message} (container {admission.container})"
            if "not multiple" in admission.message:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, SMT_NOT_MULTIPLE, NAME, detail)
            if not state.dry_run:
                self.rejected((node.name,))
            return Status(Code.UNSCHEDULABLE, SMT_NO_FREE_CORES, NAME, detail)
        if not state.dry_run:  # upstream's preemption flow never marks the node over-reserved
            self.rejected((node.name,))
        kind = next((c.kind for c in pod.all_containers if c.name == admission.container), ContainerKind.APP)
        detail = f"{admission.reason}: {admission.message}"
        if admission.container:
            detail += f" (container {admission.container})"
        return Status(Code.UNSCHEDULABLE, _align_message(topology, kind), NAME, detail)

    @property
    def _mode(self) -> str:
        return self.cache.mode if self.cache is not None else "NRT"

    def admission(self, state: CycleState, node_name: str) -> Admission | None:
        """The kubelet prediction Filter made for this node in this cycle (for Reserve and explanations)."""
        found = state.get((NAME, node_name))
        return found if isinstance(found, Admission) else None

    # -- Score -------------------------------------------------------------------------------------------------

    def _observe(self, state: CycleState, pod: Pod) -> None:
        """Count the pod into the demand once per cycle (pending pods count: they are the sizes zones must fit); not
        in preemption's dry runs, which come after the cycle that counted it."""
        if self.scoring.type is StrategyType.KNUMA_BIN_PACKING and not state.dry_run:
            state.pod_data(f"{NAME}/demand", pod, self.demand.observe)

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        self._observe(state, pod)
        if not pod.pinned_by_managers:
            return MAX_NODE_SCORE
        topology = node.numa
        if topology is None or not node.nrt_fresh:
            return MIN_NODE_SCORE  # prefer nodes with (fresh) NRT data
        admitted = self._kubelet_pod(state, pod, node)
        if self.scoring.type is StrategyType.KNUMA_BIN_PACKING:
            admission = self.admission(state, node.name) or admit(admitted, topology)
            if not admission.admitted:
                return MIN_NODE_SCORE
            devices = not has_claims(pod) and not self.dra_serves(pod, node)
            gaps = self._gaps(state, pod) if devices and self.demand.devices else None
            return bin_packing_score(topology, admission.node, self.demand, devices=devices, gaps=gaps)
        if self.scoring.type is StrategyType.LEAST_NUMA_NODES:
            return self._least_numa_nodes(admitted, topology)
        if topology.config.policy is not Policy.SINGLE_NUMA_NODE:
            return MIN_NODE_SCORE
        available = [z.available for z in topology.zones]
        if topology.config.scope is Scope.POD:
            return self._node_score(admitted.effective_request, available)
        containers = admitted.all_containers
        total = sum(self._node_score(c.requests, available) for c in containers)
        return total // len(containers)

    def dra_serves(self, pod: Pod, node: NodeInfo) -> bool:
        """A DeviceClass serves some of the pod's extended resources on `node`, which has none of them (KEP-5004,
        `dra_extended.split_for_node`): DynamicResources allocates those devices and scores their stranding, as it
        does for a pod with ResourceClaims (`has_claims`)."""
        return bool(served_on_node(pod.requested_names, self.extended, node.allocatable))

    def kubelet_pod(self, pod: Pod, node: NodeInfo) -> Pod:
        """`pod` as the kubelet admits it on `node` (`dra_extended.as_admitted`): without the extended resources DRA
        serves there; `pod` itself where it serves none. What Filter, Score and every Reserve model the kubelet
        with."""
        return as_admitted(pod, served_on_node(pod.requested_names, self.extended, node.allocatable))

    def _kubelet_pod(self, state: CycleState, pod: Pod, node: NodeInfo) -> Pod:
        """`kubelet_pod`, built once per cycle for each set of resources DRA serves (one per kind of node)."""
        served = served_on_node(pod.requested_names, self.extended, node.allocatable)
        if not served:
            return pod
        return state.pod_data(f"{NAME}/without/{','.join(served)}", pod, lambda p: as_admitted(p, served))

    def _gaps(self, state: CycleState, pod: Pod) -> Mapping[int, int] | None:
        """The cluster's device gap counts before `pod` (`gap_counts` over every node of the cycle's snapshot), once
        per cycle; None for a pod that takes no device (its placement changes no gap)."""
        if not any(is_device(name) for name in pod.requested_names):
            return None
        nodes = state.nodes
        return state.pod_data(f"{NAME}/gaps", pod, lambda _: gap_counts(n.numa for n in nodes if n.numa is not None))

    def _node_score(self, request: Mapping[str, int], zones: list[Mapping[str, int]]) -> int:
        return node_score_from_numa([numa_score(self.scoring, request, available) for available in zones])

    def _least_numa_nodes(self, pod: Pod, topology: NodeTopology) -> int:
        available = {z.id: dict(z.available) for z in topology.zones}
        max_numa = topology.config.max_numa_nodes

        def numa_part(request: Mapping[str, int]) -> dict[str, int]:
            """Only resources the zones report count (upstream scores 0 when a zone lacks e.g. memory)."""
            return {name: amount for name, amount in request.items() if name in topology.numa_managed}

        if topology.config.scope is Scope.POD:
            request = numa_part(pod.effective_request)
            if not request:
                return MAX_NODE_SCORE
            found = least_numa_nodes_required(topology, available, request, pod.qos)
            return MIN_NODE_SCORE if found is None else normalize_numa_count(len(found[0]), found[1], max_numa)
        widest, all_closest, scored = 0, True, False
        for container in pod.all_containers:
            request = numa_part(container.requests)
            if not request:
                continue
            found = least_numa_nodes_required(topology, available, request, pod.qos)
            if found is None:
                return MIN_NODE_SCORE
            scored = True
            combo, closest = found
            widest, all_closest = max(widest, len(combo)), all_closest and closest
            for name, amount in request.items():  # consume greedily from the chosen zones, in id order
                for numa_id in combo:
                    take = min(amount, available[numa_id].get(name, 0))
                    if take > 0:
                        available[numa_id][name] -= take
                        amount -= take
        return normalize_numa_count(widest, all_closest, max_numa) if scored else MAX_NODE_SCORE


def _align_message(topology: NodeTopology, kind: ContainerKind) -> str:
    if topology.config.scope is Scope.POD and topology.config.policy is not Policy.NONE:
        return CANNOT_ALIGN_POD
    if kind is ContainerKind.SIDECAR:
        return CANNOT_ALIGN_SIDECAR_CONTAINER
    if kind is ContainerKind.INIT:
        return CANNOT_ALIGN_INIT_CONTAINER
    return CANNOT_ALIGN_CONTAINER
