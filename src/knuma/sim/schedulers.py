"""The schedulers the simulator compares, each with its own view of the cluster.

Every scheduler keeps kube-scheduler's node-level cache (pods it bound, their requests, removed when they terminate)
and differs in what it knows about NUMA zones:

- `default`: nothing (NodeResourcesFit and a node-level LeastAllocated score; what kube-scheduler does).
- `nrt-passthrough`: upstream NodeResourceTopologyMatch on the last published NRT, no reservation (the default
  `cacheResyncPeriodSeconds: 0`).
- `nrt-overreserve`: upstream's overreserve cache: the NRT store is read once, each reserved pod's effective request is
  subtracted from every zone, and a node is refreshed only after a Filter rejection marks it dirty and a resync finds
  the published pod fingerprint equal to the pods the scheduler sees running there.
- `knuma`: the knuma profile (the kubelet model as Filter) plus a reservation on the zones the model predicts; when a
  fresh NRT arrives, its pod fingerprint tells which binds it already counts, and the others are re-applied on top.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from knuma.api.nrt import Scope
from knuma.api.pod import ContainerKind, Pod
from knuma.api.resources import CPU, MEMORY, ResourceList
from knuma.scheduler.framework import (
    MAX_NODE_SCORE,
    SUCCESS,
    Code,
    CycleState,
    NodeInfo,
    Profile,
    ScheduleResult,
    Status,
    schedule_one,
)
from knuma.scheduler.plugins.node_resources_fit import NodeResourcesFit
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.profiles import default_profile
from knuma.scheduler.strategies import ScoringStrategy, StrategyType
from knuma.scheduler.upstream import UpstreamNodeResourceTopologyMatch
from knuma.sim.exporter import NRTSnapshot, fingerprint
from knuma.sim.kubelet import RunningPod, SimKubelet, freed
from knuma.topology.kubelet import admit
from knuma.topology.node import NodeTopology

__all__ = [
    "SCHEDULERS",
    "DefaultScheduler",
    "KnumaScheduler",
    "NodeSetup",
    "OverreserveScheduler",
    "PassthroughScheduler",
    "SimScheduler",
    "make_scheduler",
]


@dataclass(frozen=True)
class NodeSetup:
    """What a scheduler gets at start: the Node's allocatable and the first published NRT."""

    name: str
    allocatable: ResourceList
    nrt: NRTSnapshot


@dataclass
class _NodeState:
    allocatable: ResourceList
    requested: dict[str, int] = field(default_factory=dict)
    pods: dict[str, Pod] = field(default_factory=dict)
    """Pods bound here that have not terminated (kube-scheduler's cache)."""
    running: set[str] = field(default_factory=set)
    """The subset the scheduler has seen leave `Pending` (admitted by the kubelet)."""


class NodeLevelLeastAllocated:
    """kube-scheduler's default NodeResourcesFit score (LeastAllocated over cpu and memory, weights 1)."""

    name = "NodeResourcesFit"

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        del state
        total = 0
        for name in (CPU, MEMORY):
            capacity = node.allocatable.get(name, 0)
            requested = node.requested.get(name, 0) + pod.effective_request.get(name, 0)
            if capacity and requested <= capacity:
                total += (capacity - requested) * MAX_NODE_SCORE // capacity
        return total // 2


