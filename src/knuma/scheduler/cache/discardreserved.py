"""`discardreserved`: passthrough, except that a node with a pod in flight is off limits (scheduler-plugins
`cache/discardreserved.go`, PR #504; chosen upstream by `discardReservedNodes: true`, before any other setting).

`ReserveNodeResources` records the pod on the node; until `PostBind` or `UnreserveNodeResources` removes it,
`GetCachedNRTCopy` answers "not fresh" for that node, so every other pod is rejected there with `invalid node topology
data`. It serialises pods per node across the bind round-trip, and does not cover the window between the bind and
the exporter's next NRT (upstream says so too).
"""

from __future__ import annotations

from knuma.api.pod import Pod
from knuma.scheduler.cache.interface import NRTView, OnChange
from knuma.scheduler.cache.passthrough import Passthrough

__all__ = ["DiscardReserved"]

_STALE = NRTView(None, fresh=False)


class DiscardReserved(Passthrough):
    mode = "discardreserved"

    def __init__(self, on_change: OnChange = lambda _: None) -> None:
        super().__init__(on_change)
        self.reservations: dict[str, set[str]] = {}
        """node → keys of the pods reserved there and not yet bound (`reservationMap`)."""

    def view(self, node: str) -> NRTView:
        if self.reservations.get(node):
            return _STALE
        return super().view(node)

    def reserve(self, node: str, pod: Pod) -> None:
        self.reservations.setdefault(node, set()).add(pod.key)
        self.on_change(node)

    def unreserve(self, node: str, pod: Pod) -> None:
        self._drop(node, pod.key)

    def post_bind(self, node: str, pod: Pod) -> None:
        self._drop(node, pod.key)

    def _drop(self, node: str, key: str) -> None:
        held = self.reservations.get(node)
        if held is None or key not in held:
            return
        held.discard(key)
        if not held:
            del self.reservations[node]
        self.on_change(node)

    def reserved(self, node: str) -> int:
        return len(self.reservations.get(node, ()))
