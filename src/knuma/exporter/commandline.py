"""The exporter's command line as values: what `knuma exporter` parsed, checked as a whole, and turned into the
daemon's `ExporterSettings`.

The CLI only declares the flags (names, defaults, help) and formats the result; which combinations make sense and
how flags become settings is the exporter's business, so it lives here and is tested without a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass

from knuma.api.fingerprint import Method
from knuma.duration import parse_interval
from knuma.errors import InvalidInput
from knuma.exporter.settings import ExporterSettings, default_node_name, parse_reference_container
from knuma.podresources.address import DEFAULT_SOCKET
from knuma.serving.tls import ServingCertificate

__all__ = ["METRICS_MODES", "OUTPUTS", "CommandLine", "settings_from"]

OUTPUTS = ("yaml", "json")
METRICS_MODES = ("http", "httptls", "disabled")


@dataclass(frozen=True)
class CommandLine:
    """The flags of `knuma exporter`, as given (durations and names still text)."""

    node_name: str | None = None
    sysfs_root: str = "/sys"
    podresources_socket: str = DEFAULT_SOCKET
    podresources_timeout: float = 10.0
    no_podresources: bool = False
    kubelet_config_file: str | None = None
    config: str | None = None
    topology_manager_policy: str | None = None
    topology_manager_scope: str | None = None
    pods_fingerprint: bool = True
    pods_fingerprint_method: str = "with-exclusive-resources"
    pods_fingerprint_status_file: str | None = None
    reference_container: str | None = None
    watch_namespace: str | None = None
    exclude_terminal_pods: bool = False
    dra_devices: bool = False
    once: bool = False
    dry_run: bool = False
    output: str = "yaml"
    sleep_interval: str = "60s"
    notify_file: str | None = None
    kubelet_state_dir: str | None = None
    metrics_mode: str = "http"
    metrics_address: str = "0.0.0.0"
    metrics_port: int = 2112
    metrics_certs_dir: str = "/etc/secrets/rte"
    metrics_cert_file: str = "tls.crt"
    metrics_key_file: str = "tls.key"
    metrics_tls_min_version: str = "VersionTLS12"
    metrics_tls_cipher_suites: str = ""
    metrics_want_cli_auth: bool = False
    metrics_client_ca_file: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    add_nrt_owner: bool = True
    patch_resync: int = 10
    no_publish: bool = False

    def check(self) -> None:
        """Raise `InvalidInput` for a combination of flags that cannot work, before anything is read."""
        if self.output not in OUTPUTS:
            raise InvalidInput(f"unknown output format {self.output!r}; use yaml or json")
        if self.no_podresources and not self.dry_run:
            raise InvalidInput(
                "--no-podresources only makes sense with --dry-run: a published object must come from the kubelet"
            )
        if self.metrics_mode not in METRICS_MODES:
            raise InvalidInput(f"unknown --metrics-mode {self.metrics_mode!r}; use http, httptls or disabled")
        if self.metrics_mode != "httptls":
            if self.metrics_want_cli_auth:
                raise InvalidInput(
                    "--metrics-want-cli-auth needs --metrics-mode=httptls: client certificates are checked during the "
                    "TLS handshake; add --metrics-mode=httptls and a serving certificate (--metrics-certs-dir)"
                )
            if self.metrics_client_ca_file:
                raise InvalidInput("--metrics-client-ca-file needs --metrics-mode=httptls and --metrics-want-cli-auth")
        if self.metrics_client_ca_file and not self.metrics_want_cli_auth:
            raise InvalidInput(
                "--metrics-client-ca-file is the CA bundle client certificates are checked against: it needs "
                "--metrics-want-cli-auth"
            )
        if self.patch_resync < 0:
            raise InvalidInput(f"--patch-resync must be 0 (never) or a number of updates, got {self.patch_resync}")
        if self.no_podresources and self.exclude_terminal_pods:
            raise InvalidInput(
                "--exclude-terminal-pods filters what the kubelet lists; it does nothing with --no-podresources"
            )

    def check_dry_run(self) -> None:
        """A dry run prints one object: it needs `--once`."""
        if self.dry_run and not self.once:
            raise InvalidInput("--dry-run needs --once: a dry run prints one object and exits")


def settings_from(command: CommandLine) -> ExporterSettings:
    """The daemon's settings. Raises an `InvalidInput` (a bad duration, fingerprint method, reference container or
    TLS setting) naming the flag."""
    tls = None
    if command.metrics_mode == "httptls" and not command.dry_run and command.metrics_port:
        certificate = (command.metrics_certs_dir, command.metrics_cert_file, command.metrics_key_file)
        tls = ServingCertificate.from_flags(
            *certificate,
            command.metrics_tls_min_version,
            command.metrics_tls_cipher_suites,
            want_client_auth=command.metrics_want_cli_auth,
            client_ca_file=command.metrics_client_ca_file,
        )
    metrics_on = command.metrics_port and command.metrics_mode != "disabled"
    return ExporterSettings(
        node_name=command.node_name or default_node_name(),
        sysfs_root=command.sysfs_root,
        podresources_socket=command.podresources_socket,
        podresources_timeout=command.podresources_timeout,
        use_podresources=not command.no_podresources,
        kubelet_config_file=command.kubelet_config_file,
        config_file=command.config,
        topology_manager_policy=command.topology_manager_policy,
        topology_manager_scope=command.topology_manager_scope,
        pods_fingerprint=command.pods_fingerprint,
        pods_fingerprint_method=Method.parse(command.pods_fingerprint_method),
        reference_container=parse_reference_container(command.reference_container),
        watch_namespace=command.watch_namespace or None,
        exclude_terminal_pods=command.exclude_terminal_pods,
        dra_devices=command.dra_devices,
        pods_fingerprint_status_file=command.pods_fingerprint_status_file,
        sleep_interval=parse_interval(command.sleep_interval, "--sleep-interval"),
        notify_file=command.notify_file,
        kubelet_state_dir=command.kubelet_state_dir,
        metrics_address=command.metrics_address,
        metrics_port=command.metrics_port if metrics_on else None,
        metrics_tls=tls,
        kubeconfig=command.kubeconfig,
        context=command.context,
        add_owner_reference=command.add_nrt_owner,
        patch_resync=command.patch_resync,
        no_publish=command.no_publish,
    )
