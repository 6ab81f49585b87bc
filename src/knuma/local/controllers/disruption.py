"""The disruption controller's status of a PodDisruptionBudget (kube-controller-manager's
`pkg/controller/disruption/disruption.go`: `trySync`, `getExpectedPodCount`, `countHealthyPods`, `updatePdbStatus`),
as a pure function of the budget, its pods and their controllers' scale, so that `knuma up` gives budgets the
`status.disruptionsAllowed` the scheduler's preemption reads.

- The budget's pods: same namespace, matched by its selector (a missing or empty selector matches none).
- Expected pods and desired healthy: an integer `minAvailable` expects the pods there are and wants that many
  healthy; a percentage `minAvailable` or any `maxUnavailable` expects the sum of the pods' controllers' scale
  (Deployment, else ReplicaSet, else StatefulSet) and scales the value to it, rounding up.
- Healthy: Ready, not being deleted, and not in `status.disruptedPods` (pods the eviction subresource spent the
  budget on, `buildDisruptedPodMap`: kept until the pod is deleted or two minutes have passed). Allowed disruptions:
  healthy minus desired, never below 0, and 0 when no pod is expected.
- The `DisruptionAllowed` condition (`updatePdbStatus` with `pdbhelper.UpdateDisruptionAllowedCondition`): True with
  reason `SufficientPods` while disruptions are allowed, else False with `InsufficientPods`.

Not modelled: controllers reached only through a scale subresource (their pods count as unmanaged),
`unhealthyPodEvictionPolicy`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from knuma.api.disruption import DisruptionBudget, with_disruption_allowed_condition
from knuma.api.pod import is_pod_ready
from knuma.api.types import JsonObj, meta_of

__all__ = ["budget_pods", "budget_status"]

DELETION_TIMEOUT = timedelta(minutes=2)
"""How long a pod an eviction was granted for stays out of the healthy count (`DeletionTimeout`)."""

Scale = Callable[[Mapping[str, Any]], tuple[str, int] | None]
"""A pod → (its controller's uid, the controller's replicas), or None for a pod without a scalable controller."""


def budget_pods(budget: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """`getPodsForPdb`: the pods of the budget's namespace its selector matches."""
    parsed = DisruptionBudget.from_manifest(budget)
    return [
        pod
        for pod in pods
        if parsed.selects(meta_of(pod).get("namespace") or "default", meta_of(pod).get("labels") or {})
    ]


def _scaled(value: Any, total: int) -> int:
    """`intstr.GetScaledValueFromIntOrPercent` rounding up."""
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


def _disrupted(budget: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], now: datetime) -> dict[str, str]:
    """`buildDisruptedPodMap`: the recorded evictions of pods still there, not being deleted, and recent."""
    recorded = (budget.get("status") or {}).get("disruptedPods") or {}
    kept: dict[str, str] = {}
    for pod in pods:
        name = str(meta_of(pod).get("name"))
        stamp = recorded.get(name) if isinstance(recorded, Mapping) else None
        if not isinstance(stamp, str) or meta_of(pod).get("deletionTimestamp"):
            continue
        try:
            granted = datetime.fromisoformat(stamp)
        except ValueError:
            continue
        if granted + DELETION_TIMEOUT > now:
            kept[name] = stamp
    return kept


def budget_status(budget: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], scale: Scale, now: datetime) -> JsonObj:
    """The status the disruption controller writes for `budget` given its pods (`budget_pods`), at `now` (aware)."""
    spec = budget.get("spec") or {}
    minimum, maximum = spec.get("minAvailable"), spec.get("maxUnavailable")
    expected = desired = 0
    if maximum is not None or isinstance(minimum, str):
        controllers = {found[0]: found[1] for pod in pods if (found := scale(pod)) is not None}
        expected = sum(controllers.values())
        scaled = _scaled(maximum if maximum is not None else minimum, expected)
        desired = max(0, expected - scaled) if maximum is not None else scaled
    elif minimum is not None:
        expected, desired = len(pods), int(minimum)
    disrupted = _disrupted(budget, pods, now)
    healthy = sum(
        1
        for pod in pods
        if is_pod_ready(pod) and not meta_of(pod).get("deletionTimestamp") and meta_of(pod).get("name") not in disrupted
    )
    allowed = max(0, healthy - desired if expected > 0 else 0)
    generation = int(meta_of(budget).get("generation", 1) or 1)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = with_disruption_allowed_condition(
        (budget.get("status") or {}).get("conditions"), allowed, generation, stamp
    )
    return {
        "observedGeneration": generation,
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "disruptedPods": disrupted or None,  # None: a merge patch removes the map
        "conditions": conditions,
    }
