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
  upstream scores only which `firstAvailable` entry was taken.
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

from knuma.api.dra.deviceclass import DeviceClass
from knuma.api.dra.devicetaintrule import DeviceTaintRule
from knuma.api.dra.fields import ValidationError
from knuma.api.dra.resourceclaim import AllocationResult, ResourceClaim
from knuma.api.dra.resourceslice import ResourceSlice
from knuma.api.pod import Pod
from knuma.devices.allocator import (
    DeviceAllocationError,
    Inventory,
    NodeView,
    Outcome,
    allocate,
    allocation_devices,
)
from knuma.devices.cel import CELError
from knuma.devices.counters import physical_devices
from knuma.devices.demand import resolve
from knuma.devices.filtering import SelectorCache
from knuma.devices.memo import AllocationMemo, MemoEntry, NodeState
from knuma.devices.numa import placement_of
from knuma.devices.pools import DeviceID
from knuma.devices.taintrules import with_taint_rules
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
from knuma.scheduler.plugins.device_stranding import ZoneChange, stranding_charge, zone_changes
from knuma.scheduler.plugins.dra_extended import (
    ExtendedClaim,
    ExtendedResourceMap,
    NodeSplit,
    dra_requests,
    extended_claim,
    owned_extended_claim,
    split_for_node,
)
from knuma.scheduler.plugins.dra_zones import ZoneDevices, device_resource, with_zone_devices
from knuma.scheduler.plugins.stranding import CPUDemand
from knuma.topology.kubelet import admit
from knuma.topology.node import NodeTopology

__all__ = ["NAME", "DeviceState", "DynamicResources", "NodeClaims", "PodClaims", "pod_claims"]

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


