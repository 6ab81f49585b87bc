"""A small scheduling framework in kube-scheduler's shape: a profile runs Filter plugins, then Score plugins, per node.

Plugins are pure: they read a `Pod` and a `NodeInfo` (a snapshot) and return a `Status` or a score in 0..100. A
`CycleState` carries what one plugin computed for a (pod, node) pair to later extension points (the NUMA plugin's
kubelet prediction, for Score and Reserve).

Optional extension points, used when a plugin defines them (kube-scheduler's semantics):
- `pre_filter(state, pod) -> PreFilterResult` on a filter: once per pod, before any node. It can reject the pod on
  every node, restrict the nodes worth filtering (NodeAffinity's `matchFields metadata.name`), or skip the plugin's
  Filter for this pod.
- `normalize(scores) -> scores` on a scorer (`NormalizeScore`): maps the raw scores of the feasible nodes, by node
  name, to 0..100 before the weight applies (TaintToleration reverses, NodeAffinity scales to the best node).
- `pre_enqueue(pod) -> Status` (`Profile.pre_enqueue`): whether the pod may enter the active queue at all
  (SchedulingGates); the daemon asks, `schedule_one` does not.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from knuma.api.disruption import DisruptionBudget
from knuma.api.nodeaffinity import node_labels
from knuma.api.pod import Pod
from knuma.api.ports import HostPort
from knuma.api.resources import ResourceList
from knuma.api.taints import Taint, taints_of
from knuma.scheduler.framework.postfilter import Preemption
from knuma.topology.node import NodeTopology

__all__ = [
    "MAX_NODE_SCORE",
    "BindWindowFilter",
    "Code",
    "CycleState",
    "FastPathKind",
    "FilterPlugin",
    "NodeInfo",
    "NodeResult",
    "NodeWithout",
    "OneNodeFilters",
    "PluginResult",
    "PostFilterPlugin",
    "PreEnqueuePlugin",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "Profile",
    "ScheduleResult",
    "ScoreNormalizer",
    "ScorePlugin",
    "Status",
    "nodes_available",
    "schedule_one",
]

T = TypeVar("T")

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


class Code(enum.StrEnum):
    SUCCESS = "Success"
    UNSCHEDULABLE = "Unschedulable"
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"
    ERROR = "Error"


@dataclass(frozen=True, slots=True)
class Status:
    code: Code = Code.SUCCESS
    reason: str = ""
    """The message kube-scheduler aggregates in `FailedScheduling` events (`cannot align container`)."""
    plugin: str = ""
    detail: str = ""
    """Why, for humans: which resource, which container; not part of the aggregated reason."""

    @property
    def ok(self) -> bool:
        return self.code is Code.SUCCESS


SUCCESS = Status()


@dataclass(frozen=True)
class NodeInfo:
    """What the scheduler knows about one node in a cycle."""

    name: str
    allocatable: ResourceList = field(default_factory=dict)
    """Node-level allocatable (`status.allocatable`); empty when no Node object is known."""
    requested: ResourceList = field(default_factory=dict)
    """Sum of the effective requests of pods already on the node."""
    pod_count: int = 0
    topology: NodeTopology | None = None
    """The node's NUMA view from its NodeResourceTopology (after reservations); None without NRT data."""
    manifest: Mapping[str, Any] | None = None
    """The core/v1 Node object, for plugins that read labels, taints or conditions."""
    used_ports: frozenset[HostPort] = frozenset()
    """Host ports taken by the pods on the node (`knuma.api.ports.pod_host_ports` of each), for NodePorts."""
    non_zero_requested: ResourceList | None = None
    """kube-scheduler's `NonZeroRequested`: cpu and memory of the pods on the node, a container without a request
    counting 100m / 200Mi (`node_resources_fit.non_zero_request`); what LeastAllocated scoring reads. None: same as
    `requested` (every pod on the node requests cpu and memory)."""
    nrt_fresh: bool = True
    """The NRT cache says the NUMA data may be used (upstream's `CachedNRTInfo.Fresh`); False: the NUMA plugin rejects
    the node (`invalid node topology data`) for every pod it would check."""
    pods: tuple[Pod, ...] = ()
    """The pods on the node, bound or assumed by this scheduler (kube-scheduler's `NodeInfo.Pods`): what
    InterPodAffinity and PodTopologySpread count. Empty where the caller knows none (a node file)."""
    evicted: frozenset[str] = frozenset()
    """Keys of the pods a preemption's dry run took off this copy of the node (its victims): what they alone hold
    elsewhere than in `requested` and `topology` (DRA devices) is free too."""

    @cached_property
    def pods_with_affinity(self) -> tuple[Pod, ...]:
        """`NodeInfo.PodsWithAffinity`: pods with pod affinity or anti-affinity."""
        return tuple(p for p in self.pods if p.affinity_terms.has_affinity)

    @cached_property
    def pods_with_required_anti_affinity(self) -> tuple[Pod, ...]:
        """`NodeInfo.PodsWithRequiredAntiAffinity`."""
        return tuple(p for p in self.pods_with_affinity if p.affinity_terms.required_anti_affinity)

    @cached_property
    def labels(self) -> Mapping[str, str]:
        """`metadata.labels` of the Node object (empty without one)."""
        return node_labels(self.manifest)

    @cached_property
    def taints(self) -> tuple[Taint, ...]:
        """`spec.taints` of the Node object."""
        return taints_of(self.manifest)

    @property
    def unschedulable(self) -> bool:
        """`spec.unschedulable` (cordoned)."""
        return bool(self.manifest and (self.manifest.get("spec") or {}).get("unschedulable"))

    @property
    def numa(self) -> NodeTopology | None:
        """The NUMA view, or None when there is none to align against: no NRT, or an NRT without any valid NUMA
        zone (e.g. zones named `numa-node-0`, which upstream ignores too)."""
        return self.topology if self.topology is not None and self.topology.zones else None

    @property
    def has_node_object(self) -> bool:
        return self.manifest is not None

    def with_usage(self, **changes: Any) -> NodeInfo:
        """A copy with other pods or usage (`requested`, `pods`, `topology`, ...) and the same Node object: what
        is derived from the Node object alone (labels, taints) is carried over instead of parsed again (preemption
        builds one such copy per dry-run check)."""
        assert "manifest" not in changes and "name" not in changes
        copy = replace(self, **changes)
        for derived in ("labels", "taints"):
            if derived in self.__dict__:
                copy.__dict__[derived] = self.__dict__[derived]
        return copy


