"""The kubelet's hint providers and allocators (CPU, memory, device managers) at NUMA-count granularity.

They work on `WorkingNode`, the mutable per-admission state: free amounts per zone, plus what the pod's earlier
init containers left reusable. Amounts are base units (CPU in milli-CPU in the zones; the CPU manager counts whole
CPUs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from knuma.api.nrt import Policy
from knuma.api.resources import CPU, MEMORY
from knuma.errors import KnumaError
from knuma.topology.cpumanager import distribute_across_numa, numa_order
from knuma.topology.hints import DENSE_MASKS_FROM, Hint, bits, hints_of, iterate_masks, mask_of, mask_sums, narrower
from knuma.topology.node import NodeTopology, is_device

__all__ = ["AllocationError", "WorkingNode", "exclusive_request"]

MILLI = 1000


_NO_DEFAULT = "get the default NUMA affinity, no NUMA nodes with enough memory is available"
"""`getDefaultHint`'s error after `[memorymanager] failed to `."""


class AllocationError(KnumaError):
    """A manager could not allocate after the Topology Manager admitted (kubelet: UnexpectedAdmissionError)."""


@dataclass
class WorkingNode:
    node: NodeTopology
    free: dict[int, dict[str, int]]
    reusable: dict[str, dict[int, int]] = field(default_factory=dict)
    """CPU (whole CPUs) and devices per NUMA id, released by earlier init containers of the pod being admitted."""
    reusable_memory: dict[str, dict[int, dict[int, int]]] = field(default_factory=dict)
    """memory type -> NUMA mask -> bytes per NUMA id held by earlier init containers (the memory manager's
    `initContainersReusableMemory`, keyed by mask): reusable by a later container whose hint is exactly that mask."""
    groups: dict[int, frozenset[int]] = field(default_factory=dict)
    used_memory: set[int] = field(default_factory=set)
    """NUMA ids with memory-manager assignments (`NumberOfAssignments > 0`)."""
    full_hints: bool = False
    """Generate hints over every mask even under single-numa-node (for traces: the lists the kubelet logs)."""

    @classmethod
    def of(cls, node: NodeTopology) -> WorkingNode:
        used = {
            z.id
            for z in node.zones
            for name in z.available
            if node.memory_managed(name) and z.available[name] < z.total(name)
        }
        return cls(
            node=node,
            free={z.id: dict(z.available) for z in node.zones},
            groups=dict(node.memory_groups),
            used_memory=used,
        )

    def _masks(self) -> list[int]:
        """The masks worth generating hints for. Under single-numa-node the policy drops every hint wider than one
        NUMA node, and a one-node hint is preferred exactly when some single node could hold the request on an empty
        machine, so single-node masks give the same merge result at a fraction of the cost (8 instead of 255 masks on
        an 8-NUMA machine)."""
        if self.node.config.policy is Policy.SINGLE_NUMA_NODE and not self.full_hints:
            return [1 << n for n in self.node.numa_ids]
        return iterate_masks(self.node.numa_ids)

    # -- countable exclusive resources: CPUs and devices -------------------------------------------------------

    def _units(self, name: str, numa_id: int) -> int:
        free = self.free[numa_id].get(name, 0)
        return free // MILLI if name == CPU else free

    def _all_units(self, name: str, numa_id: int) -> int:
        total = self.node.zone_by_id[numa_id].all_units(name)
        return total // MILLI if name == CPU else total

    def countable_hints(self, name: str, request: int) -> list[Hint]:
        """`generateCPUTopologyHints` / `generateDeviceTopologyHints`: a hint for every mask that holds all
        reusable units and enough units in total; preferred when as narrow as the request allows on an empty
        machine.

        A mask that leaves out the NUMA node of any reusable unit is disregarded (cpumanager `policy_static.go`:
        "Disregard this mask if its NUMANode isn't part of it", unchanged 1.19 to 1.33; kubernetes#123816): init
        CPUs that earlier app containers did not take pin later containers to their node."""
        reusable = self.reusable.get(name, {})
        reusable_mask = mask_of([n for n, count in reusable.items() if count])
        reusable_total = sum(reusable.values())
        ids = self.node.numa_ids
        if reusable_total + sum(self._units(name, n) for n in ids) < request:
            return []
        masks = self._masks()
        all_per_id = {n: self._all_units(name, n) for n in ids}
        free_per_id = {n: self._units(name, n) for n in ids}
        dense = self._dense_countable(masks, request, all_per_id, free_per_id, reusable_mask, reusable_total)
        if dense is not None:
            found, min_width = dense
        else:
            all_units = mask_sums(masks, all_per_id)
            free_units = mask_sums(masks, free_per_id)
            min_width = len(ids) + 1
            found = []
            for mask in masks:
                if all_units[mask] >= request:
                    min_width = min(min_width, mask.bit_count())
                if reusable_mask & ~mask:
                    continue
                if reusable_total + free_units[mask] >= request:
                    found.append(mask)
        options = self.node.cpu_manager
        if name == CPU and options.align_by_socket:
            count = len(self.node.numa_ids)
            return [
                Hint(m, options.socket_aligned(bits(m), min_width, count) or m.bit_count() == min_width) for m in found
            ]
        return hints_of(found, min_width)

    def _dense_countable(
        self,
        masks: list[int],
        request: int,
        all_per_id: Mapping[int, int],
        free_per_id: Mapping[int, int],
        reusable_mask: int,
        reusable_total: int,
    ) -> tuple[list[int], int] | None:
        """`countable_hints`' walk on a `MaskTable` (12 NUMA nodes and more): the masks that hold the request and
        the narrowest width that could on an empty machine; None where the Python walk applies."""
        if len(masks) < DENSE_MASKS_FROM or len(masks) != (1 << len(self.node.numa_ids)) - 1:
            return None
        from knuma.topology.masktable import mask_table  # numpy, only for wide machines (the exporter never needs it)

        table = mask_table(self.node.numa_ids)
        all_units, free_units = table.sums(all_per_id), table.sums(free_per_id)
        if all_units is None or free_units is None:
            return None
        could = table.widths[all_units >= request]
        min_width = int(could.min()) if could.size else len(self.node.numa_ids) + 1
        holds = table.holding(reusable_mask) & (free_units + reusable_total >= request)
        return table.masks[holds].tolist(), min_width

    def allocate_countable(
        self, name: str, request: int, affinity: int | None, *, reusable_after: bool
    ) -> dict[int, int]:
        """Take `request` units inside the affinity, then outside it (the CPU manager spills when the policy
        admitted a hint that does not hold the request; `_take_cpus` says in which order). The device manager's
        `devicesToAllocate` takes every reusable device first, wherever it is, then aligned free devices, then the
        others.

        Reuse bookkeeping is `updateCPUsToReuse`: a regular init container's units join the pod's reusable set
        (`reusable_after`), any other container's (app or sidecar, `IsRestartableInitContainer`) leave it. Which
        units of a NUMA node `takeByTopology` picks is per CPU id; counting reusable ones first matches it when the
        init container got the node's lowest free cores, which is what packing gives it."""
        ids = self.node.numa_ids
        inside = [n for n in ids if affinity is None or affinity >> n & 1]
        options = self.node.cpu_manager
        if name == CPU and options.align_by_socket and affinity is not None and options.numa_sockets:
            sockets = {options.socket_of(n) for n in inside}  # getAlignedCPUs: the hint's whole sockets
            inside = [n for n in ids if options.socket_of(n) in sockets]
        outside = [n for n in ids if n not in inside]
        reusable = self.reusable.setdefault(name, {})
        taken: dict[int, int] = {}
        remaining = request
        if name == CPU:
            # allocateCPUs: takeByTopology over the aligned CPUs (free and reusable), then over the rest
            for group in (inside, outside):
                if remaining:
                    remaining = self._take_cpus(group, remaining, reusable, taken)
        order = [(inside, "reusable"), (outside, "reusable"), (inside, "free"), (outside, "free")]
        if name == CPU:
            order = []
        for group, pool in order:
            for numa_id in group:
                if remaining == 0:
                    break
                have = reusable.get(numa_id, 0) if pool == "reusable" else self._units(name, numa_id)
                take = min(have, remaining)
                if not take:
                    continue
                if pool == "reusable":
                    reusable[numa_id] -= take
                else:
                    self.free[numa_id][name] -= take * (MILLI if name == CPU else 1)
                taken[numa_id] = taken.get(numa_id, 0) + take
                remaining -= take
        if remaining:
            raise AllocationError(f"not enough {name} available to satisfy request: requested={request}")
        if reusable_after:
            for numa_id, count in taken.items():
                reusable[numa_id] = reusable.get(numa_id, 0) + count
        return {n: c * (MILLI if name == CPU else 1) for n, c in taken.items()}

    def _take_cpus(self, group: list[int], request: int, reusable: dict[int, int], taken: dict[int, int]) -> int:
        """One `takeByTopology` call of `allocateCPUs` over the CPUs (free and reusable) of the NUMA nodes `group`,
        at NUMA-count granularity; returns what is left to take (the request beyond what `group` holds).

        `takeByTopologyNUMAPacked`: whole first-level units, whole second-level units, then the remaining CPUs
        (`takeFullCores`, `takeRemainingCPUs`) from the NUMA nodes in `sortAvailableNUMANodes` order, each phase
        sorting again. With `numaFirst` (as many sockets as NUMA nodes, or sockets unknown) the levels are NUMA nodes
        then sockets and the order is the fewest available CPUs first, ties by id; with `socketsFirst` (more NUMA
        nodes than sockets) whole sockets come first, then whole NUMA nodes, and the order is the sockets with the
        fewest available CPUs first and, inside each, its NUMA nodes by the same rule (`numa_order`). A unit is whole
        when every CPU of it is available (reserved CPUs make it never whole) and the request needs at least all of
        it (`numaFirst`'s second level, whole sockets inside one NUMA node, is below this model's granularity and left
        out). With `distribute-cpus-across-numa`, `takeByTopologyNUMADistributed` (`distribute_across_numa`), which
        falls back to packing when it finds no even split. A node's reusable CPUs are counted as taken first."""
        pool = {n: reusable.get(n, 0) + self._units(CPU, n) for n in group}
        count = min(request, sum(pool.values()))
        options = self.node.cpu_manager
        split: dict[int, int] | None = None
        if options.distribute_cpus_across_numa and count:
            total_cpus = sum(self._all_units(CPU, n) for n in self.node.numa_ids)
            numas = len(self.node.numa_ids)
            split = distribute_across_numa(pool, count, options.cpu_group_size, total_cpus, numas, options)
        if split is None:
            split = self._pack_cpus(pool, count)
        for numa_id, amount in split.items():
            from_reusable = min(reusable.get(numa_id, 0), amount)
            if from_reusable:
                reusable[numa_id] -= from_reusable
            self.free[numa_id][CPU] -= (amount - from_reusable) * MILLI
            taken[numa_id] = taken.get(numa_id, 0) + amount
        return request - count

    def _pack_cpus(self, pool: dict[int, int], count: int) -> dict[int, int]:
        """`takeByTopologyNUMAPacked` over `pool` (available CPUs per NUMA node): how many CPUs each node gives."""
        options = self.node.cpu_manager
        left = dict(pool)
        split: dict[int, int] = {}
        need = count

        def take(numa_id: int, amount: int) -> None:
            nonlocal need
            split[numa_id] = split.get(numa_id, 0) + amount
            left[numa_id] -= amount
            need -= amount

        def whole(numa_ids: list[int]) -> bool:
            return all(left[n] == self._all_units(CPU, n) for n in numa_ids)

        if options.sockets_first:  # takeFullSockets: a socket is whole only when all its NUMA nodes are in the pool
            for socket in dict.fromkeys(options.socket_of(n) for n in numa_order(left, options)):
                members = [n for n in self.node.numa_ids if options.socket_of(n) == socket]
                size = sum(self._all_units(CPU, n) for n in members)
                if all(n in left for n in members) and whole(members) and need >= size:
                    for numa_id in members:
                        take(numa_id, left[numa_id])
        for numa_id in numa_order(left, options):  # takeFullNUMANodes
            if whole([numa_id]) and need >= left[numa_id]:
                take(numa_id, left[numa_id])
        for numa_id in numa_order(left, options):  # takeFullCores, takeRemainingCPUs
            amount = min(left[numa_id], need)
            if amount > 0:
                take(numa_id, amount)
        return split

    # -- memory manager ----------------------------------------------------------------------------------------

    def memory_hints(self, requested: Mapping[str, int]) -> list[Hint]:
        """Static memory manager `calculateHints`: one hint list shared by every requested memory type."""
        hints = self._memory_hints(requested, self._masks())
        if not hints and self.node.config.policy is Policy.SINGLE_NUMA_NODE:
            # "no hint at all" (no preference for the Topology Manager) differs from "only multi-NUMA hints" (which
            # single-numa-node filters away, then rejects): only the full walk tells them apart.
            hints = self._memory_hints(requested, iterate_masks(self.node.numa_ids))
        return hints

    def _memory_hints(self, requested: Mapping[str, int], masks: list[int]) -> list[Hint]:
        ids = self.node.numa_ids
        used = [n for n in ids if n in self.used_memory]
        used_mask = mask_of(used)
        group_of = {n: mask_of(sorted(self.groups.get(n, frozenset({n})))) for n in used}
        # a mask holding used NUMA nodes is a hint only when it is the group of every used node it holds
        whole_groups = {g for g in group_of.values() if all(group_of[n] == g for n in used if g >> n & 1)}
        dense = self._dense_memory(requested, masks, used_mask, whole_groups)
        if dense is not None:
            found_masks, narrowest = dense
            return hints_of(found_masks, narrowest)
        totals = {r: mask_sums(masks, {n: self.node.zone_by_id[n].total(r) for n in ids}) for r in requested}
        frees = {r: mask_sums(masks, {n: self.free[n].get(r, 0) for n in ids}) for r in requested}
        min_width = len(ids) + 1
        found: list[int] = []
        for mask in masks:
            if not all(totals[r][mask] >= q for r, q in requested.items()):
                continue
            width = mask.bit_count()
            min_width = min(min_width, width)
            if width == 1:
                numa_id = mask.bit_length() - 1
                if len(self.groups.get(numa_id, frozenset({numa_id}))) > 1:
                    continue  # already part of a multi-NUMA group
            elif mask & used_mask and mask not in whole_groups:
                continue  # used alone, or in another group
            if all(
                frees[r][mask] + self._reusable_memory(r, mask) >= q for r, q in requested.items()
            ):  # free + getPodReusableMemory, as calculateHints
                found.append(mask)
        return hints_of(found, min_width)

    def _dense_memory(
        self, requested: Mapping[str, int], masks: list[int], used_mask: int, whole_groups: set[int]
    ) -> tuple[list[int], int] | None:
        """`_memory_hints`' walk on a `MaskTable` (12 NUMA nodes and more): the hint masks and the narrowest width
        that holds the request on an empty machine; None where the Python walk applies."""
        if len(masks) < DENSE_MASKS_FROM or len(masks) != (1 << len(self.node.numa_ids)) - 1:
            return None
        import numpy as np

        from knuma.topology.masktable import mask_table

        table = mask_table(self.node.numa_ids)
        ids = self.node.numa_ids
        fits = np.ones(len(table.masks), dtype=bool)
        holds = np.ones(len(table.masks), dtype=bool)
        for name, amount in requested.items():
            totals = table.sums({n: self.node.zone_by_id[n].total(name) for n in ids})
            frees = table.sums({n: self.free[n].get(name, 0) for n in ids})
            if totals is None or frees is None:
                return None
            for mask, held in self.reusable_memory.get(name, {}).items():  # getPodReusableMemory, per mask
                frees[table.positions[mask]] += sum(held.values())
            fits &= totals >= amount
            holds &= frees >= amount
        could = table.widths[fits]
        min_width = int(could.min()) if could.size else len(ids) + 1
        grouped = [1 << n for n in ids if len(self.groups.get(n, frozenset({n}))) > 1]
        single_in_group = np.isin(table.masks, grouped) if grouped else np.zeros(len(table.masks), dtype=bool)
        foreign = ((table.masks & used_mask) != 0) & (table.widths > 1) & ~np.isin(table.masks, list(whole_groups))
        return table.masks[fits & holds & ~single_in_group & ~foreign].tolist(), min_width

    def _satisfies(self, mask: int, requested: Mapping[str, int]) -> bool:
        return all(
            sum(self.free[n].get(r, 0) for n in bits(mask)) + self._reusable_memory(r, mask) >= q
            for r, q in requested.items()
        )

    def _reusable_memory(self, name: str, mask: int) -> int:
        return sum(self.reusable_memory.get(name, {}).get(mask, {}).values())

    def allocate_memory(
        self, requested: Mapping[str, int], affinity: int | None, preferred: bool, *, reusable_after: bool
    ) -> dict[str, dict[int, int]]:
        """Static memory manager `Allocate`: default or extend the hint when it does not hold the request, then
        fill the hint's NUMA nodes in id order."""
        chosen = Hint(affinity, preferred)
        # getDefaultHint and extendTopologyManagerHint call calculateHints, which walks every mask whatever the
        # Topology Manager policy: the single-NUMA shortcut of `_masks` does not apply here (listed only when needed)
        if affinity is None:
            every_mask = iterate_masks(self.node.numa_ids)
            chosen = self._narrowest(self._memory_hints(requested, every_mask), lambda m: True, _NO_DEFAULT)
            if not chosen.preferred and preferred:
                raise AllocationError("[memorymanager] failed to find the default preferred hint")
        assert chosen.mask is not None
        if not self._satisfies(chosen.mask, requested):
            current = chosen.mask
            extended = self._narrowest(
                self._memory_hints(requested, iterate_masks(self.node.numa_ids)),
                lambda m: m & current == current,
                "find NUMA nodes to extend the current topology hint",
            )
            if not extended.preferred and chosen.preferred:
                raise AllocationError("[memorymanager] failed to find the extended preferred hint")
            chosen = extended
        assert chosen.mask is not None
        members = bits(chosen.mask)
        allocation: dict[str, dict[int, int]] = {}
        for name, amount in requested.items():
            # Reused bytes stay where the init containers hold them; they now belong to this container.
            held = self.reusable_memory.get(name, {}).get(chosen.mask, {})
            taken: dict[int, int] = {}
            remaining = amount
            for numa_id in sorted(held):
                take = min(held[numa_id], remaining)
                if take > 0:
                    taken[numa_id] = take
                    remaining -= take
                    if not reusable_after:  # app and sidecar containers consume what they reuse
                        held[numa_id] -= take
            for numa_id in members:
                free = self.free[numa_id].get(name, 0)
                take = min(free, remaining)
                if take > 0:
                    self.free[numa_id][name] = free - take
                    taken[numa_id] = taken.get(numa_id, 0) + take
                    remaining -= take
            if remaining:
                raise AllocationError(f"[memorymanager] not enough {name} on NUMA nodes {list(members)}")
            allocation[name] = taken
            if reusable_after and amount > sum(held.values()):  # per mask, the largest init container block
                self.reusable_memory.setdefault(name, {})[chosen.mask] = dict(taken)
        for numa_id in members:
            self.used_memory.add(numa_id)
            if len(members) > 1:
                self.groups[numa_id] = frozenset(members)
        return allocation

    @staticmethod
    def _narrowest(hints: list[Hint], accept: Callable[[int], bool], what: str) -> Hint:
        """`findBestHint`: preferred first, then the narrowest."""
        best: Hint | None = None
        for hint in hints:
            if hint.mask is None or not accept(hint.mask):
                continue
            if (
                best is None
                or best.mask is None
                or (hint.preferred and not best.preferred)
                or (hint.preferred == best.preferred and narrower(hint.mask, best.mask))
            ):
                best = hint
        if best is None:
            raise AllocationError(f"[memorymanager] failed to {what}")
        return best


def exclusive_request(
    node: NodeTopology, requests: Mapping[str, int], exclusive_cpus: int, guaranteed: bool
) -> dict[str, int]:
    """What the managers of `node` allocate for a container or pod request: whole CPUs for the static CPU manager,
    memory and hugepages for the static memory manager (Guaranteed only), devices for any QoS."""
    out: dict[str, int] = {}
    if exclusive_cpus and node.cpu_managed:
        out[CPU] = exclusive_cpus
    for name, amount in requests.items():
        if not amount:
            continue
        if (guaranteed and node.memory_managed(name)) or (is_device(name) and name in node.numa_managed):
            out[name] = amount
    return out


def memory_types(request: Mapping[str, int]) -> dict[str, int]:
    return {name: amount for name, amount in request.items() if name == MEMORY or name.startswith("hugepages-")}