@dataclass
class DeviceState:
    """The DRA objects the scheduler knows (from informers) and the allocations it has made but not yet seen
    written (in flight). Shared by every profile's plugin and the daemon; updated only on the daemon's loop."""

    claims: dict[str, JsonObj] = field(default_factory=dict)
    """`namespace/name` -> ResourceClaim as the informer has it."""
    slices: dict[str, ResourceSlice] = field(default_factory=dict)
    classes: dict[str, DeviceClass] = field(default_factory=dict)
    in_flight: dict[str, tuple[str, AllocationResult]] = field(default_factory=dict)
    """Claim key -> (pod key, allocation) chosen in Reserve, until the claim informer shows the allocation."""
    generated: dict[str, dict[str, str]] = field(default_factory=dict)
    """Pod key -> its `status.resourceClaimStatuses` (pod claim -> generated claim name), from the pod informer."""
    invalid: dict[str, str] = field(default_factory=dict)
    """Slices or classes that failed to parse (the API server validates them; this is for safety)."""
    cache: SelectorCache = field(default_factory=SelectorCache)
    version: int = 0
    """Bumped on every change; `inventory()` is cached per version."""
    _inventory: tuple[int, Inventory] | None = field(default=None, repr=False)
    _parsed: dict[str, tuple[JsonObj, ResourceClaim]] = field(default_factory=dict, repr=False)
    """Claim key -> (the informer's object, parsed): `parsed_claim` parses an object once."""
    _held: dict[str, frozenset[DeviceID]] = field(default_factory=dict, repr=False)
    """Claim key -> the devices it holds (its allocation, or the allocation in flight while the informer's copy has
    none), kept up to date by every change to `claims` and `in_flight` (`_rehold`)."""
    _uses: dict[DeviceID, int] = field(default_factory=dict, repr=False)
    """Device -> how many claims hold it: the devices in use, without reading every claim after each change."""
    slices_version: int = 0
    """Bumped when a slice changes (the devices per node and NUMA node, `_device_index`)."""
    _index: (
        tuple[int, dict[str, list[tuple[DeviceID, int, str]]], dict[DeviceID, str], dict[DeviceID, Hashable]] | None
    ) = field(default=None, repr=False)
    _reachable: tuple[int, dict[str, list[tuple[int, ResourceSlice]]], list[tuple[int, ResourceSlice]]] | None = field(
        default=None, repr=False
    )
    _node_inventories: tuple[int, dict[str, Inventory]] = field(default=(-1, {}), repr=False)
    _node_slices: tuple[int, dict[str, tuple[tuple[ResourceSlice, ...], frozenset[DeviceID]]]] = field(
        default=(-1, {}), repr=False
    )
    _node_states: tuple[int, dict[str, Hashable]] = field(default=(-1, {}), repr=False)
    _node_states_seen: tuple[int, int, frozenset[DeviceID]] | None = field(default=None, repr=False)
    """(slices version, classes version, devices in use) when `_node_states` was last brought up to date."""
    _owners: tuple[int, dict[DeviceID, set[str]]] | None = field(default=None, repr=False)
    _classes: dict[str, tuple[Hashable, NodeTopology | None, tuple[Hashable, tuple[tuple[str, str], ...]] | None]] = (
        field(default_factory=dict, repr=False)
    )
    """Node -> (its `node_devices`, its topology, `node_class`): recomputed when either object changes."""
    _contents: dict[str, tuple[ResourceSlice, str]] = field(default_factory=dict, repr=False)
    """Slice name -> (the slice, `_slice_content`)."""
    _holder_index: tuple[int, dict[str, list[tuple[frozenset[str], frozenset[DeviceID]]]]] | None = field(
        default=None, repr=False
    )
    classes_version: int = 0
    """Bumped when a class changes (an input of every allocation: `node_devices`)."""
    memo: AllocationMemo | None = field(default_factory=AllocationMemo, repr=False)
    """The allocator's verdicts per node and claim shape (`knuma.devices.memo`); None: always run the allocator."""
    held: dict[str, tuple[int, frozenset[DeviceID]]] = field(default_factory=dict)
    """Pod key -> (its priority, devices) held for a pod preemption nominated: the devices its dry run allocated,
    kept from pods of lower priority while its victims go (`hold`); released when it reserves devices, its
    nomination is dropped or it is deleted."""
    _zone_devices: dict[str, ZoneDevices] = field(default_factory=dict, repr=False)
    _zone_devices_version: int = field(default=-1, repr=False)
    _watched: tuple[int, frozenset[DeviceID]] = field(default=(-1, frozenset()), repr=False)
    extended: ExtendedResourceMap = field(default_factory=ExtendedResourceMap)
    """Extended resource name -> the DeviceClass that serves it (KEP-5004, `knuma.scheduler.plugins.dra_extended`)."""
    extended_claims: dict[str, str] = field(default_factory=dict)
    """Pod uid -> the key of the extended resource claim it owns (`owned_extended_claim`)."""
    taint_rules: dict[str, DeviceTaintRule] = field(default_factory=dict)
    """DeviceTaintRules by name: `slices` carry their taints (`knuma.devices.taintrules`)."""
    _published: dict[str, ResourceSlice] = field(default_factory=dict, repr=False)
    """Slice name -> the slice as its driver published it (`slices`: with the DeviceTaintRules' taints)."""

    def set_claim(self, obj: JsonObj) -> None:
        key = f"{(obj.get('metadata') or {}).get('namespace')}/{(obj.get('metadata') or {}).get('name')}"
        self.claims[key] = obj
        if owner := owned_extended_claim(obj):
            self.extended_claims[owner] = key
        if ((obj.get("status") or {}).get("allocation")) and key in self.in_flight:
            del self.in_flight[key]  # written: the informer's copy holds the allocation now
        self._rehold(key)
        self.version += 1

    def set_pod(self, obj: JsonObj) -> bool:
        """Remember a pod's generated claim names; True when they changed (the pod may be schedulable now)."""
        md = obj.get("metadata") or {}
        key = f"{md.get('namespace')}/{md.get('name')}"
        names = {
            str(s.get("name")): str(s.get("resourceClaimName"))
            for s in (obj.get("status") or {}).get("resourceClaimStatuses") or []
            if s.get("resourceClaimName")
        }
        if self.generated.get(key, {}) == names:
            return False
        if names:
            self.generated[key] = names
        else:
            self.generated.pop(key, None)
        self.version += 1
        return True

    def delete_pod(self, obj: JsonObj) -> None:
        md = obj.get("metadata") or {}
        key = f"{md.get('namespace')}/{md.get('name')}"
        self.generated.pop(key, None)
        self.held.pop(key, None)
        for claim in [k for k, (owner, _) in self.in_flight.items() if owner == key]:
            del self.in_flight[claim]
            self._rehold(claim)
        self.version += 1

    def delete_claim(self, obj: JsonObj) -> None:
        key = f"{(obj.get('metadata') or {}).get('namespace')}/{(obj.get('metadata') or {}).get('name')}"
        self.claims.pop(key, None)
        if (owner := owned_extended_claim(obj)) and self.extended_claims.get(owner) == key:
            del self.extended_claims[owner]
        self.in_flight.pop(key, None)
        self._parsed.pop(key, None)
        self._rehold(key)
        self.version += 1

    def set_slice(self, obj: JsonObj) -> None:
        name = str((obj.get("metadata") or {}).get("name"))
        self.slices_version += 1
        try:
            published = self._published[name] = ResourceSlice.from_dict(obj)
            self.slices[name] = with_taint_rules(published, tuple(self.taint_rules.values()), self.classes)
            self.invalid.pop(f"slice/{name}", None)
        except ValidationError as err:
            self.slices.pop(name, None)
            self._published.pop(name, None)
            self.invalid[f"slice/{name}"] = str(err)
        self.version += 1

    def delete_slice(self, obj: JsonObj) -> None:
        self.slices.pop(str((obj.get("metadata") or {}).get("name")), None)
        self._published.pop(str((obj.get("metadata") or {}).get("name")), None)
        self.slices_version += 1
        self.version += 1

    def set_taint_rule(self, obj: JsonObj) -> None:
        """A DeviceTaintRule was added or changed: every slice's devices get its taint where it selects them."""
        name = str((obj.get("metadata") or {}).get("name"))
        try:
            self.taint_rules[name] = DeviceTaintRule.from_dict(obj)
            self.invalid.pop(f"devicetaintrule/{name}", None)
        except ValidationError as err:
            self.taint_rules.pop(name, None)
            self.invalid[f"devicetaintrule/{name}"] = str(err)
        self._retaint()

    def delete_taint_rule(self, obj: JsonObj) -> None:
        self.taint_rules.pop(str((obj.get("metadata") or {}).get("name")), None)
        self._retaint()

    def _retaint(self) -> None:
        """Every slice again with the current DeviceTaintRules (`knuma.devices.taintrules`), in publication order."""
        rules = tuple(self.taint_rules.values())
        self.slices = {name: with_taint_rules(s, rules, self.classes) for name, s in self._published.items()}
        self.slices_version += 1
        self.version += 1

    def set_class(self, obj: JsonObj) -> None:
        name = str((obj.get("metadata") or {}).get("name"))
        try:
            parsed = self.classes[name] = DeviceClass.from_dict(obj)
            self.invalid.pop(f"class/{name}", None)
            created = str((obj.get("metadata") or {}).get("creationTimestamp") or "")
            self.extended.set_class(name, parsed.extended_resource_name, created)
        except ValidationError as err:
            self.classes.pop(name, None)
            self.extended.delete_class(name)
            self.invalid[f"class/{name}"] = str(err)
        self.classes_version += 1
        self.version += 1
        if any(r.device_class_name == name for r in self.taint_rules.values()):
            self._retaint()  # a rule selects devices by this class's selectors

    def delete_class(self, obj: JsonObj) -> None:
        self.classes.pop(str((obj.get("metadata") or {}).get("name")), None)
        self.extended.delete_class(str((obj.get("metadata") or {}).get("name")))
        self.classes_version += 1
        self.version += 1
        if any(r.device_class_name == (obj.get("metadata") or {}).get("name") for r in self.taint_rules.values()):
            self._retaint()

    def parsed_claim(self, key: str) -> ResourceClaim | None:
        """The claim as the informer has it, with the allocation in flight when the informer's copy has none yet;
        parsed once per object the informer delivers (`inventory` reads every claim after each change)."""
        obj = self.claims.get(key)
        if obj is None:
            return None
        known = self._parsed.get(key)
        if known is not None and known[0] is obj:
            claim = known[1]
        else:
            claim = ResourceClaim.from_dict(obj)
            self._parsed[key] = (obj, claim)
        flight = self.in_flight.get(key)
        if flight is not None and claim.allocation is None:
            claim = _with_allocation(claim, flight[1])
        return claim

    def _rehold(self, key: str) -> None:
        """Bring `_held` and `_uses` up to date after claim `key` or its allocation in flight changed. A claim that
        does not parse (the API server validates them: this is for safety) holds nothing here; its pod learns why
        (`pod_claims`)."""
        before = self._held.pop(key, frozenset())
        try:
            claim = self.parsed_claim(key)
        except ValidationError:
            claim = None
        if claim is not None:
            after = allocation_devices(claim.allocation) if claim.allocation is not None else frozenset()
        else:
            flight = self.in_flight.get(key)
            after = allocation_devices(flight[1]) if flight is not None else frozenset()
        if after:
            self._held[key] = after
        for device in before - after:
            if self._uses[device] == 1:
                del self._uses[device]
            else:
                self._uses[device] -= 1
        for device in after - before:
            self._uses[device] = self._uses.get(device, 0) + 1

    def inventory(self) -> Inventory:
        """Slices, classes and the devices in use, rebuilt only when something changed (Filter asks per node)."""
        cached = self._inventory
        if cached is not None and cached[0] == self.version:
            return cached[1]
        inventory = Inventory(tuple(self.slices.values()), dict(self.classes), frozenset(self._uses), self.cache)
        self._inventory = (self.version, inventory)
        return inventory

    def held_only_by(self, pods: Collection[str]) -> frozenset[DeviceID]:
        """The devices the pods `pods` (keys) alone hold: those of allocated claims (and allocations in flight)
        whose consumers, `status.reservedFor` plus the pod an allocation in flight is for, are all among them.
        What a preemption that evicts those pods frees, once the resourceclaim controller deallocates their claims,
        as kubernetes/enhancements#5690 (DRA preemption, a proposal) simulates it: upstream's DynamicResources has
        no PreFilterExtensions, so its dry run frees no device and a pod that devices block never preempts. A claim
        shared with a pod that stays, or allocated but reserved for nobody, frees nothing."""
        wanted = set(pods)
        freed: set[DeviceID] = set()
        for key in wanted:
            for consumers, devices in self._holders().get(key, ()):
                if consumers <= wanted:
                    freed.update(devices)
        return frozenset(freed)

    def _holders(self) -> dict[str, list[tuple[frozenset[str], frozenset[DeviceID]]]]:
        """Pod key -> (every consumer, devices) of each allocated claim it consumes; cached per `version`."""
        cached = self._holder_index
        if cached is not None and cached[0] == self.version:
            return cached[1]
        index: dict[str, list[tuple[frozenset[str], frozenset[DeviceID]]]] = {}
        for key, obj in self.claims.items():
            claim = self.parsed_claim(key)
            if claim is None or claim.allocation is None:
                continue
            namespace = str((obj.get("metadata") or {}).get("namespace") or "")
            consumers = {
                f"{namespace}/{r.get('name')}" for r in claim.reserved_for if r.get("resource", "pods") == "pods"
            }
            if key in self.in_flight:
                consumers.add(self.in_flight[key][0])
            held = allocation_devices(claim.allocation)
            for consumer in consumers:
                index.setdefault(consumer, []).append((frozenset(consumers), held))
        for key, (owner, allocation) in self.in_flight.items():
            if key not in self.claims:
                index.setdefault(owner, []).append((frozenset({owner}), allocation_devices(allocation)))
        self._holder_index = (self.version, index)
        return index

    def node_inventory(self, node: str) -> Inventory:
        """`inventory()` without the slices bound by `nodeName` to other nodes (the allocator's `gather_pools` skips
        them, but scanning them on every node made Filter quadratic: 2000 slices for each of 1000 nodes); the order
        of the rest is kept (pools are searched in slice order). Cached per `version`."""
        cached_version, inventories = self._node_inventories
        if cached_version != self.version:
            inventories = {}
            self._node_inventories = (self.version, inventories)
        known = inventories.get(node)
        if known is not None:
            return known
        full = self.inventory()
        inventory = Inventory(self._slices_of(node)[0], full.classes, full.in_use, full.cache)
        inventories[node] = inventory
        return inventory

    def _slices_of(self, node: str) -> tuple[tuple[ResourceSlice, ...], frozenset[DeviceID]]:
        """The slices reachable from `node` (bound to it by `nodeName`, or not bound to one node) in slice order, and
        the IDs of their devices; cached per `slices_version`."""
        cached_version, by_name = self._node_slices
        if cached_version != self.slices_version:
            by_name = {}
            self._node_slices = (self.slices_version, by_name)
        known = by_name.get(node)
        if known is not None:
            return known
        if self._reachable is None or self._reachable[0] != self.slices_version:
            by_node: dict[str, list[tuple[int, ResourceSlice]]] = {}
            anywhere: list[tuple[int, ResourceSlice]] = []
            for index, slice_ in enumerate(self.slices.values()):
                if slice_.node.node_name:
                    by_node.setdefault(slice_.node.node_name, []).append((index, slice_))
                else:
                    anywhere.append((index, slice_))
            self._reachable = (self.slices_version, by_node, anywhere)
        _, by_node, anywhere = self._reachable
        slices = tuple(s for _, s in sorted([*by_node.get(node, ()), *anywhere], key=lambda entry: entry[0]))
        ids = frozenset((s.driver, s.pool.name, d.name) for s in slices for d in s.devices)
        by_name[node] = (slices, ids)
        return slices, ids

    def node_devices(self, node: str) -> Hashable:
        """Everything the allocator reads of the device side for `node` (`knuma.devices.memo.NodeState.devices`):
        the slices and classes (their versions) and which of the node's devices are in use (allocated or in
        flight). Equal keys: the allocator sees the same devices, free or not. When the version changes, only the
        nodes whose devices changed use are computed again (`_unchanged_node_states`): a cycle allocates on one
        node, and Filter asks about every node."""
        cached_version, states = self._node_states
        if cached_version != self.version:
            states = self._unchanged_node_states(states)
            self._node_states = (self.version, states)
        known = states.get(node)
        if known is None:
            in_use = self.inventory().in_use
            _, ids = self._slices_of(node)
            busy = frozenset(d for d in ids if d in in_use)
            known = states[node] = (self.slices_version, self.classes_version, busy)
        return known

    def forget_node(self, node: str) -> None:
        """A Node was deleted: drop what is remembered per node for it (device state, class, the memo's outcomes),
        so a long-running scheduler does not keep every node it ever saw."""
        self._node_states[1].pop(node, None)
        self._classes.pop(node, None)
        if self.memo is not None:
            self.memo.entries.pop(node, None)

    def _unchanged_node_states(self, states: dict[str, Hashable]) -> dict[str, Hashable]:
        """`states` without the nodes whose `node_devices` may have changed since they were computed: all of them
        when a slice or class changed or a device of a slice not bound to one node changed use, otherwise the
        nodes owning a device that was taken or freed."""
        in_use = self.inventory().in_use
        seen = self._node_states_seen
        self._node_states_seen = (self.slices_version, self.classes_version, in_use)
        if seen is None or seen[:2] != (self.slices_version, self.classes_version):
            return {}
        changed = in_use ^ seen[2]
        if not changed:
            return states
        owners = self._device_owners()
        nodes = {node for device in changed for node in owners.get(device, ())}
        if "" in nodes:
            return {}
        for node in nodes:
            states.pop(node, None)
        return states

    def node_class(
        self, node: str, topology: NodeTopology | None
    ) -> tuple[Hashable, tuple[tuple[str, str], ...]] | None:
        """What the allocator reads of `node` up to names, with the node's own pools in the order it numbers them
        (`knuma.devices.memo`: nodes of one class get the same allocation, renamed). Everything is in it: the NUMA
        zones and their free amounts (`NodeTopology.admission_id`), the slices and classes (their versions), each
        reachable slice's content but its name, pool name and node (`_slice_content`), in order, with the node's
        own pools numbered, and the devices in use, named the same way. None when a reachable slice selects nodes by
        labels or device by device (the node's labels and name would matter), or a shared pool has a name the
        node's own pools use. Cached while the node's devices in use and topology object stay."""
        devices = self.node_devices(node)
        known = self._classes.get(node)
        if known is not None and known[0] is devices and known[1] is topology:
            return known[2]
        found = self._node_class(node, devices, topology)
        self._classes[node] = (devices, topology, found)
        return found

    def _node_class(
        self, node: str, devices: Hashable, topology: NodeTopology | None
    ) -> tuple[Hashable, tuple[tuple[str, str], ...]] | None:
        slices, _ = self._slices_of(node)
        own: dict[tuple[str, str], int] = {}
        parts: list[Hashable] = []
        shared: set[tuple[str, str]] = set()
        for slice_ in slices:
            if slice_.node.node_name == node:
                parts.append((own.setdefault((slice_.driver, slice_.pool.name), len(own)), self._slice_content(slice_)))
            elif slice_.node.all_nodes:
                shared.add((slice_.driver, slice_.pool.name))
                parts.append((slice_.name, slice_.pool.name, self._slice_content(slice_)))
            else:
                return None
        if shared & own.keys():
            return None
        assert isinstance(devices, tuple)
        slices_version, classes_version, busy = devices
        named = frozenset((d[0], own[(d[0], d[1])], d[2]) if (d[0], d[1]) in own else d for d in busy)
        zones = topology.admission_id if topology is not None else None
        return (zones, slices_version, classes_version, tuple(parts), named), tuple(own)

    def _slice_content(self, slice_: ResourceSlice) -> str:
        """The slice without its name, pool name and node name, as text (the same for the slices of two nodes that
        publish the same devices); computed once per slice object."""
        known = self._contents.get(slice_.name)
        if known is not None and known[0] is slice_:
            return known[1]
        anonymous = replace(
            slice_,
            name="",
            pool=replace(slice_.pool, name=""),
            node=replace(slice_.node, node_name="*" if slice_.node.node_name else ""),
        )
        content = repr(anonymous)
        if len(self._contents) > 2 * len(self.slices):  # slices deleted since: forget them
            self._contents = {name: known for name, known in self._contents.items() if name in self.slices}
        self._contents[slice_.name] = (slice_, content)
        return content

    def _device_owners(self) -> dict[DeviceID, set[str]]:
        """Every device of a slice -> the nodes its slices are bound to (`nodeName`), "" for a slice not bound to
        one node (reachable from any); cached per `slices_version`."""
        cached = self._owners
        if cached is not None and cached[0] == self.slices_version:
            return cached[1]
        owners: dict[DeviceID, set[str]] = {}
        for slice_ in self.slices.values():
            for device in slice_.devices:
                owners.setdefault((slice_.driver, slice_.pool.name, device.name), set()).add(
                    slice_.node.node_name or ""
                )
        self._owners = (self.slices_version, owners)
        return owners

    def device_index(self) -> tuple[dict[str, list[tuple[DeviceID, int, str]]], dict[DeviceID, str]]:
        """Per node its devices with a NUMA node (id, NUMA node, zone resource name), and each device's node;
        rebuilt only when a slice changes."""
        if self._index is None or self._index[0] != self.slices_version:
            by_node: dict[str, list[tuple[DeviceID, int, str]]] = {}
            node_of: dict[DeviceID, str] = {}
            for slice_ in self.slices.values():
                node = slice_.node.node_name
                if not node:
                    continue
                name = device_resource(slice_.driver)
                for device in slice_.devices:
                    numa = placement_of(device, slice_.driver).numa
                    if numa is not None:
                        device_id = (slice_.driver, slice_.pool.name, device.name)
                        by_node.setdefault(node, []).append((device_id, numa, name))
                        node_of[device_id] = node
            hardware = physical_devices(list(self.slices.values()))
            self._index = (self.slices_version, by_node, node_of, dict(hardware))
        return self._index[1], self._index[2]

    def hardware(self) -> Mapping[DeviceID, Hashable]:
        """Partitionable devices -> the hardware they share with their other cuts
        (`knuma.devices.counters.physical_devices`); rebuilt with `device_index`."""
        self.device_index()
        assert self._index is not None
        return self._index[3]

    def zone_devices(self, node: str) -> ZoneDevices:
        """`node`'s DRA devices per NUMA node and zone resource (`knuma.scheduler.plugins.dra_zones`), with the
        free ones: not in an allocated claim nor in an allocation in flight. Devices without a NUMA node are left
        out, as the exporter and the kubelet's hints leave them out. A partitionable device counts once, free while
        nothing of it is in use, as the exporter counts it (`knuma.exporter.dra`)."""
        if self._zone_devices_version != self.version:
            self._zone_devices, self._zone_devices_version = {}, self.version
        known = self._zone_devices.get(node)
        if known is not None:
            return known
        in_use = self.inventory().in_use
        hardware = self.hardware()
        units: dict[tuple[int, str], set[Hashable]] = {}
        busy: dict[tuple[int, str], set[Hashable]] = {}
        for device_id, numa, name in self.device_index()[0].get(node, ()):
            unit = hardware.get(device_id, device_id)
            units.setdefault((numa, name), set()).add(unit)
            if device_id in in_use:
                busy.setdefault((numa, name), set()).add(unit)
        counts: dict[int, dict[str, tuple[int, int]]] = {}
        for (numa, name), here in units.items():
            counts.setdefault(numa, {})[name] = (len(here), len(here - busy.get((numa, name), set())))
        self._zone_devices[node] = counts
        return counts

    def zone_devices_changed(self) -> set[str] | None:
        """Nodes whose `zone_devices` may differ from when this was last called (None: any node, after a slice
        changed): what the daemon's cache re-reads."""
        in_use = self.inventory().in_use
        slices_version, seen = self._watched
        self._watched = (self.slices_version, in_use)
        if slices_version != self.slices_version:
            return None if self.slices_version else set()  # no slice ever seen: no node has DRA devices
        node_of = self.device_index()[1]
        return {node for device in in_use ^ seen if (node := node_of.get(device)) is not None}

    def with_zone_devices(self, info: NodeInfo) -> NodeInfo:
        """`info` with its NUMA zones holding the node's DRA devices (`zone_devices`); unchanged without NRT data or
        without DRA devices with a NUMA node."""
        topology = info.topology
        devices = self.zone_devices(info.name)
        if topology is None or not devices:
            return info
        return replace(info, topology=with_zone_devices(topology, devices))

    def reserve(self, pod: Pod, allocations: Mapping[str, AllocationResult]) -> None:
        for key, allocation in allocations.items():
            self.in_flight[key] = (pod.key, allocation)
            self._rehold(key)
        self.held.pop(pod.key, None)  # its own allocation replaces what was held for it
        self.version += 1

    def hold(self, pod: Pod, devices: frozenset[DeviceID]) -> None:
        """Keep `devices` for `pod`, nominated by a preemption, from pods of lower priority."""
        self.held[pod.key] = (pod.priority, devices)
        self.version += 1

    def release(self, pod_key: str) -> None:
        if self.held.pop(pod_key, None) is not None:
            self.version += 1

    def held_against(self, pod: Pod) -> frozenset[DeviceID]:
        """The devices held for other nominated pods of equal or higher priority (those `pod` must not take, as
        kube-scheduler's filters count nominated pods of equal or higher priority, `addGENominatedPods`)."""
        if not self.held:
            return frozenset()
        blocked: set[DeviceID] = set()
        for key, (priority, devices) in self.held.items():
            if key != pod.key and priority >= pod.priority:
                blocked.update(devices)
        return frozenset(blocked)

    def unreserve(self, pod: Pod) -> None:
        for key in [k for k, (owner, _) in self.in_flight.items() if owner == pod.key]:
            del self.in_flight[key]
            self._rehold(key)
        self.version += 1

    def created(self, in_memory: str, key: str) -> None:
        """PreBind created the extended resource claim known as `in_memory` under the name `key`: its allocation in
        flight moves to that key, so the informer's copy, once it holds the allocation, ends it (`set_claim`)."""
        flight = self.in_flight.pop(in_memory, None)
        self._rehold(in_memory)
        if flight is not None and key not in self.in_flight:
            obj = self.claims.get(key)
            if not (obj is not None and (obj.get("status") or {}).get("allocation")):
                self.in_flight[key] = flight
            self._rehold(key)
        self.version += 1


