"""InterPodAffinity (PreFilter + Filter + PreScore + Score + NormalizeScore), as kube-scheduler's
`pkg/scheduler/framework/plugins/interpodaffinity` (`filtering.go`, `scoring.go`).

Filter, from counts per topology pair (label key, value) PreFilter computes over every node of the snapshot
(`getExistingAntiAffinityCounts`, `getIncomingAffinityAntiAffinityCounts`):

- the pod's required affinity (`satisfyPodAffinity`): every term's topology key is on the node, and some pod in that
  domain matches all the terms; or no pod anywhere matches all of them and the pod matches its own terms (the first
  pod of a group). Else `node(s) didn't match pod affinity rules`, UnschedulableAndUnresolvable.
- the pod's required anti-affinity (`satisfyPodAntiAffinity`): no pod matching a term in the node's domain of that
  term. Else `node(s) didn't match pod anti-affinity rules`, Unschedulable.
- existing pods' required anti-affinity (`satisfyExistingPodsAntiAffinity`, the symmetry): no pod whose
  anti-affinity term matches the incoming pod in a domain the node is in. Else `node(s) didn't satisfy existing pods
  anti-affinity rules`, Unschedulable.

PreFilter skips the plugin when the pod has no required terms and no existing pod's anti-affinity matches it.

Score (`PreScore`, `processExistingPod`): per topology pair, the weights of the incoming pod's preferred terms that
existing pods match (anti-affinity negative), of existing pods' preferred terms the incoming pod matches, and
`hardPodAffinityWeight` for each of their required affinity terms it matches; a node scores the sum over its labels.
NormalizeScore maps min..max to 0..100.

Namespace selectors read the namespaces' labels through `namespace_labels` (the daemon's namespace informer; offline
every namespace has no labels, so only `namespaceSelector: {}` selects any). The pods counted are the snapshot's:
bound pods and the ones this scheduler assumed, so replicas scheduled back to back see each other.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from knuma.api.pod import Pod
from knuma.api.podaffinity import AffinityTerm, PodAffinityTerms, WeightedAffinityTerm
from knuma.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    SUCCESS,
    Code,
    CycleState,
    FastPathKind,
    NodeInfo,
    PreFilterResult,
    Status,
)
from knuma.scheduler.plugins.inter_pod_affinity_args import INTER_POD_AFFINITY, InterPodAffinityArgs

__all__ = [
    "ERR_REASON_AFFINITY",
    "ERR_REASON_ANTI_AFFINITY",
    "ERR_REASON_EXISTING_ANTI_AFFINITY",
    "NAME",
    "InterPodAffinity",
    "NamespaceLabels",
]

NAME = INTER_POD_AFFINITY
ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

NamespaceLabels = Callable[[str], Mapping[str, str]]
Pair = tuple[str, str]
_NO_LABELS: Mapping[str, str] = {}


def _no_namespace_labels(namespace: str) -> Mapping[str, str]:
    del namespace
    return _NO_LABELS


@dataclass(frozen=True)
class _FilterState:
    terms: PodAffinityTerms
    affinity_counts: dict[Pair, int]
    anti_affinity_counts: dict[Pair, int]
    existing_anti_affinity_counts: dict[Pair, int]


def _matches_all(terms: Sequence[AffinityTerm], pod: Pod, ns_labels: Mapping[str, str]) -> bool:
    """`podMatchesAllAffinityTerms`: false for no terms."""
    return bool(terms) and all(t.matches(pod.namespace, pod.labels, ns_labels) for t in terms)


class InterPodAffinity:
    name = NAME
    fast_path = FastPathKind.POD_RELATIONS

    def __init__(self, args: InterPodAffinityArgs | None = None, namespace_labels: NamespaceLabels | None = None):
        self.args = args or InterPodAffinityArgs()
        self.namespace_labels: NamespaceLabels = namespace_labels or _no_namespace_labels
        """The labels of a namespace (empty when unknown); the daemon points it at its namespace informer."""

    # -- which pods need the plugin (the fast path's question) ------------------------------------------------

    def own_constraints(self, pod: Pod) -> bool:
        """The pod has pod affinity or anti-affinity of its own."""
        return pod.affinity_terms.has_affinity

    def concerned_by(self, namespace: str, labels: Mapping[str, str], pods: Collection[Pod]) -> bool:
        """Whether a pod without terms of its own, in `namespace` with `labels`, could be filtered or scored
        differently on some node because of `pods` (the placed pods with affinity terms): one of their required
        anti-affinity terms matches it, or (unless preferred terms of existing pods are ignored) one of their
        required affinity terms (with a hard weight) or preferred terms does."""
        ns_labels = self.namespace_labels(namespace)
        score_existing = not self.args.ignore_preferred_terms_of_existing_pods
        for other in pods:
            terms = other.affinity_terms
            candidates: list[AffinityTerm] = list(terms.required_anti_affinity)
            if score_existing:
                if self.args.hard_pod_affinity_weight > 0:
                    candidates += terms.required_affinity
                candidates += [w.term for w in (*terms.preferred_affinity, *terms.preferred_anti_affinity)]
            if any(t.matches(namespace, labels, ns_labels) for t in candidates):
                return True
        return False

    # -- PreFilter / Filter -----------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult:
        terms = pod.affinity_terms
        if terms.error:
            return PreFilterResult(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"parsing pod: {terms.error}", NAME))
        found = self._filter_state(state, pod)
        if not found.existing_anti_affinity_counts and not terms.has_required:
            return PreFilterResult(skip=True)
        return PreFilterResult()

    def _filter_state(self, state: CycleState, pod: Pod) -> _FilterState:
        return state.pod_data(f"{NAME}/filter", pod, lambda p: self._compute_filter_state(p, state.nodes))

    def _compute_filter_state(self, pod: Pod, nodes: Sequence[NodeInfo]) -> _FilterState:
        terms = pod.affinity_terms
        ns_labels = self.namespace_labels(pod.namespace)
        existing: dict[Pair, int] = {}
        for node in nodes:  # getExistingAntiAffinityCounts, over nodes with pods with required anti-affinity
            if not node.pods_with_required_anti_affinity:
                continue
            node_labels = node.labels
            for other in node.pods_with_required_anti_affinity:
                for term in other.affinity_terms.required_anti_affinity:
                    value = node_labels.get(term.topology_key)
                    if value is not None and term.matches(pod.namespace, pod.labels, ns_labels):
                        pair = (term.topology_key, value)
                        existing[pair] = existing.get(pair, 0) + 1
        affinity: dict[Pair, int] = {}
        anti: dict[Pair, int] = {}
        if terms.has_required:  # getIncomingAffinityAntiAffinityCounts
            for node in nodes:
                if not node.pods:
                    continue
                node_labels = node.labels
                for other in node.pods:
                    other_ns = self.namespace_labels(other.namespace)
                    if _matches_all(terms.required_affinity, other, other_ns):
                        for term in terms.required_affinity:
                            value = node_labels.get(term.topology_key)
                            if value is not None:
                                affinity[term.topology_key, value] = affinity.get((term.topology_key, value), 0) + 1
                    for term in terms.required_anti_affinity:
                        value = node_labels.get(term.topology_key)
                        if value is not None and term.matches(other.namespace, other.labels, other_ns):
                            anti[term.topology_key, value] = anti.get((term.topology_key, value), 0) + 1
        return _FilterState(terms, affinity, anti, existing)

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        found = self._filter_state(state, pod)
        labels = node.labels
        if not self._satisfies_affinity(found, pod, labels):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_AFFINITY, NAME)
        for term in found.terms.required_anti_affinity:  # satisfyPodAntiAffinity
            value = labels.get(term.topology_key)
            if value is not None and found.anti_affinity_counts.get((term.topology_key, value), 0) > 0:
                return Status(Code.UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY, NAME)
        if found.existing_anti_affinity_counts:  # satisfyExistingPodsAntiAffinity
            for pair in labels.items():
                if found.existing_anti_affinity_counts.get(pair, 0) > 0:
                    return Status(Code.UNSCHEDULABLE, ERR_REASON_EXISTING_ANTI_AFFINITY, NAME)
        return SUCCESS

    def _satisfies_affinity(self, found: _FilterState, pod: Pod, labels: Mapping[str, str]) -> bool:
        """`satisfyPodAffinity`, with the first-pod-of-a-group exception."""
        pods_exist = True
        for term in found.terms.required_affinity:
            value = labels.get(term.topology_key)
            if value is None:
                return False  # every topology key must be on the node
            if found.affinity_counts.get((term.topology_key, value), 0) <= 0:
                pods_exist = False
        if pods_exist:
            return True
        ns_labels = self.namespace_labels(pod.namespace)
        return not found.affinity_counts and _matches_all(found.terms.required_affinity, pod, ns_labels)

    # -- PreScore / Score / NormalizeScore --------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, feasible: Sequence[NodeInfo]) -> None:
        del feasible  # upstream scores from every node of the snapshot
        self._topology_score(state, pod)

    def _topology_score(self, state: CycleState, pod: Pod) -> dict[str, dict[str, int]]:
        return state.pod_data(f"{NAME}/score", pod, lambda p: self._compute_topology_score(p, state.nodes))

    def _compute_topology_score(self, pod: Pod, nodes: Sequence[NodeInfo]) -> dict[str, dict[str, int]]:
        terms = pod.affinity_terms
        has_constraints = terms.has_preferred
        scores: dict[str, dict[str, int]] = {}
        if terms.error or (self.args.ignore_preferred_terms_of_existing_pods and not has_constraints):
            return scores
        ns_labels = self.namespace_labels(pod.namespace)

        def add(term: AffinityTerm, weight: int, target: Pod, target_ns: Mapping[str, str], node: NodeInfo) -> None:
            """`scoreMap.processTerm`."""
            if term.matches(target.namespace, target.labels, target_ns):
                value = node.labels.get(term.topology_key)
                if value is not None:
                    by_value = scores.setdefault(term.topology_key, {})
                    by_value[value] = by_value.get(value, 0) + weight

        def add_all(
            weighted: Sequence[WeightedAffinityTerm], sign: int, target: Pod, ns: Mapping[str, str], node: NodeInfo
        ) -> None:
            for w in weighted:
                add(w.term, w.weight * sign, target, ns, node)

        hard = self.args.hard_pod_affinity_weight
        for node in nodes:
            others = node.pods if has_constraints else node.pods_with_affinity
            if not others or not node.labels:
                continue
            for other in others:  # processExistingPod
                other_ns = self.namespace_labels(other.namespace)
                add_all(terms.preferred_affinity, 1, other, other_ns, node)
                add_all(terms.preferred_anti_affinity, -1, other, other_ns, node)
                existing = other.affinity_terms
                if hard > 0:
                    for term in existing.required_affinity:
                        add(term, hard, pod, ns_labels, node)
                add_all(existing.preferred_affinity, 1, pod, ns_labels, node)
                add_all(existing.preferred_anti_affinity, -1, pod, ns_labels, node)
        return scores

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        """The raw sum over the node's labels of the topology scores (negative for anti-affinity)."""
        scores = self._topology_score(state, pod)
        if not scores:
            return 0
        labels = node.labels
        return sum(by_value.get(labels[key], 0) for key, by_value in scores.items() if key in labels)

    def normalize(self, scores: Mapping[str, int]) -> dict[str, int]:
        """`NormalizeScore`: `100 * (score - min) / (max - min)`, truncated; 0 everywhere when all are equal."""
        if not scores:
            return {}
        low, high = min(scores.values()), max(scores.values())
        diff = high - low
        if diff <= 0:
            return dict.fromkeys(scores, 0)
        return {name: int(float(MAX_NODE_SCORE) * ((s - low) / diff)) for name, s in scores.items()}
