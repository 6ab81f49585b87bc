"""The scheduler's picture of the cluster: nodes, their NRT data, the pods on them, and the reservations.

Fed by informer events (Node, NodeResourceTopology, Pod) and by the scheduler itself (`assume` right after a node is
chosen, `forget` when binding fails). It answers one question quickly: the `NodeInfo` of every schedulable node, with
node-level requests of every pod on the node (kube-scheduler's cache) and a NUMA view that is the latest NRT minus the
pods that NRT does not account for yet (see `knuma.scheduler.cache.reservation`). Pods bound by other schedulers
(foreign pods) are accounted for like our own: they appear with `spec.nodeName` set and are reserved until an NRT
reflects them.

No I/O: the daemon calls these methods from its informer handlers; tests call them with plain dicts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from knuma.api.fingerprint import Method
from knuma.api.nrt import ATTR_FINGERPRINT_METHOD, NodeResourceTopology, NRTError
from knuma.api.pod import Pod, PodError
from knuma.api.ports import pod_host_ports
from knuma.api.resources import parse_resource_list
from knuma.scheduler.cache.reservation import apply_pod, fingerprint_method, holds_exclusive_resources, reconcile
from knuma.scheduler.framework.interface import NodeInfo
from knuma.scheduler.plugins.node_resources_fit import non_zero_request
from knuma.topology.node import NodeTopology

__all__ = ["ClusterCache", "pod_key", "terminal"]

log = logging.getLogger("knuma.scheduler.cache.nrt")

JsonObj = Mapping[str, Any]
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def pod_key(obj: JsonObj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


def terminal(obj: JsonObj) -> bool:
    return (obj.get("status") or {}).get("phase") in TERMINAL_PHASES


@dataclass
class _PodEntry:
    pod: Pod
    node: str
    assumed: bool
    started: bool


@dataclass
class _NodeEntry:
    name: str
    manifest: JsonObj | None = None
    nrt: NodeResourceTopology | None = None
    base: NodeTopology | None = None
    nrt_received: float = 0.0
    pods: dict[str, _PodEntry] = field(default_factory=dict)
    reflected: set[str] = field(default_factory=set)
    """Pods the latest matched NRT accounts for."""
    pending: list[str] = field(default_factory=list)
    """Pods holding NUMA resources that no NRT accounts for yet, in bind order: reserved on the view."""
    gone: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Reflected pods deleted since: the kubelet may still list them in the next NRT."""
    info: NodeInfo | None = None


@dataclass
class CacheStats:
    reconciled: int = 0
    unmatched: int = 0


