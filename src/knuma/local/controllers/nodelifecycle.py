"""Node health and taint-based eviction, as kube-controller-manager runs them for a node whose kubelet went silent.

The node lifecycle controller (`pkg/controller/nodelifecycle/node_lifecycle_controller.go`) looks at every node
every `--node-monitor-period` (5 s). A node whose kubelet has not renewed its Lease nor posted its status within
`--node-monitor-grace-period` (40 s, `RecommendedDefaultNodeLifecycleControllerConfiguration`; 60 s,
`--node-startup-grace-period`, for a node that never reported its Ready condition), measured on the controller's
clock from when it last saw a heartbeat change (`HealthProbes`), gets its Ready, MemoryPressure, DiskPressure and
PIDPressure conditions set to `Unknown` (reason `NodeStatusUnknown`, "Kubelet stopped posting node status.",
`tryUpdateNodeHealth`); its pods' Ready condition becomes `False` (`MarkPodsNotReady`). Taints follow the Ready
condition: `Unknown` -> `node.kubernetes.io/unreachable`, `False` -> `node.kubernetes.io/not-ready`, `True` ->
neither, each with `timeAdded`. The NoSchedule one is set on every node update (`doNoScheduleTaintingPass`, which
also taints pressure conditions and cordoned nodes); the NoExecute one, which evicts, goes through a rate-limited
queue per zone that stops when every zone is down (`processTaintBaseEviction`, `doNoExecuteTaintingPass`,
`handleDisruption`: `knuma.local.controllers.evictionzones`).

The taint eviction controller (`pkg/controller/tainteviction/taint_eviction.go`, `processPodOnNode`) then deletes
each pod on a node with NoExecute taints: at once when one of them is not tolerated, after the smallest
`tolerationSeconds` of the tolerations that match when all are (`getMinTolerationTime`: 0 or less is at once), never
when those tolerations have no `tolerationSeconds`; counted from when it first saw the pod there, cancelled when
the taints go. The pod first gets the `DisruptionTarget` condition (reason `DeletionByTaintManager`,
`addConditionAndDeletePod`) and a `TaintManagerEviction` event. `knuma apiserver`'s DefaultTolerationSeconds
admission gives every pod 300 s for both taints unless it says otherwise.

What this module decides is pure; `knuma.local.controllers.manager` reads the Nodes, Leases and Pods and writes.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from knuma.api.taints import NO_EXECUTE, NO_SCHEDULE, parse_taints, tolerations_of
from knuma.api.types import JsonObj

__all__ = [
    "CONDITION_TYPES",
    "LEASE_NAMESPACE",
    "MONITOR_GRACE_PERIOD",
    "MONITOR_PERIOD",
    "NOT_READY",
    "STARTUP_GRACE_PERIOD",
    "UNREACHABLE",
    "UNSCHEDULABLE",
    "HealthProbes",
    "eviction_delay",
    "eviction_status",
    "has_taint",
    "no_execute_swap",
    "no_schedule_taints",
    "pod_not_ready_status",
    "reachable_taints",
    "ready_condition",
    "ready_status",
    "unknown_conditions",
]

MONITOR_PERIOD = 5.0
"""`--node-monitor-period`."""
MONITOR_GRACE_PERIOD = 40.0
"""`--node-monitor-grace-period`."""
STARTUP_GRACE_PERIOD = 60.0
"""`--node-startup-grace-period`: the grace of a node that never reported its Ready condition."""
LEASE_NAMESPACE = "kube-node-lease"
UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
CONDITION_TYPES = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
"""The conditions the kubelet owns, set `Unknown` when it goes silent."""
CONDITION_TAINTS = {
    ("Ready", "False"): NOT_READY,
    ("Ready", "Unknown"): UNREACHABLE,
    ("MemoryPressure", "True"): "node.kubernetes.io/memory-pressure",
    ("DiskPressure", "True"): "node.kubernetes.io/disk-pressure",
    ("NetworkUnavailable", "True"): "node.kubernetes.io/network-unavailable",
    ("PIDPressure", "True"): "node.kubernetes.io/pid-pressure",
}
"""`nodeConditionToTaintKeyStatusMap`: the NoSchedule taint of a condition status."""
CONDITION_TAINT_KEYS = frozenset(CONDITION_TAINTS.values())
UNKNOWN_REASON = "NodeStatusUnknown"
UNKNOWN_MESSAGE = "Kubelet stopped posting node status."
NEVER_UPDATED_REASON = "NodeStatusNeverUpdated"
NEVER_UPDATED_MESSAGE = "Kubelet never posted node status."
EVICTION_REASON = "DeletionByTaintManager"
EVICTION_MESSAGE = "Taint manager: deleting due to NoExecute taint"


def _condition(node: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return None


@dataclass
class HealthProbes:
    """When each node's kubelet was last heard of, by this controller's clock: `tryUpdateNodeHealth` keeps a probe
    timestamp per node that moves to *now* whenever the Lease's `renewTime` or the Ready condition's
    `lastHeartbeatTime` changes, and on the first sight of a node, so clock skew between the kubelet and the
    controller does not matter and a controller that just started gives every node a full grace period."""

    seen: dict[str, tuple[Hashable, float]] = field(default_factory=dict)

    def silent(
        self,
        name: str,
        node: Mapping[str, Any],
        lease: Mapping[str, Any] | None,
        now: float,
        grace: float = MONITOR_GRACE_PERIOD,
        startup_grace: float = STARTUP_GRACE_PERIOD,
    ) -> bool:
        """Whether the kubelet of `node` has said nothing for longer than `grace` (`startup_grace` for a node that
        never reported its Ready condition) up to `now` (monotonic seconds)."""
        ready = _condition(node, "Ready")
        beat = (((lease or {}).get("spec") or {}).get("renewTime"), (ready or {}).get("lastHeartbeatTime"))
        known = self.seen.get(name)
        if known is None or known[0] != beat:
            self.seen[name] = (beat, now)
            return False
        return now - known[1] > (grace if ready is not None else startup_grace)

    def restart(self, now: float) -> None:
        """Every node gets a full grace period from `now` (leaving master disruption mode, `handleDisruption`)."""
        self.seen = {name: (beat, now) for name, (beat, _) in self.seen.items()}

    def forget(self, names: Iterable[str]) -> None:
        """Drop the nodes not in `names` (deleted)."""
        keep = set(names)
        self.seen = {name: known for name, known in self.seen.items() if name in keep}


def ready_condition(node: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The Ready condition; None when the kubelet never reported one."""
    return _condition(node, "Ready")