class CycleState(dict[tuple[str, str], Any]):
    """Per-cycle scratch data keyed by (plugin name, node name); (plugin name, "") holds per-pod data."""

    nodes: Sequence[NodeInfo] = ()
    """Every node of the cycle's snapshot, as `schedule_one` got them (kube-scheduler's `SharedLister().NodeInfos()
    .List()`): what plugins that count pods on other nodes read (InterPodAffinity, PodTopologySpread)."""
    dry_run: bool = False
    """Filters run on a node as it would be without some pods (preemption's `SelectVictimsOnNode`): plugins must not
    record anything about the pod or the node (the NUMA plugin neither counts the pod into its demand again nor
    reports the node as maybe over-reserved, as upstream's preemption flow never marks it)."""
    verdicts_only: bool = False
    """Only whether each Filter passes is read (the fast path's node-by-node pass, which asks the exact path for
    kube-scheduler's message when no node fits): a plugin may return a failure without building its reason."""

    def pod_data(self, plugin: str, pod: Pod, compute: Callable[[Pod], T]) -> T:
        """What a plugin derives once per pod (kube-scheduler's PreFilter/PreScore state), computed on first use so
        that Filter and Score work whether or not PreFilter ran."""
        found = self.get((plugin, ""))
        if found is not None and found[0] is pod:
            return cast(T, found[1])
        value = compute(pod)
        self[plugin, ""] = (pod, value)
        return value

    def set_pod_data(self, plugin: str, pod: Pod, value: object) -> None:
        """Set what `pod_data` returns for `pod` (a PreScore that computes it from the feasible nodes only)."""
        self[plugin, ""] = (pod, value)


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status: ...


