"""DynamicResources: schedule pods with ResourceClaims on `knuma.devices`' NUMA-aligned allocator.

kube-scheduler's plugin (`pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go`) with its extension
points, and what knuma adds:

- **PreFilter** finds the pod's claims (`spec.resourceClaims`, names from `status.resourceClaimStatuses` for claims
  from templates). A missing claim, a claim being deleted, a claim naming an unknown DeviceClass or a selector that
  does not compile reject the pod on every node with a message naming the claim (UnschedulableAndUnresolvable:
  nothing on a node can fix it). An already allocated claim (shared with another pod) restricts the nodes to the
  one its allocation is pinned to.
- **Filter** runs the allocator for the pod's unallocated claims on the node, with the node's NUMA zones and Topology
  Manager policy from its NRT and the pod's CPU and memory request, so the devices are chosen on the NUMA node the
  kubelet will give the CPUs. Devices of allocated claims and of allocations in flight are in use. A failure names
  the claim, the request and the stage (`cannot allocate all claims: claim default/x, request gpu: ...`), where
  upstream says only `cannot allocate all claims`.
- **Score** is the locality ladder of the chosen devices (same PCIe root 100, NUMA node 75, socket 50, node 25);
  upstream scores only which `firstAvailable` entry was taken (`computeScore`: an `exactly` request, such as every
  request of the claim for DRA-backed extended resources, adds nothing, and a node without an allocation scores 0).
  For a pod asking for extended resources (KEP-5004), a node where a device plugin serves them is scored on the same
  ladder, from where the kubelet model puts the plugin's devices (`_device_plugin_score`): the Topology Manager
  aligns them with the pod's CPUs (the device manager's `GetTopologyHints`), so such a node does not lose to a DRA
  node for the locality score alone, which upstream's 0 everywhere also avoids; knuma keeps the ladder to rank DRA
  nodes among themselves and the devices' stranding.
- **Reserve** holds the chosen allocation in `DeviceState` (in flight) so the next cycle, before the claim is
  written, never hands out the same device; **Unreserve** drops it. **PreBind** is the daemon's: it writes
  `status.allocation` and `reservedFor` (and the `resource.kubernetes.io/delete-protection` finalizer) before the
  pod is bound (`knuma.scheduler.daemon.claims`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from knuma.api.dra.fields import ValidationError
from knuma.api.dra.resourceclaim import AllocationResult, ResourceClaim
from knuma.api.nrt import Policy
from knuma.api.pod import Pod
from knuma.api.resources import CPU
from knuma.devices.allocator import (
    DeviceAllocationError,
    NodeView,
    Outcome,
    add_consumption,
    allocate,
    allocation_devices,
)
from knuma.devices.cel import CELError
from knuma.devices.demand import resolve
from knuma.devices.memo import MemoEntry, NodeState
from knuma.devices.numa import Locality, sockets_from_distances
from knuma.devices.pools import DeviceID
from knuma.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    SUCCESS,
    Code,
    CycleState,
    FastPathKind,
    NodeInfo,
    PreFilterResult,
    Status,
)
from knuma.scheduler.plugins.device_state import DeviceState
from knuma.scheduler.plugins.device_stranding import ZoneChange, stranding_charge, zone_changes
from knuma.scheduler.plugins.dra_extended import (
    ExtendedClaim,
    NodeSplit,
    as_admitted,
    dra_requests,
    extended_claim,
    split_for_node,
)
from knuma.scheduler.plugins.dynamic_resources_args import DynamicResourcesArgs
from knuma.scheduler.plugins.stranding import CPUDemand
from knuma.topology.kubelet import admit
from knuma.topology.node import NodeTopology, is_device

__all__ = ["NAME", "DynamicResources", "NodeClaims", "PodClaims", "pod_claims"]

NAME = "DynamicResources"
JsonObj = Mapping[str, Any]


@dataclass(frozen=True)
class PodClaims:
    claims: tuple[ResourceClaim, ...] = ()
    problem: str = ""
    """Why the pod cannot be scheduled anywhere now (empty: none)."""
    extended: Mapping[str, int] = field(default_factory=dict)
    """The pod's requests of extended resources a DeviceClass may serve (`dra_extended.dra_requests`)."""
    stale: str = ""
    """The key of an extended resource claim a previous attempt created for the pod (`findExtendedResourceClaim`):
    its allocation may be stale, so the pod waits until it is deleted (the daemon deletes it)."""


