"""The bounded search behind the allocator: discrete choices by enumeration, device picking by maximum flow.

Upstream's allocator (`allocateOne` in `internal/stable/allocator_stable.go`) walks devices one slot at a time and
takes the first complete solution; with no solution it may try every combination (kubernetes#131730). knuma splits
the problem instead:

1. the discrete choices are enumerated in preference order: which `firstAvailable` alternative each request uses
   (lexicographic, as upstream's DFS reaches them), which NUMA mask the devices must stay in (`alignment`), which
   locality rung is tried (same PCIe root, same NUMA node, same socket, anywhere: `numa.Locality`), and which value
   each `matchAttribute` constraint takes;
2. before a branch is entered it is counted: a value is kept only if every request under the constraint has at least
   its count of devices with that value, and a relaxed flow (no constraints, no NUMA) must fit all requests at once;
   a branch that fails these counts is proved impossible without any search below it;
3. at a leaf every choice is fixed and what remains is a b-matching (`matching.assign`), exact and polynomial.

A budget bounds the number of leaves. Running out is reported as "search budget exhausted", never as "impossible":
the two answers mean different things to a user (retry with a larger budget vs. change the claim).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from knuma.devices.alignment import NumaPlan
from knuma.devices.constraints import constraint_values
from knuma.devices.counters import Counters
from knuma.devices.demand import Alternative, ClaimDemand
from knuma.devices.filtering import Eligible
from knuma.devices.matching import assign
from knuma.devices.numa import Locality, Placement, locality_of
from knuma.devices.pools import Candidate, DeviceID
from knuma.errors import KnumaError

__all__ = ["STAGE_ORDER", "Found", "NotFound", "SearchSpace", "search"]

STAGE_ORDER = (
    "class",
    "selector",
    "in use",
    "counters",
    "taint",
    "device capacity",
    "capacity",
    "constraint",
    "NUMA alignment",
)
"""How far a failed branch got, for the nearest miss; `capacity` is requests competing for the same devices."""

Slot = tuple[int, int]
"""(claim index, request index)."""


@dataclass(frozen=True)
class Found:
    choice: Mapping[Slot, int]
    devices: Mapping[Slot, tuple[Candidate, ...]]
    mask: int | None
    locality: Locality
    leaves: int


@dataclass(frozen=True)
class NotFound:
    reason: str
    stage: str
    claim: str = ""
    request: str = ""
    exhausted: bool = False
    leaves: int = 0


@dataclass
class SearchSpace:
    claims: Sequence[ClaimDemand]
    eligible: Mapping[tuple[int, int, int], Eligible]
    placements: Mapping[tuple[str, str, str], Placement]
    plan: NumaPlan
    budget: int = 20_000
    counters: Counters | None = None
    """Shared counters of partitionable devices (None: no pool shares any)."""
    consumed: Mapping[DeviceID, Mapping[str, int]] = field(default_factory=dict)
    """What allocated claims take of devices that allow multiple allocations (`Inventory.consumed`)."""
    relaxed: bool = False
    """Counters and the capacity of shared devices ignored (`_relaxed`: whether they alone made a choice fail)."""
    shares: bool = field(init=False)
    """Some request may take a share of a device that allows multiple allocations."""
    distinct: bool = field(init=False)
    """Some claim has a distinctAttribute constraint."""
    leaves: int = 0
    miss: NotFound | None = field(default=None)
    _values: dict[tuple[tuple[str, str, str], str], frozenset[object]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.shares = any(e.consumption for e in self.eligible.values())
        self.distinct = any(c.distinct_attribute for claim in self.claims for c in claim.constraints)

    def values(self, candidate: Candidate, name: str) -> frozenset[object]:
        """`constraint_values`, memoised for this search."""
        key = (candidate.id, name)
        found = self._values.get(key)
        if found is None:
            found = self._values[key] = constraint_values(candidate, name)
        return found

    def note(self, miss: NotFound) -> None:
        """Keep the nearest miss: the failure that got furthest through the stages."""
        if self.miss is None or STAGE_ORDER.index(miss.stage) > STAGE_ORDER.index(self.miss.stage):
            self.miss = miss


class _Exhausted(KnumaError):
    pass


def _slots(space: SearchSpace) -> list[Slot]:
    return [(i, j) for i, claim in enumerate(space.claims) for j in range(len(claim.requests))]


def _alternative(space: SearchSpace, slot: Slot, k: int) -> Alternative:
    return space.claims[slot[0]].requests[slot[1]].alternatives[k]


BLOCKED = {
    "in use": "in use",
    "counters": "out of shared counters",
    "taint": "tainted",
    "device capacity": "short of the requested capacity",
}
"""How an `All` request's blocked device is described, by the stage that dropped it."""


