"""`DeviceState`: the DRA objects the scheduler knows and what it derives from them, shared by every profile's
DynamicResources plugin and the daemon: claims (parsed once, the devices each holds), slices as published and with
the DeviceTaintRules' taints, classes and the extended resources they serve (KEP-5004), allocations in flight
between Reserve and the informer's copy, devices held for nominated pods, and the per-node indexes the plugin's
Filter and Score read on every node (devices per NUMA zone, node classes for the allocation memo), each rebuilt
only when what it reads changed. Updated only on the daemon's loop.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from knuma.api.dra.device import Device
from knuma.api.dra.deviceclass import DeviceClass
from knuma.api.dra.devicetaintrule import DeviceTaintRule
from knuma.api.dra.fields import ValidationError
from knuma.api.dra.resourceclaim import AllocationResult, ResourceClaim
from knuma.api.dra.resourceslice import ResourceSlice
from knuma.api.pod import Pod
from knuma.devices.allocator import (
    Inventory,
    add_consumption,
    allocation_devices,
    allocation_shares,
)
from knuma.devices.capacity import Consumption, has_room
from knuma.devices.cel import CELError, compile_selector
from knuma.devices.counters import physical_devices
from knuma.devices.filtering import SelectorCache
from knuma.devices.memo import AllocationMemo
from knuma.devices.numa import placement_of
from knuma.devices.pools import DeviceID, gather_pools
from knuma.devices.taintrules import with_taint_rules
from knuma.scheduler.framework.interface import (
    NodeInfo,
)
from knuma.scheduler.plugins.dra_extended import (
    ExtendedResourceMap,
    owned_extended_claim,
)
from knuma.scheduler.plugins.dra_zones import ZoneDevices, device_resource, with_zone_devices
from knuma.topology.node import NodeTopology

__all__ = ["DeviceState"]

JsonObj = Mapping[str, Any]
_Holding = tuple[str, frozenset[DeviceID], tuple[tuple[DeviceID, Consumption], ...]]
"""(claim key, the devices it holds whole, its shares of devices that allow multiple allocations)."""


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
    _shares: dict[str, tuple[tuple[DeviceID, Consumption], ...]] = field(default_factory=dict, repr=False)
    """Claim key -> the shares of devices that allow multiple allocations it holds (consumable capacity), kept up to
    date with `_held`."""
    _consumed: dict[DeviceID, dict[str, int]] = field(default_factory=dict, repr=False)
    """Device that allows multiple allocations -> what the claims holding shares of it consume."""
    slices_version: int = 0
    """Bumped when a slice changes (the devices per node and NUMA node, `_device_index`)."""
    _index: (
        tuple[
            int,
            dict[str, list[tuple[DeviceID, int, str]]],
            dict[DeviceID, str],
            dict[DeviceID, Hashable],
            dict[DeviceID, Device],
        ]
        | None
    ) = field(default=None, repr=False)
    _reachable: tuple[int, dict[str, list[tuple[int, ResourceSlice]]], list[tuple[int, ResourceSlice]]] | None = field(
        default=None, repr=False
    )
    _node_inventories: tuple[int, dict[str, Inventory]] = field(default=(-1, {}), repr=False)
    _node_slices: tuple[int, dict[str, tuple[tuple[ResourceSlice, ...], frozenset[DeviceID]]]] = field(
        default=(-1, {}), repr=False
    )
    _node_states: tuple[int, dict[str, Hashable]] = field(default=(-1, {}), repr=False)
    _node_states_seen: tuple[int, int, frozenset[DeviceID], frozenset[tuple[DeviceID, Hashable]]] | None = field(
        default=None, repr=False
    )
    """(slices version, classes version, devices in use, shared devices' consumption) when `_node_states` was last
    brought up to date."""
    _owners: tuple[int, dict[DeviceID, set[str]]] | None = field(default=None, repr=False)
    _classes: dict[str, tuple[Hashable, NodeTopology | None, tuple[Hashable, tuple[tuple[str, str], ...]] | None]] = (
        field(default_factory=dict, repr=False)
    )
    """Node -> (its `node_devices`, its topology, `node_class`): recomputed when either object changes."""
    _contents: dict[str, tuple[ResourceSlice, str]] = field(default_factory=dict, repr=False)
    """Slice name -> (the slice, `_slice_content`)."""
    _holder_index: tuple[int, dict[str, list[tuple[str, frozenset[str], _Holding]]]] | None = field(
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
    _watched: tuple[int, frozenset[DeviceID], frozenset[tuple[DeviceID, Hashable]]] = field(
        default=(-1, frozenset(), frozenset()), repr=False
    )
    extended: ExtendedResourceMap = field(default_factory=ExtendedResourceMap)
    """Extended resource name -> the DeviceClass that serves it (KEP-5004, `knuma.scheduler.plugins.dra_extended`)."""
    extended_claims: dict[str, str] = field(default_factory=dict)
    """Pod uid -> the key of the extended resource claim it owns (`owned_extended_claim`)."""
    taint_rules: dict[str, DeviceTaintRule] = field(default_factory=dict)
    """DeviceTaintRules by name: `slices` carry their taints (`knuma.devices.taintrules`)."""
    _class_totals: tuple[int, dict[tuple[str, str], tuple[int, int]]] = field(
        default_factory=lambda: (-1, {}), repr=False
    )
    """(`version`, (node, class) -> `class_devices`)."""
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
        for device, taken in self._shares.pop(key, ()):
            add_consumption(self._consumed, device, taken, -1)
        try:
            claim = self.parsed_claim(key)
        except ValidationError:
            claim = None
        allocation = claim.allocation if claim is not None else None
        if claim is None and (flight := self.in_flight.get(key)) is not None:
            allocation = flight[1]
        after = allocation_devices(allocation) if allocation is not None else frozenset()
        shares = allocation_shares(allocation) if allocation is not None else ()
        if after:
            self._held[key] = after
        if shares:
            self._shares[key] = shares
            for device, taken in shares:
                add_consumption(self._consumed, device, taken)
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
        consumed = {device: dict(amounts) for device, amounts in self._consumed.items()}
        inventory = Inventory(
            tuple(self.slices.values()), dict(self.classes), frozenset(self._uses), self.cache, consumed
        )
        self._inventory = (self.version, inventory)
        return inventory

    def held_only_by(self, pods: Collection[str]) -> frozenset[DeviceID]:
        """The devices the pods `pods` (keys) alone hold: those of allocated claims (and allocations in flight)
        whose consumers, `status.reservedFor` plus the pod an allocation in flight is for, are all among them.
        What a preemption that evicts those pods frees, once the resourceclaim controller deallocates their claims,
        as kubernetes/enhancements#5690 (DRA preemption, a proposal) simulates it: upstream's DynamicResources has
        no PreFilterExtensions, so its dry run frees no device and a pod that devices block never preempts. A claim
        shared with a pod that stays, or allocated but reserved for nobody, frees nothing."""
        return frozenset(d for held in self._held_only_by(pods) for d in held[1])

    def shares_held_only_by(self, pods: Collection[str]) -> dict[DeviceID, dict[str, int]]:
        """What the pods `pods` alone consume of devices that allow multiple allocations (the shares of the claims
        `held_only_by` would free), per device and capacity: what the same preemption gives back of them."""
        freed: dict[DeviceID, dict[str, int]] = {}
        for _, _, shares in self._held_only_by(pods):
            for device, taken in shares:
                add_consumption(freed, device, taken)
        return freed

    def _held_only_by(self, pods: Collection[str]) -> list[_Holding]:
        """The holdings (each claim once) whose consumers are all among `pods`."""
        wanted = set(pods)
        found: dict[str, _Holding] = {}
        for key in wanted:
            for claim, consumers, holding in self._holders().get(key, ()):
                if consumers <= wanted:
                    found[claim] = holding
        return list(found.values())

    def _holders(self) -> dict[str, list[tuple[str, frozenset[str], _Holding]]]:
        """Pod key -> (claim key, every consumer, what the claim holds) of each allocated claim it consumes; cached
        per `version`."""
        cached = self._holder_index
        if cached is not None and cached[0] == self.version:
            return cached[1]
        index: dict[str, list[tuple[str, frozenset[str], _Holding]]] = {}
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
            holding = (key, allocation_devices(claim.allocation), allocation_shares(claim.allocation))
            for consumer in consumers:
                index.setdefault(consumer, []).append((key, frozenset(consumers), holding))
        for key, (owner, allocation) in self.in_flight.items():
            if key not in self.claims:
                holding = (key, allocation_devices(allocation), allocation_shares(allocation))
                index.setdefault(owner, []).append((key, frozenset({owner}), holding))
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
        inventory = Inventory(self._slices_of(node)[0], full.classes, full.in_use, full.cache, full.consumed)
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
        the slices and classes (their versions), which of the node's devices are in use (allocated or in
        flight) and what is consumed of its shared devices. Equal keys: the allocator sees the same devices, free or
        not. When the version changes, only the
        nodes whose devices changed use are computed again (`_unchanged_node_states`): a cycle allocates on one
        node, and Filter asks about every node."""
        cached_version, states = self._node_states
        if cached_version != self.version:
            states = self._unchanged_node_states(states)
            self._node_states = (self.version, states)
        known = states.get(node)
        if known is None:
            inventory = self.inventory()
            _, ids = self._slices_of(node)
            busy = frozenset(d for d in ids if d in inventory.in_use)
            shared = _consumption_items(inventory, ids)
            known = states[node] = (self.slices_version, self.classes_version, busy, shared)
        return known

    def class_devices(self, node: str, labels: Mapping[str, str], class_name: str) -> tuple[int, int]:
        """How many devices of the class `class_name` `node` has, and how many of them are allocated (to an
        allocated claim or an allocation in flight, or, for a device that allows multiple allocations, with any share
        taken): NodeResourcesFit's allocatable and requested for an extended resource the class serves
        (`calculateDRAResourceTotals` in `noderesources/resource_allocation.go`: the devices of the slices that
        reach the node, per-device node selection applied, that match the class's selectors, and
        `structured.IsDeviceAllocated`). (0, 0) without the class, or when a selector fails (upstream logs the error
        and leaves the resource out of the score). Cached per `version`."""
        version, known = self._class_totals
        if version != self.version:
            known = {}
            self._class_totals = (self.version, known)
        found = known.get((node, class_name))
        if found is not None:
            return found
        cls = self.classes.get(class_name)
        total = allocated = 0
        if cls is not None:
            inventory = self.inventory()
            try:
                selectors = [
                    compile_selector(e, f"class {cls.name}: selector #{i}") for i, e in enumerate(cls.selectors)
                ]
                for pool in gather_pools(self._slices_of(node)[0], node, labels):  # what reaches the node
                    for candidate in pool.candidates(node, labels):
                        if all(self.cache.matches(sel, candidate, f"class {cls.name}") for sel in selectors):
                            total += 1
                            allocated += candidate.id in inventory.in_use or candidate.id in inventory.consumed
            except CELError:
                total = allocated = 0
        known[node, class_name] = (total, allocated)
        return total, allocated

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
        inventory = self.inventory()
        in_use = inventory.in_use
        shared = _consumption_items(inventory)
        seen = self._node_states_seen
        self._node_states_seen = (self.slices_version, self.classes_version, in_use, shared)
        if seen is None or seen[:2] != (self.slices_version, self.classes_version):
            return {}
        changed = in_use ^ seen[2]
        if shared != seen[3]:
            changed = changed | {device for device, _ in shared ^ seen[3]}
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
        slices_version, classes_version, busy, consumed = devices

        def anonymous(d: DeviceID) -> Hashable:
            return (d[0], own[(d[0], d[1])], d[2]) if (d[0], d[1]) in own else d

        named = frozenset(anonymous(d) for d in busy)
        shares = frozenset((anonymous(d), amounts) for d, amounts in consumed)
        zones = topology.admission_id if topology is not None else None
        return (zones, slices_version, classes_version, tuple(parts), named, shares), tuple(own)

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
            shared: dict[DeviceID, Device] = {}
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
                        if device.allow_multiple_allocations:
                            shared[device_id] = device
            hardware = physical_devices(list(self.slices.values()))
            self._index = (self.slices_version, by_node, node_of, dict(hardware), shared)
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
        nothing of it is in use, and a device that allows multiple allocations is free while one more share of it
        fits (`knuma.devices.capacity.has_room`), as the exporter counts them (`knuma.exporter.dra`)."""
        if self._zone_devices_version != self.version:
            self._zone_devices, self._zone_devices_version = {}, self.version
        known = self._zone_devices.get(node)
        if known is not None:
            return known
        inventory = self.inventory()
        hardware = self.hardware()
        assert self._index is not None
        shared = self._index[4]
        units: dict[tuple[int, str], set[Hashable]] = {}
        busy: dict[tuple[int, str], set[Hashable]] = {}
        for device_id, numa, name in self.device_index()[0].get(node, ()):
            unit = hardware.get(device_id, device_id)
            units.setdefault((numa, name), set()).add(unit)
            used_up = device_id in shared and not has_room(shared[device_id], inventory.consumed.get(device_id, {}))
            if device_id in inventory.in_use or used_up:
                busy.setdefault((numa, name), set()).add(unit)
        counts: dict[int, dict[str, tuple[int, int]]] = {}
        for (numa, name), here in units.items():
            counts.setdefault(numa, {})[name] = (len(here), len(here - busy.get((numa, name), set())))
        self._zone_devices[node] = counts
        return counts

    def zone_devices_changed(self) -> set[str] | None:
        """Nodes whose `zone_devices` may differ from when this was last called (None: any node, after a slice
        changed): what the daemon's cache re-reads."""
        inventory = self.inventory()
        in_use, shares = inventory.in_use, _consumption_items(inventory)
        slices_version, seen, seen_shares = self._watched
        self._watched = (self.slices_version, in_use, shares)
        if slices_version != self.slices_version:
            return None if self.slices_version else set()  # no slice ever seen: no node has DRA devices
        node_of = self.device_index()[1]
        changed = in_use ^ seen | {device for device, _ in shares ^ seen_shares}
        return {node for device in changed if (node := node_of.get(device)) is not None}

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


def _consumption_items(
    inventory: Inventory, ids: Collection[DeviceID] | None = None
) -> frozenset[tuple[DeviceID, tuple[tuple[str, int], ...]]]:
    """What is consumed of the shared devices (of `ids`, or all), hashable: part of a node's device state."""
    return frozenset(
        (device, tuple(sorted(amounts.items())))
        for device, amounts in inventory.consumed.items()
        if ids is None or device in ids
    )


def _with_allocation(claim: ResourceClaim, allocation: AllocationResult) -> ResourceClaim:
    return replace(claim, allocation=allocation)
