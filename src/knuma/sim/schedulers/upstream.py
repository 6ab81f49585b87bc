"""The upstream baselines: scheduler-plugins' NodeResourceTopologyMatch Filter with its two NRT caches.

- `nrt-passthrough`: every cycle reads the last published NRT; no reservation (the default
  `cacheResyncPeriodSeconds: 0`).
- `nrt-overreserve`: the NRT store is listed once; each reserved pod's effective request is subtracted from every
  zone; a node is refreshed only after a Filter rejection marks it dirty and a resync finds the published pod
  fingerprint equal to the pods the scheduler sees running there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from knuma.api.pod import Pod
from knuma.scheduler.framework.interface import Profile, ScheduleResult
from knuma.scheduler.plugins.node_resources_fit import NodeResourcesFit
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.plugins.numa_upstream import UpstreamNodeResourceTopologyMatch
from knuma.scheduler.plugins.strategies import ScoringStrategy
from knuma.sim.exporter import NRTSnapshot, fingerprint
from knuma.sim.schedulers.base import NodeLevelLeastAllocated, NodeSetup, SimScheduler
from knuma.topology.node import NodeTopology

__all__ = ["OverreserveScheduler", "PassthroughScheduler"]


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