def _count_check(space: SearchSpace, choice: Mapping[Slot, int]) -> bool:
    """Every chosen alternative has enough usable devices on its own (stage counts)."""
    ok = True
    for slot, k in choice.items():
        eligible = space.eligible[(*slot, k)]
        alternative = eligible.alternative
        claim = space.claims[slot[0]].key
        if alternative.all_devices:
            if not eligible.forced:
                space.note(
                    NotFound(
                        f"claim {claim}, request {alternative.name}: asks for all devices, but none match",
                        "selector",
                        claim,
                        alternative.name,
                    )
                )
                ok = False
            usable = {c.id for c in eligible.devices}
            blocked = [c for c in eligible.forced if c.id not in usable]
            if blocked:
                stage = eligible.dropped.get(blocked[0].id, "taint")
                space.note(
                    NotFound(
                        f"claim {claim}, request {alternative.name}: asks for all devices, but device "
                        f"{blocked[0]} is {BLOCKED[stage]}",
                        stage,
                        claim,
                        alternative.name,
                    )
                )
                ok = False
            continue
        have = len(eligible.devices)
        if have < alternative.request.count:
            stage = next((name for name, count in eligible.counts if count < alternative.request.count), "taint")
            why = {
                "counters": " (the shared counters of their partitionable devices are used up)",
                "device capacity": " (the request takes more of their capacity than is left, or capacity they do "
                "not offer)",
            }.get(stage, "")
            space.note(
                NotFound(
                    f"claim {claim}, request {alternative.name}: needs {alternative.request.count} "
                    f"device(s), {dict(eligible.counts)[stage]} left after the {stage} stage{why}",
                    stage,
                    claim,
                    alternative.name,
                )
            )
            ok = False
    return ok


def _demand_key(space: SearchSpace, slot: Slot, k: int) -> Hashable:
    return (*slot, k)


def _device_key(alternative: Alternative, slot: Slot, candidate: Candidate) -> Hashable:
    """The flow's device node: a device is taken once, but admin access takes it once per claim and a device that
    allows multiple allocations once per request (upstream moves on to the next device within a request, so one
    request never gets the same device twice); `_fits` then checks what the shares consume together."""
    if alternative.request.admin_access:
        return ("admin", slot[0], candidate.id)
    if candidate.device.allow_multiple_allocations:
        return ("shared", slot, candidate.id)
    return candidate.id


def _flow(
    space: SearchSpace, choice: Mapping[Slot, int], pools: Mapping[Slot, Sequence[Candidate]]
) -> dict[Slot, tuple[Candidate, ...]] | None:
    """Distinct devices for every chosen alternative from `pools` (already filtered), or None."""
    demands = []
    eligible: dict[Hashable, list[Hashable]] = {}
    by_key: dict[Hashable, Candidate] = {}
    for slot, k in choice.items():
        alternative = _alternative(space, slot, k)
        count = len(space.eligible[(*slot, k)].forced) if alternative.all_devices else alternative.request.count
        key = _demand_key(space, slot, k)
        demands.append((key, count))
        keys = []
        for candidate in pools[slot]:
            device_key = _device_key(alternative, slot, candidate)
            by_key[device_key] = candidate
            keys.append(device_key)
        eligible[key] = keys
    for _ in range(4):  # admin-access devices may not repeat a device of the same claim: exclude and retry
        assigned = assign(demands, eligible)
        if assigned is None:
            return None
        result = {slot: tuple(by_key[d] for d in assigned[_demand_key(space, slot, k)]) for slot, k in choice.items()}
        clash = _admin_clash(space, choice, result)
        if clash is None and not _fits(space, choice, result):
            return _packed(space, choice, demands, eligible, by_key)
        if clash is None:
            return result
        key, device_key = clash
        eligible[key] = [d for d in eligible[key] if d != device_key]
    return None


