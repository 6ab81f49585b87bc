"""Status conditions as numaresources-operator writes them: four base conditions, exactly one of them True.

Available=True also sets Upgradeable=True. The True condition's reason is its type name (Progressing, Available),
except Degraded, whose reason says why (`InternalError` for unexpected errors, `ValidationErrorUnderNodeGroups`,
`IncorrectNUMAResourcesOperatorResourceName`, ...). `lastTransitionTime` changes only when the status flips, as
`meta.SetStatusCondition` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AVAILABLE",
    "BASE_TYPES",
    "DEGRADED",
    "PROGRESSING",
    "UPGRADEABLE",
    "Outcome",
    "available",
    "degraded",
    "find",
    "progressing",
    "set_condition",
    "update_conditions",
]

AVAILABLE = "Available"
UPGRADEABLE = "Upgradeable"
PROGRESSING = "Progressing"
DEGRADED = "Degraded"
BASE_TYPES = (AVAILABLE, UPGRADEABLE, PROGRESSING, DEGRADED)

REASON_INTERNAL_ERROR = "InternalError"
REASON_VALIDATION = "ValidationErrorUnderNodeGroups"
REASON_WRONG_OPERATOR_NAME = "IncorrectNUMAResourcesOperatorResourceName"
REASON_WRONG_SCHEDULER_NAME = "IncorrectNUMAResourcesSchedulerResourceName"
REASON_INVALID_SCHEDULER_SPEC = "InvalidSchedulerSpec"
DEDICATED_INFORMER_ACTIVE = "DedicatedInformerActive"
"""NUMAResourcesScheduler: whether the scheduler's NRT cache runs its own pod informer (`schedulerInformer`)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a reconcile pass concluded: which base condition is True, and why."""

    condition: str
    reason: str
    message: str


def available(message: str = "") -> Outcome:
    return Outcome(AVAILABLE, AVAILABLE, message)


def progressing(message: str) -> Outcome:
    return Outcome(PROGRESSING, PROGRESSING, message)


def degraded(reason: str, message: str) -> Outcome:
    return Outcome(DEGRADED, reason or REASON_INTERNAL_ERROR, message)


def find(conditions: Sequence[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    return next((c for c in conditions if c.get("type") == kind), None)


def update_conditions(
    existing: Sequence[dict[str, Any]], outcome: Outcome, generation: int, now: str
) -> list[dict[str, Any]]:
    """The four base conditions after `outcome` (other condition types in `existing` are kept, after them)."""
    true_types = {outcome.condition, UPGRADEABLE} if outcome.condition == AVAILABLE else {outcome.condition}
    out: list[dict[str, Any]] = []
    for kind in BASE_TYPES:
        status = "True" if kind in true_types else "False"
        reason = outcome.reason if kind == outcome.condition else kind
        message = outcome.message if kind == outcome.condition else ""
        old = find(existing, kind)
        since = (
            old["lastTransitionTime"] if old and old.get("status") == status and old.get("lastTransitionTime") else now
        )
        out.append(
            {
                "type": kind,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": since,
                "observedGeneration": generation,
            }
        )
    out.extend(c for c in existing if c.get("type") not in BASE_TYPES)
    return out


def set_condition(
    conditions: Sequence[dict[str, Any]], kind: str, status: bool, reason: str, message: str, generation: int, now: str
) -> list[dict[str, Any]]:
    """`conditions` with `kind` set (`meta.SetStatusCondition`: `lastTransitionTime` moves only when the status
    flips), the others unchanged and in place."""
    text = "True" if status else "False"
    old = find(conditions, kind)
    since = old["lastTransitionTime"] if old and old.get("status") == text and old.get("lastTransitionTime") else now
    new = {
        "type": kind,
        "status": text,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
        "observedGeneration": generation,
    }
    if old is None:
        return [*conditions, new]
    return [new if c.get("type") == kind else c for c in conditions]