def ready_status(node: Mapping[str, Any]) -> str:
    """The Ready condition's status: `True`, `False` or `Unknown` (no condition: `Unknown`)."""
    ready = _condition(node, "Ready")
    return str(ready.get("status")) if ready is not None else "Unknown"


def unknown_conditions(node: Mapping[str, Any], now: str) -> list[JsonObj] | None:
    """The node's conditions with the kubelet's set `Unknown` (the last heartbeat kept, the transition `now`), for a
    status patch; None when they already are. A condition the kubelet never posted is added with reason
    `NodeStatusNeverUpdated` and its node's creation as last heartbeat (`tryUpdateNodeHealth`)."""
    conditions = [dict(c) for c in (node.get("status") or {}).get("conditions") or [] if isinstance(c, Mapping)]
    changed = False
    for kind in CONDITION_TYPES:
        found = next((c for c in conditions if c.get("type") == kind), None)
        if found is None:
            conditions.append(
                {
                    "type": kind,
                    "status": "Unknown",
                    "reason": NEVER_UPDATED_REASON,
                    "message": NEVER_UPDATED_MESSAGE,
                    "lastHeartbeatTime": (node.get("metadata") or {}).get("creationTimestamp"),
                    "lastTransitionTime": now,
                }
            )
            changed = True
        elif found.get("status") != "Unknown":
            found.update(status="Unknown", reason=UNKNOWN_REASON, message=UNKNOWN_MESSAGE, lastTransitionTime=now)
            changed = True
    return conditions if changed else None


def _taint_keys(taints: Sequence[Mapping[str, Any]], effect: str) -> set[str]:
    return {str(t.get("key")) for t in taints if t.get("effect") == effect}


def _taints(node: Mapping[str, Any]) -> list[JsonObj]:
    return [dict(t) for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, Mapping)]


def has_taint(node: Mapping[str, Any], key: str, effect: str) -> bool:
    """`taintutils.TaintExists` for a key and effect."""
    return key in _taint_keys(_taints(node), effect)


def _swapped(
    taints: list[JsonObj], add: Sequence[tuple[str, str]], remove: Sequence[tuple[str, str]], now: str
) -> list[JsonObj] | None:
    """`SwapNodeControllerTaint`: `add` (key, effect) taints stamped `timeAdded` (those already there kept as they
    are), `remove` ones dropped, the others kept; None when nothing changes."""
    present = {(t.get("key"), t.get("effect")) for t in taints}
    kept = [t for t in taints if (t.get("key"), t.get("effect")) not in remove]
    added = [{"key": key, "effect": effect, "timeAdded": now} for key, effect in add if (key, effect) not in present]
    result = kept + added
    return result if result != taints else None