def _packing(space: SearchSpace) -> bool:
    """Whether devices that exist may still not be given together: shared counters, shares of one device that
    allows multiple allocations, distinctAttribute constraints. Without them a flow's answer is an allocation."""
    return (space.counters is not None and not space.relaxed) or space.shares or space.distinct


def _fits(space: SearchSpace, choice: Mapping[Slot, int], picked: Mapping[Slot, Sequence[Candidate]]) -> bool:
    """Whether the devices `picked` so far (per slot) can be given together: within the shared counters (a device
    drawn once however many shares it gives), within what is left of each shared device's capacities (upstream's
    `CmpRequestOverCapacity` with the shares this allocation already took, its `allocatingCapacity`), and with
    distinct values where a claim's distinctAttribute constraint asks for them (`distinctAttributeConstraint.add`:
    a device without the attribute is refused)."""
    if not space.relaxed:
        drawing: set[DeviceID] = set()
        taking: dict[DeviceID, dict[str, int]] = {}
        for slot, devices in picked.items():
            k = choice[slot]
            if _alternative(space, slot, k).request.admin_access:
                continue
            shares = space.eligible[(*slot, k)].consumption
            for c in devices:
                drawing.add(c.id)
                share = shares.get(c.id)
                if share is None:
                    continue
                amounts = taking.setdefault(c.id, dict(space.consumed.get(c.id, {})))
                for name, amount in share:
                    amounts[name] = amounts.get(name, 0) + amount
                    if amounts[name] > c.device.capacity[name].nanos:
                        return False
        if space.counters is not None and not space.counters.fits(drawing):
            return False
    for i, claim in enumerate(space.claims if space.distinct else ()):
        for constraint in claim.constraints:
            name = constraint.distinct_attribute
            if not name:
                continue
            seen: list[frozenset[object]] = []
            for slot, devices in picked.items():
                if slot[0] != i or not _applies(constraint.requests, _alternative(space, slot, choice[slot])):
                    continue
                for c in devices:
                    values = space.values(c, name)
                    if not values or values in seen:
                        return False
                    seen.append(values)
    return True


def _relaxed(space: SearchSpace, check: Callable[[], bool]) -> bool:
    """`check` with the shared counters and the capacity of shared devices ignored (False when there are none):
    whether they alone made it fail."""
    if space.counters is None and not space.shares:
        return False
    space.relaxed = True
    try:
        return check()
    finally:
        space.relaxed = False


