"""One build without an API server: what `knuma exporter --once --dry-run` prints."""

from __future__ import annotations

import asyncio

from knuma.exporter.builder import BuildResult, KubeletState, build
from knuma.exporter.podphases import drop_terminal, list_terminal
from knuma.exporter.scan import scan
from knuma.exporter.settings import ExporterSettings, build_options
from knuma.exporter.sysfs import discover
from knuma.podresources.client import PodResourcesClient

__all__ = ["build_once"]


def build_once(settings: ExporterSettings) -> BuildResult:
    """Discover sysfs, scan the kubelet (unless `use_podresources` is off) and build the NRT object.

    With `exclude_terminal_pods` the API server is asked (read only) which pods of the node are terminal.
    Raises `SysfsError`, `ConfigError`, `PodResourcesError` or `KubeConfigError`, each naming what to fix.
    """
    options = build_options(settings)
    machine = discover(settings.sysfs_root)
    if not settings.use_podresources:
        return build(machine, None, options)
    terminal = asyncio.run(_terminal_pods(settings)) if settings.exclude_terminal_pods else frozenset()
    with PodResourcesClient(settings.podresources_socket, timeout=settings.podresources_timeout) as client:
        state = scan(client)
    return build(machine, KubeletState(state.allocatable, drop_terminal(state.pods, terminal)), options)


async def _terminal_pods(settings: ExporterSettings) -> frozenset[tuple[str, str]]:
    from knuma.kube.client import async_http

    http = async_http(settings.kubeconfig, settings.context)
    try:
        return await list_terminal(http, settings.node_name)
    finally:
        await http.aclose()
