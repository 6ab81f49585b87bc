"""The daemon's fast decision path: a profile's node-local plugins as cached masks, NodeResourcesFit and
NodeResourceTopologyMatch in numpy (`knuma.scheduler.fast.vectorized`), the same decision as `schedule_one`.

A profile splits in two:

- **Fit + NUMA** (filter and score) run vectorised over every node at once; per-node results are cached by pod shape
  inside `VectorizedScheduler`, and only the rows the cache reports changed are reloaded before a cycle.
- **Node-local plugins** (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts) depend only on the
  pod's placement fields and the Node object (NodePorts also on the ports in use). Their verdicts and raw scores are
  computed node by node once per (profile, placement signature) and reused until a Node object changes: pods of one
  Deployment share one signature, so a burst pays for it once. Pods with host ports skip the cache.
- **Plugins that only act on some pods** (DynamicResources: pods with ResourceClaims) run node by node, on top of
  the arrays, for the pods they select: the allocator runs only on the nodes that fit the pod's CPUs, memory and
  NUMA alignment, and the other plugins stay vectorised. The decision is the exact path's; one side effect is not:
  NodeResourceTopologyMatch's rejections are reported (for the overreserve cache's resync) on every node the arrays
  reject, where the exact path, which runs DynamicResources first, does not reach it on nodes without the devices.
- **Pod-relation plugins** (InterPodAffinity, PodTopologySpread) run node by node, on top of the arrays, for the pods
  they concern (their own constraints, or placed pods' affinity terms that select them): PreFilter over the
  snapshot, Filter on the rows still feasible, PreScore and a normalized score over the feasible rows.
- **Feasible-row filters** (StableUnderRelease) reject only the pods they select (`applies_to`): for those, they run
  node by node on the nodes still feasible after the others.

Which part a plugin belongs to is what the plugin declares (`fast_path`, a `FastPathKind`), not its name: a profile
with a plugin that declares nothing runs on the exact path, and the daemon logs which plugin caused it.

Scores are combined as kube-scheduler does: normalized per plugin over the feasible nodes, weighted, summed; the
highest total wins, ties to the first node in name order. When nothing fits, the exact path runs on every node to
produce kube-scheduler's `FailedScheduling` message.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from knuma.api.pod import Pod
from knuma.scheduler.algorithm import NO_NODES, Outcome, decide
from knuma.scheduler.cache.nrt import ClusterCache
from knuma.scheduler.fast.vectorized import VectorizedScheduler, shape_key
from knuma.scheduler.framework.interface import (
    CycleState,
    FastPathKind,
    FilterPlugin,
    NodeInfo,
    PreFilterPlugin,
    PreScorePlugin,
    Profile,
    ScoreNormalizer,
    ScorePlugin,
    Status,
)
from knuma.scheduler.plugins.dra_extended import ExtendedResourceMap
from knuma.scheduler.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation
from knuma.scheduler.plugins.node_resources_balanced_allocation_args import NodeResourcesBalancedAllocationArgs
from knuma.scheduler.plugins.node_resources_fit import DRADevices, NodeResourcesFit
from knuma.scheduler.plugins.node_resources_fit_args import NodeResourcesFitArgs
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch

__all__ = ["FastPath"]

BoolArray = npt.NDArray[np.bool_]
Int64Array = npt.NDArray[np.int64]

log = logging.getLogger("knuma.scheduler.fast.path")


@runtime_checkable
class RowFilter(Protocol):
    """A `FastPathKind.FEASIBLE_ROWS` filter."""

    name: str

    def applies_to(self, pod: Pod) -> bool: ...

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status: ...


@runtime_checkable
class SelectivePlugin(Protocol):
    """A `FastPathKind.NODE_BY_NODE_WHEN_APPLIES` plugin."""

    name: str

    def applies_to(self, pod: Pod) -> bool: ...


@runtime_checkable
class RelationPlugin(Protocol):
    """A `FastPathKind.POD_RELATIONS` plugin."""

    name: str

    def own_constraints(self, pod: Pod) -> bool: ...

    def concerned_by(self, namespace: str, labels: Mapping[str, str], pods: Collection[Pod]) -> bool: ...


_PLACEMENT_FIELDS = ("nodeName", "nodeSelector", "affinity", "tolerations")


_VectorKey = tuple[int, int, int, NodeResourcesFitArgs, int, int, int, NodeResourcesBalancedAllocationArgs]
"""(id of the NUMA plugin or 0, its weight, NodeResourcesFit's weight, its args, id of the DeviceClasses' extended
resource map or 0, id of its DRA devices or 0, NodeResourcesBalancedAllocation's weight, its args): what the arrays
depend on; profiles with equal keys share them."""


@dataclass
class _Local:
    generation: int
    feasible: BoolArray
    raw: dict[str, Int64Array]


@dataclass(frozen=True)
class _Plan:
    """How one profile runs on the fast path."""

    numa: NodeResourceTopologyMatch | None
    """None: the profile has no NUMA plugin (node-level fit only)."""
    local_filters: tuple[FilterPlugin, ...]
    row_filters: tuple[RowFilter, ...]
    selective: tuple[SelectivePlugin, ...]
    """`NODE_BY_NODE_WHEN_APPLIES` plugins (filters and scorers): for a pod one of them selects, they run node by node
    on top of the arrays (`_decide_node_by_node`)."""
    selective_filters: tuple[SelectivePlugin, ...]
    selective_scorers: tuple[tuple[SelectivePlugin, int], ...]
    relations: tuple[RelationPlugin, ...]
    """`POD_RELATIONS` plugins (filters and scorers): a pod whose own constraints or placed pods concern it is decided
    with them node by node on top of the arrays (`_decide_node_by_node`)."""
    relation_filters: tuple[RelationPlugin, ...]
    relation_scorers: tuple[tuple[RelationPlugin, int], ...]
    local_scorers: tuple[tuple[ScorePlugin, int], ...]
    numa_weight: int
    fit_weight: int
    fit_args: NodeResourcesFitArgs
    """The profile's NodeResourcesFit arguments (ignored resources, scoring strategy): part of the arrays' key."""
    fit_extended: ExtendedResourceMap | None = None
    """The DeviceClasses' extended resources NodeResourcesFit leaves to DynamicResources on nodes without them: part
    of the arrays' key too."""
    fit_devices: DRADevices | None = None
    """The DRA devices NodeResourcesFit's scoring strategy counts for such a resource (`NodeResourcesFit.devices`):
    part of the arrays' key too."""
    balanced_weight: int = 0
    balanced_args: NodeResourcesBalancedAllocationArgs = field(default_factory=NodeResourcesBalancedAllocationArgs)
    """NodeResourcesBalancedAllocation's weight (0: not in the profile) and arguments: part of the arrays' key."""


class FastPath:
    def __init__(self, cache: ClusterCache) -> None:
        self.cache = cache
        self._vectors: dict[_VectorKey, VectorizedScheduler] = {}
        """Keyed by `_VectorKey`."""
        self._plans: dict[str, _Plan | None] = {}
        self._local: dict[tuple[str, str], _Local] = {}
        self._generation = 0
        self._names: list[str] = []
        self._row: dict[str, int] = {}
        self._numa_by_key: dict[_VectorKey, NodeResourceTopologyMatch | None] = {}
        self._extended_by_key: dict[_VectorKey, ExtendedResourceMap | None] = {}
        self._devices_by_key: dict[_VectorKey, DRADevices | None] = {}
        self._manifests: dict[str, int | None] = {}
        self._concerned: dict[tuple[int, str, tuple[tuple[str, str], ...]], bool] = {}
        """`concerned_by` answers per (plugin, namespace, labels), valid while `_relations_version` is the cache's."""
        self._relations_version = -1
        self._version = 0
        """Changes whenever `sync` reloads or drops a row: what a remembered failure is valid for."""
        self._failures: dict[tuple[str, str, Hashable], tuple[tuple[int, int], Outcome]] = {}
        """The exact path's answer for a pod no node fits, by (profile, placement signature, shape)."""

    # -- keeping the arrays in step with the cache ----------------------------------------------------------------

    def sync(self) -> None:
        """Reload the rows the cache changed; a node added, removed or with a changed Node object invalidates the
        node-local caches (rows stay in name order, so that ties break as in the exact path)."""
        dirty, removed = self.cache.take_dirty()
        if not dirty and not removed:
            return
        self._version += 1
        infos = {name: self.cache.node_info(name) for name in dirty}
        present = [name for name, info in infos.items() if info is not None]
        gone = set(removed) | {name for name, info in infos.items() if info is None}
        membership_changed = bool(gone & self._row.keys()) or any(name not in self._row for name in present)
        if membership_changed:
            self._names = [info.name for info in self.cache.node_infos()]
            self._row = {name: i for i, name in enumerate(self._names)}
            all_infos = [self.cache.node_info(name) for name in self._names]
            self._manifests = {i.name: id(i.manifest) for i in all_infos if i is not None}
            for key in list(self._vectors):
                self._vectors[key] = self._new_vector(key, [i for i in all_infos if i is not None])
            self._generation += 1
            return
        for vector in self._vectors.values():
            for name in present:
                info = infos[name]
                assert info is not None
                vector.upsert_node(info)
        if any(self._node_object_changed(name) for name in present):
            self._generation += 1

    def _node_object_changed(self, name: str) -> bool:
        info = self.cache.node_info(name)
        seen = self._manifests.get(name)
        current = id(info.manifest) if info is not None else None
        self._manifests[name] = current
        return seen != current

    def _new_vector(self, key: _VectorKey, infos: Sequence[NodeInfo]) -> VectorizedScheduler:
        numa = self._numa_by_key[key]
        extended, devices = self._extended_by_key[key], self._devices_by_key[key]
        fit = NodeResourcesFit(key[3], extended, devices)
        balanced = NodeResourcesBalancedAllocation(key[7], extended, devices)
        return VectorizedScheduler(
            infos,
            numa.scoring if numa is not None else None,
            numa_weight=key[1] if numa is not None else 0,
            fit_weight=key[2],
            demand=numa.demand if numa is not None else None,
            numa=numa is not None,
            fit=fit,
            balanced_weight=key[6],
            balanced=balanced,
        )

    # -- one decision ----------------------------------------------------------------------------------------

    def decide(self, profile: Profile, pod: Pod) -> Outcome:
        plan = self.plan(profile)
        if plan is None:
            return decide(profile, pod, self.cache.node_infos())
        related = self._related(plan, pod)
        selected = {id(plugin) for plugin in plan.selective if plugin.applies_to(pod)}
        self.sync()
        if not self._names:
            return Outcome(None, message=NO_NODES)
        vector = self._vector(plan)
        local = self._local_results(profile, plan, pod)
        feasible, scores = vector.filter_and_score(pod, local.feasible)
        if plan.numa is not None and plan.numa.reports_rejections and not feasible.all():
            rejected = vector.numa_rejected(pod, feasible, local.feasible)
            names = vector.names
            plan.numa.rejected([names[r] for r in np.flatnonzero(rejected).tolist()])
        row_filters = [f for f in plan.row_filters if f.applies_to(pod)]
        if related or selected:
            node_filters = [
                *(plan.relation_filters if related else ()),
                *(p for p in plan.selective_filters if id(p) in selected),
            ]
            node_scorers = [
                *(plan.relation_scorers if related else ()),
                *((p, w) for p, w in plan.selective_scorers if id(p) in selected),
            ]
            return self._decide_node_by_node(
                profile, plan, pod, vector.names, local, feasible, scores, row_filters, node_filters, node_scorers
            )
        if row_filters and not self._subset_sensitive(plan, local, feasible):
            # The ranking does not depend on which rows the row filters drop: run them on the best rows only, in
            # ranking order, and take the first that passes (what the argmax below would pick after filtering all).
            total = scores.astype(np.int64)
            for plugin, weight in plan.local_scorers:
                total += weight * self._normalized(plugin, local.raw[plugin.name], feasible)
            candidates = np.flatnonzero(feasible)
            states = [CycleState() for _ in row_filters]
            for row in candidates[np.lexsort((candidates, -total[candidates]))].tolist():
                info = self.cache.node_info(vector.names[row])
                if info is not None and all(
                    f.filter(st, pod, info).ok for f, st in zip(row_filters, states, strict=True)
                ):
                    return Outcome(vector.names[row])
            return self._failure(profile, pod)
        for row_filter in row_filters:
            state = CycleState()
            for row in np.flatnonzero(feasible).tolist():
                info = self.cache.node_info(vector.names[row])
                if info is None or not row_filter.filter(state, pod, info).ok:
                    feasible[row] = False
        if not feasible.any():
            return self._failure(profile, pod)
        total = scores.astype(np.int64)
        for plugin, weight in plan.local_scorers:
            total += weight * self._normalized(plugin, local.raw[plugin.name], feasible)
        row = int(np.argmax(np.where(feasible, total, -1)))
        return Outcome(vector.names[row])

    def _failure(self, profile: Profile, pod: Pod) -> Outcome:
        """No row is feasible: the exact path says why (kube-scheduler's message, each node's verdict for
        preemption). A pod with the same placement fields and shape gets the same answer while no row changed, so a
        burst of identical pending pods (a ReplicaSet larger than the free room) pays for one pass over the nodes,
        not one each (about 180 ms at 5000 nodes). Pods decided node by node (`_decide_node_by_node`: pod relations,
        claims, which the key does not describe) do not come here."""
        signature = _placement_signature(pod)
        key = None if signature is None else (profile.name, signature, shape_key(pod))
        version = (self._version, self.cache.relations_version)
        if key is not None and (found := self._failures.get(key)) is not None and found[0] == version:
            return found[1]
        outcome = decide(profile, pod, self.cache.node_infos())
        if key is not None and outcome.node is None:
            if len(self._failures) > 1024:
                self._failures.clear()
            self._failures[key] = (version, outcome)
        return outcome

    def _decide_node_by_node(
        self,
        profile: Profile,
        plan: _Plan,
        pod: Pod,
        names: Sequence[str],
        local: _Local,
        feasible: BoolArray,
        scores: Int64Array,
        row_filters: Sequence[RowFilter],
        node_filters: Sequence[object],
        node_scorers: Sequence[tuple[object, int]],
    ) -> Outcome:
        """A pod the pod-relation plugins concern or a selective plugin selects (`node_filters`, `node_scorers`):
        their PreFilter over the snapshot, their Filter on the rows the arrays left feasible, their PreScore with the
        feasible nodes and their normalized score added to the arrays' totals; the exact path's decision
        (kube-scheduler's: every filter, then every score over the feasible nodes) at the cost of a pass over the
        feasible nodes in Python instead of every plugin on every node. Anything unusual (a PreFilter rejection or a
        PreFilter that restricts the nodes, no feasible node) goes to the exact path, for its message."""
        infos = [self.cache.node_info(name) for name in names]
        snapshot = [info for info in infos if info is not None]
        if len(snapshot) != len(infos):
            return decide(profile, pod, self.cache.node_infos())
        for row_filter in row_filters:
            row_state = CycleState()
            for row in np.flatnonzero(feasible).tolist():
                if not row_filter.filter(row_state, pod, snapshot[row]).ok:
                    feasible[row] = False
        state = CycleState()
        state.nodes = snapshot
        state.verdicts_only = True
        for plugin in node_filters:
            if isinstance(plugin, PreFilterPlugin):
                result = plugin.pre_filter(state, pod)
                if not result.status.ok or result.node_names is not None:
                    return decide(profile, pod, self.cache.node_infos())
                if result.skip:
                    continue
            if isinstance(plugin, FilterPlugin):
                for row in np.flatnonzero(feasible).tolist():
                    if not plugin.filter(state, pod, snapshot[row]).ok:
                        feasible[row] = False
        if not feasible.any():
            return decide(profile, pod, self.cache.node_infos())
        total = scores.astype(np.int64)
        for local_scorer, weight in plan.local_scorers:
            total += weight * self._normalized(local_scorer, local.raw[local_scorer.name], feasible)
        rows = np.flatnonzero(feasible).tolist()
        chosen = [snapshot[row] for row in rows]
        for scorer, weight in node_scorers:
            if not isinstance(scorer, ScorePlugin):
                continue
            if isinstance(scorer, PreScorePlugin):
                scorer.pre_score(state, pod, chosen)
            raw = {info.name: scorer.score(state, pod, info) for info in chosen}
            if isinstance(scorer, ScoreNormalizer):
                cycle_normalize = getattr(scorer, "normalize_cycle", None)
                raw = cycle_normalize(state, pod, raw) if cycle_normalize is not None else scorer.normalize(raw)
            for row, info in zip(rows, chosen, strict=True):
                total[row] += weight * raw[info.name]
        row = int(np.argmax(np.where(feasible, total, -1)))
        return Outcome(names[row])

    def _related(self, plan: _Plan, pod: Pod) -> bool:
        """Whether a `POD_RELATIONS` plugin needs the exact path for `pod`: its own constraints, or placed pods with
        affinity terms that concern it (remembered per namespace and labels until those pods change)."""
        if not plan.relations:
            return False
        if any(plugin.own_constraints(pod) for plugin in plan.relations):
            return True
        placed = self.cache.pods_with_affinity
        if not placed:
            return False
        if self._relations_version != self.cache.relations_version:
            self._concerned.clear()
            self._relations_version = self.cache.relations_version
        labels = tuple(sorted(pod.labels.items()))
        for plugin in plan.relations:
            key = (id(plugin), pod.namespace, labels)
            answer = self._concerned.get(key)
            if answer is None:
                if len(self._concerned) > 4096:
                    self._concerned.clear()
                answer = self._concerned[key] = plugin.concerned_by(pod.namespace, pod.labels, placed.values())
            if answer:
                return True
        return False

    # -- plans, vectors, node-local results ------------------------------------------------------------------

    def plan(self, profile: Profile) -> _Plan | None:
        if profile.name in self._plans:
            return self._plans[profile.name]
        plan = _make_plan(profile)
        self._plans[profile.name] = plan
        return plan

    def _vector(self, plan: _Plan) -> VectorizedScheduler:
        key = (
            id(plan.numa) if plan.numa is not None else 0,
            plan.numa_weight,
            plan.fit_weight,
            plan.fit_args,
            id(plan.fit_extended) if plan.fit_extended is not None else 0,
            id(plan.fit_devices) if plan.fit_devices is not None else 0,
            plan.balanced_weight,
            plan.balanced_args,
        )
        vector = self._vectors.get(key)
        if vector is None:
            self._numa_by_key[key] = plan.numa
            self._extended_by_key[key] = plan.fit_extended
            self._devices_by_key[key] = plan.fit_devices
            infos = [i for i in (self.cache.node_info(n) for n in self._names) if i is not None]
            vector = self._vectors[key] = self._new_vector(key, infos)
        return vector

    def _local_results(self, profile: Profile, plan: _Plan, pod: Pod) -> _Local:
        signature = _placement_signature(pod)
        key = (profile.name, signature) if signature is not None else None
        if key is not None:
            cached = self._local.get(key)
            if cached is not None and cached.generation == self._generation:
                return cached
        n = len(self._names)
        feasible = np.ones(n, dtype=np.bool_)
        raw = {plugin.name: np.zeros(n, dtype=np.int64) for plugin, _ in plan.local_scorers}
        state = CycleState()
        for row, name in enumerate(self._names):
            info = self.cache.node_info(name)
            assert info is not None
            ok = all(plugin.filter(state, pod, info).ok for plugin in plan.local_filters)
            feasible[row] = ok
            if ok:
                for plugin, _ in plan.local_scorers:
                    raw[plugin.name][row] = plugin.score(state, pod, info)
        result = _Local(self._generation, feasible, raw)
        if key is not None:
            if len(self._local) > 4096:
                self._local.clear()
            self._local[key] = result
        return result

    @staticmethod
    def _subset_sensitive(plan: _Plan, local: _Local, feasible: BoolArray) -> bool:
        """Whether dropping feasible rows can change the other rows' totals: only a normalising scorer whose raw
        scores differ among them (`_normalized` gives zeros for equal scores and raw scores without normaliser)."""
        for plugin, _ in plan.local_scorers:
            values = local.raw[plugin.name][feasible]
            if isinstance(plugin, ScoreNormalizer) and values.size and values.min() != values.max():
                return True
        return False

    def _normalized(self, plugin: ScorePlugin, raw: Int64Array, feasible: BoolArray) -> Int64Array:
        values = raw[feasible]
        if values.size == 0 or values.min() == values.max():
            return np.zeros_like(raw)  # the same on every feasible node: it cannot change the choice
        if not isinstance(plugin, ScoreNormalizer):
            return raw
        rows = np.flatnonzero(feasible)
        normalized = plugin.normalize({self._names[r]: int(raw[r]) for r in rows})
        out = np.zeros_like(raw)
        for r in rows:
            out[r] = normalized[self._names[r]]
        return out


def _make_plan(profile: Profile) -> _Plan | None:
    """The fast plan for a profile, from the `fast_path` each plugin declares; None when a plugin declares nothing
    this path can evaluate (the exact path runs the profile; the reason is logged once)."""
    numa: NodeResourceTopologyMatch | None = None
    fit = False
    fit_args = NodeResourcesFitArgs()
    fit_extended: ExtendedResourceMap | None = None
    fit_devices: DRADevices | None = None
    local_filters: list[FilterPlugin] = []
    row_filters: list[RowFilter] = []
    selective: list[SelectivePlugin] = []
    selective_filters: list[SelectivePlugin] = []
    selective_scorers: list[tuple[SelectivePlugin, int]] = []
    relations: list[RelationPlugin] = []
    relation_filters: list[RelationPlugin] = []
    relation_scorers: list[tuple[RelationPlugin, int]] = []
    for plugin in profile.filters:
        kind = getattr(plugin, "fast_path", None)
        if kind is FastPathKind.NUMA and isinstance(plugin, NodeResourceTopologyMatch):
            numa = plugin
        elif kind is FastPathKind.NODE_RESOURCES:
            fit = True
            if isinstance(plugin, NodeResourcesFit):
                fit_args, fit_extended, fit_devices = plugin.args, plugin.extended, plugin.devices
        elif kind is FastPathKind.NODE_LOCAL:
            local_filters.append(plugin)
        elif kind is FastPathKind.FEASIBLE_ROWS and isinstance(plugin, RowFilter):
            row_filters.append(plugin)
        elif kind is FastPathKind.NODE_BY_NODE_WHEN_APPLIES and isinstance(plugin, SelectivePlugin):
            selective.append(plugin)
            selective_filters.append(plugin)
        elif kind is FastPathKind.POD_RELATIONS and isinstance(plugin, RelationPlugin):
            relations.append(plugin)
            relation_filters.append(plugin)
        else:
            _slow(profile, plugin.name, "filter")
            return None
    if not fit:
        _slow(profile, "NodeResourcesFit", "filter (absent)")
        return None
    numa_weight = fit_weight = balanced_weight = 0
    balanced_args = NodeResourcesBalancedAllocationArgs()
    local_scorers: list[tuple[ScorePlugin, int]] = []
    for scorer, weight in profile.scorers:
        kind = getattr(scorer, "fast_path", None)
        if scorer is numa:
            numa_weight = weight
        elif kind is FastPathKind.NODE_RESOURCES:
            fit_weight = weight
        elif kind is FastPathKind.NODE_BALANCE and isinstance(scorer, NodeResourcesBalancedAllocation):
            balanced_weight, balanced_args = weight, scorer.args
        elif kind is FastPathKind.NODE_LOCAL:
            local_scorers.append((scorer, weight))
        elif kind is FastPathKind.NODE_BY_NODE_WHEN_APPLIES and isinstance(scorer, SelectivePlugin):
            if scorer not in selective:
                selective.append(scorer)
            selective_scorers.append((scorer, weight))  # 0 on every node for the pods they do not select
        elif kind is FastPathKind.POD_RELATIONS and isinstance(scorer, RelationPlugin):
            if scorer not in relations:
                relations.append(scorer)
            relation_scorers.append((scorer, weight))  # 0 on every node for the pods they do not concern
        else:
            _slow(profile, scorer.name, "score")
            return None
    return _Plan(
        numa,
        tuple(local_filters),
        tuple(row_filters),
        tuple(selective),
        tuple(selective_filters),
        tuple(selective_scorers),
        tuple(relations),
        tuple(relation_filters),
        tuple(relation_scorers),
        tuple(local_scorers),
        numa_weight,
        fit_weight,
        fit_args,
        fit_extended,
        fit_devices,
        balanced_weight,
        balanced_args,
    )


def _slow(profile: Profile, plugin: str, point: str) -> None:
    log.info(
        "profile %s runs on the exact path (every node, one by one): plugin %s (%s) declares no fast-path capability",
        profile.name,
        plugin,
        point,
    )
    return


def _placement_signature(pod: Pod) -> str | None:
    """What the node-local plugins read from the pod, or None when the result must not be cached (host ports: they
    depend on the pods on each node)."""
    spec = pod.spec
    for container in (*(spec.get("containers") or ()), *(spec.get("initContainers") or ())):
        if any(port.get("hostPort") for port in container.get("ports") or ()):
            return None
    return json.dumps([spec.get(f) for f in _PLACEMENT_FIELDS], sort_keys=True, default=str)