class FastPathKind(enum.StrEnum):
    """How the daemon's fast path (`knuma.scheduler.fast.path`) can evaluate a plugin, as the plugin declares it in a
    `fast_path` class attribute. A profile with a plugin that declares nothing runs on the exact path, node by node
    (and the daemon logs which plugin caused it)."""

    NODE_LOCAL = "node-local"
    """Filter and score depend only on the pod's placement fields (nodeName, nodeSelector, affinity, tolerations),
    the Node object and the host ports in use: results are cached per placement signature."""
    NODE_RESOURCES = "node-resources"
    """NodeResourcesFit: node-level requests against allocatable, in arrays."""
    NODE_BALANCE = "node-balance"
    """NodeResourcesBalancedAllocation: the spread of the node-level requested fractions, in arrays."""
    NUMA = "numa"
    """NodeResourceTopologyMatch: NUMA zones in arrays, the kubelet model where arrays do not reach."""
    NODE_BY_NODE_WHEN_APPLIES = "node-by-node-when-applies"
    """Nothing to check for a pod its `applies_to(pod)` does not select (PreFilter skips it, Score gives 0 on every
    node); for a pod it selects, its PreFilter runs once and its Filter and Score node by node on the rows the arrays
    leave feasible (DynamicResources: the allocator on each node that fits the pod's CPUs and memory)."""
    POD_RELATIONS = "pod-relations"
    """Filter and score depend on the pods on other nodes (InterPodAffinity, PodTopologySpread). When a pod's own
    constraints need the plugin (`own_constraints(pod)`) or pods already placed concern it (`concerned_by(namespace,
    labels, pods)`, given the cache's pods with pod affinity terms; the fast path remembers the answer per namespace
    and labels until those pods change), the plugin runs node by node on the rows the arrays leave feasible, and its
    normalized score is added; for the other pods it passes every node and scores 0 everywhere."""
    FEASIBLE_ROWS = "feasible-rows"
    """A filter that rejects only the pods its `applies_to(pod)` selects: run node by node on the nodes still
    feasible after the others, for those pods only."""


@runtime_checkable
class BindWindowFilter(Protocol):
    """A filter whose verdict is about the window between bind and the kubelet's admission on the node as it is
    (StableUnderRelease): preemption's dry run, on the node as it would be without its victims, skips it; the
    preemptor's own cycle after the victims are gone runs it."""

    name: str
    checks_bind_window: bool


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int: ...


@dataclass(frozen=True)
class PreFilterResult:
    status: Status = SUCCESS
    """Not ok: the pod fits no node (every node gets this status)."""
    node_names: frozenset[str] | None = None
    """Only these nodes can fit (None: any node). The others get `node(s) didn't satisfy plugin(s) [...]`."""
    skip: bool = False
    """The plugin's Filter has nothing to check for this pod (kube-scheduler's `Skip`)."""


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult: ...


@runtime_checkable
class PreScorePlugin(Protocol):
    """`PreScore`: once per pod, with the nodes that passed every filter, before any Score."""

    name: str

    def pre_score(self, state: CycleState, pod: Pod, feasible: Sequence[NodeInfo]) -> None: ...


@runtime_checkable
class ScoreNormalizer(Protocol):
    name: str

    def normalize(self, scores: Mapping[str, int]) -> dict[str, int]: ...


@runtime_checkable
class PreEnqueuePlugin(Protocol):
    name: str

    def pre_enqueue(self, pod: Pod) -> Status: ...


@runtime_checkable
class NominationAware(Protocol):
    """A filter that holds something of its own for a pod preemption nominated (beyond the CPUs, memory and pods
    the cluster cache holds): DynamicResources holds the devices the dry run gave the pod, so that pods of lower
    priority do not take them while the victims go (what kubernetes/enhancements#5690 records for DRA)."""

    name: str

    def nominated(self, pod: Pod, node: NodeInfo) -> None:
        """`pod` was nominated on `node`, given as the preemption's dry run saw it (without the victims)."""
        ...

    def nomination_dropped(self, pod_key: str) -> None:
        """The nomination of `pod_key` was cleared or displaced: release what `nominated` held."""
        ...


NodeWithout = Callable[[str, Collection[str], bool], NodeInfo | None]
"""(node name, pod keys, NUMA-aware) → the node as it would be without those pods: requests, ports and pods given
back, and when NUMA-aware the NUMA view too (`ClusterCache.node_info_without`)."""