def _with_allocation(claim: ResourceClaim, allocation: AllocationResult) -> ResourceClaim:
    return replace(claim, allocation=allocation)


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

    def __init__(self, state: DeviceState, demand: CPUDemand | None = None) -> None:
        self.state = state
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
        freed = self.state.held_only_by(node.evicted) if node.evicted else frozenset()
        blocked = self.state.held_against(pod)
        # a preemption's dry run, or devices held for a nominated pod: states the memo's key does not describe
        memo = self.state.memo if not freed and not blocked else None
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
                result = self._allocate(pod, node, found.claims, freed, blocked)
                entry = memo.put(node.name, shape, keys, state, result)
                if similar is not None:
                    memo.share(similar[0], shape, node.name, similar[1], entry)
        elif result is None:
            result = self._allocate(pod, node, found.claims, freed, blocked)
        cycle[NAME, node.name] = (pod, result)
        return result

    def _allocate(
        self,
        pod: Pod,
        node: NodeInfo,
        claims: Sequence[ResourceClaim],
        freed: frozenset[DeviceID],
        blocked: frozenset[DeviceID],
    ) -> Outcome:
        """The allocator on `node`, with the devices a dry run frees (`freed`) free and those held for nominated
        pods (`blocked`) in use."""
        inventory = self.state.node_inventory(node.name)
        if freed or blocked:
            inventory = replace(inventory, in_use=(inventory.in_use - freed) | blocked)
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
            if not self._claims(cycle, pod).extended:
                return 0
            claims = self.node_claims(cycle, pod, node)
            if not claims.claims:
                return 0
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
        return self._zone_changes(pod, node.name, topology, allocations, dra, names)

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
