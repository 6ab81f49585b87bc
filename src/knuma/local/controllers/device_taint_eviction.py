"""The device taint eviction controller, as kube-controller-manager runs it (`pkg/controller/devicetainteviction`,
KEP-5055): a pod using an allocated ResourceClaim one of whose devices has a `NoExecute` taint that the claim's
request does not tolerate is deleted, at once, or after the smallest `tolerationSeconds` of the tolerations it uses,
counted from the taint's `timeAdded` (`Controller.evictionTime`: the API server stamps it when the taint is written
and when a rule's effect changes; a taint without one counts from when this controller first saw it); never when
those tolerations have none. A controller started again keeps the deadlines, since they come from the objects.
The taints are the driver's (in the ResourceSlice) and those of DeviceTaintRules, applied as the scheduler applies
them (`knuma.devices.taintrules`, through the scheduler's `DeviceState`). The pod gets the `DisruptionTarget`
condition (`DeletionByDeviceTaintManager`) and a `DeviceTaintManagerEviction` event first, as
`addConditionAndDeletePod` gives them; a deletion still waiting is cancelled when the taint goes.
`eviction_time` is upstream's per-device computation (`claimEvictionTime`), every matching toleration counting
(`taint_delay`). One difference: upstream's controller counts only tolerations whose effect is `NoExecute`, so a
claim tolerating a taint with no effect (which the allocator, the documentation and the node taint controller read
as every effect) is allocated the tainted device and then evicted at once; here it stays, as it was allocated.

Each DeviceTaintRule's status gets the `EvictionInProgress` condition (`knuma.local.controllers.taint_rule_status`),
including the dry run of the `None` effect, written through the `status` subresource (upstream applies it with
`ApplyStatus`; here a PUT of the rule as the informer holds it, so a concurrent write is a conflict retried at the next
check). The status is looked at when upstream's work queue gets the rule (`maybeUpdateRuleStatus`'s triggers): when
the rule appears, when a pod starts waiting for eviction, `RULE_STATUS_PERIOD` after the controller evicted a pod
because of it, and (not upstream, which only reacts to pods) when its generation changes, so that a rule switched
from `None` to `NoExecute` says so even when it evicts nothing.
"""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import httpx2

from knuma.api.dra.devicetaintrule import DeviceTaintRule
from knuma.api.dra.fields import ValidationError
from knuma.api.taints import NO_EXECUTE, Taint, tolerations_of
from knuma.api.types import STRATEGIC_MERGE_PATCH, JsonObj, meta_of
from knuma.devices.pools import DeviceID
from knuma.kube import rest
from knuma.kube.errors import Conflict, KubeApiError, NotFound
from knuma.kube.events import EventRecorder, parse_timestamp, timestamp
from knuma.kube.informer import Callbacks, Informer, ignore, object_key
from knuma.kube.tasks import cancel_and_wait
from knuma.local.controllers import nodelifecycle, taint_rule_status
from knuma.local.controllers.claims import pod_claim_names
from knuma.local.controllers.refs import pod_path, pod_reference
from knuma.scheduler.daemon.claims import DeviceInformers
from knuma.scheduler.plugins.device_state import DeviceState

__all__ = ["CHECK_PERIOD", "DeviceTaintEvictionController", "eviction_delay", "eviction_time", "taint_delay"]

log = logging.getLogger("knuma.local.controllers")

CHECK_PERIOD = 1.0
"""How often pods using tainted devices are looked at (upstream sets a timer per pod)."""
REASON = "DeletionByDeviceTaintManager"
MESSAGE = "Device Taint manager: deleting due to NoExecute taint"


def eviction_delay(
    claims: Iterable[Mapping[str, Any]], taints_of: Callable[[DeviceID], Iterable[Taint]]
) -> float | None:
    """Seconds until a pod using `claims` is deleted, counted from when its taints were added: 0 when a device of an
    allocated claim has a `NoExecute` taint its request result's tolerations do not tolerate, else the smallest
    `tolerationSeconds` (`taint_delay`); None when none is `NoExecute` or every one is tolerated for ever."""
    return eviction_time(claims, taints_of, lambda device, taint: 0.0)


