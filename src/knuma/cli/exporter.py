"""`knuma exporter`: the node agent publishing this node's NodeResourceTopology (or printing it with --dry-run)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import typer

from knuma.cli import completion
from knuma.cli.errors import fail
from knuma.cli.logopts import log_level_option, resolve
from knuma.podresources.address import DEFAULT_SOCKET

# Everything else is imported inside the command: `knuma` imports every command module at start-up.

log = logging.getLogger("knuma.exporter.config")


def register(app: typer.Typer) -> None:
    app.command("exporter")(exporter)


def exporter(
    ctx: typer.Context,
    config_root: str | None = typer.Argument(
        None,
        metavar="CONFIGROOT",
        help="resource-topology-exporter's configuration root (default /etc/rte): daemon/config.yaml and "
        "daemon/config.yaml.d/* set the flags the command line does not give; when given, extra/config.yaml replaces "
        "--config.",
        show_default=False,
    ),
    sysfs_root: str = typer.Option(
        "/sys", "--sysfs-root", "--sysfs", help="sysfs mount point (the host's /sys, e.g. mounted at /host-sys)."
    ),
    podresources_socket: str = typer.Option(
        DEFAULT_SOCKET, "--podresources-socket", help="kubelet PodResources API socket (unix:///path or a path)."
    ),
    podresources_timeout: float = typer.Option(10.0, "--podresources-timeout", help="Deadline of each call (s)."),
    no_podresources: bool = typer.Option(
        False, "--no-podresources", help="With --dry-run: describe the bare machine (allocatable = capacity)."
    ),
    node_name: str | None = typer.Option(
        None, "--node-name", "--hostname", help="Node (and NRT object) name; default $NODE_NAME, then the host name."
    ),
    kubelet_config_file: str | None = typer.Option(
        None, "--kubelet-config-file", help="KubeletConfiguration to read the Topology Manager settings from."
    ),
    config: str | None = typer.Option(
        None,
        "--config",
        help="RTE-style extra config (the operator's ConfigMap): kubelet.topologyManager*, podExclude, "
        "resourceExclude. Default: /etc/resource-topology-exporter/config.yaml when it exists (as RTE).",
        show_default=False,
    ),
    topology_manager_policy: str | None = typer.Option(
        None,
        "--topology-manager-policy",
        help="none, best-effort, restricted or single-numa-node.",
        autocompletion=completion.policies,
    ),
    topology_manager_scope: str | None = typer.Option(
        None, "--topology-manager-scope", help="container or pod.", autocompletion=completion.scopes
    ),
    pods_fingerprint: bool = typer.Option(
        True, "--pods-fingerprint/--no-pods-fingerprint", help="Publish the pod-set fingerprint."
    ),
    pods_fingerprint_method: str = typer.Option(
        "with-exclusive-resources",
        "--pods-fingerprint-method",
        help="with-exclusive-resources or all.",
        autocompletion=completion.choices("with-exclusive-resources", "all"),
    ),
    pods_fingerprint_status_file: str | None = typer.Option(
        None,
        "--pods-fingerprint-status-file",
        envvar="PFP_STATUS_FILE",
        help="Daemon: after each update, write the fingerprint and the pods it covers to this JSON file.",
    ),
    reference_container: str | None = typer.Option(
        None,
        "--reference-container",
        help="namespace/pod/container never given exclusive CPUs (shared-pool detection on kubelets < 1.22).",
    ),
    watch_namespace: str | None = typer.Option(
        None,
        "--watch-namespace",
        help="Subtract only the pods of this namespace from allocatable (the fingerprint still covers all pods).",
    ),
    exclude_terminal_pods: bool = typer.Option(
        False,
        "--exclude-terminal-pods/--include-terminal-pods",
        help="Ask the API server which pods of the node are Succeeded/Failed and do not count them (kubelets < 1.34 "
        "list them); needs list and watch on pods.",
    ),
    dra_devices: bool = typer.Option(
        False,
        "--dra-devices/--no-dra-devices",
        help="knuma extension: list the node's DRA devices (ResourceSlices) per NUMA zone, as `<driver>/devices` "
        "resources and a `knuma.io/dra-devices` zone attribute; needs list and watch on resourceslices and "
        "resourceclaims.",
    ),
    once: bool = typer.Option(False, "--once", "--oneshot", help="Build (and publish) once, then exit."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the object instead of publishing it."),
    output: str = typer.Option(
        "yaml",
        "-o",
        "--output",
        help="With --dry-run: yaml or json.",
        autocompletion=completion.output_formats("yaml", "json"),
    ),
    sleep_interval: str = typer.Option("60s", "--sleep-interval", help="Periodic update interval; 0 disables."),
    notify_file: str | None = typer.Option(
        None, "--notify-file", help="Update (within 1 s) whenever this file is touched or written."
    ),
    kubelet_state_dir: str | None = typer.Option(
        None,
        "--kubelet-state-dir",
        help="Update when cpu_manager_state, memory_manager_state or the device checkpoint change under this dir.",
    ),
    metrics_mode: str = typer.Option(
        "http",
        "--metrics-mode",
        help="http, httptls (HTTPS with a reloading certificate) or disabled.",
        autocompletion=completion.choices("http", "httptls", "disabled"),
    ),
    metrics_address: str = typer.Option(
        "0.0.0.0", "--metrics-address", "--metrics-ip", help="Address for /metrics, /healthz, /readyz."
    ),
    metrics_port: int = typer.Option(
        2112, "--metrics-port", min=0, max=65535, help="Port for /metrics, /healthz, /readyz; 0 = off."
    ),
    metrics_certs_dir: str = typer.Option(
        "/etc/secrets/rte", "--metrics-certs-dir", help="httptls: directory of the serving certificate and key."
    ),
    metrics_cert_file: str = typer.Option("tls.crt", "--metrics-cert-file", help="httptls: certificate file."),
    metrics_key_file: str = typer.Option("tls.key", "--metrics-key-file", help="httptls: private key file."),
    metrics_tls_min_version: str = typer.Option(
        "VersionTLS12", "--metrics-tls-min-version", help="httptls: VersionTLS12 or VersionTLS13."
    ),
    metrics_tls_cipher_suites: str = typer.Option(
        "",
        "--metrics-tls-cipher-suites",
        help="httptls: comma-separated Go cipher-suite names for TLS 1.2 (as Kubernetes components take them, e.g. "
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256); ignored with TLS 1.3. Default: OpenSSL's.",
    ),
    metrics_want_cli_auth: bool = typer.Option(
        False,
        "--metrics-want-cli-auth",
        help="httptls: require a client certificate signed by a trusted CA (the system roots, or "
        "--metrics-client-ca-file).",
    ),
    metrics_client_ca_file: str | None = typer.Option(
        None,
        "--metrics-client-ca-file",
        help="With --metrics-want-cli-auth: PEM CA bundle client certificates must chain to (reloaded on change).",
    ),
    kubeconfig: str | None = typer.Option(None, "--kubeconfig", help="kubeconfig file (default: in-cluster)."),
    context: str | None = typer.Option(None, "--context", help="kubeconfig context."),
    add_nrt_owner: bool = typer.Option(
        True, "--add-nrt-owner/--no-add-nrt-owner", help="Owner reference to the Node (GC with the node)."
    ),
    no_publish: bool = typer.Option(
        False,
        "--no-publish",
        help="Build on every trigger but never write the NodeResourceTopology (RTE's flag; numaresources-operator's "
        "infoRefreshPause): the object keeps its last content.",
    ),
    patch_resync: int = typer.Option(
        10,
        "--patch-resync",
        help="Re-read the published object every N updates, undoing edits by others; 0: only after a failed write.",
    ),
    dump_config: str | None = typer.Option(
        None,
        "--dump-config",
        help="Print the resolved configuration as YAML in RTE's layout: - (stdout), .andexit (stdout, then exit), "
        ".log (the log) or a file path.",
    ),
    verbose: int = typer.Option(0, "-v", "--verbose", count=True, help="More logs on stderr."),
    log_level: str | None = log_level_option(),
) -> None:
    """Publish this node's per-NUMA resources as a NodeResourceTopology object (topology.node.k8s.io/v1alpha2),
    from sysfs and the kubelet PodResources API; `--once --dry-run` prints it instead."""
    from knuma.exporter import logs, rteconfig
    from knuma.exporter.commandline import CommandLine, settings_from
    from knuma.podresources.client import PodResourcesError

    flags = {name: value for name, value in locals().items() if name in CommandLine.__dataclass_fields__}
    given = {name for name in flags if _on_command_line(ctx, name)}
    tree = rteconfig.read_daemon_config(config_root or rteconfig.DEFAULT_CONFIG_ROOT)
    daemon = rteconfig.dispatch(tree)
    flags = rteconfig.apply(flags, given, daemon)
    flags["config"], config_warning = rteconfig.extra_config(config_root, flags["config"], os.path.exists)
    if daemon.verbose is not None:  # as RTE's Finalize: the higher of the file's and the flags' verbosity
        verbose = max(verbose, rteconfig.verbose_count(daemon.verbose))
    dry_run, once = flags["dry_run"], flags["once"]
    default = logging.DEBUG if verbose > 1 else logging.INFO if verbose or not dry_run else logging.WARNING
    logs.configure(resolve(0, log_level, default))
    for warning in (*daemon.warnings, *([config_warning] if config_warning else [])):
        log.warning("%s", warning)
    command = CommandLine(**flags)
    command.check()
    if dump_config is not None:
        level = max(2 if daemon.verbose is None else daemon.verbose, rteconfig.klog_level(verbose))
        doc = rteconfig.rte_layout(flags, level, _extra_document(flags))
        if _dump(doc, dump_config):
            return
    settings = settings_from(command)
    command.check_dry_run()
    if dry_run:
        from knuma.exporter.once import build_once

        try:
            result = build_once(settings)
        except PodResourcesError as err:  # the socket flag (or the kubelet's mount) is what to fix: 2, as before
            fail(str(err))
        for warning in result.warnings:
            typer.echo(f"warning: {warning}", err=True)
        _print(result.nrt.to_dict(), output)
        return
    from knuma.exporter.daemon import run

    raise typer.Exit(run(settings, once=once))


def _on_command_line(ctx: typer.Context, name: str) -> bool:
    """Whether the user gave this flag (not its default, not its environment variable): only such a flag wins over
    the daemon config. By the source's name, since typer may bring its own copy of click's `ParameterSource`."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def _extra_document(flags: dict[str, Any]) -> Any:
    """The extra config as a plain document for --dump-config, checked first (`.andexit` stops before the build
    would report a broken file)."""
    if not flags.get("config"):
        return None
    from knuma.exporter.tmconfig import load_config_file
    from knuma.manifests import read_user_file, yaml_document

    load_config_file(flags["config"])  # raises ConfigError naming the file and the field
    return yaml_document(read_user_file(flags["config"]))


def _dump(doc: dict[str, Any], target: str) -> bool:
    """RTE's --dump-config targets (cmd/resource-topology-exporter/main.go); True when the command must stop."""
    import yaml

    text = yaml.safe_dump(doc, sort_keys=False)
    if target in ("-", ".andexit"):
        typer.echo(text, nl=False)
        return target == ".andexit"
    if target == ".log":
        log.info("configuration:\n%s", text)
        return False
    try:
        Path(target).write_text(text)
    except OSError as err:
        fail(f"--dump-config {target}: cannot write: {err.strerror or err}")
    return False


def _print(doc: dict[str, Any], output: str) -> None:
    if output == "json":
        typer.echo(json.dumps(doc, indent=2))
    else:
        import yaml

        typer.echo(yaml.safe_dump(doc, sort_keys=False), nl=False)


if __name__ == "__main__":
    # `python -m knuma.cli.exporter ARGS` (manifests written before the lazy imports made it unnecessary) is
    # `knuma exporter ARGS`: same command, same memory.
    import runpy
    import sys

    sys.argv[1:1] = ["exporter"]
    runpy.run_module("knuma", run_name="__main__")