@dataclass(eq=False)
class NodeClaims:
    """The claims to allocate for a pod on one node: its own, and the claim for the extended resources DRA provides
    there (`filterExtendedResources`: it depends on which resources the node's allocatable lists). One per pod and
    cycle (and split), so it also carries their memo shape once computed."""

    claims: tuple[ResourceClaim, ...] = ()
    extended: ExtendedClaim | None = None
    unfit: str = ""
    shape: tuple[Hashable, tuple[str, ...]] | None = field(default=None, repr=False)
    """`DynamicResources._shape` of these claims, computed on first use."""


def pod_claims(pod: Pod, state: DeviceState) -> PodClaims:
    """The pod's claims, or why it cannot be scheduled yet (upstream PreFilter's `foreachPodResourceClaim`), and its
    extended resources a DeviceClass may serve (`preFilterExtendedResources`)."""
    found = _spec_claims(pod, state)
    extended = dra_requests(pod, state.extended)
    if not extended or found.problem:
        return found
    return replace(found, extended=extended, stale=state.extended_claims.get(pod.uid, "") if pod.uid else "")


def _spec_claims(pod: Pod, state: DeviceState) -> PodClaims:
    spec = pod.spec
    statuses = state.generated.get(pod.key, {})
    found: list[ResourceClaim] = []
    for entry in spec.get("resourceClaims") or []:
        pod_claim = str(entry.get("name") or "")
        name = entry.get("resourceClaimName") or statuses.get(pod_claim)
        if not name:
            if entry.get("resourceClaimTemplateName"):
                return PodClaims(problem=f'waiting for the resource claim of "{pod_claim}" to be created')
            return PodClaims(problem=f'pod claim "{pod_claim}" names neither a claim nor a template')
        key = f"{pod.namespace}/{name}"
        obj = state.claims.get(key)
        if obj is None:
            return PodClaims(problem=f'resourceclaim "{name}" not found')
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return PodClaims(problem=f'resourceclaim "{name}" is being deleted')
        if entry.get("resourceClaimTemplateName"):
            owners = (obj.get("metadata") or {}).get("ownerReferences") or []
            if not any(o.get("kind") == "Pod" and o.get("uid") == pod.uid for o in owners) and pod.uid:
                return PodClaims(problem=f'resourceclaim "{name}" was not created for pod {pod.key}')
        try:
            claim = state.parsed_claim(key)
        except ValidationError as err:
            return PodClaims(problem=f"resourceclaim {key} is invalid: {err}")
        if claim is not None:
            found.append(claim)
    return PodClaims(tuple(found))


@dataclass
class _PodCycle:
    """What DynamicResources derives of a pod once per cycle (one `pod_data` lookup per node and extension point):
    its claims and the claims to allocate per split of its extended resources."""

    found: PodClaims
    own: NodeClaims | None
    """Without extended resources DRA may serve, the claims to allocate on every node; else None (`by_split`)."""
    by_split: dict[NodeSplit, NodeClaims] = field(default_factory=dict)


def _pinned_node(allocation: AllocationResult) -> str | None:
    for term in (allocation.node_selector or {}).get("nodeSelectorTerms") or []:
        for requirement in term.get("matchFields") or []:
            if requirement.get("key") == "metadata.name" and requirement.get("operator") == "In":
                values = requirement.get("values") or []
                if len(values) == 1:
                    return str(values[0])
    return None


ENTRY = f"{NAME}/entry"
"""Cycle-state key of the memo entry looked up for a node (`DynamicResources._remembered`)."""


