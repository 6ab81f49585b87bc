"""The `EvictionInProgress` condition of a DeviceTaintRule's status (KEP-5055, Kubernetes 1.35), as the device taint
eviction controller computes it in `maybeUpdateRuleStatus` (`pkg/controller/devicetainteviction`): pure functions
of the rule, the pods, claims and slices the controller's informers hold, and the clock; the controller
(`knuma.local.controllers.device_taint_eviction`) does the reads and the status write.

What the condition tells an administrator:

- `NoExecute`: True with `PodsPendingEviction` while pods wait to be evicted because of the rule, then False with
  `Completed` (the controller evicted some) or `NotStarted` (none to evict);
- `None`: a dry run, False with `NoEffect` and how many published and allocated devices the rule selects and how many
  pods it would evict if its effect were `NoExecute`: what taking a GPU out would do, before doing it;
- `NoSchedule`: False with `OtherEffect`, as eviction only happens for `NoExecute`;

each followed by how many pods the controller evicted because of the rule since it started. The condition is
rewritten only when it changes, and not more often than every `RULE_STATUS_PERIOD` unless the rule's generation
changed (`lastTransitionTime` is bumped on every change and measures that period).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from knuma.api.dra.deviceclass import DeviceClass
from knuma.api.dra.devicetaintrule import DeviceTaintRule
from knuma.api.dra.resourceslice import ResourceSlice
from knuma.api.taints import NO_EXECUTE, Taint
from knuma.api.types import JsonObj, meta_of
from knuma.devices.pools import DeviceID
from knuma.devices.taintrules import with_taint_rules
from knuma.kube.events import parse_timestamp

__all__ = [
    "CONDITION_TYPE",
    "RULE_STATUS_PERIOD",
    "RuleCounts",
    "RuleQueue",
    "allocated_devices",
    "eviction_condition",
    "pending_pods",
    "published_devices",
    "rule_selects",
    "seconds_until_update",
    "with_condition",
]

CONDITION_TYPE = "EvictionInProgress"
"""`resourcealpha.DeviceTaintConditionEvictionInProgress`."""
RULE_STATUS_PERIOD = 10.0
"""Upstream's `ruleStatusPeriod`: "the shortest time between DeviceTaintRule status updates while eviction is in
progress"."""

NONE_EFFECT = "None"


@dataclass(frozen=True, slots=True)
class RuleCounts:
    """What `countPendingPods` and `countTaintedDevices` find for one rule (the devices only for the `None` effect)."""

    pending_pods: int = 0
    pending_namespaces: int = 0
    published_devices: int = 0
    allocated_devices: int = 0


class RuleQueue:
    """When each rule's status is looked at: upstream's delaying work queue of rule items, by UID. An item added for
    now and one added for later are both kept (`AddAfter` adds the item again when its time comes, whatever happened
    to it meanwhile): the look after an eviction must not be lost to one done at once on stale informer data."""

    def __init__(self) -> None:
        self._times: dict[str, set[float]] = {}

    def add(self, uid: str, when: float) -> None:
        self._times.setdefault(uid, set()).add(when)

    def take(self, now: float) -> list[str]:
        """The rules due by `now`, earliest first, each once; their times up to `now` are consumed."""
        due: list[tuple[float, str]] = []
        for uid, times in list(self._times.items()):
            passed = {t for t in times if t <= now}
            if passed:
                due.append((min(passed), uid))
                times -= passed
                if not times:
                    del self._times[uid]
        return [uid for _, uid in sorted(due)]

    def drop(self, uid: str) -> None:
        self._times.pop(uid, None)

    def __contains__(self, uid: object) -> bool:
        return uid in self._times


def seconds_until_update(
    condition: Mapping[str, Any] | None, generation: int, now: dt.datetime, period: float = RULE_STATUS_PERIOD
) -> float:
    """How long the status must wait before the condition may be rewritten, 0 when it may be now: the check at the
    top of `maybeUpdateRuleStatus`, done before counting pods because that may be expensive. A condition written for
    an older generation, or without a readable `lastTransitionTime`, is due at once."""
    if condition is None or condition.get("observedGeneration") != generation:
        return 0.0
    since = parse_timestamp(condition.get("lastTransitionTime"))
    if since is None:
        return 0.0
    return max(0.0, period - (now - since).total_seconds())


def eviction_condition(effect: str, generation: int, counts: RuleCounts, evicted: int) -> JsonObj:
    """The `EvictionInProgress` condition without `lastTransitionTime`, in `maybeUpdateRuleStatus`'s words (the
    messages are API output scripts may read, so they are upstream's to the letter, singular forms included).
    `evicted`: pods the controller deleted because of this rule since it started."""
    status, message = "False", ""
    if effect == NO_EXECUTE:
        if counts.pending_pods > 0:
            status, reason = "True", "PodsPendingEviction"
            message = (
                "1 pod needs to be evicted in "
                if counts.pending_pods == 1
                else f"{counts.pending_pods} pods need to be evicted in "
            )
            message += (
                "1 namespace."
                if counts.pending_namespaces == 1
                else f"{counts.pending_namespaces} different namespaces."
            )
        else:
            reason = "Completed" if evicted > 0 else "NotStarted"
    elif effect == NONE_EFFECT:
        reason = "NoEffect"
        message = (
            _count(counts.published_devices, "1 published device selected. ", "published devices selected. ")
            + _count(counts.allocated_devices, "1 allocated device selected. ", "allocated devices selected. ")
            + _count(counts.pending_pods, "1 pod would be evicted in ", "pods would be evicted in ")
            + _count(counts.pending_namespaces, "1 namespace ", "different namespaces ")
            + "if the effect was NoExecute. This information will not be updated again. "
            "Recreate the DeviceTaintRule to trigger an update."
        )
    else:
        reason, message = "OtherEffect", "Eviction only happens for the NoExecute effect."
    if evicted > 0:
        if message:
            message += " "
        message += ("1 pod " if evicted == 1 else f"{evicted} pods ") + "evicted since starting the controller."
    return {
        "type": CONDITION_TYPE,
        "status": status,
        "observedGeneration": generation,
        "reason": reason,
        "message": message,
    }


