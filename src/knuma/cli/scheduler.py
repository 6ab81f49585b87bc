"""`knuma scheduler`: run the topology-aware secondary scheduler against a cluster."""

from __future__ import annotations

import logging
import sys

import typer

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("scheduler")(scheduler)


def scheduler(
    kubeconfig: str | None = typer.Option(None, "--kubeconfig", help="kubeconfig file (default: in-cluster)."),
    context: str | None = typer.Option(None, "--context", help="kubeconfig context."),
    leader_elect: bool = typer.Option(
        True, "--leader-elect/--no-leader-elect", help="Take a Lease before scheduling (replicas > 1 need it)."
    ),
    lease_namespace: str = typer.Option("kube-system", "--lease-namespace", help="Namespace of the leader Lease."),
    lease_name: str = typer.Option("topology-aware-scheduler", "--lease-name", help="Name of the leader Lease."),
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
    """Schedule pods whose spec.schedulerName is `topology-aware-scheduler`, NUMA-aware, until SIGTERM."""
    import asyncio

    from knuma.kube.client import KubeConfigError

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
        code = asyncio.run(
            _run(kubeconfig, context, leader_elect, lease_namespace, lease_name, metrics_address, metrics_port, explain)
        )
    except KubeConfigError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(code)


async def _run(
    kubeconfig: str | None,
    context: str | None,
    leader_elect: bool,
    lease_namespace: str,
    lease_name: str,
    metrics_address: str,
    metrics_port: int,
    explain: bool,
) -> int:
    from knuma.kube.client import async_http
    from knuma.kube.leaderelection import LeaseConfig
    from knuma.scheduler.daemon import DaemonSettings, LeadershipLost, Scheduler, serve_until_signalled
    from knuma.scheduler.health import HealthServer
    from knuma.scheduler.profiles import DEFAULT_PROFILE_NAME, default_profile

    log = logging.getLogger("knuma.scheduler")
    http = async_http(kubeconfig, context)
    settings = DaemonSettings(
        leader_elect=leader_elect, lease=LeaseConfig(namespace=lease_namespace, name=lease_name), explain=explain
    )
    daemon = Scheduler(http, {DEFAULT_PROFILE_NAME: default_profile()}, settings)
    health = HealthServer(daemon)
    try:
        if metrics_port:
            port = await health.start(metrics_address, metrics_port)
            log.info("serving /metrics, /healthz and /readyz on %s:%d", metrics_address, port)
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
