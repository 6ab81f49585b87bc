"""`knuma`: knuma's NRT cache, the default when the plugin's arguments name no upstream mode: a shadow of each node's
kubelet.

Per node, an allocation ledger (`knuma.topology.allocations`, the same kubelet model the Filter runs) starts from the
node's NRT. Reserve puts a pod on the zones the model predicts; when the pod's status shows the kubelet admitted it
(`status.startTime` is set at admission, before images are pulled), the shadow admits it for real, in the order the
kubelet did (status updates arrive late but in order), so the shadow picks the zones the kubelet picked; when a pod
terminates or is deleted, the shadow frees exactly its zones. The view is the shadow plus the pods bound and not yet
admitted, replayed in bind order. Pods bound by other schedulers are followed the same way.

Published NRTs are a consistency check: when an NRT's pod fingerprint (`nodeTopologyPodsFingerprint`) equals the
fingerprint of the shadow's pods and its zones differ (drift: the model and the kubelet disagreed), the NRT wins and
the zones of the pods already running become unknown (their release frees nothing until the next such NRT). An NRT
that counts other pods (some in flight) changes nothing.

Seeding: a daemon starts with pods already running. The shadow of a node starts from its NRT once the informers
have listed everything (`informers_synced`); the running pods the NRT reflects (the largest plausible set whose
fingerprint matches, `reservation.reconcile`) are held where the NRT shows them, the others are admitted on top.

Measured against the fingerprint reconcile alone (the view = the last NRT plus every pod it does not reflect yet,
replayed) on the simulator's built-in scenarios: the shadow has no TopologyAffinityError where the reconcile has some
(lag60: 3 on seed 0) and places more pods (restricted: 633 against 581), because it knows which pod frees which zone
without waiting for the exporter.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field

from knuma.api.fingerprint import Method, compute
from knuma.api.pod import Pod
from knuma.scheduler.cache.interface import NO_DATA, BoundPod, NRTView, OnChange, PublishedNRT
from knuma.scheduler.cache.reservation import (
    apply_pod,
    fingerprint_method,
    holds_exclusive_resources,
    reconcile,
    take_everywhere,
)
from knuma.topology.allocations import Allocations, RunningPod, freed
from knuma.topology.kubelet import pinned_request
from knuma.topology.node import NodeTopology

__all__ = ["KnumaCache"]

log = logging.getLogger("knuma.scheduler.cache.knuma")


@dataclass
class _Node:
    nrt: PublishedNRT | None = None
    shadow: Allocations | None = None
    reserved: list[Pod] = field(default_factory=list)
    """Bound here, not yet admitted by the kubelet (as far as the informers said), in bind order."""
    early: dict[str, BoundPod] = field(default_factory=dict)
    """Pods seen before the shadow was seeded."""
    view: NRTView | None = None
    chain: list[NodeTopology] | None = None
    """The zones after each reserved pod, replayed in order on the shadow (the last one is the view); None: not
    computed since the last change."""
    releases: list[tuple[str, NodeTopology]] | None = None
    """`single_releases`, until the node changes."""
    exact: bool = True
    """The shadow's zones are the kubelet's, up to the pods in flight: False from the moment a pod with unknown zones
    is held (pessimistically) or released (freeing nothing), until an NRT that counts the same pods gives the zones."""


@dataclass
class ShadowStats:
    reconciled: int = 0
    """NRTs whose fingerprint matched the shadow's pods (a consistency check ran)."""
    unmatched: int = 0
    drift: int = 0
    """Times the shadow disagreed with the kubelet (an admission it did not predict, or zones an NRT corrected)."""


