"""Run the scheduler daemon from a configuration and the command line's overrides, until SIGTERM.

This is what `knuma scheduler` does after parsing its flags: the flags that override the configuration file
(`CommandLine`), the daemon's settings from both (`daemon_settings`), and the process around the loop (`run`: the
API client, the health and metrics endpoints, the exit status).
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field

from knuma.errors import OperationFailed
from knuma.kube.client import api_session, async_http
from knuma.kube.delegation import DelegatedAuth
from knuma.kube.leaderelection import LeaseConfig
from knuma.scheduler.cache.resyncdebug import ResyncDump
from knuma.scheduler.config.load import build_nrt_cache, build_profiles
from knuma.scheduler.config.model import SchedulerConfiguration
from knuma.scheduler.daemon.health import HealthServer
from knuma.scheduler.daemon.loop import DaemonSettings, LeadershipLost, Scheduler, serve_until_signalled
from knuma.scheduler.daemon.secure import SecureServing, serving_context, status_gate

__all__ = ["CommandLine", "daemon_settings", "run"]

log = logging.getLogger("knuma.scheduler")


@dataclass(frozen=True)
class CommandLine:
    """The flags that take precedence over the configuration file; None: the file's value."""

    kubeconfig: str | None = None
    context: str | None = None
    leader_elect: bool | None = None
    lease_namespace: str | None = None
    lease_name: str | None = None
    metrics_address: str = "127.0.0.1"
    metrics_port: int = 10251
    explain: bool = False
    secure: SecureServing = field(default_factory=lambda: SecureServing(port=0))
    """The secure port; off unless asked for (the command line's default is kube-scheduler's, 10259)."""


def daemon_settings(configuration: SchedulerConfiguration, flags: CommandLine) -> DaemonSettings:
    """The daemon's settings: the configuration file, with command-line flags taking precedence."""
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


def serving_message(address: str, port: int) -> str:
    """What the insecure port really exposes: plain HTTP without authentication (the secure port is the
    authenticated one, as kube-scheduler's 10259), so say who can reach it."""
    if address in ("127.0.0.1", "::1", "localhost"):
        reach = f"on {address}:{port} (loopback only)"
    elif address in ("0.0.0.0", "::", ""):
        reach = f"on all interfaces ({address or '0.0.0.0'}:{port}): anyone who can reach the port can read them"
    else:
        reach = f"on {address}:{port}: anyone who can reach that address can read them"
    return f"serving /metrics, /healthz and /readyz over plain HTTP without authentication {reach}"


def run(configuration: SchedulerConfiguration, flags: CommandLine) -> int:
    """Schedule until SIGTERM; the process exit status (1 when the leader Lease was lost). Raises
    `KubeConfigError` when the cluster connection cannot be configured."""
    return asyncio.run(_serve(configuration, flags))


async def _serve(configuration: SchedulerConfiguration, flags: CommandLine) -> int:
    settings = daemon_settings(configuration, flags)
    kubeconfig = flags.kubeconfig or configuration.client_connection.kubeconfig or None
    http = async_http(kubeconfig, flags.context)
    writer = api_session(kubeconfig, flags.context)
    nrt = build_nrt_cache(configuration, ResyncDump.from_env(os.environ))
    daemon = Scheduler(http, build_profiles(configuration, nrt), settings, nrt=nrt, writer=writer)
    health = HealthServer(daemon)
    secure = flags.secure
    try:
        if secure.port:
            tls, origin = serving_context(secure)
            auth = DelegatedAuth(
                http,
                token_ttl=secure.token_cache_ttl,
                allow_ttl=secure.authorized_cache_ttl,
                deny_ttl=secure.unauthorized_cache_ttl,
                always_allow_paths=secure.always_allow_paths,
            )
            try:
                port = await health.start_secure(secure.bind_address, secure.port, tls, status_gate(auth))
            except OSError as err:
                raise OperationFailed(
                    f"cannot listen on {secure.bind_address}:{secure.port} (--bind-address, --secure-port): "
                    f"{err.strerror or err}; pick another --secure-port, or 0 to turn the secure port off"
                ) from None
            log.info(
                "serving /metrics, /healthz, /readyz, /livez securely on https://%s:%d (%s), %sauthentication and "
                "authorization delegated to the API server; always allowed: %s",
                secure.bind_address,
                port,
                origin,
                f"client certificates signed by {secure.client_ca_file}, " if secure.client_ca_file else "",
                ",".join(secure.always_allow_paths) or "none",
            )
        if flags.metrics_port:
            port = await health.start(flags.metrics_address, flags.metrics_port)
            log.info("%s", serving_message(flags.metrics_address, port))
        log.info("scheduling pods with schedulerName in %s", sorted(daemon.profiles))
        await serve_until_signalled(daemon)
        log.info("stopped after binding %d pods", daemon.scheduled)
        return 0
    except LeadershipLost as err:
        log.error("%s", err)
        return 1
    finally:
        await health.stop()
        await writer.aclose()
        await http.aclose()
