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
    secure_port: int = typer.Option(
        10259,
        "--secure-port",
        min=0,
        max=65535,
        help="HTTPS port of /metrics, /healthz, /readyz, /livez with authentication and authorization delegated to "
        "the API server (TokenReview, SubjectAccessReview), as kube-scheduler's; 0 turns it off.",
    ),
    bind_address: str = typer.Option(
        "0.0.0.0", "--bind-address", help="Address the secure port listens on (all interfaces, as kube-scheduler)."
    ),
    tls_cert_file: str = typer.Option(
        "",
        "--tls-cert-file",
        help="Serving certificate (PEM, reloaded when it changes); without it a self-signed one, in --cert-dir or "
        "in memory.",
    ),
    tls_private_key_file: str = typer.Option("", "--tls-private-key-file", help="Key of --tls-cert-file (PEM)."),
    cert_dir: str = typer.Option(
        "",
        "--cert-dir",
        help="Without --tls-cert-file: keep the self-signed kube-scheduler.crt/.key here (default: in memory, new at "
        "every start).",
    ),
    client_ca_file: str = typer.Option(
        "",
        "--client-ca-file",
        help="PEM CA bundle (reloaded when it changes): a client certificate it signed authenticates the secure "
        "port's requests as its CN (user) and O values (groups), before any bearer token.",
    ),
    token_cache_ttl: str = typer.Option(
        "10s", "--authentication-token-webhook-cache-ttl", help="How long a TokenReview answer is reused."
    ),
    authorized_ttl: str = typer.Option(
        "10s",
        "--authorization-webhook-cache-authorized-ttl",
        help="How long an allowing SubjectAccessReview is reused.",
    ),
    unauthorized_ttl: str = typer.Option(
        "10s", "--authorization-webhook-cache-unauthorized-ttl", help="How long a denying one is reused."
    ),
    always_allow_paths: str = typer.Option(
        "/healthz,/readyz,/livez",
        "--authorization-always-allow-paths",
        help="Paths served without authorization (comma-separated; a trailing * matches a prefix), so probes need "
        "no token.",
    ),
    tls_min_version: str = typer.Option(
        "VersionTLS12", "--tls-min-version", help="Lowest TLS version of the secure port: VersionTLS12 or VersionTLS13."
    ),
    tls_cipher_suites: str = typer.Option(
        "",
        "--tls-cipher-suites",
        help="TLS 1.2 cipher suites of the secure port, comma-separated Go names as kube-scheduler takes them "
        "(default: OpenSSL's); ignored with VersionTLS13.",
    ),
    metrics_address: str = typer.Option(
        "127.0.0.1",
        "--metrics-address",
        help="DEPRECATED insecure port: bind address of /metrics, /healthz, /readyz over plain HTTP without "
        "authentication, so loopback by default. Use the secure port.",
    ),
    metrics_port: int = typer.Option(
        10251,
        "--metrics-port",
        min=0,
        max=65535,
        help="DEPRECATED insecure port (as kube-scheduler's removed --port): plain HTTP, no authentication; "
        "0 disables. Use --secure-port.",
    ),
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
    from knuma.api.names import dns1123_label_errors, dns1123_subdomain_errors
    from knuma.duration import DurationError, parse_interval
    from knuma.scheduler.daemon.secure import SecureServing, check_serving

    try:
        ttls = [
            parse_interval(value, flag)
            for value, flag in (
                (token_cache_ttl, "--authentication-token-webhook-cache-ttl"),
                (authorized_ttl, "--authorization-webhook-cache-authorized-ttl"),
                (unauthorized_ttl, "--authorization-webhook-cache-unauthorized-ttl"),
            )
        ]
    except DurationError as err:
        fail(str(err))
    from knuma.serving.ciphersuites import CipherSuiteError, parse_cipher_suites
    from knuma.serving.tls import TLSConfigError, parse_min_version

    try:
        min_version = parse_min_version(tls_min_version, "--tls-min-version")
        cipher_suites = parse_cipher_suites(tls_cipher_suites, "--tls-cipher-suites")
    except (TLSConfigError, CipherSuiteError) as err:
        fail(str(err))
    if bool(tls_cert_file) != bool(tls_private_key_file):
        fail(
            "--tls-cert-file and --tls-private-key-file go together: "
            "give both, or neither for a self-signed certificate"
        )
    for flag, value, check in (
        ("--lease-name", lease_name, dns1123_subdomain_errors),
        ("--lease-namespace", lease_namespace, dns1123_label_errors),
    ):
        problems = check(value) if value is not None else []
        if problems:  # the API server would refuse the Lease, and leader election retry for ever
            fail(f"invalid {flag} {value!r}: {'; '.join(problems)}")
    secure = SecureServing(
        port=secure_port,
        bind_address=bind_address,
        tls_cert_file=tls_cert_file,
        tls_private_key_file=tls_private_key_file,
        cert_dir=cert_dir,
        token_cache_ttl=ttls[0],
        authorized_cache_ttl=ttls[1],
        unauthorized_cache_ttl=ttls[2],
        always_allow_paths=tuple(p.strip() for p in always_allow_paths.split(",") if p.strip()),
        tls_min_version=min_version,
        tls_cipher_suites=cipher_suites,
        client_ca_file=client_ca_file,
    )
    try:
        check_serving(secure)
    except TLSConfigError as err:
        fail(str(err))
    if check_config:  # after every flag check: a configuration checked here must also start
        typer.echo(describe_config(configuration), nl=False)
        raise typer.Exit(0)
    flags = CommandLine(
        kubeconfig,
        context,
        leader_elect,
        lease_namespace,
        lease_name,
        metrics_address,
        metrics_port,
        explain,
        secure,
    )
    raise typer.Exit(run(configuration, flags))