class SimScheduler:
    """Base: the node-level cache and the schedule loop; subclasses say what NUMA view each node has."""

    name = ""
    uses_nrt = True

    def __init__(self, nodes: Sequence[NodeSetup], profile: Profile) -> None:
        self.profile = profile
        self.order = [n.name for n in nodes]
        self.nodes = {n.name: _NodeState(n.allocatable) for n in nodes}
        self._infos: dict[str, NodeInfo] = {}

    # -- the view ----------------------------------------------------------------------------------------------

    def topology(self, node: str) -> NodeTopology | None:
        """The NUMA view of `node` for the next cycle."""
        del node
        return None

    def node_info(self, node: str) -> NodeInfo:
        info = self._infos.get(node)
        if info is None:
            state = self.nodes[node]
            info = NodeInfo(
                name=node,
                allocatable=state.allocatable,
                requested=dict(state.requested),
                pod_count=len(state.pods),
                topology=self.topology(node),
                manifest={"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}},
            )
            self._infos[node] = info
        return info

    def invalidate(self, node: str) -> None:
        self._infos.pop(node, None)

    # -- scheduling cycle --------------------------------------------------------------------------------------

    def schedule(self, pod: Pod, now: float) -> str | None:
        """One cycle: filter and score every node, then reserve and bind on the best one (None: unschedulable)."""
        result = schedule_one(self.profile, pod, [self.node_info(n) for n in self.order], explain=False)
        self.after_filter(result, now)
        if result.selected is None:
            return None
        node = result.selected
        state = self.nodes[node]
        state.pods[pod.key] = pod
        for name, amount in pod.effective_request.items():
            state.requested[name] = state.requested.get(name, 0) + amount
        self.reserve(pod, node, result, now)
        self.invalidate(node)
        return node

    def after_filter(self, result: ScheduleResult, now: float) -> None:
        """Hook after Filter (overreserve marks rejecting nodes dirty)."""

    def reserve(self, pod: Pod, node: str, result: ScheduleResult, now: float) -> None:
        """Hook: Reserve."""

    # -- informer events ---------------------------------------------------------------------------------------

    def pod_running(self, key: str, node: str, now: float) -> None:
        """The pod left Pending on `node` (the kubelet admitted it)."""
        state = self.nodes[node]
        if key in state.pods:
            state.running.add(key)

    def pod_terminated(self, key: str, node: str, now: float) -> bool:
        """The pod on `node` finished or was rejected and is gone; True if that can unblock pending pods."""
        state = self.nodes[node]
        pod = state.pods.pop(key, None)
        state.running.discard(key)
        if pod is None:
            return False
        for name, amount in pod.effective_request.items():
            state.requested[name] = state.requested.get(name, 0) - amount
        self.forget(pod, node, now)
        self.invalidate(node)
        return True

    def forget(self, pod: Pod, node: str, now: float) -> None:
        """Hook: a terminated pod."""

    def nrt_published(self, snapshot: NRTSnapshot, now: float) -> bool:
        """A NodeResourceTopology was created or updated; True if the scheduler's view changed."""
        return False

    tick_period: float | None = None

    def tick(self, now: float) -> bool:
        """Periodic work (overreserve resync); True if the view changed."""
        return False


class DefaultScheduler(SimScheduler):
    name = "default"
    uses_nrt = False

    def __init__(self, nodes: Sequence[NodeSetup], **_: Any) -> None:
        profile = Profile("default-scheduler", (NodeResourcesFit(),), ((NodeLevelLeastAllocated(), 1),))
        super().__init__(nodes, profile)


def _upstream_profile(scoring: ScoringStrategy | None) -> Profile:
    """scheduler-plugins' NodeResourceTopologyMatch added to a profile that keeps kube-scheduler's default
    NodeResourcesFit score, as the upstream example configurations and the numaresources-operator deploy it."""
    scorer = NodeResourceTopologyMatch(scoring)
    return Profile(
        "topo-aware-scheduler",
        (NodeResourcesFit(), UpstreamNodeResourceTopologyMatch()),
        ((scorer, 1), (NodeLevelLeastAllocated(), 1)),
    )


class PassthroughScheduler(SimScheduler):
    """Upstream's passthrough cache: every cycle reads the NRT object as it is in the API server."""

    name = "nrt-passthrough"

    def __init__(self, nodes: Sequence[NodeSetup], scoring: ScoringStrategy | None = None, **_: Any) -> None:
        super().__init__(nodes, _upstream_profile(scoring))
        self.nrt = {n.name: n.nrt.topology for n in nodes}

    def topology(self, node: str) -> NodeTopology | None:
        return self.nrt[node]

    def nrt_published(self, snapshot: NRTSnapshot, now: float) -> bool:
        changed = self.nrt[snapshot.node] != snapshot.topology
        self.nrt[snapshot.node] = snapshot.topology
        self.invalidate(snapshot.node)
        return changed


class OverreserveScheduler(SimScheduler):
    """Upstream's overreserve cache (`cacheResyncPeriodSeconds > 0`, informerMode Dedicated)."""

    name = "nrt-overreserve"

    def __init__(
        self,
        nodes: Sequence[NodeSetup],
        scoring: ScoringStrategy | None = None,
        resync_period: float = 5.0,
        **_: Any,
    ) -> None:
        super().__init__(nodes, _upstream_profile(scoring))
        self.store = {n.name: n.nrt.topology for n in nodes}  # listed once at start
        self.published = {n.name: n.nrt for n in nodes}  # what a client GET returns
        self.assumed: dict[str, dict[str, Mapping[str, int]]] = {n.name: {} for n in nodes}
        self.dirty: set[str] = set()
        self.tick_period = resync_period
        self.flushes = 0

    def topology(self, node: str) -> NodeTopology | None:
        """`GetCachedNRTCopy`: the stored NRT minus every assumed pod's effective request, from every zone."""
        base = self.store[node]
        assumed = self.assumed[node]
        if not assumed:
            return base
        available = {z.id: dict(z.available) for z in base.zones}
        for request in assumed.values():
            for zone in available.values():
                for name, amount in request.items():
                    if name in zone:
                        zone[name] = max(0, zone[name] - amount)
        return base.with_available(available)

    def after_filter(self, result: ScheduleResult, now: float) -> None:
        for node in result.nodes:
            if not node.filter.ok and node.filter.plugin == UpstreamNodeResourceTopologyMatch.name:
                self.dirty.add(node.name)  # NodeMaybeOverReserved

    def reserve(self, pod: Pod, node: str, result: ScheduleResult, now: float) -> None:
        self.assumed[node][pod.key] = pod.effective_request

    def nrt_published(self, snapshot: NRTSnapshot, now: float) -> bool:
        self.published[snapshot.node] = snapshot
        return False  # the store is only replaced by a resync

    def tick(self, now: float) -> bool:
        """`Resync`: flush dirty nodes whose published fingerprint matches the pods seen running there."""
        changed = False
        for node in sorted(self.dirty):
            state = self.nodes[node]
            relevant = state.running  # Dedicated informer: bound and no longer Pending
            if not relevant:
                continue  # "cannot find any pod for node"
            snapshot = self.published[node]
            if snapshot.fingerprint != fingerprint(relevant):
                continue  # the NRT does not yet count what the scheduler sees: stay dirty
            self.store[node] = snapshot.topology
            self.assumed[node] = {}
            self.dirty.discard(node)
            self.invalidate(node)
            self.flushes += 1
            changed = True
        return changed


@dataclass
class _Model:
    """knuma's model of one node: a shadow kubelet driven by the informer events, plus the pods bound but not yet
    admitted, replayed on top in bind order."""

    shadow: SimKubelet
    reserved: list[Pod] = field(default_factory=list)
    predicted: NodeTopology | None = None

    def view(self) -> NodeTopology:
        return self.predicted or self.shadow.topology

    def replay(self) -> None:
        topology = self.shadow.topology
        for pod in self.reserved:
            topology = _apply(pod, topology)
        self.predicted = topology if self.reserved else None


class KnumaScheduler(SimScheduler):
    """knuma's profile, with reservations on the zones the kubelet model predicts.

    Per node, a shadow kubelet (the same kubelet model) starts from the first NRT. Reserve puts the pod on the zones
    the model predicts; when the pod's status shows the kubelet admitted it (`status.startTime` is set at admission,
    before images are pulled), the shadow admits it for real, and when a pod terminates the shadow frees its zones.
    Status updates arrive late but in the order they happened, so the shadow replays the kubelet's history and
    picks the zones the kubelet picked. A fresh NRT whose pod fingerprint equals the shadow's pods is a consistency
    check: if the zones differ (drift), the NRT wins and the zones of the pods already running become unknown
    (their release frees nothing until the next NRT).
    """

    name = "knuma"

    def __init__(self, nodes: Sequence[NodeSetup], scoring: ScoringStrategy | None = None, **_: Any) -> None:
        profile = default_profile(scoring)
        self.stable = StableUnderRelease(self)
        super().__init__(nodes, replace(profile, filters=(*profile.filters, self.stable)))
        self.numa = next(p for p in self.profile.filters if isinstance(p, NodeResourceTopologyMatch))
        self.models = {n.name: _Model(SimKubelet(n.name, n.allocatable, n.nrt.topology)) for n in nodes}
        self.reconciled = 0
        self.unmatched = 0
        self.drift = 0

    def topology(self, node: str) -> NodeTopology | None:
        return self.models[node].view()

    def reserve(self, pod: Pod, node: str, result: ScheduleResult, now: float) -> None:
        model = self.models[node]
        admission = self.numa.admission(result.state, node)
        model.reserved.append(pod)
        model.predicted = admission.node if admission is not None and admission.admitted else _apply(pod, model.view())

    def pod_running(self, key: str, node: str, now: float) -> None:
        super().pod_running(key, node, now)
        model = self.models[node]
        pod = next((p for p in model.reserved if p.key == key), None)
        if pod is None:
            return
        model.reserved.remove(pod)
        if not model.shadow.admit(pod).admitted:
            # The kubelet admitted what the model would not: the model has drifted. Hold the pod pessimistically
            # until an NRT corrects the zones.
            model.shadow.topology = _apply(pod, model.shadow.topology)
            model.shadow.running[key] = RunningPod(pod, ())
            self.drift += 1
        model.replay()
        self.invalidate(node)

    def forget(self, pod: Pod, node: str, now: float) -> None:
        model = self.models[node]
        model.reserved = [p for p in model.reserved if p.key != pod.key]
        model.shadow.release(pod.key)
        model.replay()

    def nrt_published(self, snapshot: NRTSnapshot, now: float) -> bool:
        model = self.models[snapshot.node]
        if fingerprint(model.shadow.running) != snapshot.fingerprint:
            self.unmatched += 1
            return False  # the NRT counts other pods than the shadow (in flight): wait for the next one
        self.reconciled += 1
        published = {z.id: z.available for z in snapshot.topology.zones}
        if all(published.get(z.id) == z.available for z in model.shadow.topology.zones):
            return False
        self.drift += 1
        model.shadow.adopt(snapshot.topology)
        model.replay()
        self.invalidate(snapshot.node)
        return True


class StableUnderRelease:
    """Filter: the kubelet's decision must not flip if one running pod on the node terminates before admission.

    Kubelet admission is not monotonic in free resources for container scope: an init container takes exclusive
    CPUs (or memory) on the lowest zone that fits, and the app containers must then include that zone (reusable
    CPUs). Freeing a few CPUs on a lower zone can move the init container there and leave the app container without
    a single zone. Pods terminate during the bind-to-admission window, so for pods with Guaranteed init containers
    knuma checks the prediction against every single release the node could see meanwhile.
    """

    name = "knuma/StableUnderRelease"

    def __init__(self, scheduler: KnumaScheduler) -> None:
        self.scheduler = scheduler
        self.rejected = 0

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        if not _fragile(pod) or node.topology is None or node.topology.config.scope is not Scope.CONTAINER:
            return SUCCESS
        model = self.scheduler.models[node.name]
        for running in model.shadow.running.values():
            if running.placements and not admit(pod, freed(node.topology, running.placements)).admitted:
                self.rejected += 1
                return Status(
                    Code.UNSCHEDULABLE,
                    "cannot align init container",
                    self.name,
                    f"admission would fail if {running.pod.key} terminated first",
                )
        return SUCCESS


def _fragile(pod: Pod) -> bool:
    """Pods whose admission can fail after a release: Guaranteed with init containers holding exclusive resources."""
    return pod.is_guaranteed and any(c.kind is ContainerKind.INIT for c in pod.init_containers)


def _apply(pod: Pod, topology: NodeTopology) -> NodeTopology:
    """Put a bound pod on the zones the kubelet model predicts (pessimistic, every zone, if it would not fit)."""
    admission = admit(pod, topology)
    if admission.admitted:
        return admission.node
    available = {z.id: dict(z.available) for z in topology.zones}
    for zone in available.values():
        for name, amount in pod.effective_request.items():
            if name in zone:
                zone[name] = max(0, zone[name] - amount)
    return topology.with_available(available)


Factory = Callable[..., SimScheduler]

SCHEDULERS: dict[str, Factory] = {
    DefaultScheduler.name: DefaultScheduler,
    PassthroughScheduler.name: PassthroughScheduler,
    OverreserveScheduler.name: OverreserveScheduler,
    KnumaScheduler.name: KnumaScheduler,
}
"""Online schedulers by name; `optimal` is offline (`knuma.sim.optimal`)."""

ALL_SCHEDULERS = (*SCHEDULERS, "optimal")


def make_scheduler(
    name: str,
    nodes: Sequence[NodeSetup],
    *,
    resync_period: float = 5.0,
    scoring: StrategyType | None = None,
) -> SimScheduler:
    try:
        factory = SCHEDULERS[name]
    except KeyError:
        raise ValueError(f"unknown scheduler {name!r}; expected one of: {', '.join(ALL_SCHEDULERS)}") from None
    strategy = ScoringStrategy(scoring) if scoring is not None else None
    return factory(nodes, scoring=strategy, resync_period=resync_period)