def _packed(
    space: SearchSpace,
    choice: Mapping[Slot, int],
    demands: Sequence[tuple[Hashable, int]],
    eligible: Mapping[Hashable, Sequence[Hashable]],
    by_key: Mapping[Hashable, Candidate],
) -> dict[Slot, tuple[Candidate, ...]] | None:
    """Distinct devices for every demand that can be given together (`_fits`), when the flow's first answer cannot.
    Counters, shared capacity and distinct values make this a packing problem, so it is a depth-first search over
    each demand's devices in preference order (admin-access demands last, drawing nothing and avoiding their claim's
    other devices), within the search budget: running out is reported as exhausted, not as impossible.

    Devices that draw the same amounts from the same counters and are eligible for the same demands are
    interchangeable (the seven 1g slices of one GPU): any solution stays one after swapping two of them, so the
    search tries how many of each such group a demand takes (`_group_picks`), not which. Seven 3g and five 1g
    slices on four MIG GPUs is then 224 tries proved impossible, where every combination of 1g slices ran out of
    budget. A shared device, or one a distinctAttribute constraint reads, is a group of its own."""
    counters = space.counters
    draws = counters.draws if counters is not None else {}
    slot_of = {_demand_key(space, slot, k): slot for slot, k in choice.items()}
    admin = {key for key in slot_of if _alternative(space, slot_of[key], choice[slot_of[key]]).request.admin_access}
    order = sorted(demands, key=lambda d: d[0] in admin)
    picked: dict[Hashable, tuple[Hashable, ...]] = {}
    wanted_by: dict[Hashable, set[Hashable]] = {}
    for key, devices in eligible.items():
        for d in devices:
            wanted_by.setdefault(d, set()).add(key)
    kind = {
        d: d
        if space.distinct or by_key[d].device.allow_multiple_allocations
        else (draws.get(by_key[d].id, ()), frozenset(keys))
        for d, keys in wanted_by.items()
    }

    def plain_of(claim: int) -> set[DeviceID]:
        return {by_key[d].id for key, ds in picked.items() if key not in admin and slot_of[key][0] == claim for d in ds}

    def so_far(extra: tuple[Hashable, tuple[Hashable, ...]] | None = None) -> dict[Slot, list[Candidate]]:
        out: dict[Slot, list[Candidate]] = {}
        for key, ds in [*picked.items(), *([extra] if extra else [])]:
            out.setdefault(slot_of[key], []).extend(by_key[d] for d in ds)
        return out

    def place(index: int) -> bool:
        if index == len(order):
            return True
        key, count = order[index]
        taken = {d for ds in picked.values() for d in ds}
        avoid = plain_of(slot_of[key][0]) if key in admin else set()
        options = [d for d in eligible[key] if d not in taken and by_key[d].id not in avoid]
        for combo in _group_picks(options, count, kind):
            _spend(space)
            if key not in admin and not _fits(space, choice, so_far((key, combo))):
                continue
            picked[key] = combo
            if place(index + 1):
                return True
            del picked[key]
        return False

    if not place(0):
        return None
    return {slot: tuple(by_key[d] for d in picked[_demand_key(space, slot, k)]) for slot, k in choice.items()}


def _group_picks(
    options: Sequence[Hashable], count: int, kind: Mapping[Hashable, Hashable]
) -> Iterator[tuple[Hashable, ...]]:
    """`count` of `options`, one pick per way of splitting `count` over groups of interchangeable options (equal
    `kind`): a group gives its first members. Groups in the order of their first member, the most from the first
    groups first, as `itertools.combinations` reaches them."""
    groups: dict[Hashable, list[Hashable]] = {}
    for d in options:
        groups.setdefault(kind[d], []).append(d)
    members = list(groups.values())
    room = list(itertools.accumulate(len(g) for g in reversed(members)))[::-1]  # options in this group and after

    def split(index: int, left: int) -> Iterator[tuple[Hashable, ...]]:
        if left == 0:
            yield ()
            return
        if index == len(members) or room[index] < left:
            return
        later = room[index + 1] if index + 1 < len(members) else 0
        for n in range(min(left, len(members[index])), max(left - later, 0) - 1, -1):
            for rest in split(index + 1, left - n):
                yield (*members[index][:n], *rest)

    return split(0, count)


def _feasible(space: SearchSpace, choice: Mapping[Slot, int], pools: Mapping[Slot, Sequence[Candidate]]) -> bool:
    """Whether `_flow` finds distinct devices, without running it when the answer is plain: requests whose pools share
    no device (a GPU request and a NIC request) each need only enough devices of their own. Admin access may repeat
    devices, so such a choice always goes through the flow."""
    if _packing(space):  # devices that exist may still not be given together
        return _flow(space, choice, pools) is not None
    seen: set[DeviceID] = set()
    for slot, k in choice.items():
        if _alternative(space, slot, k).request.admin_access or not _enough(space, slot, k, pools[slot]):
            return _flow(space, choice, pools) is not None
        ids = {c.id for c in pools[slot]}
        if not seen.isdisjoint(ids):
            return _flow(space, choice, pools) is not None
        seen |= ids
    return True


