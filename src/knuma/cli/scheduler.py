"""`knuma scheduler`: run the topology-aware secondary scheduler against a cluster."""

from __future__ import annotations

import logging
import sys

import typer

from knuma.cli.errors import fail
from knuma.cli.logopts import log_level_option, resolve

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("scheduler")(scheduler)


def scheduler(
    config: str | None = typer.Option(
        None,
        "--config",
        help="KubeSchedulerConfiguration (v1 or v1beta3); scheduler-plugins files load unchanged.",
    ),
    check_config: bool = typer.Option(
        False, "--check-config", help="Validate --config, print the effective configuration, and exit (0 = valid)."
    ),
    kubeconfig: str | None = typer.Option(
        None,
        "--kubeconfig",
        help="kubeconfig file (default: the config's clientConnection.kubeconfig, $KUBECONFIG, "
        "in-cluster, ~/.kube/config).",
    ),
    context: str | None = typer.Option(None, "--context", help="kubeconfig context."),
    leader_elect: bool | None = typer.Option(
        None,
        "--leader-elect/--no-leader-elect",
        help="Take a Lease before scheduling (default: the config's leaderElection.leaderElect, on).",
    ),
    lease_namespace: str | None = typer.Option(
        None,
        "--leader-elect-resource-namespace",
        "--lease-namespace",
        help="Namespace of the leader Lease (default: kube-system).",
    ),
    lease_name: str | None = typer.Option(
        None,
        "--leader-elect-resource-name",
        "--lease-name",
        help="Name of the leader Lease (default: topology-aware-scheduler).",
    ),
    metrics_address: str = typer.Option(
        "127.0.0.1",
        "--metrics-address",
        help="Bind address of /metrics, /healthz, /readyz: plain HTTP without authentication, so loopback by default; "
        "0.0.0.0 in a pod (the rendered manifests do so, behind their NetworkPolicy).",
    ),
    metrics_port: int = typer.Option(10251, "--metrics-port", help="Port of /metrics, /healthz, /readyz; 0 disables."),
    explain: bool = typer.Option(
        False,
        "--explain",
        help="Annotate pods with per-node, per-plugin results (kube-scheduler-simulator keys) and the predicted "
        "NUMA placement; costs one extra evaluation and one write per pod.",
    ),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Same as --log-level debug."),
    log_level: str | None = log_level_option(),
) -> None:
    """Schedule pods whose spec.schedulerName names one of the profiles (default `topology-aware-scheduler`),
    NUMA-aware, until SIGTERM."""
    from knuma.scheduler.config.load import SchedulerConfigError, describe_config, load_config
    from knuma.scheduler.daemon.run import CommandLine, run

    level = resolve(verbose, log_level, logging.INFO)
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(asctime)s %(levelname).1s %(name)s] %(message)s", force=True
    )
    for noisy in ("httpx2", "httpcore2"):  # one line per API request at INFO: only with --log-level debug
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))
    try:
        configuration = load_config(config, log_warnings=not check_config)
    except SchedulerConfigError as err:
        fail(f"invalid scheduler configuration: {err}")
    if check_config:
        typer.echo(describe_config(configuration), nl=False)
        raise typer.Exit(0)
    flags = CommandLine(
        kubeconfig, context, leader_elect, lease_namespace, lease_name, metrics_address, metrics_port, explain
    )
    raise typer.Exit(run(configuration, flags))
