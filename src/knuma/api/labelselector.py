"""Label selectors (`metav1.LabelSelector`) with the semantics of `metav1.LabelSelectorAsSelector` and
`labels.Requirement.Matches`: what pod affinity terms, their namespace selectors and topology spread constraints
select.

- `matchLabels` and `matchExpressions` are ANDed; a selector with neither (`{}`) selects everything, and a missing
  selector (None) selects nothing (`LabelSelectorAsSelector(nil)` is `labels.Nothing()`).
- `In` / `NotIn` need at least one value, `Exists` / `DoesNotExist` none; `NotIn` and `DoesNotExist` match objects
  without the key.

An invalid selector raises `LabelSelectorError` (upstream's `NewPodInfo` parse error), naming the field path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from knuma.errors import InvalidInput

__all__ = ["EVERYTHING", "NOTHING", "LabelRequirement", "LabelSelector", "LabelSelectorError", "parse_label_selector"]

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


class LabelSelectorError(InvalidInput):
    """A label selector kube-apiserver would have refused."""


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """`labels.Requirement.Matches` for the four label selector operators."""
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        if self.operator == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "Exists":
            return self.key in labels
        return self.key not in labels  # DoesNotExist


@dataclass(frozen=True, slots=True)
class LabelSelector:
    requirements: tuple[LabelRequirement, ...] = ()
    nothing: bool = False
    """`labels.Nothing()`: matches no object (a missing selector)."""

    @property
    def empty(self) -> bool:
        """`labels.Everything()`: no requirement (`{}`)."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    def with_requirements(self, extra: Sequence[LabelRequirement]) -> LabelSelector:
        """The selector ANDed with `extra` (a nothing-selector stays nothing)."""
        if self.nothing or not extra:
            return self
        return LabelSelector(self.requirements + tuple(extra))


EVERYTHING = LabelSelector()
NOTHING = LabelSelector(nothing=True)


def _strings(raw: Any, path: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, Sequence) or isinstance(raw, str) or not all(isinstance(v, str) for v in raw):
        raise LabelSelectorError(f"{path}: must be a list of strings")
    return list(raw)


def parse_label_selector(raw: Any, path: str = "labelSelector") -> LabelSelector:
    """`metav1.LabelSelectorAsSelector`: None selects nothing, `{}` everything."""
    if raw is None:
        return NOTHING
    if not isinstance(raw, Mapping):
        raise LabelSelectorError(f"{path}: must be a mapping, got {type(raw).__name__}")
    requirements: list[LabelRequirement] = []
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise LabelSelectorError(f"{path}.matchLabels: must be a mapping")
    for key, value in match_labels.items():
        if not isinstance(value, str):
            raise LabelSelectorError(f"{path}.matchLabels.{key}: must be a string")
        requirements.append(LabelRequirement(str(key), "In", frozenset((value,))))
    expressions = raw.get("matchExpressions") or []
    if not isinstance(expressions, Sequence) or isinstance(expressions, str):
        raise LabelSelectorError(f"{path}.matchExpressions: must be a list")
    for index, expression in enumerate(expressions):
        where = f"{path}.matchExpressions[{index}]"
        if not isinstance(expression, Mapping):
            raise LabelSelectorError(f"{where}: must be a mapping")
        key, operator = expression.get("key"), expression.get("operator")
        if not isinstance(key, str) or not key:
            raise LabelSelectorError(f"{where}.key: required")
        if operator not in OPERATORS:
            raise LabelSelectorError(f"{where}.operator: must be one of {', '.join(OPERATORS)}, got {operator!r}")
        values = _strings(expression.get("values"), f"{where}.values")
        if operator in ("In", "NotIn") and not values:
            raise LabelSelectorError(f"{where}.values: must be non-empty for operator {operator}")
        if operator in ("Exists", "DoesNotExist") and values:
            raise LabelSelectorError(f"{where}.values: must be empty for operator {operator}")
        requirements.append(LabelRequirement(key, str(operator), frozenset(values)))
    return LabelSelector(tuple(requirements))
