"""`knuma operator`: reconcile NUMAResourcesOperator / NUMAResourcesScheduler custom resources into the stack.

Thin: flags become settings, `knuma.operator.manager.run` does the work until SIGINT / SIGTERM. `--render-crds`
prints the two CRDs (YAML stream) and exits, for GitOps or `kubectl apply -f -`.
"""

from __future__ import annotations

import sys

import typer

from knuma.cli.errors import fail
from knuma.cli.logopts import log_level_option, resolve

USAGE_ERROR = 2
CLUSTER_ERROR = 1


def register(app: typer.Typer) -> None:
    app.command("operator")(operator)


def operator(
    kubeconfig: str | None = typer.Option(
        None, "--kubeconfig", help="kubeconfig file (default $KUBECONFIG, ~/.kube/config)."
    ),
    context: str | None = typer.Option(None, "--context", help="kubeconfig context."),
    namespace: str = typer.Option(
        "numaresources-operator", "-n", "--namespace", help="Namespace of the operands (exporter and scheduler)."
    ),
    image: str | None = typer.Option(None, "--image", help="knuma image of the operands [env KNUMA_IMAGE]."),
    resync: str = typer.Option("30s", "--resync-period", help="Reconcile at least this often, even without events."),
    install_crds: bool = typer.Option(
        True, "--install-crds/--no-install-crds", help="Apply the operator's CRDs at start-up (as OLM would)."
    ),
    render_crds: bool = typer.Option(False, "--render-crds", help="Print the operator's CRDs as YAML and exit."),
    leader_elect: bool = typer.Option(
        True,
        "--leader-elect/--no-leader-elect",
        help="Take a Lease before reconciling, so that only one replica writes (on by default, as upstream's manager).",
    ),
    lease_namespace: str | None = typer.Option(
        None,
        "--leader-elect-namespace",
        help="Namespace of the Lease (default: $POD_NAMESPACE, else the kubeconfig context's namespace: in a pod its "
        "service account's, else default).",
    ),
    lease_name: str = typer.Option("knuma-operator-leader", "--leader-elect-name", help="Name of the Lease."),
    metrics_address: str = typer.Option(
        "127.0.0.1", "--metrics-address", help="Bind address of /metrics, /healthz (the rendered Deployment: 0.0.0.0)."
    ),
    metrics_port: int = typer.Option(8080, "--metrics-port", help="Port of /metrics, /healthz, /readyz; 0 disables."),
    webhook_port: int = typer.Option(
        0,
        "--webhook-port",
        help="Serve the v1alpha1 <-> v1 conversion webhook (HTTPS, POST /convert) on this port, and install the CRDs "
        "with strategy Webhook to --webhook-service; 0 (default): no webhook, strategy None (upstream: 9443).",
    ),
    webhook_address: str = typer.Option(
        "127.0.0.1", "--webhook-address", help="Bind address of the webhook (the rendered Deployment: 0.0.0.0)."
    ),
    webhook_cert_dir: str = typer.Option(
        "/tmp/k8s-webhook-server/serving-certs",
        "--webhook-cert-dir",
        help="Directory of the webhook's tls.crt and tls.key (reloaded when they change) and ca.crt, the caBundle of "
        "the CRDs (default: tls.crt, a self-signed certificate).",
    ),
    webhook_service: str = typer.Option(
        "knuma-operator-webhook",
        "--webhook-service",
        help="The Service in front of the webhook, in $POD_NAMESPACE (else --namespace), port 443.",
    ),
    verbose: int = typer.Option(0, "-v", "--verbose", count=True, help="More logs on stderr (-v: debug)."),
    log_level: str | None = log_level_option(),
) -> None:
    """Run the operator: watch the NUMAResourcesOperator and NUMAResourcesScheduler custom resources and keep the
    exporter DaemonSets and the scheduler they describe applied, with their status conditions."""
    if render_crds:
        from knuma.api.numaresources_crd import operator_crds
        from knuma.deploy.render import to_yaml

        sys.stdout.write(to_yaml(operator_crds()))
        return

    import asyncio
    import logging
    import os
    import signal

    from knuma.deploy.cluster import connect
    from knuma.deploy.images import resolve_images
    from knuma.deploy.options import parse_duration
    from knuma.kube.client import KubeConfigError, async_http, load_config
    from knuma.kube.leaderelection import LeaseConfig
    from knuma.manifests import read_user_file
    from knuma.operator.health import HealthServer
    from knuma.operator.manager import LoopSettings, OperatorLeaseLost, OperatorStartError, run
    from knuma.operator.metrics import OperatorMetrics
    from knuma.operator.reconciler import Settings

    logging.basicConfig(
        level=resolve(verbose, log_level, logging.INFO),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for noisy in ("httpx", "httpx2", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    period = parse_duration(resync, "--resync-period")
    images = resolve_images({"knuma": image})
    if period <= 0:
        fail("--resync-period must be positive (e.g. 30s)")
    if not 0 <= metrics_port <= 65535:
        fail(f"--metrics-port must be between 0 and 65535, got {metrics_port}")
    if not 0 <= webhook_port <= 65535:
        fail(f"--webhook-port must be between 0 and 65535, got {webhook_port}")
    certificate, conversion = None, None
    if webhook_port:
        from pathlib import Path

        from knuma.api.numaresources_crd import ConversionWebhook
        from knuma.serving.tls import ServingCertificate, TLSConfigError

        cert_dir = Path(webhook_cert_dir)
        try:
            certificate = ServingCertificate(
                cert_dir / "tls.crt",
                cert_dir / "tls.key",
                purpose="conversion webhook",
                hint="pass --webhook-cert-dir with tls.crt and tls.key",
            )
        except TLSConfigError as err:
            fail(str(err))
        ca_file = cert_dir / "ca.crt" if (cert_dir / "ca.crt").is_file() else cert_dir / "tls.crt"
        webhook_namespace = os.environ.get("POD_NAMESPACE") or namespace
        conversion = ConversionWebhook(webhook_namespace, webhook_service, read_user_file(ca_file))
    lease = None
    if leader_elect:
        try:
            lease_ns = lease_namespace or os.environ.get("POD_NAMESPACE") or load_config(kubeconfig, context).namespace
        except KubeConfigError as err:
            typer.echo(f"error: {err}", err=True)
            raise typer.Exit(USAGE_ERROR) from None
        lease = LeaseConfig(namespace=lease_ns, name=lease_name)
    loop_settings = LoopSettings(period, install_crds, lease, conversion_webhook=conversion)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        metrics, ready = OperatorMetrics(), asyncio.Event()
        health = HealthServer(metrics, ready)
        if metrics_port:
            try:
                port = await health.start(metrics_address, metrics_port)
            except OSError as err:
                raise OperatorStartError(
                    f"cannot serve /metrics on {metrics_address}:{metrics_port}: {err.strerror or err}; pick another "
                    "--metrics-port (0 disables it)"
                ) from None
            logging.getLogger("knuma.operator").info("serving /metrics, /healthz, /readyz on port %d", port)
        webhook = None
        if certificate is not None:
            from knuma.operator.webhook import WebhookServer

            webhook = WebhookServer(certificate)
            try:
                port = await webhook.start(webhook_address, webhook_port)
            except OSError as err:
                await health.stop()
                raise OperatorStartError(
                    f"cannot serve the conversion webhook on {webhook_address}:{webhook_port}: {err.strerror or err}; "
                    "pick another --webhook-port"
                ) from None
            logging.getLogger("knuma.operator").info("serving the conversion webhook (HTTPS) on port %d", port)
        http = async_http(kubeconfig, context)
        try:
            with connect(kubeconfig, context) as session:
                await run(session, http, Settings(namespace, images), stop, loop_settings, metrics=metrics, ready=ready)
        finally:
            await http.aclose()
            await health.stop()
            if webhook is not None:
                await webhook.stop()

    try:
        asyncio.run(main())
    except KubeConfigError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(USAGE_ERROR) from None
    except (OperatorStartError, OperatorLeaseLost) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(CLUSTER_ERROR) from None
    except Exception as err:  # start-up failures (CRD install): say what failed and what to check, not a traceback
        import httpx2

        from knuma.kube.errors import Unavailable

        if isinstance(err, httpx2.TransportError | Unavailable):
            from knuma.cli.errors import unreachable

            typer.echo(f"error: {unreachable(err)}", err=True)
        else:
            typer.echo(f"error: cannot start the operator: {type(err).__name__}: {err}", err=True)
        raise typer.Exit(CLUSTER_ERROR) from None
