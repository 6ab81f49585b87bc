"""The scheduler's picture of the cluster: nodes, the pods on them, and their NUMA view through one NRT cache mode.

Fed by informer events (Node, NodeResourceTopology, Pod) and by the scheduler itself (`assume` right after a node is
chosen, `forget` when binding fails, `bound` when it succeeds). It answers one question quickly: the `NodeInfo` of
every schedulable node, with node-level requests of every pod on the node (kube-scheduler's cache) and the NUMA view
the NRT cache gives (`knuma.scheduler.cache.interface`: knuma's own, or upstream's passthrough, overreserve or
discardreserved). Pods bound by other schedulers (foreign pods) count on their node like our own.

No I/O: the daemon calls these methods from its informer handlers; tests and the simulator call them with plain
dicts or typed objects.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from knuma.api.nrt import ATTR_FINGERPRINT_METHOD, NodeResourceTopology, NRTError
from knuma.api.pod import Pod, PodError
from knuma.api.ports import HostPort, pod_host_ports
from knuma.api.resources import ResourceList, parse_resource_list
from knuma.api.types import JsonView
from knuma.scheduler.cache.interface import PENDING, BoundPod, EvictionView, NRTCache, PublishedNRT
from knuma.scheduler.cache.knuma import KnumaCache
from knuma.scheduler.framework.interface import NodeInfo
from knuma.scheduler.plugins.node_resources_fit import non_zero_request
from knuma.topology.node import NodeTopology

__all__ = ["ClusterCache", "pod_key", "terminal"]

log = logging.getLogger("knuma.scheduler.cache.nrt")

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def pod_key(obj: JsonView) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


def terminal(obj: JsonView) -> bool:
    return (obj.get("status") or {}).get("phase") in TERMINAL_PHASES


def _same_relations(old: Pod, new: Pod) -> bool:
    """Whether two versions of a pod look the same to InterPodAffinity and PodTopologySpread (labels, affinity, and
    whether it is being deleted)."""
    return (
        old.labels == new.labels
        and old.spec.get("affinity") == new.spec.get("affinity")
        and old.terminating == new.terminating
    )


def _same_demand(old: Pod, new: Pod) -> bool:
    """Whether two versions of a pod take the same from a node (requests, non-zero requests, host ports): all three
    derive from the containers, init containers and overhead, and from what the kubelet reports of a resize."""
    return (
        all(old.spec.get(key) == new.spec.get(key) for key in ("containers", "initContainers", "overhead"))
        and old.resize_state == new.resize_state
    )


@dataclass
class _PodEntry:
    pod: Pod
    node: str
    assumed: bool
    nominated: bool = False
    """Not placed: room held for a preemptor on the node its preemption freed (`ClusterCache.nominate`)."""
    non_zero: ResourceList = field(default_factory=dict)
    """`non_zero_request(pod)`, computed once."""
    ports: tuple[HostPort, ...] = ()

    def __post_init__(self) -> None:
        self.non_zero = non_zero_request(self.pod)
        self.ports = tuple(pod_host_ports(self.pod.spec))


@dataclass
class _NodeEntry:
    name: str
    manifest: JsonView | None = None
    allocatable: ResourceList | None = None
    has_nrt: bool = False
    nrt_received: float = 0.0
    pods: dict[str, _PodEntry] = field(default_factory=dict)
    info: NodeInfo | None = None
    requested: dict[str, int] = field(default_factory=dict)
    """Sums over `pods`, kept as pods come and go (kube-scheduler's `NodeInfo.AddPod` / `RemovePod`)."""
    non_zero: dict[str, int] = field(default_factory=dict)
    ports: Counter[HostPort] = field(default_factory=Counter)

    def account(self, pod: _PodEntry, sign: int) -> None:
        for name, amount in pod.pod.effective_request.items():
            self.requested[name] = self.requested.get(name, 0) + sign * amount
        for name, amount in pod.non_zero.items():
            self.non_zero[name] = self.non_zero.get(name, 0) + sign * amount
        if pod.ports:
            self.ports.update(dict.fromkeys(pod.ports, sign))


class ClusterCache:
    def __init__(self, nrt: NRTCache | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        """`nrt`: the NRT cache mode (knuma's own when None); the cluster cache becomes its `on_change` listener."""
        self.clock = clock
        self.nodes: dict[str, _NodeEntry] = {}
        self.pods: dict[str, _PodEntry] = {}
        self.dirty: set[str] = set()
        """Nodes whose NodeInfo changed since the last `take_dirty` (for incremental consumers)."""
        self.removed: set[str] = set()
        self.nrt: NRTCache = nrt if nrt is not None else KnumaCache()
        self.nrt.on_change = self._touch
        self._eviction_view = self.nrt if isinstance(self.nrt, EvictionView) else None
        """The NRT cache when it can show a node without some pods (knuma's), for preemption's dry runs."""
        self.pods_with_affinity: dict[str, Pod] = {}
        """Placed pods (bound or assumed) with pod affinity or anti-affinity terms, by key: what the fast path asks
        InterPodAffinity about for pods without terms of their own (upstream's `HavePodsWithAffinityList`)."""
        self.relations_version = 0
        """Changes whenever `pods_with_affinity` or a namespace's labels change."""
        self.nominated: dict[str, _PodEntry] = {}
        """The entries of `pods` that only hold room for a nominated pod (`nominate`), by key."""
        self._priorities: Counter[int] = Counter()
        """How many of `pods` have each priority (`lowest_priority`)."""
        self.overlay: Callable[[NodeInfo], NodeInfo] | None = None
        """Applied to every NodeInfo built (the daemon's: DRA devices into the NUMA zones,
        `DeviceState.with_zone_devices`); its owner calls `invalidate` for the nodes whose overlay changed."""

    # -- nodes ---------------------------------------------------------------------------------------------

    def _node(self, name: str) -> _NodeEntry:
        entry = self.nodes.get(name)
        if entry is None:
            entry = self.nodes[name] = _NodeEntry(name)
            self.removed.discard(name)
        return entry

    def invalidate(self, name: str) -> None:
        """Rebuild `name`'s NodeInfo on the next read (what `overlay` adds to it changed)."""
        self._touch(name)

    def _touch(self, name: str) -> None:
        entry = self.nodes.get(name)
        if entry is not None:
            entry.info = None
        self.dirty.add(name)

    def upsert_node(self, obj: JsonView) -> None:
        name = (obj.get("metadata") or {}).get("name") or ""
        if not name:
            return
        entry = self._node(name)
        entry.manifest, entry.allocatable = obj, None
        self._touch(name)

    def node_known(self, name: str, allocatable: ResourceList) -> None:
        """A Node object with this allocatable and nothing else (typed form of `upsert_node`, for the simulator)."""
        entry = self._node(name)
        entry.manifest = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
        entry.allocatable = dict(allocatable)
        self._touch(name)

    def delete_node(self, obj: JsonView) -> None:
        name = (obj.get("metadata") or {}).get("name") or ""
        entry = self.nodes.get(name)
        if entry is None:
            return
        entry.manifest = None
        self._touch(name)
        self._drop_if_empty(name)

    def upsert_nrt(self, obj: JsonView) -> None:
        """A NodeResourceTopology object from the informer."""
        try:
            nrt = NodeResourceTopology.from_dict(obj)
            base = NodeTopology.from_nrt(nrt)
        except (NRTError, ValueError) as err:
            log.warning("ignoring NodeResourceTopology %s: %s", (obj.get("metadata") or {}).get("name"), err)
            return
        self.nrt_published(
            PublishedNRT(nrt.name, base, nrt.fingerprint, nrt.attributes.get(ATTR_FINGERPRINT_METHOD, ""))
        )

    def nrt_published(self, nrt: PublishedNRT) -> None:
        entry = self._node(nrt.node)
        entry.has_nrt, entry.nrt_received = True, self.clock()
        # NodeInfo takes nothing from the NRT but the mode's view, and every mode calls `on_change` (`_touch`) when
        # that changes: an NRT that changes nothing (an exporter's periodic publication) reloads no fast-path row.
        self.nrt.nrt_updated(nrt)

    def delete_nrt(self, obj: JsonView) -> None:
        name = (obj.get("metadata") or {}).get("name") or ""
        entry = self.nodes.get(name)
        if entry is None:
            return
        entry.has_nrt = False
        self.nrt.nrt_deleted(name)
        self._touch(name)
        self._drop_if_empty(name)

    def _drop_if_empty(self, name: str) -> None:
        entry = self.nodes[name]
        if entry.manifest is None and not entry.has_nrt and not entry.pods:
            del self.nodes[name]
            self.dirty.discard(name)
            self.removed.add(name)

    # -- pods ----------------------------------------------------------------------------------------------

    def upsert_pod(self, obj: JsonView) -> bool:
        """A pod event: assigned, non-terminal pods are accounted on their node; terminal ones release it. True when
        a placed pod's requests went down (`pod_bound`)."""
        key = pod_key(obj)
        spec = obj.get("spec") or {}
        node_name = spec.get("nodeName") or ""
        status = obj.get("status") or {}
        phase = status.get("phase") or PENDING
        is_terminal = phase in TERMINAL_PHASES
        if not node_name:
            if is_terminal:
                self.remove_pod(key)
            return False  # not bound (yet): the queue's business, unless we assumed it
        pod: Pod | None = None
        try:
            pod = Pod.from_manifest(obj)
        except PodError as err:
            if not is_terminal:
                log.warning("ignoring pod %s: %s", key, err)
        meta = obj.get("metadata") or {}
        bound = BoundPod(
            key,
            meta.get("namespace") or "default",
            meta.get("name", ""),
            node_name,
            phase,
            bool(status.get("startTime")),
            spec.get("schedulerName") or "default-scheduler",
            pod,
        )
        return self.pod_bound(bound)

    def pod_bound(self, bound: BoundPod) -> bool:
        """A pod the informer shows with `spec.nodeName` (typed form of `upsert_pod`). True when the pod was placed
        before and now requests less of some resource (an in-place resize made or refused: kube-scheduler's
        `UpdatePodScaleDown`, `extractPodScaleDown`), which can make a pending pod fit."""
        key = bound.key
        entry = self.pods.get(key)
        if entry is not None and entry.nominated:
            self.unnominate(key)  # bound: the room it held is the pod's own now
            entry = None
        if entry is not None and entry.node != bound.node:
            self.remove_pod(key)
            entry = None
        self.nrt.pod_updated(bound)
        if bound.terminal or bound.pod is None:
            self._release(key)
            return False
        if entry is None:
            self._add(key, _PodEntry(bound.pod, bound.node, assumed=False))
            return False
        if _same_demand(entry.pod, bound.pod):
            # The binding the scheduler assumed, coming back from the informer (kube-scheduler's `AddPod` of an
            # assumed pod on the same node): the node's sums stay, so its NodeInfo and the fast path's rows do
            # not need rebuilding, unless what the pod-relation plugins read of it changed.
            related = _same_relations(entry.pod, bound.pod)
            entry.pod, entry.assumed = bound.pod, False
            if not related:
                self._index_affinity(key, bound.pod)
                self._touch(bound.node)
            return False
        updated = _PodEntry(bound.pod, bound.node, assumed=False)
        node = self._node(bound.node)
        node.account(entry, -1)
        node.account(updated, +1)
        before, after = entry.pod.effective_request, bound.pod.effective_request
        entry.pod, entry.assumed, entry.non_zero, entry.ports = bound.pod, False, updated.non_zero, updated.ports
        self._index_affinity(key, bound.pod)
        self._touch(bound.node)
        return any(name not in after or after[name] < amount for name, amount in before.items())

    def delete_pod(self, obj: JsonView) -> None:
        key = pod_key(obj)
        entry = self.pods.get(key)
        node = (obj.get("spec") or {}).get("nodeName") or (entry.node if entry is not None else "")
        self.pod_removed(key, node)

    def pod_removed(self, key: str, node: str) -> None:
        """The pod object is gone (typed form of `delete_pod`)."""
        if self.unnominate(key) is not None:
            return
        if node:
            self.nrt.pod_deleted(key, node)
        self._release(key)

    def assume(self, pod: Pod, node: str) -> None:
        """The scheduler chose `node` for `pod`: account for it now, before the bind round-trip and the NRT (the NRT
        cache's Reserve)."""
        self.unnominate(pod.key)
        self.remove_pod(pod.key)
        self._add(pod.key, _PodEntry(pod, node, assumed=True))
        self.nrt.reserve(node, pod)

    def nominate(self, pod: Pod, node: str) -> None:
        """Hold room on `node` for `pod`, which preemption nominated there (`status.nominatedNodeName`) and which
        waits for its victims to go: every cycle sees the pod there, as an assumed pod, on the zones the NRT cache
        predicts, except the cycles of pods of higher priority and of the pod itself, which lift it
        (`nominations_below`; kube-scheduler's nominator adds nominated pods of equal or higher priority to a node
        before its filters run, `addGENominatedPods`)."""
        self.unnominate(pod.key)
        if self.pods.get(pod.key) is not None:
            return  # placed meanwhile: nothing to hold
        entry = _PodEntry(pod, node, assumed=True, nominated=True)
        self._add(pod.key, entry)
        self.nominated[pod.key] = entry
        self.nrt.reserve(node, pod)

    def unnominate(self, key: str) -> tuple[Pod, str] | None:
        """Stop holding room for a nominated pod; (pod, node) it was held for, or None."""
        entry = self.nominated.pop(key, None)
        if entry is None:
            return None
        self.nrt.unreserve(entry.node, entry.pod)
        self._release(key)
        return entry.pod, entry.node

    def nominations_below(self, priority: int) -> list[str]:
        """Keys of the nominated pods of lower priority than `priority` (those a pod of that priority ignores)."""
        return [k for k, e in self.nominated.items() if e.pod.priority < priority]

    def lowest_priority(self) -> int | None:
        """The lowest priority of the pods on nodes (None without pods): a pod of that priority or lower has no
        one to preempt anywhere, which preemption can tell without looking at any node."""
        return min(self._priorities) if self._priorities else None

    def nominated_node(self, key: str) -> str:
        """The node room is held on for `key` ("" when none)."""
        entry = self.nominated.get(key)
        return entry.node if entry is not None else ""

    def node_info_without(self, name: str, keys: Collection[str], numa: bool) -> NodeInfo | None:
        """`name`'s NodeInfo as if the pods `keys` were gone (preemption's victims; kube-scheduler's
        `NodeInfo.RemovePod` on a snapshot copy): their requests, ports and pod count given back; with `numa`, the
        NUMA view of the NRT cache without them where the cache knows which zones they hold (knuma's,
        `KnumaCache.view_without`), else the view as it is (upstream's NUMA plugin with `preemptionMode:
        Disabled`). The copy names the victims (`NodeInfo.evicted`), so that DynamicResources frees the devices
        they alone hold."""
        entry = self.nodes.get(name)
        info = self.node_info(name)
        if entry is None or info is None:
            return None
        victims = [entry.pods[k] for k in keys if k in entry.pods]
        requested = dict(entry.requested)
        non_zero = dict(entry.non_zero)
        for victim in victims:
            for resource, amount in victim.pod.effective_request.items():
                requested[resource] = requested.get(resource, 0) - amount
            for resource, amount in victim.non_zero.items():
                non_zero[resource] = non_zero.get(resource, 0) - amount
        used_ports = info.used_ports
        if any(victim.ports for victim in victims):
            ports = Counter(entry.ports)
            for victim in victims:
                ports.subtract(victim.ports)
            used_ports = frozenset(port for port, count in ports.items() if count > 0)
        gone = {v.pod.key for v in victims}
        topology, fresh = info.topology, info.nrt_fresh
        if numa and self._eviction_view is not None and gone:
            view = self._eviction_view.view_without(name, gone)
            topology, fresh = view.topology, view.fresh
        without = info.with_usage(
            requested={k: v for k, v in requested.items() if v},
            non_zero_requested={k: v for k, v in non_zero.items() if v},
            pod_count=len(entry.pods) - len(victims),
            used_ports=used_ports,
            pods=tuple(e.pod for k, e in entry.pods.items() if k not in gone),
            topology=topology,
            nrt_fresh=fresh,
            evicted=info.evicted | gone,
        )
        return without if self.overlay is None or topology is info.topology else self.overlay(without)

    def forget(self, key: str) -> None:
        """Binding failed: drop an assumed pod (a pod the informer has shown bound is kept); the NRT cache's
        Unreserve."""
        entry = self.pods.get(key)
        if entry is not None and entry.assumed:
            self.nrt.unreserve(entry.node, entry.pod)
            self._release(key)

    def bound(self, pod: Pod, node: str) -> None:
        """The binding succeeded (the NRT cache's PostBind)."""
        self.nrt.post_bind(node, pod)

    def is_assumed(self, key: str) -> bool:
        entry = self.pods.get(key)
        return entry is not None and entry.assumed and not entry.nominated

    def relations_changed(self) -> None:
        """Something the pod-relation plugins read besides the pods changed (a namespace's labels)."""
        self.relations_version += 1

    def _index_affinity(self, key: str, pod: Pod | None) -> None:
        had = self.pods_with_affinity.pop(key, None)
        if pod is not None and pod.affinity_terms.has_affinity:
            self.pods_with_affinity[key] = pod
        elif had is None:
            return
        self.relations_version += 1

    def _add(self, key: str, entry: _PodEntry) -> None:
        self._index_affinity(key, entry.pod)
        self.pods[key] = entry
        self._priorities[entry.pod.priority] += 1
        node = self._node(entry.node)
        node.pods[key] = entry
        node.account(entry, +1)
        self._touch(entry.node)

    def remove_pod(self, key: str) -> None:
        """The pod was deleted (or moved): it leaves its node and the NRT cache."""
        entry = self.pods.get(key)
        if entry is None:
            return
        self.nrt.pod_deleted(key, entry.node)
        self._release(key)

    def _release(self, key: str) -> None:
        entry = self.pods.pop(key, None)
        if entry is None:
            return
        self._priorities[entry.pod.priority] -= 1
        if not self._priorities[entry.pod.priority]:
            del self._priorities[entry.pod.priority]
        self.nominated.pop(key, None)
        self._index_affinity(key, None)
        node = self.nodes.get(entry.node)
        if node is None:
            return
        if node.pods.pop(key, None) is not None:
            node.account(entry, -1)
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
        return ((name, now - e.nrt_received) for name, e in self.nodes.items() if e.has_nrt)

    def reserved(self, node: str) -> int:
        """Pods the NRT cache holds on `node` beyond its published NRT."""
        return self.nrt.reserved(node)

    def _allocatable(self, entry: _NodeEntry) -> ResourceList:
        if entry.allocatable is None:
            assert entry.manifest is not None
            status = entry.manifest.get("status") or {}
            try:
                entry.allocatable = parse_resource_list(status.get("allocatable") or status.get("capacity") or {})
            except ValueError as err:
                log.warning("node %s: %s", entry.name, err)
                entry.allocatable = {}
        return entry.allocatable

    def _build(self, entry: _NodeEntry) -> NodeInfo:
        requested = {name: amount for name, amount in entry.requested.items() if amount}
        non_zero = {name: amount for name, amount in entry.non_zero.items() if amount}
        used_ports = frozenset(port for port, count in entry.ports.items() if count > 0)
        view = self.nrt.view(entry.name)
        info = NodeInfo(
            name=entry.name,
            allocatable=self._allocatable(entry),
            requested=requested,
            pod_count=len(entry.pods),
            topology=view.topology,
            manifest=entry.manifest,
            used_ports=used_ports,
            non_zero_requested=non_zero,
            nrt_fresh=view.fresh,
            pods=tuple(e.pod for e in entry.pods.values()),
        )
        return info if self.overlay is None else self.overlay(info)
