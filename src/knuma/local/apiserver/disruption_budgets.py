"""PodDisruptionBudget validation as kube-apiserver's (`pkg/apis/policy/validation`: `ValidatePodDisruptionBudgetSpec`,
`ValidatePodDisruptionBudgetStatusUpdate`; `appsvalidation.ValidatePositiveIntOrPercent` and
`IsNotMoreThan100Percent`; `metav1validation.ValidateLabelSelector` for the operators and their values).

`knuma apiserver` serves PodDisruptionBudgets so that the scheduler's preemption can read them; it runs no
disruption controller, so `status` is whatever a client writes (kube-controller-manager computes it on a cluster).
"""

from __future__ import annotations

import json
import re
from typing import Any

from knuma.api.types import JsonObj

__all__ = ["budget_causes"]

Cause = tuple[str, str, str]

PERCENT = re.compile(r"[0-9]+%")
PERCENT_MESSAGE = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for "
    "validation is '[0-9]+%')"
)
EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _shown(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _int_or_percent(value: Any, path: str) -> list[Cause]:
    """`ValidatePositiveIntOrPercent` + `IsNotMoreThan100Percent`."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return [
            ("FieldValueInvalid", path, f"Invalid value: {_shown(value)}: must be an integer or percentage (e.g '5%')")
        ]
    if isinstance(value, int):
        if value < 0:
            return [("FieldValueInvalid", path, f"Invalid value: {value}: must be greater than or equal to 0")]
        return []
    if not PERCENT.fullmatch(value):
        return [("FieldValueInvalid", path, f'Invalid value: "{value}": {PERCENT_MESSAGE}')]
    if int(value[:-1]) > 100:
        return [("FieldValueInvalid", path, f'Invalid value: "{value}": must not be greater than 100%')]
    return []


def _selector(selector: Any, path: str) -> list[Cause]:
    if not isinstance(selector, dict):
        return []
    causes: list[Cause] = []
    for index, expression in enumerate(selector.get("matchExpressions") or []):
        where = f"{path}.matchExpressions[{index}]"
        if not isinstance(expression, dict):
            continue
        operator, values = expression.get("operator"), expression.get("values") or []
        if operator in ("In", "NotIn") and not values:
            causes.append(
                (
                    "FieldValueRequired",
                    f"{where}.values",
                    "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                )
            )
        elif operator in ("Exists", "DoesNotExist") and values:
            causes.append(
                (
                    "FieldValueForbidden",
                    f"{where}.values",
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
        elif operator not in OPERATORS:
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{where}.operator",
                    f"Invalid value: {_shown(operator)}: not a valid selector operator",
                )
            )
    return causes


def budget_causes(obj: JsonObj) -> list[Cause]:
    """Every problem kube-apiserver reports for a PodDisruptionBudget written whole or through `/status`."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    causes: list[Cause] = []
    minimum, maximum = spec.get("minAvailable"), spec.get("maxUnavailable")
    if minimum is not None and maximum is not None:
        shown = json.dumps({"maxUnavailable": maximum, "minAvailable": minimum}, sort_keys=True)
        causes.append(
            ("FieldValueInvalid", "spec", f"Invalid value: {shown}: minAvailable and maxUnavailable cannot be both set")
        )
    if minimum is not None:
        causes += _int_or_percent(minimum, "spec.minAvailable")
    if maximum is not None:
        causes += _int_or_percent(maximum, "spec.maxUnavailable")
    causes += _selector(spec.get("selector"), "spec.selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in EVICTION_POLICIES:
        supported = ", ".join(f'"{p}"' for p in EVICTION_POLICIES)
        causes.append(
            (
                "FieldValueNotSupported",
                "spec.unhealthyPodEvictionPolicy",
                f"Unsupported value: {_shown(policy)}: supported values: {supported}",
            )
        )
    for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        value = status.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            causes.append(
                ("FieldValueInvalid", f"status.{key}", f"Invalid value: {value}: must be greater than or equal to 0")
            )
    return causes