def with_condition(conditions: Iterable[Mapping[str, Any]], condition: JsonObj, now: str) -> list[JsonObj] | None:
    """`conditions` with `condition` in place of the one of its type, stamped `now`; None when the one there says
    the same (upstream compares everything but `lastTransitionTime`, which "gets bumped each time we make any change
    to the condition, even if it is only a change of the message")."""
    current = [dict(c) for c in conditions]
    index = next((i for i, c in enumerate(current) if c.get("type") == condition["type"]), None)
    if index is not None and _compared(current[index]) == _compared(condition):
        return None
    stamped = {**condition, "lastTransitionTime": now}
    if index is None:
        current.append(stamped)
    else:
        current[index] = stamped
    return current


def _compared(condition: Mapping[str, Any]) -> tuple[Any, ...]:
    """A condition's fields but `lastTransitionTime`, absent ones as their zero values (`metav1.Condition`)."""
    return (
        condition.get("status") or "",
        condition.get("reason") or "",
        condition.get("message") or "",
        condition.get("observedGeneration") or 0,
    )


def published_devices(
    rule: DeviceTaintRule, slices: Iterable[ResourceSlice], classes: Mapping[str, DeviceClass]
) -> set[DeviceID]:
    """The devices of the current ResourceSlices that `rule` selects (`countTaintedDevices`: slices of an older pool
    generation than the pool's newest are skipped). Selection is the scheduler's (`knuma.devices.taintrules`), so
    a rule's `deviceClassName` and CEL `selectors` count here as they do for scheduling."""
    current = list(slices)
    newest: dict[tuple[str, str], int] = {}
    for s in current:
        pool = (s.driver, s.pool.name)
        newest[pool] = max(newest.get(pool, s.pool.generation), s.pool.generation)
    marker = replace(rule, taint=Taint(f"{CONDITION_TYPE}.knuma.io/selected", rule.name, NO_EXECUTE))
    selected: set[DeviceID] = set()
    for s in current:
        if s.pool.generation != newest[(s.driver, s.pool.name)]:
            continue
        tainted = with_taint_rules(s, (marker,), classes)
        for device in tainted.devices:
            if marker.taint in device.taints:
                selected.add((s.driver, s.pool.name, device.name))
    return selected


def allocated_devices(rule: DeviceTaintRule, published: set[DeviceID], claims: Iterable[Mapping[str, Any]]) -> int:
    """How many allocation results of `claims` are devices `rule` selects (`countTaintedDevices`; a device two claims
    share counts twice, as upstream counts results). A device no current slice publishes is selected by its names
    alone when the rule has no `deviceClassName` nor `selectors` (upstream's `ruleMatchesDevice` looks only at the
    names); otherwise the CEL selectors need the published device."""
    selects = rule_selects(rule, published)
    return sum(1 for claim in claims for device in _allocated(claim) if selects(device))


def pending_pods(
    rule: DeviceTaintRule,
    selected: Callable[[DeviceID], bool],
    pods: Iterable[Mapping[str, Any]],
    claims_of: Callable[[Mapping[str, Any]], Sequence[Mapping[str, Any]]],
    eviction_delay: Callable[[Iterable[Mapping[str, Any]], Callable[[DeviceID], Iterable[Taint]]], float | None],
) -> tuple[int, int]:
    """(pods, namespaces) the rule's taint, as `NoExecute`, evicts now or later (`countPendingPods`: pods the rule is
    a reason of the eviction of, i.e. whose allocated devices it selects and whose requests do not tolerate it for
    ever; pods being deleted are not counted). For the `None` effect this is upstream's simulation, which swaps the
    effect to `NoExecute` in a copy of the controller. `pods`: the ones the controller considers (running);
    `eviction_delay`: the controller's, so that counted and evicted pods agree."""
    taint = (Taint(rule.taint.key, rule.taint.value, NO_EXECUTE),)

    def taints_of(device: DeviceID) -> tuple[Taint, ...]:
        return taint if selected(device) else ()

    count, namespaces = 0, set()
    for pod in pods:
        if meta_of(pod).get("deletionTimestamp"):
            continue
        used = claims_of(pod)
        if used and eviction_delay(used, taints_of) is not None:
            count += 1
            namespaces.add(str(meta_of(pod).get("namespace") or ""))
    return count, len(namespaces)


def rule_selects(rule: DeviceTaintRule, published: set[DeviceID]) -> Callable[[DeviceID], bool]:
    """Whether `rule` selects an allocated device: published and selected, or by names alone (`allocated_devices`)."""
    by_names = _by_names(rule)
    return lambda device: device in published or (by_names and _names_match(rule, device))


def _by_names(rule: DeviceTaintRule) -> bool:
    return rule.selects and rule.device_class_name is None and not rule.selectors


def _names_match(rule: DeviceTaintRule, device: DeviceID) -> bool:
    driver, pool, name = device
    return (
        (rule.driver is None or rule.driver == driver)
        and (rule.pool is None or rule.pool == pool)
        and (rule.device is None or rule.device == name)
    )


def _allocated(claim: Mapping[str, Any]) -> list[DeviceID]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return [
        (str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
        for r in (allocation.get("devices") or {}).get("results") or []
    ]


def _count(n: int, one: str, many: str) -> str:
    return one if n == 1 else f"{n} {many}"
