"""One build without an API server: what `knuma exporter --once --dry-run` prints."""

from __future__ import annotations

from knuma.exporter.builder import BuildResult, build
from knuma.exporter.podresources.client import PodResourcesClient
from knuma.exporter.scan import scan
from knuma.exporter.settings import ExporterSettings, build_options
from knuma.exporter.sysfs import discover

__all__ = ["build_once"]


def build_once(settings: ExporterSettings) -> BuildResult:
    """Discover sysfs, scan the kubelet (unless `use_podresources` is off) and build the NRT object.

    Raises `SysfsError`, `ConfigError` or `PodResourcesError`, each naming what to fix.
    """
    options = build_options(settings)
    machine = discover(settings.sysfs_root)
    if not settings.use_podresources:
        return build(machine, None, options)
    with PodResourcesClient(settings.podresources_socket, timeout=settings.podresources_timeout) as client:
        state = scan(client)
    return build(machine, state, options)