@runtime_checkable
class PostFilterPlugin(Protocol):
    """`PostFilter`: run by the daemon when no node fits (DefaultPreemption)."""

    name: str

    def post_filter(
        self,
        profile: Profile,
        pod: Pod,
        statuses: Mapping[str, Status],
        nodes: Sequence[NodeInfo],
        without: NodeWithout,
        nominated: str = "",
        lowest_priority: int | None = None,
        budgets: Sequence[DisruptionBudget] = (),
    ) -> Preemption: ...


@dataclass(frozen=True)
class Profile:
    """An ordered list of filters and weighted scorers, as a `KubeSchedulerConfiguration` profile."""

    name: str
    filters: tuple[FilterPlugin, ...]
    scorers: tuple[tuple[ScorePlugin, int], ...]
    pre_enqueue: tuple[PreEnqueuePlugin, ...] = ()
    """Gates a pod must pass before it is queued (SchedulingGates); the daemon asks them."""
    post_filter: tuple[PostFilterPlugin, ...] = ()
    """PostFilter plugins, run by the daemon when no node fits (DefaultPreemption,
    `knuma.scheduler.plugins.default_preemption`)."""

    def plugin_names(self) -> list[str]:
        names = [p.name for p in self.filters]
        names += [p.name for p, _ in self.scorers if p.name not in names]
        return names


@dataclass(frozen=True)
class PluginResult:
    filter: Status | None = None
    score: int | None = None


@dataclass(frozen=True)
class NodeResult:
    name: str
    filter: Status
    score: int | None
    plugins: Mapping[str, PluginResult]


@dataclass(frozen=True)
class ScheduleResult:
    pod: Pod
    selected: str | None
    nodes: Sequence[NodeResult]
    state: CycleState
    pre_filter: Status | None = None
    """Set when a PreFilter rejected the pod on every node (kube-scheduler's `PreFilterMsg`)."""

    def feasible(self) -> list[NodeResult]:
        return [n for n in self.nodes if n.filter.ok]

    def failure_summary(self) -> str:
        """kube-scheduler's `FailedScheduling` message: `0/5 nodes are available: 3 cannot align container, ...`."""
        if self.pre_filter is not None:
            return f"0/{len(self.nodes)} nodes are available: {self.pre_filter.reason}."
        return nodes_available(len(self.nodes), [r.filter.reason for r in self.nodes if not r.filter.ok])


def nodes_available(total: int, reasons: Iterable[str]) -> str:
    """kube-scheduler's `FitError` text for `total` nodes and one reason per node that failed:
    `2/5 nodes are available: 3 Insufficient cpu.` (reasons by count, then name)."""
    counts: dict[str, int] = {}
    for reason in reasons:
        counts[reason] = counts.get(reason, 0) + 1
    parts = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    available = total - sum(counts.values())
    return f"{available}/{total} nodes are available" + (f": {parts}." if parts else ".")


