"""One scan of the kubelet: what it can allocate, then what it has allocated (in that order, as RTE does)."""

from __future__ import annotations

from knuma.exporter.builder import KubeletState
from knuma.podresources.client import PodResourcesClient

__all__ = ["scan"]


def scan(client: PodResourcesClient) -> KubeletState:
    """Call `GetAllocatableResources` and `List`; raise `PodResourcesError` (naming the socket) when either fails.

    Allocatable is re-read on every scan, not once at start: device plugins register late and the kubelet resets
    device allocatable on restart (nfd-topology-updater's start-time snapshot misses both).
    """
    allocatable = client.get_allocatable_resources()
    return KubeletState(allocatable=allocatable, pods=client.list())
