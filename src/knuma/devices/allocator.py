"""Allocate a pod's ResourceClaims on one node: the entry point of `knuma.devices`.

The contract follows upstream's `Allocator.Allocate(ctx, node, claims)` (`dynamic-resource-allocation/structured/
allocator.go`): plain data in (the node, the claims to allocate, the slices, classes and devices already in use),
one `AllocationResult` per claim out, or "does not fit" with a reason; problems that make the claims unallocatable
anywhere (an unknown class, a selector that does not compile, more than 32 devices in a claim) raise
`DeviceAllocationError` / `CELError`. Beyond upstream: the devices are chosen together with the NUMA nodes the kubelet
will give the pod's CPUs and memory (`alignment`), scored on the locality ladder (`numa.Locality`), the search is
bounded and says whether it proved the claims impossible or ran out of budget (`search`), and a failure names the
claim, the request and the stage that stopped it, with the number of devices that survived each stage.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from knuma.api.dra.deviceclass import DeviceClass
from knuma.api.dra.resourceclaim import AllocationResult, ConfigResult, DeviceResult, ResourceClaim
from knuma.api.dra.resourceslice import ResourceSlice
from knuma.api.pod import Pod
from knuma.devices.alignment import NumaPlan, plan_alignment
from knuma.devices.capacity import CapacityRequestError, Consumption
from knuma.devices.cel import CELError
from knuma.devices.constraints import constraint_values
from knuma.devices.counters import Counters
from knuma.devices.demand import ClaimDemand, DeviceAllocationError, resolve
from knuma.devices.filtering import Eligible, SelectorCache, filter_candidates
from knuma.devices.numa import Locality, placement_of
from knuma.devices.pools import Candidate, DeviceID, gather_pools
from knuma.devices.search import Found, NotFound, SearchSpace, search
from knuma.quantity import Quantity
from knuma.topology.hints import bits
from knuma.topology.node import NodeTopology

__all__ = [
    "ClaimAllocation",
    "DeviceAllocationError",
    "Inventory",
    "NodeView",
    "Outcome",
    "add_consumption",
    "allocate",
    "allocated_devices",
    "allocation_devices",
    "allocation_shares",
    "consumed_capacity",
    "with_new_share_ids",
]

DEFAULT_BUDGET = 20_000


@dataclass(frozen=True)
class NodeView:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    topology: NodeTopology | None = None
    """NUMA zones and the Topology Manager policy (from the node's NRT); None: no NUMA alignment."""


@dataclass(frozen=True)
class Inventory:
    """Cluster-wide device state, shared by every node and pod of one scheduling pass."""

    slices: Sequence[ResourceSlice]
    classes: Mapping[str, DeviceClass]
    in_use: frozenset[DeviceID] = frozenset()
    """Devices allocated whole (`allocated_devices`)."""
    cache: SelectorCache = field(default_factory=SelectorCache)
    consumed: Mapping[DeviceID, Mapping[str, int]] = field(default_factory=dict)
    """Devices that allow multiple allocations -> what allocated claims take of each capacity, in nano units
    (`consumed_capacity`)."""


def allocation_devices(allocation: AllocationResult) -> frozenset[DeviceID]:
    """Devices one allocation holds whole. Admin-access results do not hold a device (upstream's allocated state
    skips them), nor do shares of a device that allows multiple allocations (a result with a `shareID`: upstream's
    `AllocatedSharedDeviceIDs`, whose consumed capacity counts instead, `allocation_shares`)."""
    return frozenset(r.device_id for r in allocation.results if not r.admin_access and not r.share_id)


def allocation_shares(allocation: AllocationResult) -> tuple[tuple[DeviceID, Consumption], ...]:
    """The shares of devices that allow multiple allocations one allocation holds, with what each consumes
    (upstream's allocated state adds a result with a `shareID` to `AggregatedCapacity`)."""
    return tuple(
        (r.device_id, tuple(sorted((name, q.nanos) for name, q in r.consumed_capacity.items())))
        for r in allocation.results
        if r.share_id and not r.admin_access
    )


def add_consumption(total: dict[DeviceID, dict[str, int]], device: DeviceID, taken: Consumption, sign: int = 1) -> None:
    """Add (or, with `sign` -1, take back) one share's consumption; a device left with nothing is dropped."""
    amounts = total.setdefault(device, {})
    for name, amount in taken:
        amounts[name] = amounts.get(name, 0) + sign * amount
        if not amounts[name]:
            del amounts[name]
    if not amounts:
        del total[device]


def with_new_share_ids(allocation: AllocationResult) -> AllocationResult:
    """`allocation` with a new share ID for each share of a device: an outcome the memo (`knuma.devices.memo`) gives
    to another pod carries the share IDs of the pod it was computed for, and two shares of one device must not have
    the same ID (the API server's `SharedDeviceID`, the kubelet's prepared devices)."""
    if not any(r.share_id for r in allocation.results):
        return allocation
    results = tuple(replace(r, share_id=str(uuid.uuid4())) if r.share_id else r for r in allocation.results)
    return replace(allocation, results=results)


def consumed_capacity(claims: Iterable[ResourceClaim]) -> dict[DeviceID, dict[str, int]]:
    """What allocated claims take of each device that allows multiple allocations."""
    total: dict[DeviceID, dict[str, int]] = {}
    for claim in claims:
        if claim.allocation is not None:
            for device, taken in allocation_shares(claim.allocation):
                add_consumption(total, device, taken)
    return total


def allocated_devices(claims: Iterable[ResourceClaim]) -> frozenset[DeviceID]:
    """Devices held by allocated claims. Devices no slice lists any more still count: in use, nothing more."""
    held: set[DeviceID] = set()
    for claim in claims:
        if claim.allocation is not None:
            held.update(allocation_devices(claim.allocation))
    return frozenset(held)


@dataclass(frozen=True)
class ClaimAllocation:
    claim: str
    allocation: AllocationResult

    def to_dict(self) -> dict[str, Any]:
        return {"claim": self.claim, "allocation": self.allocation.to_dict()}


@dataclass(frozen=True)
class Outcome:
    node: str
    allocatable: bool
    results: tuple[ClaimAllocation, ...] = ()
    reason: str = ""
    stage: str = ""
    claim: str = ""
    request: str = ""
    exhausted: bool = False
    locality: Locality | None = None
    affinity: tuple[int, ...] | None = None
    stages: Mapping[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    """`claim/request` -> devices surviving each stage (class, selector, in use, taint, constraint, NUMA alignment)."""
    leaves: int = 0

    @property
    def score(self) -> int:
        return int(self.locality) if self.allocatable and self.locality is not None else 0


def allocate(
    node: NodeView,
    claims: Sequence[ResourceClaim],
    inventory: Inventory,
    *,
    pod: Pod | None = None,
    admin_access_allowed: Callable[[str], bool] = lambda namespace: True,
    budget: int = DEFAULT_BUDGET,
    explain: bool = False,
) -> Outcome:
    """Allocate `claims` (those without an allocation) on `node`. The per-stage device counts (`Outcome.stages`) are
    computed when the claims do not fit, or always with `explain` (what `knuma claims schedule -v` shows)."""
    pending = [c for c in claims if c.allocation is None]
    if not pending:
        return Outcome(node.name, True)
    demands = resolve(pending, inventory.classes, admin_access_allowed)
    pools = gather_pools(inventory.slices, node.name, node.labels)
    candidates = [c for p in pools if p.usable for c in p.candidates(node.name, node.labels)]
    for demand in demands:
        for request in demand.requests:
            for alternative in request.alternatives:
                bad = next((p for p in pools if not p.usable), None) if alternative.all_devices else None
                if bad is not None and len(request.alternatives) == 1:
                    state = "currently being updated" if bad.incomplete else "currently invalid"
                    return Outcome(
                        node.name,
                        False,
                        reason=f"claim {demand.key}, request {alternative.name}: asks "
                        f"for all devices, but resource pool {bad} is {state}",
                        stage="class",
                        claim=demand.key,
                        request=alternative.name,
                    )
    # the node's pools only; a shared device draws its counters once, while any share of it is allocated
    counters = Counters.of([s for p in pools for s in p.slices], inventory.in_use, inventory.consumed.keys())
    drawn_out: frozenset[DeviceID] = frozenset()
    if counters is not None:  # partitions whose draws no longer fit (their GPU given out whole, say)
        drawn_out = frozenset(c.id for c in candidates if not counters.fits((c.id,)))
    eligible: dict[tuple[int, int, int], Eligible] = {}
    try:
        for i, demand in enumerate(demands):
            for j, request in enumerate(demand.requests):
                for k, alternative in enumerate(request.alternatives):
                    eligible[(i, j, k)] = filter_candidates(
                        alternative, candidates, inventory.in_use, inventory.cache, drawn_out, inventory.consumed
                    )
    except CELError as err:
        return Outcome(node.name, False, reason=f"{err}", stage="selector")
    except CapacityRequestError as err:
        raise DeviceAllocationError(f"{err}") from err
    placements = {c.id: placement_of(c.device, c.driver) for c in candidates}
    plan = plan_alignment(node.topology, pod)
    space = SearchSpace(demands, eligible, placements, plan, budget, counters=counters, consumed=inventory.consumed)
    found = search(space)
    stages = _stage_counts(demands, eligible, plan, placements) if explain or isinstance(found, NotFound) else {}
    if isinstance(found, NotFound):
        invalid = [p for p in pools if p.invalid_reason]
        if invalid and not found.exhausted:
            detail = "; ".join(f"{p}: {p.invalid_reason}" for p in invalid)
            found = NotFound(
                f"invalid resource pools were encountered ({detail}); {found.reason}",
                found.stage,
                found.claim,
                found.request,
                False,
                found.leaves,
            )
        return _failed(node.name, found, stages)
    results = tuple(
        ClaimAllocation(demand.key, _allocation_result(i, demand, found, eligible, node.name))
        for i, demand in enumerate(demands)
    )
    affinity = None if found.mask is None else bits(found.mask)
    return Outcome(
        node.name, True, results, locality=found.locality, affinity=affinity, stages=stages, leaves=found.leaves
    )


def _failed(node: str, miss: NotFound, stages: Mapping[str, tuple[tuple[str, int], ...]]) -> Outcome:
    return Outcome(
        node,
        False,
        reason=miss.reason,
        stage=miss.stage,
        claim=miss.claim,
        request=miss.request,
        exhausted=miss.exhausted,
        stages=stages,
        leaves=miss.leaves,
    )


def _stage_counts(
    demands: Sequence[ClaimDemand],
    eligible: Mapping[tuple[int, int, int], Eligible],
    plan: NumaPlan,
    placements: Mapping[DeviceID, Any],
) -> dict[str, tuple[tuple[str, int], ...]]:
    """Per request (its first alternative): the filter stages, then the most devices one constraint value keeps,
    then the most of those one candidate NUMA mask keeps."""
    out: dict[str, tuple[tuple[str, int], ...]] = {}
    for i, demand in enumerate(demands):
        for j, request in enumerate(demand.requests):
            for k, alternative in enumerate(request.alternatives):
                e = eligible[(i, j, k)]
                devices = list(e.devices)
                for constraint in demand.constraints:
                    if constraint.requests and not {alternative.parent, alternative.name} & set(constraint.requests):
                        continue
                    groups: dict[object, list[Candidate]] = {}
                    for c in devices:
                        for value in constraint_values(c, constraint.match_attribute):
                            groups.setdefault(value, []).append(c)
                    devices = max(groups.values(), key=len, default=[])
                counts = [*e.counts, ("constraint", len(devices))]
                if plan.masks is not None:
                    best = max(
                        (
                            sum(
                                1 for c in devices if placements[c.id].numa is None or mask >> placements[c.id].numa & 1
                            )
                            for mask in plan.masks
                        ),
                        default=0,
                    )
                    counts.append(("NUMA alignment", best))
                out[f"{demand.key}/{alternative.name}"] = tuple(counts)
    return out


def _allocation_result(
    index: int, demand: ClaimDemand, found: Found, eligible: Mapping[tuple[int, int, int], Eligible], node: str
) -> AllocationResult:
    """One claim's `AllocationResult`; a share of a device that allows multiple allocations gets its consumed
    capacity and a new share ID (upstream's `allocateDevice`: `GenerateNewShareID`), a device with binding conditions
    passes them on (the scheduler waits for them before binding)."""
    results: list[DeviceResult] = []
    chosen = []
    for j, request in enumerate(demand.requests):
        k = found.choice[(index, j)]
        alternative = request.alternatives[k]
        shares = eligible[(index, j, k)].consumption
        chosen.append(alternative)
        for candidate in found.devices[(index, j)]:
            share = shares.get(candidate.id)
            results.append(
                DeviceResult(
                    alternative.name,
                    candidate.id[0],
                    candidate.id[1],
                    candidate.id[2],
                    alternative.request.admin_access,
                    alternative.request.tolerations,
                    consumed_capacity={name: Quantity(amount) for name, amount in share or ()},
                    share_id=str(uuid.uuid4()) if share is not None else "",
                    binding_conditions=candidate.device.binding_conditions,
                    binding_failure_conditions=candidate.device.binding_failure_conditions,
                )
            )
    configs: list[ConfigResult] = []
    seen_classes: dict[str, list[int]] = {}
    for alternative in chosen:
        cls = alternative.device_class
        if cls.name in seen_classes:
            for position in seen_classes[cls.name]:
                old = configs[position]
                configs[position] = ConfigResult(
                    old.source, _with_requests(old.config, (*old.config.requests, alternative.name))
                )
            continue
        seen_classes[cls.name] = []
        for config in cls.config:
            seen_classes[cls.name].append(len(configs))
            configs.append(ConfigResult("FromClass", _with_requests(config, (alternative.name,))))
    chosen_names = {a.name for a in chosen} | {a.parent for a in chosen}
    for config in demand.claim.spec.config:
        if not config.requests or set(config.requests) & chosen_names:
            configs.append(ConfigResult("FromClaim", config))
    total = len(demand.requests)
    configs = [
        ConfigResult(c.source, _with_requests(c.config, ())) if len(c.config.requests) == total else c for c in configs
    ]
    return AllocationResult(tuple(results), tuple(configs), _node_selector(found.devices, index, demand, node))


def _with_requests(config: Any, requests: tuple[str, ...]) -> Any:
    return type(config)(config.driver, config.parameters, requests)


def _pinned(node: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}


def _node_selector(
    devices: Mapping[tuple[int, int], tuple[Candidate, ...]], index: int, demand: ClaimDemand, node: str
) -> dict[str, Any] | None:
    """upstream `createNodeSelector`: pinned to the node when a device comes from a node-local slice (or device) or
    binds to the node it is allocated for (`bindsToNode`: a fabric device attached to that node), the slices'
    selectors merged into one term otherwise, none when every device is reachable from all nodes."""
    fields: list[dict[str, Any]] = []
    expressions: list[dict[str, Any]] = []
    for j in range(len(demand.requests)):
        for candidate in devices[(index, j)]:
            if candidate.device.binds_to_node:
                return _pinned(node)
            selection = candidate.slice.node
            if selection.per_device and candidate.device.node is not None:
                selection = candidate.device.node
            if selection.node_name:
                return _pinned(selection.node_name)
            raw = selection.node_selector_raw
            if raw:
                terms = raw.get("nodeSelectorTerms") or [{}]
                for requirement in terms[0].get("matchFields") or []:
                    if requirement not in fields:
                        fields.append(requirement)
                for requirement in terms[0].get("matchExpressions") or []:
                    if requirement not in expressions:
                        expressions.append(requirement)
    if not fields and not expressions:
        return None
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = expressions
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]}
