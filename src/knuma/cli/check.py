"""`knuma check`: diagnose the NUMA-aware scheduling stack on a cluster (nrovalidate's job); `knuma gather`: collect
what a bug report needs (must-gather's job).

Thin: flags become `CheckSettings`, `knuma.deploy.check.run_check` does the work, the verdict is printed (table or
JSON on stdout, progress on stderr). Exit status: 0 healthy, 1 problems found (one `ERROR#NNN` line each, with a
fix), 2 bad flags, 3 the cluster could not be checked (unreachable, credentials or a permission refused).
"""

from __future__ import annotations

import json

import typer

from knuma.cli import completion
from knuma.cli.errors import fail

OUTPUTS = ("table", "wide", "json")

CHECK_ERROR = 3
"""The cluster could not be checked (0 and 1 are verdicts)."""


def register(app: typer.Typer) -> None:
    app.command("check")(check)
    app.command("gather")(gather)


def check(
    kubeconfig: str | None = typer.Option(
        None, "--kubeconfig", help="kubeconfig file (default $KUBECONFIG, ~/.kube/config)."
    ),
    context: str | None = typer.Option(None, "--context", help="kubeconfig context."),
    node_selector: str = typer.Option(
        "",
        "-l",
        "--node-selector",
        help="Label selector of the nodes to check (default: every non-control-plane node).",
    ),
    scheduler_name: str = typer.Option(
        "topology-aware-scheduler", "--scheduler-name", help="The schedulerName of the NUMA-aware profile."
    ),
    exporter_selector: list[str] = typer.Option(
        [],
        "--exporter-selector",
        metavar="SELECTOR",
        help="Label selector of exporter pods, besides knuma's, RTE's and NFD's (repeatable).",
    ),
    stale_grace: str = typer.Option(
        "5s", "--stale-grace", help="How long a node whose NRT lags its pods gets to catch up before it is reported."
    ),
    output: str = typer.Option(
        "table",
        "-o",
        "--output",
        help="table (fits the terminal), wide (every column, whole lines) or json.",
        autocompletion=completion.output_formats(*OUTPUTS),
    ),
) -> None:
    """Check the NUMA-aware scheduling stack: per node NRT present and fresh, NRT Topology Manager attributes equal
    to the kubelet's configz, exporter pod running; the scheduler Ready with NodeResourceTopologyMatch; its Pending
    pods and why; pods rejected with TopologyAffinityError / SMTAlignmentError and which scheduler placed them.
    Exit status 0 healthy, 1 problems found, 3 the cluster could not be checked."""
    from knuma.cli.output import TextLayout, output_format, table_console
    from knuma.deploy.check import CheckAborted, CheckSettings, render_json, render_text, run_check
    from knuma.deploy.check.state import EXPORTER_SELECTORS
    from knuma.duration import parse_interval
    from knuma.kube.client import http_client

    output_format(output, OUTPUTS)
    grace = parse_interval(stale_grace, "--stale-grace")
    settings = CheckSettings(
        node_selector=node_selector,
        scheduler_name=scheduler_name,
        exporter_selectors=(*EXPORTER_SELECTORS, *exporter_selector),
        stale_grace=grace,
    )
    with http_client(kubeconfig, context, timeout=30) as http:
        try:
            diagnosis = run_check(http, settings)
        except CheckAborted as err:
            fail(f"cannot check the cluster: {err}", CHECK_ERROR)
    if output == "json":
        typer.echo(json.dumps(render_json(diagnosis), indent=2))
    else:
        typer.echo(render_text(diagnosis, TextLayout.for_console(table_console(), wide=output == "wide")), nl=False)
    if not diagnosis.healthy:
        raise typer.Exit(1)


def gather(
    directory: str = typer.Argument(..., metavar="DIR", help="Directory to collect into (created if missing)."),
    kubeconfig: str | None = typer.Option(
        None, "--kubeconfig", help="kubeconfig file (default $KUBECONFIG, ~/.kube/config)."
    ),
    context: str | None = typer.Option(None, "--context", help="kubeconfig context."),
    node_selector: str = typer.Option(
        "", "-l", "--node-selector", help="Label selector of the nodes (default: every non-control-plane node)."
    ),
    scheduler_name: str = typer.Option(
        "topology-aware-scheduler", "--scheduler-name", help="The schedulerName of the NUMA-aware profile."
    ),
) -> None:
    """Collect NRT objects, kubelet configz, the operator's custom resources, the stack's pods and logs,
    FailedScheduling events and knuma check's verdict into DIR/knuma-gather-TIME.tar.gz, for a bug report.
    Read-only; what the cluster refuses is listed in errors.txt. Exit status 3 when the cluster cannot be read."""
    from pathlib import Path

    from knuma.deploy.check import CheckAborted, CheckSettings
    from knuma.deploy.gather import gather_bundle
    from knuma.kube.client import http_client

    settings = CheckSettings(node_selector=node_selector, scheduler_name=scheduler_name, stale_grace=0)
    with http_client(kubeconfig, context, timeout=30) as http:
        try:
            result = gather_bundle(http, Path(directory), settings)
        except CheckAborted as err:
            fail(f"cannot gather: {err}", CHECK_ERROR)
    typer.echo(f"collected {len(result.files)} files into {result.directory}", err=True)
    for error in result.errors:
        typer.echo(f"  not collected: {error}", err=True)
    typer.echo(str(result.archive))
