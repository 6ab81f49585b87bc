"""The NRT cache interface: what the NUMA plugin sees of a node's NodeResourceTopology, and how reservations and
resyncs change it (scheduler-plugins `pkg/noderesourcetopology/cache/cache.go`, `Interface`).

Upstream's interface, method by method:

| upstream (`cache.Interface`) | here |
|---|---|
| `GetCachedNRTCopy(node) -> (nrt, CachedNRTInfo{Fresh})` | `view(node) -> NRTView(topology, fresh)` |
| `NodeMaybeOverReserved(node)` (a Filter rejection) | `node_maybe_over_reserved(node)`, `nodes_maybe_over_reserved` |
| `NodeHasForeignPods(node)` (the foreign-pods detector) | `pod_updated(bound_pod)` decides it per mode |
| `ReserveNodeResources` / `UnreserveNodeResources` / `PostBind` | `reserve` / `unreserve` / `post_bind` |
| `Resync()` (every `cacheResyncPeriodSeconds`) | `resync()`, run by the daemon every `resync_period` seconds |

`nodes_maybe_over_reserved(nodes)` marks a scheduling cycle's rejections at once (the fast path's).

Upstream fetches NRT objects with a client GET (passthrough, resync) or lists them once (overreserve); knuma's
informer delivers every published NRT (`nrt_updated`), and each mode decides what to do with it: passthrough uses it
at once, overreserve keeps it as what a GET would return until a resync adopts it. Pods bound to nodes reach the
cache through `pod_updated` / `pod_deleted` (upstream's pod lister and informer handlers).

Every mode tells its owner which nodes' views changed through the `on_change` callback it is built with, so that
incremental consumers (the fast path's arrays) reload only those rows.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from knuma.api.pod import Pod
from knuma.topology.node import NodeTopology

__all__ = ["BoundPod", "EvictionView", "NRTCache", "NRTView", "OnChange", "PublishedNRT"]

OnChange = Callable[[str], None]

PENDING, RUNNING, SUCCEEDED, FAILED = "Pending", "Running", "Succeeded", "Failed"


@dataclass(frozen=True)
class PublishedNRT:
    """One NodeResourceTopology as the exporter published it, parsed."""

    node: str
    topology: NodeTopology
    fingerprint: str = ""
    """`nodeTopologyPodsFingerprint` (or the legacy annotation); empty when the exporter publishes none."""
    fingerprint_method: str = ""
    """`nodeTopologyPodsFingerprintMethod` as published (`with-exclusive-resources`, `all`, or empty)."""


@dataclass(frozen=True)
class NRTView:
    """`GetCachedNRTCopy`'s answer: the zones to align against (None: no NRT data, every pod passes) and whether they
    may be used at all (`fresh` False: the Filter rejects the node with `invalid node topology data`)."""

    topology: NodeTopology | None
    fresh: bool = True


NO_DATA = NRTView(None)


@dataclass(frozen=True)
class BoundPod:
    """A pod with `spec.nodeName` set, as the pod informer shows it."""

    key: str
    namespace: str
    name: str
    node: str
    phase: str
    """`status.phase` (Pending until the kubelet admits the pod)."""
    started: bool
    """`status.startTime` is set: the kubelet has admitted the pod (its resources are allocated)."""
    scheduler_name: str
    pod: Pod | None
    """The parsed pod (None when it could not be parsed: then it holds nothing the cache can account for)."""

    @property
    def terminal(self) -> bool:
        return self.phase in (SUCCEEDED, FAILED)


@runtime_checkable
class NRTCache(Protocol):
    """One NRT cache mode. Implementations: `passthrough`, `overreserve`, `discardreserved` (upstream's) and
    `knuma` (knuma's default); `knuma.scheduler.cache.select.nrt_cache` picks one from the plugin's arguments."""

    mode: str
    """The mode's name, as `knuma scheduler --check-config` and the metrics report it."""
    resync_period: float | None
    """Seconds between `resync()` calls, or None when the mode has no resync loop."""
    on_change: OnChange
    tracks_rejections: bool
    """`node_maybe_over_reserved` does something: callers that would have to compute rejections for it (the fast
    path) can skip the work when False."""
    """Called with a node's name whenever its view changes (the owner sets it)."""

    def view(self, node: str) -> NRTView: ...

    def nrt_updated(self, nrt: PublishedNRT) -> None: ...

    def nrt_deleted(self, node: str) -> None: ...

    def pod_updated(self, pod: BoundPod) -> None: ...

    def pod_deleted(self, key: str, node: str) -> None: ...

    def node_maybe_over_reserved(self, node: str) -> None: ...

    def nodes_maybe_over_reserved(self, nodes: Iterable[str]) -> None:
        """`node_maybe_over_reserved` for each of `nodes` (the fast path reports a cycle's rejections at once)."""
        ...

    def reserve(self, node: str, pod: Pod) -> None: ...

    def unreserve(self, node: str, pod: Pod) -> None: ...

    def post_bind(self, node: str, pod: Pod) -> None: ...

    def informers_synced(self) -> None:
        """The informers have listed every object (a daemon's start): modes that seed state from the initial lists do
        it now."""
        ...

    def resync(self) -> bool:
        """One resync pass; True if some node's view changed."""
        ...

    def reserved(self, node: str) -> int:
        """Pods whose resources the view holds on `node` beyond the published NRT (for metrics)."""
        ...


@runtime_checkable
class EvictionView(Protocol):
    """An NRT cache mode that knows which zones each pod holds (knuma's): it can show a node as it would be without
    some pods, which makes preemption's dry run NUMA-aware. Upstream's modes only know the published NRT."""

    def view_without(self, node: str, keys: Collection[str]) -> NRTView: ...
