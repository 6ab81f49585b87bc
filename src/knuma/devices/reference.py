"""A straightforward port of upstream's depth-first allocator (`allocateOne` / `allocateDevice` in
`dynamic-resource-allocation/structured/internal/stable/allocator_stable.go`): claims in order, requests in order,
one device slot at a time, devices in pool / slice order, first complete solution wins, no topology. With the
incubating allocator's consumable capacity (`allocator_incubating.go`): a device that allows multiple allocations is
never in use, each share adds its consumption to the device's `allocatingCapacity` and must fit with what is
already consumed, one request takes a device at most once, and distinctAttribute constraints
(`distinctAttributeConstraint`) refuse a device without the attribute or with a value already taken.

It is the yardstick for `knuma.devices.allocator`: the benchmark times both in the same run, and property tests check
that both give the same verdict. Selection (class and request selectors, in use, taints) is shared with knuma
(`filtering`), so the two differ only in how they search. `steps` counts `allocateOne` invocations; `limit` stops a
search that would run for too long (upstream has only the scheduler's 10 s filter timeout).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from knuma.api.dra.resourceclaim import ALLOCATION_RESULTS_MAX, ResourceClaim
from knuma.devices.allocator import Inventory, NodeView
from knuma.devices.capacity import Consumption
from knuma.devices.constraints import AttributeKey, constraint_values
from knuma.devices.demand import Alternative, ClaimDemand, resolve
from knuma.devices.filtering import filter_candidates
from knuma.devices.pools import Candidate, DeviceID, gather_pools
from knuma.errors import KnumaError

__all__ = ["ReferenceResult", "reference_allocate"]


@dataclass(frozen=True)
class ReferenceResult:
    allocatable: bool
    devices: tuple[tuple[tuple[str, DeviceID], ...], ...] = ()
    """Per claim: (request name, device id) in allocation order."""
    steps: int = 0
    timed_out: bool = False


class _ReferenceStepLimit(KnumaError):
    """The reference search ran past its step limit (upstream would hit its filter timeout)."""


@dataclass
class _Match:
    """`matchAttributeConstraint` (with list-attribute intersection): the common values, and how many devices."""

    requests: frozenset[str]
    name: str
    values: frozenset[AttributeKey] = frozenset()
    count: int = 0


@dataclass
class _Distinct:
    """`distinctAttributeConstraint`: the values taken so far."""

    requests: frozenset[str]
    name: str
    taken: list[frozenset[AttributeKey]]


class _Search:
    def __init__(
        self,
        demands: Sequence[ClaimDemand],
        eligible: Mapping[tuple[int, int, int], Sequence[Candidate]],
        forced: Mapping[tuple[int, int, int], Sequence[Candidate]],
        limit: int,
        shares: Mapping[tuple[int, int, int], Mapping[DeviceID, Consumption]] | None = None,
        consumed: Mapping[DeviceID, Mapping[str, int]] | None = None,
    ) -> None:
        self.demands, self.eligible, self.forced, self.limit = demands, eligible, forced, limit
        self.shares, self.consumed = shares or {}, consumed or {}
        self.steps = 0
        self.allocating: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, dict[str, int]] = {}
        self.result: list[list[tuple[str, DeviceID]]] = [[] for _ in demands]
        self.constraints = [
            [_Match(frozenset(c.requests), c.match_attribute) for c in d.constraints if c.match_attribute]
            for d in demands
        ]
        self.distinct = [
            [_Distinct(frozenset(c.requests), c.distinct_attribute, []) for c in d.constraints if c.distinct_attribute]
            for d in demands
        ]

    def in_use_by_other(self, device: DeviceID) -> bool:
        return bool(self.allocating.get(device))

    def allocate_device(
        self, claim: int, alternative: Alternative, candidate: Candidate, key: tuple[int, int, int]
    ) -> Callable[[], None] | None:
        admin = alternative.request.admin_access
        shared = candidate.device.allow_multiple_allocations
        users = self.allocating.setdefault(candidate.id, set())
        if (admin and not shared and claim in users) or (not admin and users):
            return None
        if shared and (alternative.name, candidate.id) in self.result[claim]:
            return None  # upstream goes on from the next device within a request
        share = self.shares.get(key, {}).get(candidate.id)
        if share is not None:
            now = self.allocating_capacity.get(candidate.id, {})
            before = self.consumed.get(candidate.id, {})
            if any(
                before.get(name, 0) + now.get(name, 0) + amount > candidate.device.capacity[name].nanos
                for name, amount in share
            ):
                return None
        applies = [
            d
            for d in self.distinct[claim]
            if not d.requests or alternative.parent in d.requests or alternative.name in d.requests
        ]
        for d in applies:
            values = constraint_values(candidate, d.name)
            if not values or values in d.taken:
                return None
        undo: list[tuple[_Match, frozenset[AttributeKey], int]] = []
        for match in self.constraints[claim]:
            if match.requests and alternative.parent not in match.requests and alternative.name not in match.requests:
                continue
            values = constraint_values(candidate, match.name)
            merged = values if match.count == 0 else match.values & values
            if not merged:
                for m, old_values, old_count in undo:
                    m.values, m.count = old_values, old_count
                return None
            undo.append((match, match.values, match.count))
            match.values, match.count = merged, match.count + 1
        for d in applies:
            d.taken.append(constraint_values(candidate, d.name))
        if not shared:
            users.add(claim)
        if share is not None:
            amounts = self.allocating_capacity.setdefault(candidate.id, {})
            for name, amount in share:
                amounts[name] = amounts.get(name, 0) + amount
        self.result[claim].append((alternative.name, candidate.id))

        def deallocate() -> None:
            for m, old_values, old_count in undo:
                m.values, m.count = old_values, old_count
            for d in applies:
                d.taken.pop()
            users.discard(claim)
            if share is not None:
                for name, amount in share:
                    self.allocating_capacity[candidate.id][name] -= amount
            self.result[claim].pop()

        return deallocate

    def one(self, claim: int, request: int, sub: int | None, slot: int) -> bool:
        self.steps += 1
        if self.steps > self.limit:
            raise _ReferenceStepLimit
        if claim >= len(self.demands):
            return True
        demand = self.demands[claim]
        if request >= len(demand.requests):
            return self.one(claim + 1, 0, None, 0)
        alternatives = demand.requests[request].alternatives
        if sub is None:
            return any(self.one(claim, request, k, slot) for k in range(len(alternatives)))
        alternative = alternatives[sub]
        key = (claim, request, sub)
        if alternative.all_devices:
            devices = self.forced[key]
            if not devices:
                return False
            if slot >= len(devices):
                return self.one(claim, request + 1, None, 0)
            usable = {c.id for c in self.eligible[key]}
            if devices[slot].id not in usable:
                return False
            undo = self.allocate_device(claim, alternative, devices[slot], key)
            if undo is None:
                return False
            if self.one(claim, request, sub, slot + 1):
                return True
            undo()
            return False
        if slot >= alternative.request.count:
            return self.one(claim, request + 1, None, 0)
        if len(self.result[claim]) + alternative.request.count - slot > ALLOCATION_RESULTS_MAX:
            return False
        for candidate in self.eligible[key]:
            undo = self.allocate_device(claim, alternative, candidate, key)
            if undo is None:
                continue
            if self.one(claim, request, sub, slot + 1):
                return True
            undo()
        return False


def reference_allocate(
    node: NodeView,
    claims: Sequence[ResourceClaim],
    inventory: Inventory,
    *,
    admin_access_allowed: Callable[[str], bool] = lambda namespace: True,
    limit: int = 10_000_000,
) -> ReferenceResult:
    pending = [c for c in claims if c.allocation is None]
    if not pending:
        return ReferenceResult(True)
    demands = resolve(pending, inventory.classes, admin_access_allowed)
    pools = gather_pools(inventory.slices, node.name, node.labels)
    candidates = [c for p in pools if p.usable for c in p.candidates(node.name, node.labels)]
    eligible: dict[tuple[int, int, int], Sequence[Candidate]] = {}
    forced: dict[tuple[int, int, int], Sequence[Candidate]] = {}
    shares: dict[tuple[int, int, int], Mapping[DeviceID, Consumption]] = {}
    for i, demand in enumerate(demands):
        for j, request in enumerate(demand.requests):
            for k, alternative in enumerate(request.alternatives):
                if alternative.all_devices and any(not p.usable for p in pools):
                    return ReferenceResult(False)
                found = filter_candidates(
                    alternative, candidates, inventory.in_use, inventory.cache, consumed=inventory.consumed
                )
                eligible[(i, j, k)] = found.devices
                forced[(i, j, k)] = found.forced
                shares[(i, j, k)] = found.consumption
    search = _Search(demands, eligible, forced, limit, shares, inventory.consumed)
    try:
        done = search.one(0, 0, None, 0)
    except _ReferenceStepLimit:
        return ReferenceResult(False, steps=search.steps, timed_out=True)
    if not done:
        return ReferenceResult(False, steps=search.steps)
    return ReferenceResult(True, tuple(tuple(r) for r in search.result), search.steps)