class KnumaCache:
    mode = "knuma"
    resync_period: float | None = None
    tracks_rejections = False

    def __init__(self, on_change: OnChange = lambda _: None, *, wait_for_sync: bool = False) -> None:
        """`wait_for_sync`: seed shadows only at `informers_synced` (a daemon listing a running cluster); otherwise
        each node's shadow starts at its first NRT."""
        self.on_change = on_change
        self.nodes: dict[str, _Node] = {}
        self.where: dict[str, str] = {}
        """pod key → node, for every pod the cache follows."""
        self.synced = not wait_for_sync
        self.stats = ShadowStats()

    def _entry(self, node: str) -> _Node:
        entry = self.nodes.get(node)
        if entry is None:
            entry = self.nodes[node] = _Node()
        return entry

    def _changed(self, node: str) -> None:
        entry = self.nodes.get(node)
        if entry is not None:
            entry.view = entry.releases = entry.chain = None
        self.on_change(node)

    # -- the view ------------------------------------------------------------------------------------------------

    def view(self, node: str) -> NRTView:
        entry = self.nodes.get(node)
        if entry is None or entry.shadow is None:
            return NO_DATA
        if entry.view is None:
            if entry.chain is None:
                entry.chain = []
                topology = entry.shadow.topology
                for pod in entry.reserved:
                    topology = apply_pod(pod, topology)
                    entry.chain.append(topology)
            entry.view = NRTView(entry.chain[-1] if entry.chain else entry.shadow.topology)
        return entry.view

    def reserved(self, node: str) -> int:
        entry = self.nodes.get(node)
        return len(entry.reserved) if entry is not None else 0

    def view_without(self, node: str, keys: Collection[str]) -> NRTView:
        """The node's zones if the pods `keys` were gone (preemption's victims): the shadow with their zones freed
        and the pods bound and not yet admitted replayed without them, as `view` builds it. A victim whose zones the
        shadow does not know (held as an NRT showed it) frees nothing: the view never promises zones it cannot
        name. This is what makes knuma's preemption NUMA-aware: upstream's dry run frees a victim's requests at
        node level only (and, with `preemptionMode: Enabled`, on the zone its overreserve cache recorded)."""
        entry = self.nodes.get(node)
        if entry is None or entry.shadow is None:
            return self.view(node)
        placements = [
            placement
            for key in keys
            if (running := entry.shadow.running.get(key)) is not None
            for placement in running.placements
        ]
        topology = freed(entry.shadow.topology, placements) if placements else entry.shadow.topology
        for pod in entry.reserved:
            if pod.key not in keys:
                topology = apply_pod(pod, topology)
        return NRTView(topology)

    def exact(self, node: str) -> bool:
        """Whether the shadow knows the node's zones (see `_Node.exact`): when it does not, more may be free than
        it shows, which only pods whose admission is not monotonic in free resources need to care about."""
        entry = self.nodes.get(node)
        return entry is None or entry.exact

    def single_releases(self, node: str) -> Iterator[tuple[str, NodeTopology]]:
        """The node as the kubelet may see it when the next pod arrives, if exactly one pod terminates first: a running
        pod, or a pod bound here that the kubelet admits and that ends at once. The release happens before the kubelet
        admits the pods bound here and not yet admitted, which may then take other zones (the lowest that fits) than
        the model predicted, so they are replayed after it (for `StableUnderRelease`)."""
        entry = self.nodes.get(node)
        if entry is None or entry.shadow is None:
            return iter(())
        if entry.releases is None:
            entry.releases = list(self._single_releases(entry, entry.shadow))
        return iter(entry.releases)

    @staticmethod
    def _single_releases(entry: _Node, shadow: Allocations) -> Iterator[tuple[str, NodeTopology]]:
        for running in shadow.running.values():
            for topology in _released(shadow.topology, running):
                for reserved in entry.reserved:
                    topology = apply_pod(reserved, topology)
                yield running.pod.key, topology
        for index, gone in enumerate(entry.reserved):
            topology = shadow.topology
            for reserved in entry.reserved[:index] + entry.reserved[index + 1 :]:
                topology = apply_pod(reserved, topology)
            yield gone.key, topology

    # -- NRT events ----------------------------------------------------------------------------------------------

    def nrt_updated(self, nrt: PublishedNRT) -> None:
        entry = self._entry(nrt.node)
        entry.nrt = nrt
        shadow = entry.shadow
        if shadow is None:
            if self.synced:
                self._seed(nrt.node, entry)
            return
        if _hardware(shadow.topology) != _hardware(nrt.topology):
            self.stats.drift += 1
            self._reseed(nrt.node, entry, nrt.topology)
            return
        if not nrt.fingerprint or _fingerprint(shadow, nrt) != nrt.fingerprint:
            self.stats.unmatched += 1
            return  # the NRT counts other pods than the shadow (some in flight): wait for the next one
        self.stats.reconciled += 1
        published = {z.id: z.available for z in nrt.topology.zones}
        exact, entry.exact = entry.exact, True
        if all(published.get(z.id) == z.available for z in shadow.topology.zones):
            if not exact:
                self._changed(nrt.node)
            return
        self.stats.drift += 1
        shadow.adopt(nrt.topology)
        self._changed(nrt.node)

    def nrt_deleted(self, node: str) -> None:
        entry = self.nodes.get(node)
        if entry is None or entry.nrt is None:
            return
        entry.nrt = None
        if entry.shadow is not None:
            for key, running in entry.shadow.running.items():
                entry.early[key] = _as_bound(running.pod, node, started=True)
            for pod in entry.reserved:
                entry.early[pod.key] = _as_bound(pod, node, started=False)
            entry.shadow, entry.reserved = None, []
        self._changed(node)

    def informers_synced(self) -> None:
        """Every object has been listed: seed the shadows of the nodes that have an NRT."""
        if self.synced:
            return
        self.synced = True
        for name, entry in self.nodes.items():
            if entry.nrt is not None and entry.shadow is None:
                self._seed(name, entry)

    def _seed(self, node: str, entry: _Node) -> None:
        """Start the shadow from the NRT: the running pods it reflects are held where it shows them (placements
        unknown), the other running pods are admitted on top, the pods not yet admitted are reserved."""
        nrt = entry.nrt
        assert nrt is not None
        shadow = entry.shadow = Allocations(nrt.topology)
        early, entry.early = entry.early, {}
        started = [b for b in early.values() if b.started and b.pod is not None]
        reflected = {b.key for b in started}
        if nrt.fingerprint and started:
            counted = [b for b in started if _counted(b.pod, nrt)]
            names = {b.key: (b.namespace, b.name) for b in counted}
            outcome = reconcile(nrt.fingerprint, reflected=[], pending=list(names), started=list(names), names=names)
            uncounted = {b.key for b in started if b.key not in names}
            if outcome is None:
                self.stats.unmatched += 1
                reflected = uncounted
            else:
                reflected = set(outcome.reflected) | uncounted
        for bound in started:
            assert bound.pod is not None
            if bound.key in reflected:
                shadow.hold(bound.pod, ())
            else:
                self._hold_anywhere(entry, shadow, bound.pod)
        entry.reserved = [b.pod for b in early.values() if not b.started and b.pod is not None]
        self._changed(node)

    def _reseed(self, node: str, entry: _Node, topology: NodeTopology) -> None:
        """The node's Topology Manager configuration, zones or allocatable changed: start over from the NRT, every
        running pod held where it shows them."""
        old = entry.shadow
        assert old is not None
        shadow = entry.shadow = Allocations(topology)
        for running in old.running.values():
            shadow.hold(running.pod, ())
        self._changed(node)

    # -- pods ----------------------------------------------------------------------------------------------------

    def pod_updated(self, pod: BoundPod) -> None:
        if pod.terminal or pod.pod is None:
            self._gone(pod.key)
            return
        node = self.where.get(pod.key)
        if node is not None and node != pod.node:
            self._gone(pod.key)
            node = None
        entry = self._entry(pod.node)
        self.where[pod.key] = pod.node
        shadow = entry.shadow
        if shadow is None:
            entry.early[pod.key] = pod
            return
        if pod.key in shadow.running:
            return
        if not pod.started:
            if all(p.key != pod.key for p in entry.reserved):
                entry.reserved.append(pod.pod)  # bound by someone else, or seen before our own assume
                self._changed(pod.node)
            return
        # The kubelet admitted the pod: replay the admission on the shadow, in the order the kubelet made them.
        chain = entry.chain
        first = bool(entry.reserved) and entry.reserved[0].key == pod.key
        entry.reserved = [p for p in entry.reserved if p.key != pod.key]
        self._admit(entry, shadow, pod.pod)
        if first and chain and chain[0] == shadow.topology:
            # Admitted where predicted (the usual case): every later prediction, and so the view, still holds.
            view = entry.view
            self._changed(pod.node)
            entry.chain, entry.view = chain[1:], view
            return
        self._changed(pod.node)

    def _admit(self, entry: _Node, shadow: Allocations, pod: Pod) -> None:
        if not shadow.allocate(pod).admitted:
            # The kubelet admitted what the model would not: the model has drifted.
            self._hold_anywhere(entry, shadow, pod)
            self.stats.drift += 1

    @staticmethod
    def _hold_anywhere(entry: _Node, shadow: Allocations, pod: Pod) -> None:
        """Hold a running pod whose zones are unknown pessimistically (its request taken from every zone that lists
        it) until an NRT that counts the same pods gives the zones; meanwhile the node is not `exact`."""
        shadow.topology = take_everywhere(pinned_request(pod, shadow.topology), shadow.topology)
        shadow.running[pod.key] = RunningPod(pod, ())
        entry.exact = False

    def pod_deleted(self, key: str, node: str) -> None:
        del node
        self._gone(key)

    def reserve(self, node: str, pod: Pod) -> None:
        if self.where.get(pod.key) is not None:
            self._gone(pod.key)
        entry = self._entry(node)
        self.where[pod.key] = node
        if entry.shadow is None:
            entry.early[pod.key] = _as_bound(pod, node, started=False)
            return
        view = self.view(node)
        chain = entry.chain
        entry.reserved.append(pod)
        self._changed(node)
        if view.topology is not None and chain is not None:
            after = apply_pod(pod, view.topology)
            entry.chain, entry.view = [*chain, after], NRTView(after)

    def unreserve(self, node: str, pod: Pod) -> None:
        entry = self.nodes.get(node)
        if entry is not None and any(p.key == pod.key for p in entry.reserved):
            self._gone(pod.key)

    def post_bind(self, node: str, pod: Pod) -> None:
        del node, pod

    def node_maybe_over_reserved(self, node: str) -> None:
        del node

    def nodes_maybe_over_reserved(self, nodes: Iterable[str]) -> None:
        del nodes

    def resync(self) -> bool:
        return False

    def _gone(self, key: str) -> None:
        node = self.where.pop(key, None)
        if node is None:
            return
        entry = self.nodes[node]
        entry.early.pop(key, None)
        before = len(entry.reserved)
        entry.reserved = [p for p in entry.reserved if p.key != key]
        released = None
        if entry.shadow is not None:
            running = entry.shadow.running.get(key)
            if running is not None and not running.placements and pinned_request(running.pod, entry.shadow.topology):
                entry.exact = False  # it frees zones the shadow does not know
            released = entry.shadow.release(key)
        if released is not None or len(entry.reserved) != before:
            self._changed(node)