def schedule_one(profile: Profile, pod: Pod, nodes: Iterable[NodeInfo], *, explain: bool = True) -> ScheduleResult:
    """Filter every node, score the feasible ones, pick the highest total (ties: the first node in input order).

    With `explain`, every plugin runs on every node (kube-scheduler-simulator style) so the result shows each plugin's
    verdict; without it, filtering stops at the first failing plugin, as kube-scheduler does, and the node results
    carry only the verdict and the total (no per-plugin breakdown: nothing reads it, and building it cost a sixth of
    an exact-path cycle). Scorers with `normalize` see the raw scores of the feasible nodes only; on infeasible nodes
    (`explain`) their raw score is shown.
    """
    nodes = list(nodes)
    state = CycleState()
    state.nodes = nodes
    filters, skipped, allowed, restricting, rejected = _pre_filter(profile, state, pod)
    if rejected is not None:
        return _rejected(pod, nodes, state, rejected)
    outside = None
    if allowed is not None:
        reason = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(restricting))}]"
        outside = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason, restricting[0])
    pre_scorers = [scorer for scorer, _ in profile.scorers if isinstance(scorer, PreScorePlugin)]
    normalizing = any(isinstance(scorer, ScoreNormalizer) for scorer, _ in profile.scorers)
    results: list[NodeResult] = []
    raw_scores: list[list[int]] = []
    best: tuple[int, str] | None = None

    def score(node: NodeInfo, verdict: Status, per_plugin: dict[str, PluginResult]) -> None:
        nonlocal best
        total: int | None = None
        if verdict.ok or explain:
            weighted = 0
            scores = []
            for scorer, weight in profile.scorers:
                value = scorer.score(state, pod, node)
                if explain:
                    previous = per_plugin.get(scorer.name, PluginResult())
                    per_plugin[scorer.name] = PluginResult(filter=previous.filter, score=value)
                weighted += value * weight
                scores.append(value)
            if verdict.ok:
                total = weighted
                if normalizing:
                    raw_scores.append(scores)
                elif best is None or weighted > best[0]:
                    best = (weighted, node.name)
        results.append(NodeResult(node.name, verdict, total, per_plugin))

    deferred: list[tuple[NodeInfo, Status, dict[str, PluginResult]]] = []
    """With PreScore plugins, scoring waits until every node is filtered (PreScore sees the feasible nodes)."""
    for node in nodes:
        per_plugin: dict[str, PluginResult] = (
            {name: PluginResult(filter=SUCCESS) for name in skipped} if explain else {}
        )
        verdict = SUCCESS
        if outside is not None and allowed is not None and node.name not in allowed:
            verdict = outside
            if explain:
                per_plugin[outside.plugin] = PluginResult(filter=outside)
        if verdict.ok or explain:
            for plugin in filters:
                status = plugin.filter(state, pod, node)
                if not explain:
                    if not status.ok:
                        verdict = status
                        break
                    continue
                if plugin.name not in per_plugin:  # a node outside the PreFilter's names keeps that verdict
                    per_plugin[plugin.name] = PluginResult(filter=status)
                if verdict.ok and not status.ok:
                    verdict = status
        if pre_scorers:
            deferred.append((node, verdict, per_plugin))
        else:
            score(node, verdict, per_plugin)
    if pre_scorers:
        feasible = [node for node, verdict, _ in deferred if verdict.ok]
        for scorer in pre_scorers:
            if feasible:
                scorer.pre_score(state, pod, feasible)
        for node, verdict, per_plugin in deferred:
            score(node, verdict, per_plugin)
    if normalizing:
        results, best = _normalized(profile, results, raw_scores, state, pod, explain=explain)
    return ScheduleResult(pod, best[1] if best else None, results, state)


class OneNodeFilters:
    """The profile's Filter plugins for one pod, one node at a time: preemption's dry runs on nodes as they would be
    without some pods (`SelectVictimsOnNode`, which kube-scheduler runs with `RunFilterPluginsWithNominatedPods` on a
    node copy), and the check of a pod's nominated node before any other (`evaluateNominatedNode`).

    PreFilter runs once, on the cycle's snapshot, as upstream's state is computed once and cloned per node: a plugin
    it skips stays skipped (removing pods only removes what could concern the pod), and NodeAffinity's node names
    hold. Each check gets a fresh `CycleState` over the snapshot with the node replaced, so a plugin that did not skip
    computes its per-pod data from the pods still there (what upstream's `RemovePod` / `AddPod` extensions keep up to
    date). In a dry run, plugins record nothing (`CycleState.dry_run`) and filters that judge the bind window
    (`BindWindowFilter`) are skipped: the node checked is not the node the pod will be bound to."""

    def __init__(self, profile: Profile, pod: Pod, nodes: Sequence[NodeInfo], *, dry_run: bool = True) -> None:
        self.pod = pod
        self.dry_run = dry_run
        state = CycleState()
        state.nodes = nodes
        state.dry_run = dry_run
        filters, _, allowed, restricting, rejected = _pre_filter(profile, state, pod)
        self.filters = [
            f for f in filters if not (dry_run and isinstance(f, BindWindowFilter) and f.checks_bind_window)
        ]
        self.allowed, self.restricting, self.rejected = allowed, restricting, rejected

    def run(self, node: NodeInfo, nodes: Sequence[NodeInfo]) -> Status:
        """The first failing filter's status for `node` (the first success when all pass); `nodes` is the snapshot
        with `node` in place of the node of that name."""
        if self.rejected is not None:
            return self.rejected
        if self.allowed is not None and node.name not in self.allowed:
            reason = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(self.restricting))}]"
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason, self.restricting[0])
        state = CycleState()
        state.nodes = nodes
        state.dry_run = self.dry_run
        for plugin in self.filters:
            status = plugin.filter(state, self.pod, node)
            if not status.ok:
                return status if status.plugin else replace(status, plugin=plugin.name)
        return SUCCESS


