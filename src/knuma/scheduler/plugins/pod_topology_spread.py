"""PodTopologySpread (PreFilter + Filter + PreScore + Score + NormalizeScore), as kube-scheduler's
`pkg/scheduler/framework/plugins/podtopologyspread` (`common.go`, `filtering.go`, `scoring.go`).

Constraints (`filterTopologySpreadConstraints`): the pod's `topologySpreadConstraints` with the
`whenUnsatisfiable` of the extension point (DoNotSchedule for Filter, ScheduleAnyway for Score); the label selector
gets `key In (value)` for each `matchLabelKeys` key the pod has; `minDomains` defaults to 1,
`nodeAffinityPolicy` to Honor, `nodeTaintsPolicy` to Ignore.

Filter (`calPreFilterState`, `Filter`): over every node of the snapshot that has all the constraints' topology keys
and that the constraint's node inclusion policies admit (`matchNodeInclusionPolicies`: the pod's nodeSelector and
required node affinity; untolerated NoSchedule/NoExecute taints), count per constraint and domain the pods in the
pod's namespace that the selector matches (`countPodsMatchSelector`: none for an empty selector). A node passes when
`count(domain) + (1 if the pod matches the selector) - global minimum <= maxSkew`, the global minimum being 0 when
fewer domains than `minDomains` exist. A node without a topology key fails with `node(s) didn't match pod topology
spread constraints (missing required label)` (UnschedulableAndUnresolvable), a skew too large with `node(s) didn't
match pod topology spread constraints` (Unschedulable).

Score (`initPreScoreState`, `PreScore`, `Score`, `NormalizeScore`): feasible nodes without every topology key are
ignored (score 0); per constraint, the domains of the other feasible nodes are weighted by `log(domains + 2)` and
each node scores `sum(count * weight + maxSkew - 1)`, rounded; normalized so that the fewest matching pods score
100: `100 * (max + min - score) / max`.

Left out: default constraints (`defaultingType`), which apply only to pods selected by a Service, ReplicationController,
ReplicaSet or StatefulSet (`buildDefaultConstraints`): knuma does not watch those objects, so a pod without
constraints of its own has none, as upstream's when nothing selects it. Terminating pods are counted (upstream skips
pods with a deletionTimestamp; knuma's pod model does not carry it).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from knuma.api.labelselector import LabelRequirement, LabelSelector, LabelSelectorError, parse_label_selector
from knuma.api.nodeaffinity import RequiredNodeAffinity
from knuma.api.pod import Pod
from knuma.api.taints import NO_EXECUTE, NO_SCHEDULE, Toleration, find_untolerated_taint, tolerations_of
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
from knuma.scheduler.plugins.pod_topology_spread_args import POD_TOPOLOGY_SPREAD, PodTopologySpreadArgs

__all__ = ["ERR_REASON_CONSTRAINTS", "ERR_REASON_MISSING_LABEL", "NAME", "PodTopologySpread"]

NAME = POD_TOPOLOGY_SPREAD
ERR_REASON_CONSTRAINTS = "node(s) didn't match pod topology spread constraints"
ERR_REASON_MISSING_LABEL = ERR_REASON_CONSTRAINTS + " (missing required label)"
HOSTNAME = "kubernetes.io/hostname"
DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
_DO_NOT_SCHEDULE_TAINTS = frozenset({NO_SCHEDULE, NO_EXECUTE})


@dataclass(frozen=True, slots=True)
class _Constraint:
    """upstream's `topologySpreadConstraint`."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    honor_node_affinity: bool = True
    honor_node_taints: bool = False


@dataclass(frozen=True)
class _Placement:
    """What the node inclusion policies read of the incoming pod."""

    required: RequiredNodeAffinity
    tolerations: tuple[Toleration, ...]

    def includes(self, constraint: _Constraint, node: NodeInfo) -> bool:
        """`matchNodeInclusionPolicies`."""
        if constraint.honor_node_affinity and not self.required.matches(node.labels, node.name):
            return False
        if constraint.honor_node_taints and node.taints:
            return find_untolerated_taint(node.taints, self.tolerations, _DO_NOT_SCHEDULE_TAINTS) is None
        return True


@dataclass(frozen=True)
class _FilterState:
    constraints: tuple[_Constraint, ...]
    counts: tuple[dict[str, int], ...]
    """Per constraint: domain (topology value) → matching pods."""
    minimums: tuple[int, ...]
    """Per constraint: the global minimum, 0 below `minDomains` domains."""


