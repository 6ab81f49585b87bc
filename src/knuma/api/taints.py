"""Node taints and pod tolerations (core/v1), with the matching rules of `k8s.io/api/core/v1` `ToleratesTaint`.

Parsed leniently from raw objects: the API server validated them; what does not parse is treated as no taint / a
toleration that tolerates nothing, so a malformed object never makes a pod land where it must not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "NO_EXECUTE",
    "NO_SCHEDULE",
    "PREFER_NO_SCHEDULE",
    "TAINT_NODE_UNSCHEDULABLE",
    "Taint",
    "Toleration",
    "find_untolerated_taint",
    "parse_taints",
    "taints_of",
    "tolerations_of",
    "tolerations_tolerate_taint",
]

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = ""


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = ""
    """`Equal` (also when empty) or `Exists`; anything else tolerates nothing."""
    value: str = ""
    effect: str = ""
    """Empty: every effect."""

    def tolerates(self, taint: Taint) -> bool:
        """`Toleration.ToleratesTaint`: an empty key with `Exists` matches every taint."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


def _str(raw: Mapping[str, Any], key: str) -> str:
    value = raw.get(key)
    return value if isinstance(value, str) else ""


def taints_of(node: Mapping[str, Any] | None) -> tuple[Taint, ...]:
    """`spec.taints` of a core/v1 Node object."""
    if not node:
        return ()
    return parse_taints((node.get("spec") or {}).get("taints") or ())


def parse_taints(raw: Iterable[Any]) -> tuple[Taint, ...]:
    """A list of core/v1 taints (entries without a key left out)."""
    return tuple(
        Taint(_str(t, "key"), _str(t, "value"), _str(t, "effect"))
        for t in raw
        if isinstance(t, Mapping) and t.get("key")
    )


def tolerations_of(spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
    """`spec.tolerations` of a pod spec."""
    raw = spec.get("tolerations") or ()
    return tuple(
        Toleration(_str(t, "key"), _str(t, "operator"), _str(t, "value"), _str(t, "effect"))
        for t in raw
        if isinstance(t, Mapping)
    )


def tolerations_tolerate_taint(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


def find_untolerated_taint(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], effects: frozenset[str]
) -> Taint | None:
    """`FindMatchingUntoleratedTaint`: the first taint (in node order) with one of `effects` that no toleration
    tolerates."""
    for taint in taints:
        if taint.effect in effects and not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None