def eviction_time(
    claims: Iterable[Mapping[str, Any]],
    taints_of: Callable[[DeviceID], Iterable[Taint]],
    added_at: Callable[[DeviceID, Taint], float],
) -> float | None:
    """When (seconds since the epoch) a pod using `claims` is deleted (`claimEvictionTime`): for each `NoExecute`
    taint of an allocated device, `added_at` (its `timeAdded`) plus `taint_delay`; the earliest; None when every
    such taint is tolerated for ever, or there is none."""
    times: list[float] = []
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or []:
            device = (str(result.get("driver")), str(result.get("pool")), str(result.get("device")))
            raw = [t for t in result.get("tolerations") or [] if isinstance(t, Mapping)]
            for taint in taints_of(device):
                if taint.effect != NO_EXECUTE:
                    continue
                delay = taint_delay(raw, taint)
                if delay is not None:
                    times.append(added_at(device, taint) + delay)
    return min(times) if times else None


def taint_delay(tolerations: Sequence[Mapping[str, Any]], taint: Taint) -> float | None:
    """Seconds a `NoExecute` device taint is tolerated by a result's `tolerations` (`claimEvictionTime`): 0 when none
    tolerates it; None (for ever) when one that does has no `tolerationSeconds`; else the smallest of theirs, 0 at
    least. Every matching toleration counts, not only the first (the node taint manager's rule)."""
    seconds: list[float] = []
    for toleration, raw in zip(tolerations_of({"tolerations": tolerations}), tolerations, strict=True):
        if not toleration.tolerates(taint):
            continue
        limit = raw.get("tolerationSeconds")
        if not isinstance(limit, int | float) or isinstance(limit, bool):
            return None
        seconds.append(max(0.0, float(limit)))
    return min(seconds) if seconds else 0.0