def no_schedule_taints(node: Mapping[str, Any], now: str) -> list[JsonObj] | None:
    """`doNoScheduleTaintingPass`: `spec.taints` with the NoSchedule taints the conditions and `spec.unschedulable`
    call for (`nodeConditionToTaintKeyStatusMap`: Ready False -> not-ready, Unknown -> unreachable; memory, disk and
    PID pressure and network unavailable when True) and no other condition taint; None when already so. Upstream
    runs it on every node update, so a kubelet reporting pressure, a silent node and `kubectl cordon` are all
    reflected at once."""
    wanted: set[str] = set()
    for condition in (node.get("status") or {}).get("conditions") or []:
        if isinstance(condition, Mapping):
            key = CONDITION_TAINTS.get((str(condition.get("type")), str(condition.get("status"))))
            if key is not None:
                wanted.add(key)
    if (node.get("spec") or {}).get("unschedulable"):
        wanted.add(UNSCHEDULABLE)
    taints = _taints(node)
    have = {key for key in _taint_keys(taints, NO_SCHEDULE) if key in CONDITION_TAINT_KEYS or key == UNSCHEDULABLE}
    return _swapped(
        taints,
        [(key, NO_SCHEDULE) for key in sorted(wanted - have)],
        [(key, NO_SCHEDULE) for key in sorted(have - wanted)],
        now,
    )


def no_execute_swap(node: Mapping[str, Any], now: str) -> list[JsonObj] | None:
    """`doNoExecuteTaintingPass`'s action for a node taken off its zone's queue (and `processTaintBaseEviction`'s
    instant swap): the NoExecute taint of its Ready condition (`Unknown` -> unreachable, `False` -> not-ready) added,
    the other one removed; None when already so or when Ready."""
    wanted = {"Unknown": UNREACHABLE, "False": NOT_READY}.get(ready_status(node))
    if wanted is None:
        return None
    opposite = NOT_READY if wanted == UNREACHABLE else UNREACHABLE
    return _swapped(_taints(node), [(wanted, NO_EXECUTE)], [(opposite, NO_EXECUTE)], now)


def reachable_taints(node: Mapping[str, Any]) -> list[JsonObj] | None:
    """`markNodeAsReachable`: `spec.taints` without the NoExecute unreachable and not-ready taints (the NoSchedule
    ones stay: they follow the conditions); None when there are none."""
    return _swapped(_taints(node), [], [(UNREACHABLE, NO_EXECUTE), (NOT_READY, NO_EXECUTE)], "")


def _toleration_seconds(raw: Mapping[str, Any]) -> float | None:
    seconds = raw.get("tolerationSeconds")
    return float(seconds) if isinstance(seconds, int | float) and not isinstance(seconds, bool) else None


def eviction_delay(pod_spec: Mapping[str, Any], node_taints: Sequence[Mapping[str, Any]]) -> float | None:
    """`processPodOnNode`: seconds until a pod on a node with `node_taints` is deleted; 0 when a NoExecute taint is
    not tolerated, None when none is NoExecute or the tolerations used have no `tolerationSeconds`. The toleration
    used for a taint is the first that tolerates it (`GetMatchingTolerations`); the delay is the smallest of their
    `tolerationSeconds`, 0 or less meaning at once (`getMinTolerationTime`)."""
    taints = [taint for taint in parse_taints(node_taints) if taint.effect == NO_EXECUTE]
    if not taints:
        return None
    raw = [t for t in pod_spec.get("tolerations") or [] if isinstance(t, Mapping)]
    tolerations = list(zip(tolerations_of(pod_spec), map(_toleration_seconds, raw), strict=True))
    used: list[float | None] = []
    for taint in taints:
        first = next((seconds for toleration, seconds in tolerations if toleration.tolerates(taint)), False)
        if first is False:
            return 0.0
        used.append(first)
    limits = [seconds for seconds in used if seconds is not None]
    if not limits:
        return None
    return max(0.0, min(limits))


def pod_not_ready_status(pod: Mapping[str, Any], now: str) -> JsonObj | None:
    """`MarkPodsNotReady`: a strategic merge patch setting the pod's Ready condition `False`; None when it is not
    `True` (or the pod finished)."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return None
    ready = next(
        (c for c in status.get("conditions") or [] if isinstance(c, Mapping) and c.get("type") == "Ready"), None
    )
    if ready is None or ready.get("status") != "True":
        return None
    return {"status": {"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": now}]}}


def eviction_status(now: str, reason: str = EVICTION_REASON, message: str = EVICTION_MESSAGE) -> JsonObj:
    """`addConditionAndDeletePod`'s status patch: the `DisruptionTarget` condition (the device taint eviction
    controller's has its own reason and message)."""
    condition = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
    }
    return {"status": {"conditions": [condition]}}