def _released(topology: NodeTopology, running: RunningPod) -> Iterator[NodeTopology]:
    """The zones after `running` terminates: its placements freed; when they are unknown (a pod the shadow holds
    as an NRT showed it), each zone that could have held all it pins, freed there."""
    if running.placements:
        yield freed(topology, running.placements)
        return
    pinned = pinned_request(running.pod, topology)
    if not pinned:
        return
    for zone in topology.zones:
        room = {name: zone.total(name) - zone.available.get(name, 0) for name in pinned}
        if all(name in zone.available and room[name] >= amount for name, amount in pinned.items()):
            available = {name: amount + pinned.get(name, 0) for name, amount in zone.available.items()}
            yield topology.with_available({zone.id: available})


def _hardware(topology: NodeTopology) -> tuple[object, ...]:
    """What only a reconfiguration changes: the Topology Manager configuration, the zones and their allocatable."""
    return (topology.config, tuple((z.id, tuple(sorted(z.allocatable.items()))) for z in topology.zones))


def _counted(pod: Pod | None, nrt: PublishedNRT) -> bool:
    """Whether the exporter's fingerprint counts `pod` (all pods, or those holding exclusive resources)."""
    if pod is None:
        return False
    if fingerprint_method(nrt.fingerprint_method) is Method.ALL:
        return True
    return holds_exclusive_resources(pod, nrt.topology)


def _fingerprint(shadow: Allocations, nrt: PublishedNRT) -> str:
    return compute((r.pod.namespace, r.pod.name) for r in shadow.running.values() if _counted(r.pod, nrt))


def _as_bound(pod: Pod, node: str, *, started: bool) -> BoundPod:
    return BoundPod(pod.key, pod.namespace, pod.name, node, "Running" if started else "Pending", started, "", pod)