class DeviceTaintEvictionController:
    def __init__(self, http: httpx2.AsyncClient, *, rule_status_period: float = taint_rule_status.RULE_STATUS_PERIOD):
        """`rule_status_period`: the shortest time between two status writes of a rule (upstream's constant
        `ruleStatusPeriod`; tests shorten it)."""
        self.http = http
        self.devices = DeviceState()
        self.devices.memo = None  # nothing is allocated here
        self.informers = DeviceInformers(http, self.devices, lambda: None)
        self.pods = Informer(http, "/api/v1/pods", Callbacks(ignore, ignore, ignore))
        self.evictions: dict[str, float] = {}
        """Pod key -> when it is deleted (seconds since the epoch; infinity once deleted)."""
        self.first_seen: dict[tuple[DeviceID, Taint], float] = {}
        """When this controller first saw a device taint that has no `timeAdded` (seconds since the epoch)."""
        self.events = EventRecorder(http, "device-taint-eviction-controller")
        self.evicted = 0
        self.rule_status_period = rule_status_period
        self.rule_status_due = taint_rule_status.RuleQueue()
        """When each rule's status is looked at (monotonic seconds): upstream's work items for rules."""
        self.rule_generations: dict[str, int] = {}
        """Rule UID -> the generation last seen (a new UID or generation makes its status due)."""
        self.evicted_by_rule: dict[str, int] = {}
        """Rule UID -> pods evicted because of it since the controller started (upstream's `taintRuleStats`)."""

    def _taints(self) -> dict[DeviceID, tuple[Taint, ...]]:
        return {
            (s.driver, s.pool.name, d.name): d.taints
            for s in self.devices.slices.values()
            for d in s.devices
            if any(t.effect == NO_EXECUTE for t in d.taints)
        }

    async def run(self) -> None:
        """Until cancelled: every `CHECK_PERIOD`, each running pod's claims against the devices' NoExecute taints."""
        informers = [asyncio.create_task(i.run()) for i in (self.pods, *self.informers.all)]
        try:
            while True:
                await asyncio.sleep(CHECK_PERIOD)
                await self._check()
        finally:
            await cancel_and_wait(informers)

    def _taint_times(self, wall: float) -> Callable[[DeviceID, Taint], float]:
        """When each device taint was added: the `timeAdded` of the device's own taint in its ResourceSlice, or of
        the `NoExecute` DeviceTaintRules with that taint that select the device (the earliest), else when this
        controller first saw it."""
        own: dict[tuple[DeviceID, Taint], float] = {}
        for body in list(self.informers.slices.store.values()):
            spec = body.get("spec") or {}
            driver, pool = str(spec.get("driver")), str((spec.get("pool") or {}).get("name"))
            for device in spec.get("devices") or []:
                for raw in device.get("taints") or []:
                    added = parse_timestamp(raw.get("timeAdded"))
                    if added is None:
                        continue
                    taint = Taint(str(raw.get("key") or ""), str(raw.get("value") or ""), str(raw.get("effect") or ""))
                    mark = (driver, pool, str(device.get("name")))
                    own[mark, taint] = min(own.get((mark, taint), math.inf), added.timestamp())
        rules = []
        for obj, rule in self._rules().values():
            added = parse_timestamp(((obj.get("spec") or {}).get("taint") or {}).get("timeAdded"))
            if rule.taint.effect == NO_EXECUTE and added is not None:
                published = taint_rule_status.published_devices(
                    rule, self.devices.slices.values(), self.devices.classes
                )
                rules.append((rule.taint, taint_rule_status.rule_selects(rule, published), added.timestamp()))

        def added_at(device: DeviceID, taint: Taint) -> float:
            times = [own.get((device, taint), math.inf)]
            times += [added for ruled, selects, added in rules if ruled == taint and selects(device)]
            known = min(times)
            return known if known != math.inf else self.first_seen.setdefault((device, taint), wall)

        return added_at

    def _running(self) -> list[JsonObj]:
        """The pods eviction is about: not being deleted, not finished."""
        return [
            pod
            for pod in list(self.pods.store.values())
            if not meta_of(pod).get("deletionTimestamp")
            and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]

    def _claims_of(self, pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        namespace = str(meta_of(pod).get("namespace") or "")
        claims = self.devices.claims
        return [c for name in pod_claim_names(pod) if (c := claims.get(f"{namespace}/{name}")) is not None]

    async def _check(self) -> None:
        await self._evict_tainted()
        await self._update_rule_statuses()

    async def _evict_tainted(self) -> None:
        tainted = self._taints()
        if not tainted:
            self.evictions.clear()
            self.first_seen.clear()
            return
        now, wall = time.monotonic(), time.time()
        self.first_seen = {k: t for k, t in self.first_seen.items() if k[1] in tainted.get(k[0], ())}
        added_at = self._taint_times(wall)
        seen: set[str] = set()
        for pod in self._running():
            used = self._claims_of(pod)
            deadline = eviction_time(used, lambda device: tainted.get(device, ()), added_at) if used else None
            if deadline is None:
                continue
            key = object_key(pod)
            seen.add(key)
            if key not in self.evictions:
                # A pod starts waiting: upstream's `handlePod` queues the rules that are reasons of it; here every
                # `NoExecute` rule, whose condition is rewritten only if it changed.
                self._rules_due(now, self._no_execute_rules())
            if self.evictions.get(key) == math.inf:
                continue  # deleted already; the informer has not heard yet
            self.evictions[key] = deadline
            if wall >= deadline and await self._evict(pod):
                self.evictions[key] = math.inf
        for key in set(self.evictions) - seen:
            del self.evictions[key]
            spared = self.pods.store.get(key)
            if spared is not None and not meta_of(spared).get("deletionTimestamp"):
                self.events.record(
                    pod_reference(spared), "Normal", "DeviceTaintManagerEviction", f"Cancelling deletion of Pod {key}"
                )

    async def _evict(self, pod: JsonObj) -> bool:
        key = object_key(pod)
        self.events.record(
            pod_reference(pod), "Normal", "DeviceTaintManagerEviction", f"Marking for deletion Pod {key}"
        )
        path = pod_path(pod)
        try:
            await rest.patch(
                self.http,
                f"{path}/status",
                nodelifecycle.eviction_status(timestamp(), REASON, MESSAGE),
                content_type=STRATEGIC_MERGE_PATCH,
            )
            uid = meta_of(pod).get("uid")
            await rest.delete(self.http, path, body={"preconditions": {"uid": uid}} if uid else None)
        except NotFound:
            return True
        except KubeApiError as err:
            log.warning("device taint eviction: cannot delete pod %s: %s", key, err)
            return False
        self.evicted += 1
        self._count_eviction(pod, time.monotonic())  # not for a pod already gone: "we didn't do it"
        log.info("device taint eviction: deleted pod %s (a device it uses has a NoExecute taint)", key)
        return True

    # -- rule status (`maybeUpdateRuleStatus`) ----------------------------------------------------------------------

    def _rules(self) -> dict[str, tuple[JsonObj, DeviceTaintRule]]:
        """Rule UID -> (the object as the informer holds it, parsed); rules that do not parse are left out."""
        rules: dict[str, tuple[JsonObj, DeviceTaintRule]] = {}
        for obj in list(self.informers.taint_rules.store.values()):
            try:
                rules[str(meta_of(obj).get("uid"))] = (obj, DeviceTaintRule.from_dict(obj))
            except ValidationError:
                continue
        return rules

    def _no_execute_rules(self) -> list[str]:
        return [uid for uid, (_, rule) in self._rules().items() if rule.taint.effect == NO_EXECUTE]

    def _rules_due(self, when: float, uids: Iterable[str]) -> None:
        for uid in uids:
            self.rule_status_due.add(uid, when)

    def _count_eviction(self, pod: JsonObj, now: float) -> None:
        """Credit the eviction of `pod` to every `NoExecute` rule that is a reason for it (`maybeDeletePod`), and look
        at their status `rule_status_period` later ("doing this immediately is not useful because it would just race
        with the informers update")."""
        used = self._claims_of(pod)
        for uid, (_, rule) in self._rules().items():
            if rule.taint.effect != NO_EXECUTE:
                continue
            selects = taint_rule_status.rule_selects(
                rule, taint_rule_status.published_devices(rule, self.devices.slices.values(), self.devices.classes)
            )
            if taint_rule_status.pending_pods(rule, selects, [pod], lambda _: used, eviction_delay)[0]:
                self.evicted_by_rule[uid] = self.evicted_by_rule.get(uid, 0) + 1
                self._rules_due(now + self.rule_status_period, [uid])

    async def _update_rule_statuses(self) -> None:
        rules = self._rules()
        now = time.monotonic()
        for uid, (obj, _) in rules.items():
            generation = int(meta_of(obj).get("generation") or 0)
            if self.rule_generations.get(uid) != generation:
                self.rule_generations[uid] = generation
                self._rules_due(now, [uid])
        for gone in set(self.rule_generations) - set(rules):
            self.rule_generations.pop(gone, None)
            self.evicted_by_rule.pop(gone, None)
            self.rule_status_due.drop(gone)
        for uid in self.rule_status_due.take(now):
            if uid in rules:  # else deleted or replaced: "removing from work queue"
                await self._update_rule_status(*rules[uid], uid)

    async def _update_rule_status(self, obj: JsonObj, rule: DeviceTaintRule, uid: str) -> None:
        """One work item of upstream's `maybeUpdateRuleStatus`: not before `rule_status_period` since the last change
        of the condition unless the generation changed; then the counts the effect needs, and a status write when the
        condition differs."""
        status = obj.get("status") or {}
        conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
        existing = next((c for c in conditions if c.get("type") == taint_rule_status.CONDITION_TYPE), None)
        generation = int(meta_of(obj).get("generation") or 0)
        now = dt.datetime.now(dt.UTC)
        wait = taint_rule_status.seconds_until_update(existing, generation, now, self.rule_status_period)
        if wait > 0:
            self._rules_due(time.monotonic() + wait, [uid])
            return
        counts = self._counts(rule)
        condition = taint_rule_status.eviction_condition(
            rule.taint.effect, generation, counts, self.evicted_by_rule.get(uid, 0)
        )
        updated = taint_rule_status.with_condition(conditions, condition, timestamp())
        if updated is None:
            return
        body = copy.deepcopy(obj)
        body["status"] = {**status, "conditions": updated}
        path = f"{self.informers.taint_rules.path}/{rule.name}/status"
        try:
            await rest.put(self.http, path, body)
        except NotFound:
            return
        except Conflict:
            self._rules_due(time.monotonic() + CHECK_PERIOD, [uid])  # the informer is behind: again with its news
        except KubeApiError as err:
            log.warning("device taint eviction: cannot write the status of DeviceTaintRule %s: %s", rule.name, err)
            self._rules_due(time.monotonic() + self.rule_status_period, [uid])
        else:
            log.info(
                "device taint eviction: DeviceTaintRule %s: %s", rule.name, condition["message"] or condition["reason"]
            )

    def _counts(self, rule: DeviceTaintRule) -> taint_rule_status.RuleCounts:
        """`countPendingPods` for `NoExecute`; for `None` also `countTaintedDevices`, and the pods counted as if the
        effect were `NoExecute` (upstream's simulation); nothing for `NoSchedule`."""
        if rule.taint.effect not in (NO_EXECUTE, taint_rule_status.NONE_EFFECT):
            return taint_rule_status.RuleCounts()
        published = taint_rule_status.published_devices(rule, self.devices.slices.values(), self.devices.classes)
        selects = taint_rule_status.rule_selects(rule, published)
        # Pods this controller deleted are not pending even while the informer has not seen their deletion yet.
        pods_left = [p for p in self._running() if self.evictions.get(object_key(p)) != math.inf]
        pods, namespaces = taint_rule_status.pending_pods(rule, selects, pods_left, self._claims_of, eviction_delay)
        if rule.taint.effect == NO_EXECUTE:
            return taint_rule_status.RuleCounts(pods, namespaces)
        allocated = taint_rule_status.allocated_devices(rule, published, self.devices.claims.values())
        return taint_rule_status.RuleCounts(pods, namespaces, len(published), allocated)