def _admin_clash(
    space: SearchSpace, choice: Mapping[Slot, int], result: Mapping[Slot, tuple[Candidate, ...]]
) -> tuple[Hashable, Hashable] | None:
    plain: dict[int, set[tuple[str, str, str]]] = {}
    for slot, k in choice.items():
        if not _alternative(space, slot, k).request.admin_access:
            plain.setdefault(slot[0], set()).update(c.id for c in result[slot])
    for slot, k in choice.items():
        if _alternative(space, slot, k).request.admin_access:
            for c in result[slot]:
                if c.id in plain.get(slot[0], set()):
                    return _demand_key(space, slot, k), ("admin", slot[0], c.id)
    return None


def _applies(constraint_requests: Sequence[str], alternative: Alternative) -> bool:
    return (
        not constraint_requests or alternative.parent in constraint_requests or alternative.name in constraint_requests
    )


def _value_choices(
    space: SearchSpace, choice: Mapping[Slot, int], pools: Mapping[Slot, Sequence[Candidate]]
) -> Iterator[dict[Slot, list[Candidate]]]:
    """Each viable assignment of values to the claims' matchAttribute constraints, as filtered device pools."""
    per_constraint: list[tuple[int, list[Slot], str, list[object]]] = []
    for i, claim in enumerate(space.claims):
        for constraint in claim.constraints:
            if not constraint.match_attribute:
                continue  # distinctAttribute: checked on the devices picked (`_fits`)
            affected = [
                s for s in choice if s[0] == i and _applies(constraint.requests, _alternative(space, s, choice[s]))
            ]
            if not affected:
                continue
            name = constraint.match_attribute
            values: dict[object, None] = {}
            for slot in affected:
                for c in pools[slot]:
                    values.update(dict.fromkeys(sorted(space.values(c, name), key=repr)))
            viable = []
            needed = sum(_needed(space, slot, choice[slot]) for slot in affected)
            for value in values:
                having = {slot: [c for c in pools[slot] if value in space.values(c, name)] for slot in affected}
                if _units(having) < needed:
                    continue
                if all(
                    _enough(space, slot, choice[slot], [c for c in pools[slot] if value in space.values(c, name)])
                    for slot in affected
                ):
                    viable.append(value)
            if not viable:
                first = _alternative(space, affected[0], choice[affected[0]])
                space.note(
                    NotFound(
                        f"claim {claim.key}: constraint matchAttribute {name}: no single value is shared by enough "
                        f"devices for requests {', '.join(_alternative(space, s, choice[s]).name for s in affected)}",
                        "constraint",
                        claim.key,
                        first.name,
                    )
                )
                return
            per_constraint.append((i, affected, name, viable))
    # Devices whose value no constraint can use are out: sound, and often enough to prove infeasibility.
    base: dict[Slot, list[Candidate]] = {slot: list(p) for slot, p in pools.items()}
    for _, affected, name, viable in per_constraint:
        keep = set(viable)
        for slot in affected:
            base[slot] = [c for c in base[slot] if space.values(c, name) & keep]
    if not all(_enough(space, slot, choice[slot], base[slot]) for slot in base):
        return
    if len(per_constraint) > 1:  # with one constraint the leaf's own flow is this check
        _spend(space)
        if _flow(space, choice, base) is None:
            return
    yield from _assign(space, choice, per_constraint, 0, base)


def _spend(space: SearchSpace) -> None:
    space.leaves += 1
    if space.leaves > space.budget:
        raise _Exhausted


def _assign(
    space: SearchSpace,
    choice: Mapping[Slot, int],
    per_constraint: Sequence[tuple[int, list[Slot], str, list[object]]],
    index: int,
    current: dict[Slot, list[Candidate]],
) -> Iterator[dict[Slot, list[Candidate]]]:
    """Constraint values one constraint at a time, with forward checking: after each choice the remaining requests
    must still fit together (a flow with the later constraints relaxed to their viable values)."""
    if index == len(per_constraint):
        yield current
        return
    _, affected, name, viable = per_constraint[index]
    for value in viable:
        filtered = dict(current)
        for slot in affected:
            filtered[slot] = [c for c in current[slot] if value in space.values(c, name)]
        if not all(_enough(space, slot, choice[slot], filtered[slot]) for slot in affected):
            continue
        if index + 1 < len(per_constraint):
            _spend(space)
            if _flow(space, choice, filtered) is None:
                continue
        yield from _assign(space, choice, per_constraint, index + 1, filtered)


