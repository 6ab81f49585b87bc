"""PodDisruptionBudgets (`policy/v1`) as the scheduler reads them: which pods a budget covers and how many of them may
still be disrupted (`status.disruptionsAllowed`, which the disruption controller keeps up to date), and the
`DisruptionAllowed` condition that goes with that number."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from knuma.api.labelselector import NOTHING, LabelSelector, LabelSelectorError, parse_label_selector

__all__ = ["DISRUPTION_ALLOWED", "DisruptionBudget", "with_disruption_allowed_condition"]

DISRUPTION_ALLOWED = "DisruptionAllowed"


@dataclass(frozen=True)
class DisruptionBudget:
    namespace: str
    name: str
    selector: LabelSelector
    disruptions_allowed: int
    disrupted_pods: frozenset[str]
    """`status.disruptedPods`: pods whose eviction the API server already counted against the budget."""

    @classmethod
    def from_manifest(cls, obj: Mapping[str, Any]) -> DisruptionBudget:
        """A budget with an invalid selector covers no pod (kube-scheduler's `filterPodsWithPDBViolation`: "This
        object has an invalid selector, it does not match the pod"); a missing status allows no disruption."""
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        try:
            selector = parse_label_selector(spec.get("selector") if isinstance(spec, Mapping) else None)
        except LabelSelectorError:
            selector = NOTHING
        allowed = status.get("disruptionsAllowed") if isinstance(status, Mapping) else None
        disrupted = status.get("disruptedPods") if isinstance(status, Mapping) else None
        return cls(
            namespace=str(meta.get("namespace") or "default"),
            name=str(meta.get("name") or ""),
            selector=selector,
            disruptions_allowed=allowed if isinstance(allowed, int) and not isinstance(allowed, bool) else 0,
            disrupted_pods=frozenset(disrupted) if isinstance(disrupted, Mapping) else frozenset(),
        )

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """Whether the budget is about this pod: same namespace, and a selector that is neither missing nor empty
        (such a budget matches nothing) and matches the labels."""
        if namespace != self.namespace or self.selector.nothing or self.selector.empty:
            return False
        return self.selector.matches(labels)

    def covers(self, namespace: str, name: str, labels: Mapping[str, str]) -> bool:
        """Whether evicting this pod counts against the budget: it selects the pod, and the pod is not already
        counted as disrupted."""
        return self.selects(namespace, labels) and name not in self.disrupted_pods


def with_disruption_allowed_condition(
    conditions: Sequence[Mapping[str, Any]] | None, allowed: int, generation: int, now: str
) -> list[dict[str, Any]]:
    """`pdbhelper.UpdateDisruptionAllowedCondition` through `meta.SetStatusCondition`: the budget's conditions with
    `DisruptionAllowed` True (`SufficientPods`) while disruptions are allowed, else False (`InsufficientPods`);
    `lastTransitionTime` moves only when the status flips. What `kubectl describe pdb` and `kubectl wait
    --for=condition=DisruptionAllowed` read."""
    status = "True" if allowed > 0 else "False"
    reason = "SufficientPods" if allowed > 0 else "InsufficientPods"
    out = [dict(c) for c in conditions or () if c.get("type") != DISRUPTION_ALLOWED]
    previous = next((c for c in conditions or () if c.get("type") == DISRUPTION_ALLOWED), None)
    since = previous.get("lastTransitionTime") if previous is not None and previous.get("status") == status else now
    condition = {"type": DISRUPTION_ALLOWED, "status": status, "reason": reason, "message": "",
                 "observedGeneration": generation, "lastTransitionTime": since}  # fmt: skip
    return [*out, condition]
