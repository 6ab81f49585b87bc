"""What every simulated scheduler shares: kube-scheduler's node-level cache, the scheduling cycle and the informer
events the engine delivers (pod running, pod gone, NRT published, periodic tick)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from knuma.api.pod import Pod
from knuma.api.resources import CPU, MEMORY, ResourceList
from knuma.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    CycleState,
    NodeInfo,
    Profile,
    ScheduleResult,
    schedule_one,
)
from knuma.sim.exporter import NRTSnapshot
from knuma.topology.node import NodeTopology

__all__ = ["NodeLevelLeastAllocated", "NodeSetup", "SimScheduler"]


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