def _needed(space: SearchSpace, slot: Slot, k: int) -> int:
    """Distinct devices the alternative takes (admin access shares devices with other claims: not counted)."""
    eligible = space.eligible[(*slot, k)]
    if eligible.alternative.request.admin_access:
        return 0
    return len(eligible.forced) if eligible.alternative.all_devices else eligible.alternative.request.count


def _units(pools: Mapping[Slot, Sequence[Candidate]]) -> int:
    """How many devices the pools can give at most, counting a device that allows multiple allocations once per
    request that may take it."""
    whole = {c.id for p in pools.values() for c in p if not c.device.allow_multiple_allocations}
    return len(whole) + sum(1 for p in pools.values() for c in p if c.device.allow_multiple_allocations)


def _enough(space: SearchSpace, slot: Slot, k: int, pool: Sequence[Candidate]) -> bool:
    eligible = space.eligible[(*slot, k)]
    if eligible.alternative.all_devices:
        have = {c.id for c in pool}
        return all(c.id in have for c in eligible.forced)
    return len(pool) >= eligible.alternative.request.count


def _group_key(placement: Placement, level: Locality, sockets: Mapping[int, int]) -> object | None:
    if level is Locality.PCIE_ROOT:
        return placement.pcie_root
    if placement.numa is None:
        return None
    return placement.numa if level is Locality.NUMA_NODE else sockets.get(placement.numa, placement.numa)


def _solve(
    space: SearchSpace, choice: Mapping[Slot, int], base: Mapping[Slot, Sequence[Candidate]], level: Locality
) -> dict[Slot, tuple[Candidate, ...]] | None:
    groups: list[object | None] = [None]
    if level is not Locality.NODE:
        keys = {_group_key(space.placements[c.id], level, space.plan.sockets) for p in base.values() for c in p}
        keys.discard(None)
        groups = sorted(keys, key=repr)
    for group in groups:
        pools = base
        if group is not None:
            pools = {
                slot: [
                    c
                    for c in p
                    if _group_key(space.placements[c.id], level, space.plan.sockets) in (group, None)
                    and (
                        level is not Locality.PCIE_ROOT
                        or space.placements[c.id].pcie_root is not None
                        or space.placements[c.id].numa is None
                    )
                ]
                for slot, p in base.items()
            }
            if not all(_enough(space, slot, choice[slot], pools[slot]) for slot in pools):
                continue
            if _units(pools) < sum(_needed(space, slot, choice[slot]) for slot in pools):
                continue  # the group cannot hold the pod's devices at all: no flow needed
            _spend(space)
            if not _feasible(space, choice, pools):
                continue
        for filtered in _value_choices(space, choice, pools):
            space.leaves += 1
            if space.leaves > space.budget:
                raise _Exhausted
            result = _flow(space, choice, filtered)
            if result is not None:
                return result
    return None


def _in_mask(candidate: Candidate, space: SearchSpace, mask: int | None) -> bool:
    numa = space.placements[candidate.id].numa
    return mask is None or numa is None or bool(mask >> numa & 1)


