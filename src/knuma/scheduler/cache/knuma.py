"""`knuma`: knuma's NRT cache, the default when the plugin's arguments name no upstream mode.

It differs from upstream's overreserve cache in two ways (see `knuma.scheduler.cache.reservation`):

- A pod the NRT does not account for yet is reserved on the zones the kubelet model predicts, not on every zone, so a
  node is not blocked by pessimism while the exporter catches up.
- Every published NRT is used at once: its pod fingerprint says which pods it reflects (the reflected ones, plus a
  prefix of the pending ones in bind order, with or without the pods deleted since); those drop their reservations
  and the others stay reserved on top of the new zones. When no plausible pod set produces the fingerprint, the
  reservations stay and the zones are taken as published. No resync loop, no dirty marks.

Pods bound by other schedulers are accounted for like this daemon's own (they are reserved until an NRT reflects
them), so foreign pods never make a node unusable.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from knuma.api.fingerprint import Method
from knuma.api.pod import Pod
from knuma.scheduler.cache.interface import NO_DATA, BoundPod, NRTView, OnChange, PublishedNRT
from knuma.scheduler.cache.reservation import apply_pod, fingerprint_method, holds_exclusive_resources, reconcile
from knuma.topology.node import NodeTopology

__all__ = ["KnumaCache"]

log = logging.getLogger("knuma.scheduler.cache.knuma")


@dataclass
class _Pod:
    pod: Pod
    started: bool
    assumed: bool


@dataclass
class _Node:
    nrt: PublishedNRT | None = None
    pods: dict[str, _Pod] = field(default_factory=dict)
    reflected: set[str] = field(default_factory=set)
    """Pods the latest matched NRT accounts for."""
    pending: list[str] = field(default_factory=list)
    """Pods holding NUMA resources that no NRT accounts for yet, in bind order: reserved on the view."""
    gone: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Reflected pods deleted since: the kubelet may still list them in the next NRT."""
    view: NRTView | None = None

    @property
    def base(self) -> NodeTopology | None:
        return self.nrt.topology if self.nrt is not None else None


@dataclass
class ReconcileStats:
    reconciled: int = 0
    unmatched: int = 0


class KnumaCache:
    mode = "knuma"
    resync_period: float | None = None
    tracks_rejections = False

    def __init__(self, on_change: OnChange = lambda _: None) -> None:
        self.on_change = on_change
        self.nodes: dict[str, _Node] = {}
        self.where: dict[str, str] = {}
        """pod key → node."""
        self.stats = ReconcileStats()

    def _changed(self, node: str) -> None:
        entry = self.nodes.get(node)
        if entry is not None:
            entry.view = None
        self.on_change(node)

    # -- the view ------------------------------------------------------------------------------------------------

    def view(self, node: str) -> NRTView:
        entry = self.nodes.get(node)
        if entry is None or entry.nrt is None:
            return NO_DATA
        if entry.view is None:
            topology = entry.nrt.topology
            for key in entry.pending:
                topology = apply_pod(entry.pods[key].pod, topology)
            entry.view = NRTView(topology)
        return entry.view

    def reserved(self, node: str) -> int:
        entry = self.nodes.get(node)
        return len(entry.pending) if entry is not None else 0

    def pending(self, node: str) -> list[str]:
        entry = self.nodes.get(node)
        return list(entry.pending) if entry is not None else []

    # -- NRT events ----------------------------------------------------------------------------------------------

    def nrt_updated(self, nrt: PublishedNRT) -> None:
        entry = self.nodes.setdefault(nrt.node, _Node())
        entry.nrt = nrt
        self._reconcile(entry)
        self._changed(nrt.node)

    def nrt_deleted(self, node: str) -> None:
        entry = self.nodes.get(node)
        if entry is not None and entry.nrt is not None:
            entry.nrt = None
            self._changed(node)

    def _reconcile(self, entry: _Node) -> None:
        """Decide which pods the fresh NRT reflects; the others stay reserved on the view."""
        nrt = entry.nrt
        assert nrt is not None
        method = fingerprint_method(nrt.fingerprint_method)
        if method is Method.ALL:
            counted = list(entry.pods)
        else:
            counted = [k for k, p in entry.pods.items() if holds_exclusive_resources(p.pod, entry.base)]
        if not nrt.fingerprint:
            # No fingerprint (an exporter without pfp support): trust that a pod the kubelet has started is listed.
            entry.reflected = {k for k in counted if entry.pods[k].started}
            entry.pending = [k for k in entry.pending if k not in entry.reflected and k in entry.pods]
            entry.gone.clear()
            return
        names = {k: (p.pod.namespace, p.pod.name) for k, p in entry.pods.items()}
        names.update(entry.gone)
        pending = [k for k in entry.pending if k in counted]
        pending += [k for k in counted if k not in entry.reflected and k not in pending]
        outcome = reconcile(
            nrt.fingerprint,
            reflected=[k for k in entry.reflected if k in entry.pods],
            pending=pending,
            started=[k for k in pending if entry.pods[k].started],
            gone=entry.gone,
            names=names,
        )
        if outcome is None:
            self.stats.unmatched += 1
            log.debug(
                "NRT %s: fingerprint %s matches no known pod set; keeping reservations", nrt.node, nrt.fingerprint
            )
            entry.pending = pending
            return
        self.stats.reconciled += 1
        entry.reflected = set(outcome.reflected)
        entry.pending = list(outcome.pending)
        entry.gone.clear()

    # -- pods ----------------------------------------------------------------------------------------------------

    def pod_updated(self, pod: BoundPod) -> None:
        if pod.terminal or pod.pod is None:
            self._remove(pod.key)
            return
        node = self.where.get(pod.key)
        if node is not None and node != pod.node:
            self._remove(pod.key)
            node = None
        if node is None:
            self._add(pod.node, pod.key, _Pod(pod.pod, pod.started, assumed=False))
            return
        entry = self.nodes[node].pods[pod.key]
        if entry.started != pod.started or entry.assumed:
            entry.pod, entry.started, entry.assumed = pod.pod, pod.started, False

    def pod_deleted(self, key: str, node: str) -> None:
        del node
        self._remove(key)

    def reserve(self, node: str, pod: Pod) -> None:
        if pod.key in self.where:
            self._remove(pod.key)
        self._add(node, pod.key, _Pod(pod, started=False, assumed=True))

    def unreserve(self, node: str, pod: Pod) -> None:
        del node
        entry = self._entry(pod.key)
        if entry is not None and entry.assumed:
            self._remove(pod.key)

    def post_bind(self, node: str, pod: Pod) -> None:
        del node, pod

    def node_maybe_over_reserved(self, node: str) -> None:
        del node

    def resync(self) -> bool:
        return False

    def _entry(self, key: str) -> _Pod | None:
        node = self.where.get(key)
        return self.nodes[node].pods.get(key) if node is not None else None

    def _add(self, node: str, key: str, pod: _Pod) -> None:
        entry = self.nodes.setdefault(node, _Node())
        self.where[key] = node
        entry.pods[key] = pod
        entry.gone.pop(key, None)
        if key not in entry.reflected and holds_exclusive_resources(pod.pod, entry.base):
            entry.pending.append(key)
            self._changed(node)

    def _remove(self, key: str) -> None:
        node = self.where.pop(key, None)
        if node is None:
            return
        entry = self.nodes[node]
        gone = entry.pods.pop(key)
        if key in entry.pending:
            entry.pending.remove(key)
            self._changed(node)
        if key in entry.reflected:
            entry.reflected.discard(key)
            entry.gone[key] = (gone.pod.namespace, gone.pod.name)
            self._changed(node)
