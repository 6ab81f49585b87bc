"""A small scheduling framework in kube-scheduler's shape: a profile runs Filter plugins, then Score plugins, per node.

Plugins are pure: they read a `Pod` and a `NodeInfo` (a snapshot) and return a `Status` or a score in 0..100. A
`CycleState` carries what one plugin computed for a (pod, node) pair to later extension points (the NUMA plugin's
kubelet prediction, for Score and Reserve).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from knuma.api.pod import Pod
from knuma.api.resources import ResourceList
from knuma.topology.node import NodeTopology

__all__ = [
    "MAX_NODE_SCORE",
    "Code",
    "CycleState",
    "FilterPlugin",
    "NodeInfo",
    "NodeResult",
    "PluginResult",
    "Profile",
    "ScheduleResult",
    "ScorePlugin",
    "Status",
    "schedule_one",
]

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

    @property
    def numa(self) -> NodeTopology | None:
        """The NUMA view, or None when there is none to align against: no NRT, or an NRT without any valid NUMA
        zone (e.g. zones named `numa-node-0`, which upstream ignores too)."""
        return self.topology if self.topology is not None and self.topology.zones else None

    @property
    def has_node_object(self) -> bool:
        return self.manifest is not None


class CycleState(dict[tuple[str, str], Any]):
    """Per-cycle scratch data keyed by (plugin name, node name)."""


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status: ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int: ...


@dataclass(frozen=True)
class Profile:
    """An ordered list of filters and weighted scorers, as a `KubeSchedulerConfiguration` profile."""

    name: str
    filters: tuple[FilterPlugin, ...]
    scorers: tuple[tuple[ScorePlugin, int], ...]

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

    def feasible(self) -> list[NodeResult]:
        return [n for n in self.nodes if n.filter.ok]

    def failure_summary(self) -> str:
        """kube-scheduler's `FailedScheduling` message: `0/5 nodes are available: 3 cannot align container, ...`."""
        counts: dict[str, int] = {}
        for result in self.nodes:
            if not result.filter.ok:
                counts[result.filter.reason] = counts.get(result.filter.reason, 0) + 1
        parts = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        available = len(self.nodes) - sum(counts.values())
        return f"{available}/{len(self.nodes)} nodes are available" + (f": {parts}." if parts else ".")


def schedule_one(profile: Profile, pod: Pod, nodes: Iterable[NodeInfo], *, explain: bool = True) -> ScheduleResult:
    """Filter every node, score the feasible ones, pick the highest total (ties: the first node in input order).

    With `explain`, every plugin runs on every node (kube-scheduler-simulator style) so the result shows each plugin's
    verdict; without it, filtering stops at the first failing plugin, as kube-scheduler does.
    """
    state = CycleState()
    results: list[NodeResult] = []
    best: tuple[int, str] | None = None
    for node in nodes:
        per_plugin: dict[str, PluginResult] = {}
        verdict = SUCCESS
        for plugin in profile.filters:
            if not verdict.ok and not explain:
                break
            status = plugin.filter(state, pod, node)
            per_plugin[plugin.name] = PluginResult(filter=status)
            if verdict.ok and not status.ok:
                verdict = status
        total: int | None = None
        if verdict.ok or explain:
            weighted = 0
            for scorer, weight in profile.scorers:
                score = scorer.score(state, pod, node)
                previous = per_plugin.get(scorer.name, PluginResult())
                per_plugin[scorer.name] = PluginResult(filter=previous.filter, score=score)
                weighted += score * weight
            if verdict.ok:
                total = weighted
                if best is None or weighted > best[0]:
                    best = (weighted, node.name)
        results.append(NodeResult(node.name, verdict, total, per_plugin))
    return ScheduleResult(pod, best[1] if best else None, results, state)