@dataclass(frozen=True)
class _ScoreState:
    constraints: tuple[_Constraint, ...]
    ignored: frozenset[str]
    counts: tuple[dict[str, int], ...]
    weights: tuple[float, ...]


_EMPTY_SCORE = _ScoreState((), frozenset(), (), ())


def _count(pods: Sequence[Pod], selector: LabelSelector, namespace: str) -> int:
    """`countPodsMatchSelector`: terminating pods are not counted (kubernetes#87621: a rolling update's new replica
    must not be kept off a domain by the replica it replaces)."""
    if selector.empty:
        return 0
    return sum(1 for p in pods if not p.terminating and p.namespace == namespace and selector.matches(p.labels))


def _constraints(pod: Pod, action: str) -> tuple[_Constraint, ...]:
    """`filterTopologySpreadConstraints`; raises `LabelSelectorError` for an invalid selector."""
    raw = pod.spec.get("topologySpreadConstraints") or ()
    out = []
    for index, c in enumerate(raw):
        if not isinstance(c, Mapping) or c.get("whenUnsatisfiable") != action:
            continue
        where = f"spec.topologySpreadConstraints[{index}]"
        selector = parse_label_selector(c.get("labelSelector"), f"{where}.labelSelector")
        keys = [k for k in c.get("matchLabelKeys") or () if isinstance(k, str) and k in pod.labels]
        if keys:
            extra = [LabelRequirement(k, "In", frozenset((pod.labels[k],))) for k in keys]
            selector = selector.with_requirements(extra)
        min_domains = c.get("minDomains")
        out.append(
            _Constraint(
                max_skew=int(c.get("maxSkew") or 0),
                topology_key=str(c.get("topologyKey") or ""),
                selector=selector,
                min_domains=min_domains if isinstance(min_domains, int) and min_domains > 0 else 1,
                honor_node_affinity=c.get("nodeAffinityPolicy", "Honor") != "Ignore",
                honor_node_taints=c.get("nodeTaintsPolicy", "Ignore") == "Honor",
            )
        )
    return tuple(out)


def _placement(pod: Pod) -> _Placement:
    return _Placement(RequiredNodeAffinity.from_pod_spec(pod.spec), tolerations_of(pod.spec))


def _has_keys(labels: Mapping[str, str], constraints: Sequence[_Constraint]) -> bool:
    """`nodeLabelsMatchSpreadConstraints`."""
    return all(c.topology_key in labels for c in constraints)


