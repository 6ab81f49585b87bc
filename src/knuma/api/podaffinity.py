"""Pod affinity and anti-affinity terms of a pod, processed as kube-scheduler's `framework.NewPodInfo` does
(`pkg/scheduler/framework/types.go`: `getAffinityTerms`, `getWeightedAffinityTerms`, `newAffinityTerm`,
`getNamespacesFromPodAffinityTerm`, `AffinityTerm.Matches`).

- A term's namespaces: its `namespaces`, or the pod's own namespace when it names none and has no
  `namespaceSelector`; a `namespaceSelector` of `{}` selects every namespace, a missing one none.
- `matchLabelKeys` / `mismatchLabelKeys` (KEP-3633): kube-apiserver merges them into the term's `labelSelector` when
  the pod is created (`pkg/registry/core/pod/strategy.go`, `applyMatchLabelKeysAndMismatchLabelKeys`: `key In
  (value)` / `key NotIn (value)` for each key the pod has as a label; nothing for a missing selector), and the
  scheduler reads only the selector. knuma merges them here too, so that pods from an API server that does not merge
  them (`knuma apiserver`) behave the same; after kube-apiserver's merge the same requirement again changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from knuma.api.labelselector import NOTHING, LabelRequirement, LabelSelector, LabelSelectorError, parse_label_selector

__all__ = ["AffinityTerm", "PodAffinityTerms", "WeightedAffinityTerm", "pod_affinity_terms"]

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    namespaces: frozenset[str]
    selector: LabelSelector
    topology_key: str
    namespace_selector: LabelSelector = NOTHING

    def matches(self, namespace: str, labels: Mapping[str, str], namespace_labels: Mapping[str, str]) -> bool:
        """`AffinityTerm.Matches`: the pod's namespace is named (or its labels match the namespace selector) and its
        labels match the selector."""
        if namespace in self.namespaces or self.namespace_selector.matches(namespace_labels):
            return self.selector.matches(labels)
        return False


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True)
class PodAffinityTerms:
    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()
    has_affinity: bool = False
    """`spec.affinity.podAffinity` or `podAntiAffinity` is set (upstream's `NodeInfo.PodsWithAffinity` holds such
    pods)."""
    error: str = ""
    """Why the terms could not be read (an invalid selector); the terms are then empty."""

    @property
    def has_preferred(self) -> bool:
        return bool(self.preferred_affinity or self.preferred_anti_affinity)

    @property
    def has_required(self) -> bool:
        return bool(self.required_affinity or self.required_anti_affinity)


NO_TERMS = PodAffinityTerms()


def _merged_selector(raw: Mapping[str, Any], labels: Mapping[str, str], path: str) -> LabelSelector:
    selector = parse_label_selector(raw.get("labelSelector"), f"{path}.labelSelector")
    extra: list[LabelRequirement] = []
    for field, operator in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")):
        for key in raw.get(field) or ():
            if isinstance(key, str) and key in labels:
                extra.append(LabelRequirement(key, operator, frozenset((labels[key],))))
    return selector.with_requirements(extra)


def _term(raw: Any, namespace: str, labels: Mapping[str, str], path: str) -> AffinityTerm:
    if not isinstance(raw, Mapping):
        raise LabelSelectorError(f"{path}: must be a mapping")
    names = raw.get("namespaces") or []
    if not isinstance(names, Sequence) or isinstance(names, str):
        raise LabelSelectorError(f"{path}.namespaces: must be a list")
    raw_ns_selector = raw.get("namespaceSelector")
    namespaces = frozenset(str(n) for n in names)
    if not namespaces and raw_ns_selector is None:
        namespaces = frozenset((namespace,))
    ns_selector = parse_label_selector(raw_ns_selector, f"{path}.namespaceSelector")
    return AffinityTerm(namespaces, _merged_selector(raw, labels, path), str(raw.get("topologyKey") or ""), ns_selector)


def _terms(raw: Any, namespace: str, labels: Mapping[str, str], path: str) -> tuple[AffinityTerm, ...]:
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        return ()
    return tuple(_term(item, namespace, labels, f"{path}[{i}]") for i, item in enumerate(raw))


def _weighted(raw: Any, namespace: str, labels: Mapping[str, str], path: str) -> tuple[WeightedAffinityTerm, ...]:
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        return ()
    out = []
    for i, item in enumerate(raw):
        where = f"{path}[{i}]"
        if not isinstance(item, Mapping):
            raise LabelSelectorError(f"{where}: must be a mapping")
        weight = item.get("weight")
        if not isinstance(weight, int) or isinstance(weight, bool):
            raise LabelSelectorError(f"{where}.weight: must be an integer")
        out.append(WeightedAffinityTerm(_term(item.get("podAffinityTerm"), namespace, labels, where), weight))
    return tuple(out)


def pod_affinity_terms(namespace: str, labels: Mapping[str, str], spec: Mapping[str, Any]) -> PodAffinityTerms:
    """The processed terms of a pod (`NewPodInfo`)."""
    affinity = spec.get("affinity")
    if not isinstance(affinity, Mapping):
        return NO_TERMS
    pod_affinity = affinity.get("podAffinity")
    anti = affinity.get("podAntiAffinity")
    if pod_affinity is None and anti is None:
        return NO_TERMS
    pa = pod_affinity if isinstance(pod_affinity, Mapping) else {}
    pan = anti if isinstance(anti, Mapping) else {}
    base = "spec.affinity"
    try:
        return PodAffinityTerms(
            required_affinity=_terms(pa.get(REQUIRED), namespace, labels, f"{base}.podAffinity.{REQUIRED}"),
            required_anti_affinity=_terms(pan.get(REQUIRED), namespace, labels, f"{base}.podAntiAffinity.{REQUIRED}"),
            preferred_affinity=_weighted(pa.get(PREFERRED), namespace, labels, f"{base}.podAffinity.{PREFERRED}"),
            preferred_anti_affinity=_weighted(
                pan.get(PREFERRED), namespace, labels, f"{base}.podAntiAffinity.{PREFERRED}"
            ),
            has_affinity=True,
        )
    except LabelSelectorError as err:
        return PodAffinityTerms(has_affinity=True, error=str(err))
