"""The API objects `--dra-devices` needs: this node's ResourceSlices and the cluster's ResourceClaims, from
informers; any change asks for a reactive NRT update (a claim allocated or freed changes a zone's free devices)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2

from knuma.api.nrt import NodeResourceTopology
from knuma.exporter.dra import ZoneDevice, with_dra_devices, zone_devices
from knuma.kube.informer import Informer

__all__ = ["DraSources"]

API = "/apis/resource.k8s.io/v1"


class _Changed:
    def __init__(self, notify: Callable[[], None]) -> None:
        self.notify = notify

    def on_add(self, obj: dict[str, Any]) -> None:
        self.notify()

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.notify()

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.notify()


class DraSources:
    def __init__(self, http: httpx2.AsyncClient, node: str, notify: Callable[[], None]) -> None:
        self.node = node
        handler = _Changed(notify)
        self.slices = Informer(http, f"{API}/resourceslices", handler, field_selector=f"spec.nodeName={node}")
        self.claims = Informer(http, f"{API}/resourceclaims", handler)

    @property
    def informers(self) -> tuple[Informer, Informer]:
        return (self.slices, self.claims)

    def zones(self) -> dict[int, list[ZoneDevice]]:
        return zone_devices(self.slices.store.values(), self.claims.store.values(), self.node)

    def annotate(self, nrt: NodeResourceTopology) -> NodeResourceTopology:
        """`nrt` with this node's DRA devices in its zones (`knuma.exporter.dra.with_dra_devices`)."""
        return with_dra_devices(nrt, self.zones())
