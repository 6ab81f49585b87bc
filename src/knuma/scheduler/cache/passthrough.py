"""`passthrough`: the NRT as last published, no reservations (scheduler-plugins `cache/passthrough.go`, used upstream
when `cacheResyncPeriodSeconds` is 0 or unset).

Upstream's `GetCachedNRTCopy` does a client GET per call; knuma's informer keeps the latest published object, which
is what that GET returns. Everything else is a no-op, so back-to-back pods all see the same free zones until the
exporter publishes again: with stale NRT this is the mode that produces `TopologyAffinityError`.
"""

from __future__ import annotations

from collections.abc import Iterable

from knuma.api.pod import Pod
from knuma.scheduler.cache.interface import NO_DATA, BoundPod, NRTView, OnChange, PublishedNRT

__all__ = ["Passthrough"]


class Passthrough:
    mode = "passthrough"
    resync_period: float | None = None
    tracks_rejections = False

    def __init__(self, on_change: OnChange = lambda _: None) -> None:
        self.on_change = on_change
        self.published: dict[str, NRTView] = {}

    def view(self, node: str) -> NRTView:
        return self.published.get(node, NO_DATA)

    def nrt_updated(self, nrt: PublishedNRT) -> None:
        known = self.published.get(nrt.node)
        if known is not None and known.topology == nrt.topology:
            return  # the same zones (an exporter's periodic publication of an unchanged node): no view changes
        self.published[nrt.node] = NRTView(nrt.topology)
        self.on_change(nrt.node)

    def nrt_deleted(self, node: str) -> None:
        if self.published.pop(node, None) is not None:
            self.on_change(node)

    def pod_updated(self, pod: BoundPod) -> None:
        del pod

    def pod_deleted(self, key: str, node: str) -> None:
        del key, node

    def node_maybe_over_reserved(self, node: str) -> None:
        del node

    def nodes_maybe_over_reserved(self, nodes: Iterable[str]) -> None:
        del nodes

    def reserve(self, node: str, pod: Pod) -> None:
        del node, pod

    def unreserve(self, node: str, pod: Pod) -> None:
        del node, pod

    def post_bind(self, node: str, pod: Pod) -> None:
        del node, pod

    def informers_synced(self) -> None:
        return None

    def resync(self) -> bool:
        return False

    def reserved(self, node: str) -> int:
        del node
        return 0