class ClusterCache:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.nodes: dict[str, _NodeEntry] = {}
        self.pods: dict[str, _PodEntry] = {}
        self.dirty: set[str] = set()
        """Nodes whose NodeInfo changed since the last `take_dirty` (for incremental consumers)."""
        self.removed: set[str] = set()
        self.stats = CacheStats()

    # -- nodes ---------------------------------------------------------------------------------------------

    def _node(self, name: str) -> _NodeEntry:
        entry = self.nodes.get(name)
        if entry is None:
            entry = self.nodes[name] = _NodeEntry(name)
            self.removed.discard(name)
        return entry

    def _touch(self, name: str) -> None:
        entry = self.nodes.get(name)
        if entry is not None:
            entry.info = None
        self.dirty.add(name)

    def upsert_node(self, obj: JsonObj) -> None:
        name = (obj.get("metadata") or {}).get("name") or ""
        if not name:
            return
        self._node(name).manifest = obj
        self._touch(name)

    def delete_node(self, obj: JsonObj) -> None:
        name = (obj.get("metadata") or {}).get("name") or ""
        entry = self.nodes.get(name)
        if entry is None:
            return
        entry.manifest = None
        self._touch(name)
        self._drop_if_empty(name)

    def upsert_nrt(self, obj: JsonObj) -> None:
        try:
            nrt = NodeResourceTopology.from_dict(obj)
            base = NodeTopology.from_nrt(nrt)
        except (NRTError, ValueError) as err:
            log.warning("ignoring NodeResourceTopology %s: %s", (obj.get("metadata") or {}).get("name"), err)
            return
        entry = self._node(nrt.name)
        entry.nrt, entry.base, entry.nrt_received = nrt, base, self.clock()
        self._reconcile(entry)
        self._touch(nrt.name)

    def delete_nrt(self, obj: JsonObj) -> None:
        name = (obj.get("metadata") or {}).get("name") or ""
        entry = self.nodes.get(name)
        if entry is None:
            return
        entry.nrt = entry.base = None
        self._touch(name)
        self._drop_if_empty(name)

    def _drop_if_empty(self, name: str) -> None:
        entry = self.nodes[name]
        if entry.manifest is None and entry.nrt is None and not entry.pods:
            del self.nodes[name]
            self.dirty.discard(name)
            self.removed.add(name)

    def _reconcile(self, entry: _NodeEntry) -> None:
        """Decide which pods the fresh NRT reflects; the others stay reserved on the view."""
        nrt = entry.nrt
        assert nrt is not None
        method = fingerprint_method(nrt.attributes.get(ATTR_FINGERPRINT_METHOD, ""))
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
                "NRT %s: fingerprint %s matches no known pod set; keeping reservations", nrt.name, nrt.fingerprint
            )
            entry.pending = pending
            return
        self.stats.reconciled += 1
        entry.reflected = set(outcome.reflected)
        entry.pending = list(outcome.pending)
        entry.gone.clear()

    # -- pods ----------------------------------------------------------------------------------------------

    def upsert_pod(self, obj: JsonObj) -> None:
        """A pod event: assigned, non-terminal pods are accounted on their node; terminal ones release it."""
        key = pod_key(obj)
        node_name = (obj.get("spec") or {}).get("nodeName") or ""
        if terminal(obj):
            self.remove_pod(key)
            return
        if not node_name:
            return  # not bound (yet): the queue's business, unless we assumed it
        try:
            pod = Pod.from_manifest(obj)
        except PodError as err:
            log.warning("ignoring pod %s: %s", key, err)
            return
        started = bool((obj.get("status") or {}).get("startTime"))
        entry = self.pods.get(key)
        if entry is not None and entry.node != node_name:
            self.remove_pod(key)
            entry = None
        if entry is None:
            self._add(key, _PodEntry(pod, node_name, assumed=False, started=started))
        else:
            entry.pod, entry.assumed, entry.started = pod, False, started
            self._touch(node_name)

    def delete_pod(self, obj: JsonObj) -> None:
        self.remove_pod(pod_key(obj))

    def assume(self, pod: Pod, node: str) -> None:
        """The scheduler chose `node` for `pod`: account for it now, before the bind round-trip and the NRT."""
        self.remove_pod(pod.key)
        self._add(pod.key, _PodEntry(pod, node, assumed=True, started=False))

    def forget(self, key: str) -> None:
        """Binding failed: drop an assumed pod (a pod the informer has shown bound is kept)."""
        entry = self.pods.get(key)
        if entry is not None and entry.assumed:
            self.remove_pod(key)

    def is_assumed(self, key: str) -> bool:
        entry = self.pods.get(key)
        return entry is not None and entry.assumed

    def _add(self, key: str, entry: _PodEntry) -> None:
        self.pods[key] = entry
        node = self._node(entry.node)
        node.pods[key] = entry
        node.gone.pop(key, None)
        if key not in node.reflected and holds_exclusive_resources(entry.pod, node.base):
            node.pending.append(key)
        self._touch(entry.node)

    def remove_pod(self, key: str) -> None:
        entry = self.pods.pop(key, None)
        if entry is None:
            return
        node = self.nodes.get(entry.node)
        if node is None:
            return
        node.pods.pop(key, None)
        if key in node.pending:
            node.pending.remove(key)
        if key in node.reflected:
            node.reflected.discard(key)
            node.gone[key] = (entry.pod.namespace, entry.pod.name)
        self._touch(entry.node)
        self._drop_if_empty(entry.node)

    # -- the scheduler's view ------------------------------------------------------------------------------

    def node_info(self, name: str) -> NodeInfo | None:
        entry = self.nodes.get(name)
        if entry is None or entry.manifest is None:
            return None
        if entry.info is None:
            entry.info = self._build(entry)
        return entry.info

    def node_infos(self) -> list[NodeInfo]:
        """Every node with a Node object (what kube-scheduler schedules onto), in name order."""
        out = []
        for name in sorted(self.nodes):
            info = self.node_info(name)
            if info is not None:
                out.append(info)
        return out

    def take_dirty(self) -> tuple[set[str], set[str]]:
        """(changed, removed) node names since the last call."""
        dirty, removed = self.dirty, self.removed
        self.dirty, self.removed = set(), set()
        return dirty, removed

    def nrt_age(self) -> Iterable[tuple[str, float]]:
        now = self.clock()
        return ((name, now - e.nrt_received) for name, e in self.nodes.items() if e.nrt is not None)

    def reserved(self, node: str) -> list[str]:
        entry = self.nodes.get(node)
        return list(entry.pending) if entry is not None else []

    def _build(self, entry: _NodeEntry) -> NodeInfo:
        assert entry.manifest is not None
        status = entry.manifest.get("status") or {}
        try:
            allocatable = parse_resource_list(status.get("allocatable") or status.get("capacity") or {})
        except ValueError as err:
            log.warning("node %s: %s", entry.name, err)
            allocatable = {}
        requested: dict[str, int] = {}
        non_zero: dict[str, int] = {}
        for pod in entry.pods.values():
            for name, amount in pod.pod.effective_request.items():
                requested[name] = requested.get(name, 0) + amount
            for name, amount in non_zero_request(pod.pod).items():
                non_zero[name] = non_zero.get(name, 0) + amount
        used_ports = frozenset(port for pod in entry.pods.values() for port in pod_host_ports(pod.pod.spec))
        topology = entry.base
        if topology is not None:
            for key in entry.pending:
                topology = apply_pod(entry.pods[key].pod, topology)
        return NodeInfo(
            name=entry.name,
            allocatable=allocatable,
            requested=requested,
            pod_count=len(entry.pods),
            topology=topology,
            manifest=entry.manifest,
            used_ports=used_ports,
            non_zero_requested=non_zero,
        )
