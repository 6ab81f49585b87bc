"""Which devices each alternative may take, stage by stage: class selectors, request selectors, in use by other
claims, shared counters used up (partitionable devices), taints, device capacity (consumable capacity: the device
publishes what the request asks for, within its policy and what other claims left of it). The counts per stage are
what `knuma claims schedule` reports for a node that does not fit.

The order of checks follows upstream's `allocateOne` / `isSelectable` / `allocateDevice` (selectors, then in use, then
taints, then capacity); an admin-access request may take devices in use by other claims, and a device that allows
multiple allocations is never in use, only short of capacity. A selector's verdict depends only on the
device's content, so it is cached per (expression, driver, device content): identical devices across a thousand
nodes cost one evaluation.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from knuma.api.taints import Taint
from knuma.devices.capacity import Consumption, consumption, fits_within
from knuma.devices.cel import Selector, device_environment
from knuma.devices.demand import Alternative
from knuma.devices.pools import Candidate, DeviceID
from knuma.quantity import Quantity

__all__ = ["STAGES", "Eligible", "SelectorCache", "filter_candidates"]

STAGES = ("class", "selector", "in use", "counters", "taint", "device capacity")
"""The filter stages, in order (`counters` only where partitionable devices' shared counters are used up, `device
capacity` only for a request naming capacities or devices that allow multiple allocations); the search adds
`constraint` and `NUMA alignment`."""
_BLOCKING = ("NoSchedule", "NoExecute")


@dataclass
class SelectorCache:
    """CEL verdicts keyed by device content; share one across nodes and pods."""

    verdicts: dict[tuple[str, int], bool] = field(default_factory=dict)
    """(expression, content id) -> verdict."""
    environments: dict[int, dict[str, object]] = field(default_factory=dict)
    """Content id -> the CEL `device` variable."""
    evaluations: int = 0
    contents: dict[int, tuple[object, int]] = field(default_factory=dict)
    """id(device) -> (device, content id): the content is keyed once per published device."""
    content_ids: dict[tuple[str, tuple[object, ...]], int] = field(default_factory=dict)
    """(driver, content key) -> a small int: verdict look-ups hash an int and a string, not the device's attributes
    (semantic versions among them) on every node of every pod."""

    def content(self, candidate: Candidate) -> int:
        known = self.contents.get(id(candidate.device))
        if known is not None and known[0] is candidate.device:
            return known[1]
        key = (candidate.driver, _content_key(candidate))
        content_id = self.content_ids.setdefault(key, len(self.content_ids))
        self.contents[id(candidate.device)] = (candidate.device, content_id)
        return content_id

    def matches(self, selector: Selector, candidate: Candidate, where: str) -> bool:
        content = self.content(candidate)
        key = (selector.expression, content)
        verdict = self.verdicts.get(key)
        if verdict is None:
            environment = self.environments.get(content)
            if environment is None:
                environment = device_environment(candidate.driver, candidate.device)
                self.environments[content] = environment
            self.evaluations += 1
            verdict = selector.matches(environment, f"{where} on device {candidate}")
            self.verdicts[key] = verdict
        return verdict


def _content_key(candidate: Candidate) -> tuple[object, ...]:
    device = candidate.device
    return (
        tuple(sorted((k, a.type, a.value) for k, a in device.attributes.items())),
        tuple(sorted((k, q.nanos) for k, q in device.capacity.items())),
        device.allow_multiple_allocations,
    )


@dataclass(frozen=True)
class Eligible:
    """The devices an alternative may take, and how many survived each stage."""

    alternative: Alternative
    devices: tuple[Candidate, ...]
    counts: tuple[tuple[str, int], ...]
    forced: tuple[Candidate, ...] = ()
    """For `All`: every device that passed the selectors; each must be usable."""
    dropped: Mapping[DeviceID, str] = field(default_factory=dict)
    """For `All`: the stage that dropped each forced device that is not usable (`in use`, `counters`, `taint`,
    `device capacity`)."""
    consumption: Mapping[DeviceID, Consumption] = field(default_factory=dict)
    """Devices that allow multiple allocations -> what this alternative would take of them."""


def _tolerated(taint: Taint, alternative: Alternative) -> bool:
    return taint.effect not in _BLOCKING or any(t.tolerates(taint) for t in alternative.request.tolerations)


def filter_candidates(
    alternative: Alternative,
    candidates: Sequence[Candidate],
    in_use: Collection[DeviceID],
    cache: SelectorCache,
    drawn_out: Collection[DeviceID] = (),
    consumed: Mapping[DeviceID, Mapping[str, int]] | None = None,
) -> Eligible:
    """Raise `CELError` when a selector fails at run time (upstream aborts the allocation), `CapacityRequestError`
    for a capacity requested twice. `drawn_out`: free partitionable devices whose shared counters are used up
    (`knuma.devices.counters`); when there are any, a `counters` stage follows `in use`. `consumed`: what allocated
    claims take of devices that allow multiple allocations."""
    cls = alternative.device_class
    by_class = [
        c
        for c in candidates
        if all(
            cache.matches(s, c, f"class {cls.name}: selector #{i}") for i, s in enumerate(alternative.class_selectors)
        )
    ]
    where = f"request {alternative.name}"
    selected = [
        c
        for c in by_class
        if all(cache.matches(s, c, f"{where}: selector #{i}") for i, s in enumerate(alternative.selectors))
    ]
    admin = alternative.request.admin_access
    free = selected if admin else [c for c in selected if c.id not in in_use]
    stages: list[tuple[str, int]] = [("class", len(by_class)), ("selector", len(selected)), ("in use", len(free))]
    if drawn_out and not admin:  # admin access draws nothing
        free = [c for c in free if c.id not in drawn_out]
        stages.append(("counters", len(free)))
    tolerated = [c for c in free if all(_tolerated(t, alternative) for t in c.device.taints)]
    stages.append(("taint", len(tolerated)))
    usable: list[Candidate] = tolerated
    shares: dict[DeviceID, Consumption] = {}
    requests = alternative.request.capacity
    if requests or any(c.device.allow_multiple_allocations for c in tolerated):
        usable, shares = _with_capacity(tolerated, requests, consumed or {})
        stages.append(("device capacity", len(usable)))
    forced = tuple(selected) if alternative.all_devices else ()
    dropped: dict[DeviceID, str] = {}
    if forced:
        kept = {c.id for c in usable}
        untainted = {c.id for c in tolerated}
        for c in forced:
            if c.id not in kept:
                dropped[c.id] = (
                    "in use"
                    if c.id in in_use and not admin
                    else "counters"
                    if c.id in drawn_out
                    else "device capacity"
                    if c.id in untainted
                    else "taint"
                )
    return Eligible(alternative, tuple(usable), tuple(stages), forced, dropped, shares)


def _with_capacity(
    candidates: Sequence[Candidate], requests: Mapping[str, Quantity], consumed: Mapping[DeviceID, Mapping[str, int]]
) -> tuple[list[Candidate], dict[DeviceID, Consumption]]:
    """The candidates that fit the request's capacities (`knuma.devices.capacity`), and what the alternative takes
    of each that allows multiple allocations (upstream's `allocateDevice`: `CmpRequestOverCapacity`, then
    `GetConsumedCapacityFromRequest` for a shared device only)."""
    usable: list[Candidate] = []
    shares: dict[DeviceID, Consumption] = {}
    for c in candidates:
        taken = consumption(requests, c.driver, c.device)
        if taken is None:
            continue
        shared = c.device.allow_multiple_allocations
        already = consumed.get(c.id, {}) if shared else {}
        if not fits_within(c.device, {name: already.get(name, 0) + amount for name, amount in taken}):
            continue
        usable.append(c)
        if shared:
            shares[c.id] = taken
    return usable, shares
