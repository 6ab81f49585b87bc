"""Everything `knuma exporter` is told on its command line, and how it turns into builder options.

Kept apart from the CLI so the daemon and the tests build an `ExporterSettings` directly.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from knuma.api.fingerprint import Method
from knuma.exporter.builder import BuildOptions
from knuma.exporter.tmconfig import (
    ConfigError,
    ExporterConfigFile,
    KubeletConfigFile,
    load_config_file,
    load_kubelet_config,
    overlay_kubelet,
    resolve_topology_manager,
)
from knuma.podresources.address import DEFAULT_SOCKET
from knuma.serving.tls import ServingCertificate

__all__ = [
    "ExporterSettings",
    "build_options",
    "config_files",
    "default_node_name",
    "options_from",
    "parse_reference_container",
]

log = logging.getLogger("knuma.exporter.config")


@dataclass(frozen=True, slots=True)
class ExporterSettings:
    node_name: str
    sysfs_root: str = "/sys"
    podresources_socket: str = DEFAULT_SOCKET
    podresources_timeout: float = 10.0
    use_podresources: bool = True
    kubelet_config_file: str | None = None
    config_file: str | None = None
    topology_manager_policy: str | None = None
    topology_manager_scope: str | None = None
    pods_fingerprint: bool = True
    pods_fingerprint_method: Method = Method.WITH_EXCLUSIVE_RESOURCES
    reference_container: tuple[str, str, str] | None = None
    watch_namespace: str | None = None
    """Only pods of this namespace are subtracted from allocatable (RTE's `--watch-namespace`)."""
    exclude_terminal_pods: bool = False
    """Drop pods the API server reports Succeeded/Failed from `List` (kubelets < 1.34 list them); needs the API
    server, and RBAC to list and watch pods."""
    dra_devices: bool = False
    """knuma's NRT extension: the node's DRA devices per zone (`knuma.exporter.dra`); needs the API server, and RBAC
    to list and watch resourceslices and resourceclaims."""
    # daemon only
    pods_fingerprint_status_file: str | None = None
    sleep_interval: float = 60.0
    notify_file: str | None = None
    kubelet_state_dir: str | None = None
    min_update_interval: float = 1.0
    metrics_address: str = "0.0.0.0"
    metrics_port: int | None = 2112
    """None disables the HTTP endpoints; 0 picks a free port (tests)."""
    metrics_tls: ServingCertificate | None = None
    """Serve /metrics, /healthz and /readyz over HTTPS with this (reloading) certificate."""
    kubeconfig: str | None = None
    context: str | None = None
    add_owner_reference: bool = True
    patch_resync: int = 10
    """Re-read the published object every N updates (RTE's `--patch-resync`); 0 only after a failed write."""
    no_publish: bool = False
    """Build on every trigger and never write (RTE's `--no-publish`, numaresources-operator's `infoRefreshPause:
    Enabled`): the last published object stays as it is, and the exporter stays ready."""


def build_options(settings: ExporterSettings, env: Mapping[str, str] | None = None) -> BuildOptions:
    """Read the configuration files and resolve the Topology Manager settings; raise `ConfigError` on bad input."""
    config = load_config_file(settings.config_file) if settings.config_file else None
    for warning in config.warnings if config else ():
        log.warning("%s", warning)
    kubelet = load_kubelet_config(settings.kubelet_config_file) if settings.kubelet_config_file else None
    return options_from(settings, config, kubelet, env)


def options_from(
    settings: ExporterSettings,
    config: ExporterConfigFile | None,
    kubelet: KubeletConfigFile | None,
    env: Mapping[str, str] | None = None,
) -> BuildOptions:
    """The builder options from already-read configuration files (the daemon re-reads each on its own)."""
    env = os.environ if env is None else env
    kubelet = overlay_kubelet(config, kubelet)
    topology_manager = resolve_topology_manager(
        policy_flag=settings.topology_manager_policy,
        scope_flag=settings.topology_manager_scope,
        env=env,
        config_file=config,
        kubelet_config=kubelet,
    )
    return BuildOptions(
        node_name=settings.node_name,
        topology_manager=topology_manager,
        fingerprint=settings.pods_fingerprint,
        fingerprint_method=settings.pods_fingerprint_method,
        reference_container=settings.reference_container,
        pod_exclude=config.pod_exclude if config else (),
        resource_exclude=config.excluded_resources(settings.node_name) if config else frozenset(),
        reserved_cpus=kubelet.reserved_cpus if kubelet else frozenset(),
        cpu_manager=kubelet.cpu_manager_options if kubelet else None,
        namespace=settings.watch_namespace or None,
    )


def config_files(settings: ExporterSettings) -> list[str]:
    """The files `build_options` reads, which the daemon watches to re-read them when they change."""
    return [path for path in (settings.kubelet_config_file, settings.config_file) if path]


def default_node_name(env: Mapping[str, str] | None = None) -> str:
    """`NODE_NAME` (set from `spec.nodeName` in the DaemonSet), else the host name, as RTE does."""
    env = os.environ if env is None else env
    return env.get("NODE_NAME") or socket.gethostname()


def parse_reference_container(text: str | None, env: Mapping[str, str] | None = None) -> tuple[str, str, str] | None:
    """`namespace/pod/container`, or the three `REFERENCE_*` environment variables (all needed), or None."""
    env = os.environ if env is None else env
    if text:
        parts = text.split("/")
        if len(parts) != 3 or not all(parts):
            raise ConfigError(f"invalid --reference-container {text!r}: expected namespace/pod/container")
        return parts[0], parts[1], parts[2]
    names = ("REFERENCE_NAMESPACE", "REFERENCE_POD_NAME", "REFERENCE_CONTAINER_NAME")
    values = [env.get(n, "") for n in names]
    return (values[0], values[1], values[2]) if all(values) else None