class DynamicResources:
    """The framework plugin (PreFilter, Filter, Score); Reserve / Unreserve through `DeviceState`, PreBind in the
    daemon."""

    name = NAME
    fast_path = FastPathKind.NODE_BY_NODE_WHEN_APPLIES

    def __init__(
        self, state: DeviceState, demand: CPUDemand | None = None, args: DynamicResourcesArgs | None = None
    ) -> None:
        self.state = state
        self.args = args or DynamicResourcesArgs()
        self.demand = demand
        """The device pod shapes `KnumaBinPacking` expects (the NUMA plugin's, shared by the profile): Score charges
        a claim pod for the DRA devices its placement is expected to strand. None: no such charge."""

    def nominated(self, pod: Pod, node: NodeInfo) -> None:
        """Hold the devices the preemption's dry run allocates `pod` on `node` (the node without its victims)."""
        if not self.applies_to(pod):
            return
        cycle = CycleState()
        cycle.dry_run = True
        result = self.outcome(cycle, pod, node)
        if result.allocatable:
            self.state.hold(pod, frozenset().union(*(allocation_devices(c.allocation) for c in result.results)))

    def nomination_dropped(self, pod_key: str) -> None:
        self.state.release(pod_key)

    def applies_to(self, pod: Pod) -> bool:
        """Pods with ResourceClaims or extended resources a DeviceClass maps; for the others PreFilter skips the
        plugin (they stay on the fast path)."""
        return bool(pod.spec.get("resourceClaims")) or bool(dra_requests(pod, self.state.extended))

    def _cycle(self, cycle: CycleState, pod: Pod) -> _PodCycle:
        return cycle.pod_data(NAME, pod, self._pod_cycle)

    def _pod_cycle(self, pod: Pod) -> _PodCycle:
        found = pod_claims(pod, self.state)
        return _PodCycle(found, None if found.extended else NodeClaims(found.claims))

    def _claims(self, cycle: CycleState, pod: Pod) -> PodClaims:
        return self._cycle(cycle, pod).found

    def node_claims(self, cycle: CycleState, pod: Pod, node: NodeInfo) -> NodeClaims:
        """The claims to allocate for `pod` on `node`: its own, and the claim for its extended resources that DRA
        provides there (`filterExtendedResources`); one claim per distinct split of the resources per cycle."""
        per_pod = self._cycle(cycle, pod)
        if per_pod.own is not None:
            return per_pod.own
        found = per_pod.found
        split = split_for_node(found.extended, self.state.extended, node.allocatable)
        known = per_pod.by_split
        result = known.get(split)
        if result is None:
            if split.unfit:
                result = NodeClaims(found.claims, unfit=split.unfit)
            elif split.dra:
                extra = extended_claim(pod, split.dra, self.state.extended)
                result = NodeClaims((*found.claims, extra.claim), extra)
            else:
                result = NodeClaims(found.claims)
            known[split] = result
        return result

    def pre_enqueue(self, pod: Pod) -> Status:
        """Upstream's PreEnqueue: a pod whose claims do not exist yet (the resourceclaim controller has not created
        them, or a named claim is missing) waits outside the active queue, without FailedScheduling events; the
        daemon re-checks it when claims change."""
        if not pod.spec.get("resourceClaims"):
            return SUCCESS
        problem = pod_claims(pod, self.state).problem
        if problem.startswith(("waiting for", "resourceclaim")) and problem.endswith(("created", "not found")):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, problem, NAME)
        return SUCCESS

    def pre_filter(self, cycle: CycleState, pod: Pod) -> PreFilterResult:
        if not self.applies_to(pod):
            return PreFilterResult(skip=True)
        found = self._claims(cycle, pod)
        if found.problem:
            return PreFilterResult(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, found.problem, NAME))
        if found.stale:
            # upstream's Filter says "cannot schedule extended resource claim" on every node and its PostFilter
            # deletes the claim; knuma's daemon deletes it (`stale_claim`), and the deletion requeues the pod
            message = f"cannot schedule extended resource claim {found.stale}: a previous attempt created it"
            return PreFilterResult(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message, NAME))
        pending = [c for c in found.claims if c.allocation is None]
        try:
            resolve(pending, self.state.classes, lambda namespace: True)
        except (DeviceAllocationError, CELError) as err:
            return PreFilterResult(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(err), NAME))
        nodes: frozenset[str] | None = None
        for claim in found.claims:
            if claim.allocation is not None and (pinned := _pinned_node(claim.allocation)) is not None:
                nodes = frozenset({pinned}) if nodes is None else nodes & {pinned}
        return PreFilterResult(node_names=nodes)

    def stale_claim(self, pod: Pod) -> str:
        """The key of the extended resource claim a previous attempt created for `pod`, which must be deleted before
        the pod is scheduled again (upstream's PostFilter deletes it); "" when none."""
        return pod_claims(pod, self.state).stale if self.applies_to(pod) else ""

    def outcome(self, cycle: CycleState, pod: Pod, node: NodeInfo) -> Outcome:
        """The allocator's verdict for `pod` on `node`, computed once per cycle and node, and reused across cycles
        while neither the claims' shape nor the node changed (`DeviceState.memo`, `knuma.devices.memo`)."""
        cached = cycle.get((NAME, node.name))
        if cached is not None and cached[0] is pod:
            return cached[1]  # type: ignore[no-any-return]
        found = self.node_claims(cycle, pod, node)
        # the allocator aligns the devices with the pod as the kubelet admits it: without the extended resources
        # DRA serves here (NUMA zones that still list them hold none of them, `dra_extended.as_admitted`)
        admitted = as_admitted(pod, found.extended.resources) if found.extended is not None else pod
        freed = self.state.held_only_by(node.evicted) if node.evicted else frozenset()
        shares = self.state.shares_held_only_by(node.evicted) if node.evicted else {}
        blocked = self.state.held_against(pod)
        # a preemption's dry run, or devices held for a nominated pod: states the memo's key does not describe
        memo = self.state.memo if not freed and not shares and not blocked else None
        shape, keys = self._shape_of(cycle, pod, found)
        state = NodeState(node.numa, node.labels, self.state.node_devices(node.name)) if memo is not None else None
        result = memo.get(node.name, shape, keys, state) if memo is not None and state is not None else None
        if result is None and memo is not None and state is not None:
            similar = self.state.node_class(node.name, node.numa)
            shared = memo.from_similar(similar[0], shape, node.name, similar[1], keys) if similar else None
            if shared is not None:
                result = shared[0]
                memo.put(node.name, shape, keys, state, result, derived=shared[1])
            else:
                result = self._allocate(admitted, node, found.claims, freed, blocked, shares)
                entry = memo.put(node.name, shape, keys, state, result)
                if similar is not None:
                    memo.share(similar[0], shape, node.name, similar[1], entry)
        elif result is None:
            result = self._allocate(admitted, node, found.claims, freed, blocked, shares)
        cycle[NAME, node.name] = (pod, result)
        return result

    def _allocate(
        self,
        pod: Pod,
        node: NodeInfo,
        claims: Sequence[ResourceClaim],
        freed: frozenset[DeviceID],
        blocked: frozenset[DeviceID],
        shares: Mapping[DeviceID, Mapping[str, int]] | None = None,
    ) -> Outcome:
        """The allocator on `node`, with the devices a dry run frees (`freed`) free, those held for nominated
        pods (`blocked`) in use, and the shares of devices it frees (`shares`) given back."""
        inventory = self.state.node_inventory(node.name)
        if freed or blocked:
            inventory = replace(inventory, in_use=(inventory.in_use - freed) | blocked)
        if shares:
            consumed = {device: dict(amounts) for device, amounts in inventory.consumed.items()}
            for device, amounts in shares.items():
                add_consumption(consumed, device, tuple(amounts.items()), -1)
            inventory = replace(inventory, consumed=consumed)
        try:
            return allocate(NodeView(node.name, node.labels, node.numa), claims, inventory, pod=pod)
        except (DeviceAllocationError, CELError) as err:
            return Outcome(node.name, False, reason=str(err), stage="class")

    def _remembered(
        self, cycle: CycleState, pod: Pod, node: NodeInfo, claims: NodeClaims | None = None
    ) -> MemoEntry | None:
        """The memo's current entry for `pod`'s claims on `node`, unlabelled (`AllocationMemo.entry`): whether they
        fit and on which devices, without building the outcome `outcome` relabels with this pod's claim names. None
        when the memo is off, does not apply (devices freed by a dry run or held for a nominated pod) or does not
        know it. Looked up once per cycle and node (Filter, then Score)."""
        cached = cycle.get((ENTRY, node.name))
        if cached is not None and cached[0] is pod:
            return cached[1]  # type: ignore[no-any-return]
        memo = self.state.memo
        entry = None
        if memo is not None and not node.evicted and not self.state.held_against(pod):
            shape, keys = self._shape_of(cycle, pod, claims or self.node_claims(cycle, pod, node))
            state = NodeState(node.numa, node.labels, self.state.node_devices(node.name))
            entry = memo.entry(node.name, shape, keys, state)
            if entry is None and cycle.verdicts_only and (similar := self.state.node_class(node.name, node.numa)):
                entry = memo.similar_failure(similar[0], shape, keys)  # a verdict: its reason is another node's
        if entry is not None:
            cycle[ENTRY, node.name] = (pod, entry)
        return entry

    def _shape_of(self, cycle: CycleState, pod: Pod, claims: NodeClaims) -> tuple[Hashable, tuple[str, ...]]:
        shape = claims.shape
        if shape is None:
            shape = claims.shape = self._shape(pod, claims)
        return shape

    def _shape(self, pod: Pod, claims: NodeClaims) -> tuple[Hashable, tuple[str, ...]]:
        """What the allocator reads of the pod and its pending claims, as a hashable (the claims' specs as the
        informer has them, or as PreBind will create the extended resource claim, canonical JSON, and the pod's
        requests), and the pending claims' keys in order."""
        pending = [c for c in claims.claims if c.allocation is None]
        extended = claims.extended
        specs = tuple(
            json.dumps(
                extended.manifest["spec"]
                if extended is not None and c.key == extended.key
                else (self.state.claims.get(c.key) or {}).get("spec"),
                sort_keys=True,
                separators=(",", ":"),
            )
            for c in pending
        )
        return (specs, pod.admission_key), tuple(c.key for c in pending)

    def filter(self, cycle: CycleState, pod: Pod, node: NodeInfo) -> Status:
        per_pod = self._cycle(cycle, pod)
        found = per_pod.found
        if not pod.spec.get("resourceClaims") and not found.extended:
            return SUCCESS
        if found.problem:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, found.problem, NAME)
        if found.stale:
            return Status(Code.UNSCHEDULABLE, "cannot schedule extended resource claim", NAME)
        claims = per_pod.own if per_pod.own is not None else self.node_claims(cycle, pod, node)
        if claims.unfit:
            return Status(
                Code.UNSCHEDULABLE,
                "cannot fit resource",
                NAME,
                f"{claims.unfit}: neither the node nor a DeviceClass provides it",
            )
        if not claims.claims:
            return SUCCESS  # the extended resources are all a device plugin's on this node
        remembered = self._remembered(cycle, pod, node, claims)
        if remembered is not None and remembered.outcome.allocatable:
            return SUCCESS
        if remembered is not None and cycle.verdicts_only:
            return Status(Code.UNSCHEDULABLE, "cannot allocate all claims", NAME)
        result = self.outcome(cycle, pod, node)  # a failure's reason names this pod's claims
        if result.allocatable:
            return SUCCESS
        reason = f"cannot allocate all claims: {result.reason}" if result.reason else "cannot allocate all claims"
        return Status(Code.UNSCHEDULABLE, reason, NAME, detail=f"stage {result.stage}")

    def score(self, cycle: CycleState, pod: Pod, node: NodeInfo) -> int:
        """Locality of the chosen devices (three quarters) and how full it leaves the NUMA nodes they are on (one
        quarter): between equally local choices, the one that fills partly used NUMA nodes and keeps empty ones
        whole for pods that need several devices on one NUMA node (least fragmenting). Less the devices the
        placement is expected to strand (`_stranding_changes`, `stranding_charge`)."""
        claims: NodeClaims | None = None  # a pod with claims: `_remembered` has Filter's entry (no lookup per node)
        if not pod.spec.get("resourceClaims"):
            extended = self._claims(cycle, pod).extended
            if not extended:
                return 0
            claims = self.node_claims(cycle, pod, node)
            if not claims.claims:
                return 0 if claims.unfit else _device_plugin_score(pod, node, extended)
        remembered = self._remembered(cycle, pod, node, claims)
        result = remembered.outcome if remembered is not None else self.outcome(cycle, pod, node)
        if not result.allocatable or result.locality is None:
            return 0
        packing, changes = self._placement_terms(cycle, pod, node, remembered)
        score = min(MAX_NODE_SCORE, (3 * result.score + packing) // 4)
        penalty = stranding_charge(changes, self.demand.devices) if changes and self.demand is not None else 0
        return max(0, score - penalty)

    def _placement_terms(
        self, cycle: CycleState, pod: Pod, node: NodeInfo, remembered: MemoEntry | None
    ) -> tuple[int, tuple[ZoneChange, ...]]:
        """`_packing` and the zones the placement changes (`_stranding_changes`: the penalty before the mix is applied),
        kept with the memo's entry (`remembered`) they were computed from. Everything they read is in the entry's
        key or in this one: the devices taken (the entry's outcome), the node's devices and which are in use
        (`DeviceState.node_devices`, with the slices' version) and the zones (the topology object: the cache rebuilds
        it when the node changes), both in the entry's state; the pod as the kubelet admits it and which of its
        containers use which claim (`_layout`) and the resources the device mix names. The mix itself changes with
        nearly every pod (`DeviceDemand.observe`) and is applied after (`stranding_charge`)."""
        layout = cycle.pod_data(f"{NAME}/layout", pod, self._layout) if remembered is not None else None
        names = self.demand.devices.names if self.demand is not None and self.demand.devices else ()
        key = (layout, names)
        if remembered is not None and layout is not None:
            known = remembered.derived.get(key)
            if known is not None:
                return known  # type: ignore[return-value]
        result = self.outcome(cycle, pod, node)  # labelled with this pod's claims, which `device_numa` reads
        extended = self.node_claims(cycle, pod, node).extended
        terms = (self._packing(node.name, result), self._stranding_changes(pod, node, result, names, extended))
        if remembered is not None and layout is not None:
            remembered.derived[key] = terms
        return terms

    def _layout(self, pod: Pod) -> Hashable:
        """What `device_numa` reads of the pod besides the allocations, with the pod's requests; None (not
        remembered) when a claim is allocated already or named twice (its devices come from the claim, not
        `result`)."""
        found = pod_claims(pod, self.state)
        keys = [c.key for c in found.claims]
        if found.problem or any(c.allocation is not None for c in found.claims) or len(set(keys)) != len(keys):
            return None
        if found.extended:
            return None  # the extended resource claim's mappings depend on the node
        spec = pod.spec
        entries = tuple(str(e.get("name")) for e in spec.get("resourceClaims") or [])
        containers = tuple(
            (
                str(c.get("name")),
                tuple((str(r.get("name")), r.get("request")) for r in (c.get("resources") or {}).get("claims") or []),
            )
            for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
        )
        return (pod.admission_key, entries, containers)

    def _stranding_changes(
        self, pod: Pod, node: NodeInfo, result: Outcome, names: Sequence[str], extended: ExtendedClaim | None = None
    ) -> tuple[ZoneChange, ...]:
        """`KnumaBinPacking`'s device term for a pod with claims, which NodeResourceTopologyMatch leaves out (its
        kubelet model holds the CPUs, not the DRA devices): the zones after the kubelet admits the pod with the
        chosen devices and those devices taken from the zones' `<driver>/devices`
        (`knuma.scheduler.plugins.dra_zones`), as `device_stranding.zone_changes` on the resources the mix names;
        `stranding_charge` makes them the penalty. None without a demand, device shapes, or zones holding DRA
        devices."""
        topology = node.numa
        if not names or topology is None:
            return ()
        allocations = {c.claim: c.allocation for c in result.results}
        dra = self.device_numa(pod, node.name, allocations, extended)
        admitted = as_admitted(pod, extended.resources) if extended is not None else pod  # as `outcome` aligned it
        return self._zone_changes(admitted, node.name, topology, allocations, dra, names)

    def _zone_changes(
        self,
        pod: Pod,
        node: str,
        topology: NodeTopology,
        allocations: Mapping[str, AllocationResult],
        dra: Mapping[str, Mapping[str, int | None]],
        names: Sequence[str],
    ) -> tuple[ZoneChange, ...]:
        """The device zones `pod` with `allocations` changes on `node` (`device_stranding.zone_changes`); none when
        the kubelet would not admit it."""
        admission = admit(pod, topology, dra)
        if not admission.admitted:
            return ()
        where = {device: (numa, name) for device, numa, name in self.state.device_index()[0].get(node, ())}
        available = {zone.id: dict(zone.available) for zone in admission.node.zones}
        capacity = {zone.id: zone.capacity for zone in admission.node.zones}
        for allocation in allocations.values():
            for device in allocation.results:
                numa, name = where.get(device.device_id, (None, ""))
                if numa in available and name in capacity[numa] and not device.admin_access:
                    available[numa][name] = available[numa].get(name, 0) - 1
        return zone_changes(topology, admission.node.with_available(available), names)

    def _numa_of(self, node: str) -> dict[DeviceID, int | None]:
        """The NUMA node of every device of `node`'s slices that has one (`DeviceState.device_index`)."""
        return {device: numa for device, numa, _ in self.state.device_index()[0].get(node, ())}

    def device_numa(
        self,
        pod: Pod,
        node: str,
        claims: Mapping[str, AllocationResult | None],
        extended: ExtendedClaim | None = None,
    ) -> dict[str, dict[str, int | None]]:
        """Container -> {`driver/pool/device`: NUMA node} of the devices each container lists in
        `resources.claims` (`claims`: claim key -> the allocation Reserve chose, None when already allocated), and
        of the requests of the extended resource claim (`extended`) its request mappings give it; what the
        kubelet's Topology Manager aligns (`knuma.api.pod.DRA_NUMA_ANNOTATION`)."""
        numa_of = self._numa_of(node)
        generated = self.state.generated.get(pod.key, {})
        by_pod_claim: dict[str, AllocationResult] = {}
        for entry in pod.spec.get("resourceClaims") or []:
            name = entry.get("resourceClaimName") or generated.get(str(entry.get("name")))
            key = f"{pod.namespace}/{name}"
            allocation = claims.get(key)
            if allocation is None and (claim := self.state.parsed_claim(key)) is not None:
                allocation = claim.allocation
            if allocation is not None:
                by_pod_claim[str(entry.get("name"))] = allocation
        out: dict[str, dict[str, int | None]] = {}
        spec = pod.spec
        for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            devices: dict[str, int | None] = {}
            for ref in (container.get("resources") or {}).get("claims") or []:
                allocation = by_pod_claim.get(str(ref.get("name")))
                for result in allocation.results if allocation is not None else ():
                    if ref.get("request") and result.request.split("/", 1)[0] != ref.get("request"):
                        continue
                    devices["/".join(result.device_id)] = numa_of.get(result.device_id)
            if devices:
                out[str(container.get("name"))] = devices
        chosen = claims.get(extended.key) if extended is not None else None
        if extended is not None and chosen is not None:
            for mapping in extended.mappings:
                devices = out.setdefault(str(mapping["containerName"]), {})
                for result in chosen.results:
                    if result.request.split("/", 1)[0] == mapping["requestName"]:
                        devices["/".join(result.device_id)] = numa_of.get(result.device_id)
        return out

    def _packing(self, node: str, result: Outcome) -> int:
        """Of the node's devices on the NUMA nodes the allocation uses, the percentage in use afterwards (0 when
        the devices carry no NUMA node)."""
        picked = {r.device_id for c in result.results for r in c.allocation.results}
        numa_of = self._numa_of(node)
        used = {numa_of.get(d) for d in picked} - {None}
        on_them = [d for d, n in numa_of.items() if n in used]
        if not on_them:
            return 0
        in_use = self.state.inventory().in_use
        return MAX_NODE_SCORE * sum(1 for d in on_them if d in in_use or d in picked) // len(on_them)

    def allocations(self, pod: Pod, node: NodeInfo) -> tuple[Outcome, NodeClaims]:
        """Reserve's input: the allocation for `pod` on the chosen `node` (computed afresh on the current state), and
        the claims it is for (with the extended resource claim PreBind creates)."""
        cycle = CycleState()
        return self.outcome(cycle, pod, node), self.node_claims(cycle, pod, node)


def _device_plugin_score(pod: Pod, node: NodeInfo, resources: Collection[str]) -> int:
    """`score` for a pod whose extended `resources` a device plugin serves on `node` (no DRA allocation there), on the
    ladder DRA devices are scored on, from the kubelet model's admission (the NUMA plugin's Filter asked the same
    question; `admit` remembers it). The Topology Manager aligns device-plugin devices with the container's CPUs
    (`GetTopologyHints`, `filterByAffinity`) when its policy is not `none`: the devices and the CPUs pinned beside
    them are rated together as `numa.locality_of` rates DRA devices whose PCIe root is not known (one NUMA node, one
    socket, the node), except that a lone device on its CPUs' NUMA node, which shares its own root, reaches the top
    rung as a lone DRA device with a root does. The `none` policy aligns nothing, and devices the zones do not list
    (no topology, so no hints) have no NUMA node: the node's rung. The packing quarter is `_packing`'s over the
    zones' device-plugin devices: of those on the NUMA nodes the pod's devices are on, the percentage in use once it
    is admitted. No stranding charge: KnumaBinPacking's device term covers device-plugin devices."""
    topology = node.numa
    if topology is None or not node.nrt_fresh:
        return 0
    admission = admit(pod, topology)
    if not admission.admitted:
        return 0
    numas: set[int] = set()
    count = 0
    for placement in admission.placements:
        for name in resources:
            for numa, amount in placement.allocated.get(name, {}).items():
                if amount:
                    numas.add(numa)
                    count += amount
    if not numas:
        return (3 * Locality.NODE) // 4  # the zones do not list them: no NUMA node, as for such DRA devices
    devices_at = set(numas)
    for placement in admission.placements:  # the CPUs pinned beside the devices: the NUMA nodes they span together
        if any(placement.allocated.get(name) for name in resources):
            numas.update(n for n, amount in placement.allocated.get(CPU, {}).items() if amount)
    sockets = sockets_from_distances(topology.distances)
    if topology.config.policy is Policy.NONE:
        locality = Locality.NODE
    elif len(numas) == 1:
        locality = Locality.PCIE_ROOT if count == 1 else Locality.NUMA_NODE
    elif len({sockets.get(n, n) for n in numas}) == 1:
        locality = Locality.SOCKET
    else:
        locality = Locality.NODE
    after = {zone.id: zone for zone in admission.node.zones}
    total = used = 0
    for zone in topology.zones:
        if zone.id not in devices_at:
            continue
        for name in zone.allocatable or zone.capacity:
            if is_device(name):
                total += zone.total(name)
                used += zone.total(name) - after[zone.id].available.get(name, 0)
    packing = MAX_NODE_SCORE * used // total if total else 0
    return min(MAX_NODE_SCORE, (3 * locality + packing) // 4)