class PodTopologySpread:
    name = NAME
    fast_path = FastPathKind.POD_RELATIONS

    def __init__(self, args: PodTopologySpreadArgs | None = None) -> None:
        self.args = args or PodTopologySpreadArgs()

    # -- which pods need the plugin (the fast path's question) ------------------------------------------------

    def own_constraints(self, pod: Pod) -> bool:
        return bool(pod.spec.get("topologySpreadConstraints"))

    def concerned_by(self, namespace: str, labels: Mapping[str, str], pods: Collection[Pod]) -> bool:
        """Placed pods' constraints never concern another pod (spreading is not symmetric)."""
        del namespace, labels, pods
        return False

    # -- PreFilter / Filter -----------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult:
        try:
            found = self._filter_state(state, pod)
        except LabelSelectorError as err:
            return PreFilterResult(Status(Code.ERROR, f"obtaining pod's hard topology spread constraints: {err}", NAME))
        return PreFilterResult(skip=not found.constraints)

    def _filter_state(self, state: CycleState, pod: Pod) -> _FilterState:
        return state.pod_data(f"{NAME}/filter", pod, lambda p: self._compute_filter_state(p, state.nodes))

    def _compute_filter_state(self, pod: Pod, nodes: Sequence[NodeInfo]) -> _FilterState:
        constraints = _constraints(pod, DO_NOT_SCHEDULE)
        if not constraints:
            return _FilterState((), (), ())
        placement = _placement(pod)
        counts: tuple[dict[str, int], ...] = tuple({} for _ in constraints)
        for node in nodes:
            labels = node.labels
            if not _has_keys(labels, constraints):
                continue
            for i, c in enumerate(constraints):
                if not placement.includes(c, node):
                    continue
                value = labels[c.topology_key]
                counts[i][value] = counts[i].get(value, 0) + _count(node.pods, c.selector, pod.namespace)
        minimums = tuple(
            0 if len(by_value) < c.min_domains else min(by_value.values(), default=0)
            for c, by_value in zip(constraints, counts, strict=True)
        )
        return _FilterState(constraints, counts, minimums)

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        try:
            found = self._filter_state(state, pod)
        except LabelSelectorError as err:
            return Status(Code.ERROR, str(err), NAME)
        labels = node.labels
        for c, by_value, minimum in zip(found.constraints, found.counts, found.minimums, strict=True):
            value = labels.get(c.topology_key)
            if value is None:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_MISSING_LABEL, NAME)
            self_match = 1 if c.selector.matches(pod.labels) else 0
            skew = by_value.get(value, 0) + self_match - minimum
            if skew > c.max_skew:
                detail = f"{c.topology_key}={value}: skew {skew} > maxSkew {c.max_skew}"
                return Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS, NAME, detail)
        return SUCCESS

    # -- PreScore / Score / NormalizeScore --------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, feasible: Sequence[NodeInfo]) -> None:
        state.set_pod_data(f"{NAME}/score", pod, self._compute_score_state(pod, feasible, state.nodes))

    def _score_state(self, state: CycleState, pod: Pod) -> _ScoreState:
        # Score without PreScore (explain): every node counts as feasible
        return state.pod_data(f"{NAME}/score", pod, lambda p: self._compute_score_state(p, state.nodes, state.nodes))

    def _compute_score_state(self, pod: Pod, feasible: Sequence[NodeInfo], nodes: Sequence[NodeInfo]) -> _ScoreState:
        try:
            constraints = _constraints(pod, SCHEDULE_ANYWAY)
        except LabelSelectorError:
            return _EMPTY_SCORE
        if not constraints:
            return _EMPTY_SCORE
        ignored: set[str] = set()
        counts: tuple[dict[str, int], ...] = tuple({} for _ in constraints)
        for node in feasible:  # initPreScoreState (requireAllTopologies: the pod's own constraints)
            labels = node.labels
            if not _has_keys(labels, constraints):
                ignored.add(node.name)
                continue
            for i, c in enumerate(constraints):
                if c.topology_key != HOSTNAME:  # per-node counts are taken in Score
                    counts[i].setdefault(labels[c.topology_key], 0)
        weights = tuple(
            math.log((len(feasible) - len(ignored) if c.topology_key == HOSTNAME else len(counts[i])) + 2)
            for i, c in enumerate(constraints)
        )
        placement = _placement(pod)
        for node in nodes:
            labels = node.labels
            if not node.pods or not _has_keys(labels, constraints):
                continue
            for i, c in enumerate(constraints):
                value = labels[c.topology_key]
                if value not in counts[i] or not placement.includes(c, node):
                    continue
                counts[i][value] += _count(node.pods, c.selector, pod.namespace)
        return _ScoreState(constraints, frozenset(ignored), counts, weights)

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        found = self._score_state(state, pod)
        if not found.constraints or node.name in found.ignored:
            return 0
        labels = node.labels
        total = 0.0
        for c, by_value, weight in zip(found.constraints, found.counts, found.weights, strict=True):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == HOSTNAME:
                count = _count(node.pods, c.selector, pod.namespace)
            else:
                count = by_value.get(value, 0)
            total += count * weight + (c.max_skew - 1)
        return math.floor(total + 0.5)  # Go's math.Round for non-negative scores

    def normalize(self, scores: Mapping[str, int]) -> dict[str, int]:
        return _normalize(scores, frozenset())

    def normalize_cycle(self, state: CycleState, pod: Pod, scores: Mapping[str, int]) -> dict[str, int]:
        """`NormalizeScore`, which reads PreScore's ignored nodes."""
        found = self._score_state(state, pod)
        if not found.constraints:
            return dict(scores)
        return _normalize(scores, found.ignored)


def _normalize(scores: Mapping[str, int], ignored: frozenset[str]) -> dict[str, int]:
    counted = [s for name, s in scores.items() if name not in ignored]
    low = min(counted, default=0)
    high = max(0, *counted) if counted else 0
    out = {}
    for name, score in scores.items():
        if name in ignored:
            out[name] = 0
        elif high == 0:
            out[name] = MAX_NODE_SCORE
        else:
            out[name] = MAX_NODE_SCORE * (high + low - score) // high
    return out
