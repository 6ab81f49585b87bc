"""`knuma scheduler`: run the topology-aware secondary scheduler against a cluster."""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from knuma.scheduler.config.model import SchedulerConfiguration
    from knuma.scheduler.daemon.loop import DaemonSettings

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("scheduler")(scheduler)


@dataclass(frozen=True)
class _Flags:
    kubeconfig: str | None
    context: str | None
    leader_elect: bool | None
    lease_namespace: str | None
    lease_name: str | None
    metrics_address: str
    metrics_port: int
    explain: bool


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
    metrics_address: str = typer.Option("0.0.0.0", "--metrics-address", help="Bind address of /metrics, /healthz."),
    metrics_port: int = typer.Option(10251, "--metrics-port", help="Port of /metrics, /healthz, /readyz; 0 disables."),
    explain: bool = typer.Option(
        False,
        "--explain",
        help="Annotate pods with per-node, per-plugin results (kube-scheduler-simulator keys) and the predicted "
        "NUMA placement; costs one extra evaluation and one write per pod.",
    ),
    log_level: str = typer.Option("info", "--log-level", help="debug, info, warning or error."),
) -> None:
    """Schedule pods whose spec.schedulerName names one of the profiles (default `topology-aware-scheduler`),
    NUMA-aware, until SIGTERM."""
    import asyncio

    from knuma.kube.client import KubeConfigError
    from knuma.scheduler.config.load import SchedulerConfigError, describe_config, load_config

    level = getattr(logging, log_level.upper(), None)
    if not isinstance(level, int):
        typer.echo(f"error: unknown --log-level {log_level!r}; use debug, info, warning or error", err=True)
        raise typer.Exit(2)
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(asctime)s %(levelname).1s %(name)s] %(message)s", force=True
    )
    for noisy in ("httpx2", "httpcore2"):  # one line per API request at INFO: only with --log-level debug
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))
    try:
        configuration = load_config(config, log_warnings=not check_config)
    except SchedulerConfigError as err:
        typer.echo(f"error: invalid scheduler configuration: {err}", err=True)
        raise typer.Exit(2) from None
    if check_config:
        typer.echo(describe_config(configuration), nl=False)
        raise typer.Exit(0)
    flags = _Flags(
        kubeconfig, context, leader_elect, lease_namespace, lease_name, metrics_address, metrics_port, explain
    )
    try:
        code = asyncio.run(_run(configuration, flags))
    except (KubeConfigError, ValueError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(code)


def daemon_settings(configuration: SchedulerConfiguration, flags: _Flags) -> DaemonSettings:
    """The daemon's settings: the configuration file, with command-line flags taking precedence."""
    from knuma.kube.leaderelection import LeaseConfig
    from knuma.scheduler.daemon.loop import DaemonSettings

    election = configuration.leader_election
    lease = LeaseConfig(
        namespace=flags.lease_namespace or election.resource_namespace,
        name=flags.lease_name or election.resource_name,
        lease_duration=election.lease_duration,
        renew_deadline=election.renew_deadline,
        retry_period=election.retry_period,
    )
    return DaemonSettings(
        leader_elect=election.leader_elect if flags.leader_elect is None else flags.leader_elect,
        lease=lease,
        initial_backoff=float(configuration.pod_initial_backoff_seconds),
        max_backoff=float(configuration.pod_max_backoff_seconds),
        explain=flags.explain,
    )


async def _run(configuration: SchedulerConfiguration, flags: _Flags) -> int:
    from knuma.kube.client import async_http
    from knuma.scheduler.config.load import build_nrt_cache, build_profiles
    from knuma.scheduler.daemon.health import HealthServer
    from knuma.scheduler.daemon.loop import LeadershipLost, Scheduler, serve_until_signalled

    log = logging.getLogger("knuma.scheduler")
    settings = daemon_settings(configuration, flags)
    http = async_http(flags.kubeconfig or configuration.client_connection.kubeconfig or None, flags.context)
    nrt = build_nrt_cache(configuration)
    daemon = Scheduler(http, build_profiles(configuration, nrt), settings, nrt=nrt)
    health = HealthServer(daemon)
    try:
        if flags.metrics_port:
            port = await health.start(flags.metrics_address, flags.metrics_port)
            log.info("serving /metrics, /healthz and /readyz on %s:%d", flags.metrics_address, port)
        log.info("scheduling pods with schedulerName in %s", sorted(daemon.profiles))
        await serve_until_signalled(daemon)
        log.info("stopped after binding %d pods", daemon.scheduled)
        return 0
    except LeadershipLost as err:
        log.error("%s", err)
        return 1
    finally:
        await health.stop()
        await http.aclose()