def search(space: SearchSpace) -> Found | NotFound:
    slots = _slots(space)
    ranges = [range(len(space.claims[i].requests[j].alternatives)) for i, j in slots]
    plan = space.plan
    masks: list[int | None]
    if plan.masks is None:
        masks = [None]
    elif plan.required:
        masks = list(plan.masks)
    else:
        masks = [*plan.masks, None]
    try:
        for combo in itertools.product(*ranges):
            choice = dict(zip(slots, combo, strict=True))
            if not _count_check(space, choice):
                continue
            everything = {slot: list(space.eligible[(*slot, k)].devices) for slot, k in choice.items()}
            if not _feasible(space, choice, everything):
                names = ", ".join(_alternative(space, s, k).name for s, k in choice.items())
                if _relaxed(space, functools.partial(_feasible, space, choice, everything)):
                    first = next(iter(choice))
                    claim = space.claims[first[0]].key
                    shared = any(space.eligible[(*s, k)].consumption for s, k in choice.items())
                    what = (
                        "need more than is left of the capacity of their shared devices or of the shared counters of "
                        "their partitionable devices"
                        if shared and space.counters is not None
                        else "need more than is left of the capacity of their shared devices"
                        if shared
                        else "draw more than is left of the shared counters of their partitionable devices"
                    )
                    reason = f"claim {claim}: the devices of requests {names} exist, but together they {what}"
                    space.note(NotFound(reason, "capacity", claim, _alternative(space, first, choice[first]).name))
                else:
                    reason = f"requests {names} together need more distinct devices than the node offers"
                    space.note(NotFound(reason, "capacity"))
                continue
            if not masks:
                first = next(iter(choice))
                claim = space.claims[first[0]].key
                space.note(
                    NotFound(
                        f"claim {claim}: no NUMA node can hold the pod's exclusive resources ({plan.detail}) under "
                        f"the {plan.policy.value} Topology Manager policy",
                        "NUMA alignment",
                        claim,
                        _alternative(space, first, choice[first]).name,
                    )
                )
            for mask in masks:
                base = {slot: [c for c in p if _in_mask(c, space, mask)] for slot, p in everything.items()}
                best = _solve(space, choice, base, Locality.PCIE_ROOT)
                if best is not None:
                    return _found(space, choice, best, mask)
                fallback = _solve(space, choice, base, Locality.NODE)
                if fallback is None and mask is None:
                    space.note(_joint_miss(space, choice))
                    continue
                if fallback is None:
                    continue
                for level in (Locality.NUMA_NODE, Locality.SOCKET):
                    better = _solve(space, choice, base, level)
                    if better is not None:
                        return _found(space, choice, better, mask)
                return _found(space, choice, fallback, mask)
            if masks and None not in masks:
                if _solve(space, choice, everything, Locality.NODE) is None:
                    if space.miss is None or space.miss.stage != "constraint":
                        space.miss = _joint_miss(space, choice)  # not a NUMA problem: no allocation exists at all
                else:
                    first = next(iter(choice))
                    claim = space.claims[first[0]].key
                    space.note(
                        NotFound(
                            f"claim {claim}: the devices cannot be aligned with the pod's CPUs and memory: under the "
                            f"{plan.policy.value} Topology Manager policy the kubelet can give them "
                            f"({plan.detail}) only {plan.describe_all()}, and no allocation of the claims fits there",
                            "NUMA alignment",
                            claim,
                            _alternative(space, first, choice[first]).name,
                        )
                    )
    except _Exhausted:
        return NotFound(
            f"search budget exhausted after {space.budget} attempts without finding an allocation "
            "(not proven impossible)",
            "constraint",
            exhausted=True,
            leaves=space.leaves,
        )
    miss = space.miss or NotFound("cannot allocate all claims", "class")
    return NotFound(miss.reason, miss.stage, miss.claim, miss.request, False, space.leaves)


def _joint_miss(space: SearchSpace, choice: Mapping[Slot, int]) -> NotFound:
    names = ", ".join(_alternative(space, s, k).name for s, k in choice.items())
    first = next(iter(choice))
    claim = space.claims[first[0]].key
    return NotFound(
        f"claim {claim}: no choice of devices satisfies every matchAttribute constraint for requests {names} at once "
        "(each value has enough devices per request, but not for all of them together)",
        "constraint",
        claim,
        _alternative(space, first, choice[first]).name,
    )


def _found(
    space: SearchSpace, choice: Mapping[Slot, int], devices: Mapping[Slot, tuple[Candidate, ...]], mask: int | None
) -> Found:
    located = [
        space.placements[c.id]
        for slot, found in devices.items()
        for c in found
        if not _alternative(space, slot, choice[slot]).request.admin_access
    ]
    return Found(choice, devices, mask, locality_of(located, space.plan.sockets), space.leaves)