def _pre_filter(
    profile: Profile, state: CycleState, pod: Pod
) -> tuple[list[FilterPlugin], list[str], frozenset[str] | None, list[str], Status | None]:
    """Run the filters' PreFilter: (filters to run, skipped plugin names, allowed node names, plugins that restricted
    them, a rejection)."""
    filters: list[FilterPlugin] = []
    skipped: list[str] = []
    allowed: frozenset[str] | None = None
    restricting: list[str] = []
    rejected: Status | None = None
    for plugin in profile.filters:
        if not isinstance(plugin, PreFilterPlugin):
            filters.append(plugin)
            continue
        result = plugin.pre_filter(state, pod)
        if not result.status.ok:
            status = result.status if result.status.plugin else replace(result.status, plugin=plugin.name)
            if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return filters, skipped, allowed, restricting, status
            rejected = rejected or status  # Unschedulable: later PreFilters still run, as upstream
            continue
        if result.skip:
            skipped.append(plugin.name)
            continue
        filters.append(plugin)
        if result.node_names is not None:
            restricting.append(plugin.name)
            allowed = result.node_names if allowed is None else allowed & result.node_names
            if not allowed:
                reason = f"node(s) didn't satisfy plugin(s) [{' '.join(restricting)}] simultaneously"
                if len(restricting) == 1:
                    reason = f"node(s) didn't satisfy plugin {restricting[0]}"
                status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason, plugin.name)
                return filters, skipped, allowed, restricting, status
    return filters, skipped, allowed, restricting, rejected


def _rejected(pod: Pod, nodes: Iterable[NodeInfo], state: CycleState, status: Status) -> ScheduleResult:
    results = [NodeResult(n.name, status, None, {status.plugin: PluginResult(filter=status)}) for n in nodes]
    return ScheduleResult(pod, None, results, state, pre_filter=status)


def _normalized(
    profile: Profile,
    results: list[NodeResult],
    raw_scores: list[list[int]],
    state: CycleState,
    pod: Pod,
    *,
    explain: bool = True,
) -> tuple[list[NodeResult], tuple[int, str] | None]:
    """Apply NormalizeScore over the feasible nodes, then the weights; pick the best (first on ties). A scorer with
    `normalize_cycle(state, pod, scores)` normalizes with what its PreScore kept (PodTopologySpread's ignored
    nodes). Without `explain`, the per-plugin results are left empty (only the totals are set)."""
    feasible = [r for r in results if r.filter.ok]
    columns: list[list[int]] = [list(column) for column in zip(*raw_scores, strict=True)] if raw_scores else []
    for index, (scorer, _) in enumerate(profile.scorers):
        if isinstance(scorer, ScoreNormalizer) and columns:
            raw = {r.name: s for r, s in zip(feasible, columns[index], strict=True)}
            cycle_normalize = getattr(scorer, "normalize_cycle", None)
            mapped = cycle_normalize(state, pod, raw) if cycle_normalize is not None else scorer.normalize(raw)
            columns[index] = [mapped[r.name] for r in feasible]
    totals: dict[str, int] = {}
    for row, result in enumerate(feasible):
        totals[result.name] = sum(columns[i][row] * weight for i, (_, weight) in enumerate(profile.scorers))
    best: tuple[int, str] | None = None
    out: list[NodeResult] = []
    row = 0
    for result in results:
        if not result.filter.ok:
            out.append(result)
            continue
        total = totals[result.name]
        if explain:
            plugins = dict(result.plugins)
            for i, (scorer, _) in enumerate(profile.scorers):
                plugins[scorer.name] = replace(plugins[scorer.name], score=columns[i][row])
            out.append(replace(result, score=total, plugins=plugins))
        else:
            out.append(NodeResult(result.name, result.filter, total, result.plugins))
        if best is None or total > best[0]:
            best = (total, result.name)
        row += 1
    return out, best
