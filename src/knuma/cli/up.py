"""`knuma up`: run a local cluster of simulated NUMA nodes with the whole knuma stack, until Ctrl-C."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from knuma.cli import completion
from knuma.cli.logopts import log_level_option, resolve

if TYPE_CHECKING:  # rich and the local cluster are imported when the command runs
    from rich.console import RenderableType

    from knuma.local.up.summary import ClusterSummary

__all__ = ["register", "summary_view"]


def register(app: typer.Typer) -> None:
    app.command("up")(up)


def up(
    nodes: int | None = typer.Option(None, "--nodes", help="Simulated nodes (default 3), spread over the shapes."),
    shape: list[str] = typer.Option(
        [],
        "--shape",
        metavar="SHAPE",
        help="Node shape, repeatable: two-socket (default), four-numa, eight-numa, gpu, dgx, mig, shared-nic, small.",
        autocompletion=completion.shapes,
    ),
    policy: str | None = typer.Option(
        None,
        "--policy",
        help="Topology Manager policy: single-numa-node (default), restricted, best-effort, none.",
        autocompletion=completion.policies,
    ),
    scope: str | None = typer.Option(
        None,
        "--scope",
        help="Topology Manager scope: container (default) or pod.",
        autocompletion=completion.scopes,
    ),
    cluster: Path | None = typer.Option(
        None, "--cluster", help="A cluster spec (node pools of shapes, as `knuma simulate --cluster` takes)."
    ),
    data_dir: Path | None = typer.Option(
        None, "--data-dir", help="Keep the cluster in DIR; `knuma up --data-dir DIR` again resumes it."
    ),
    port: int | None = typer.Option(
        None, "--port", min=1, max=65535, help="API server port (default: a free one, kept with --data-dir)."
    ),
    kubeconfig_out: Path | None = typer.Option(
        None, "--kubeconfig-out", help="Where to write the kubeconfig (default: DATA_DIR/kubeconfig or a temp dir)."
    ),
    exporters: str = typer.Option(
        "auto",
        "--exporters",
        help="process: one `knuma exporter` per node; in-process: NRT published by the node process; "
        "auto: processes up to 8 nodes.",
        autocompletion=completion.exporter_modes,
    ),
    scheduler: bool = typer.Option(True, "--scheduler/--no-scheduler", help="Run `knuma scheduler`."),
    lease_renew_interval: float = typer.Option(
        10.0, "--lease-renew-interval", help="Seconds between node Lease renewals (the kubelet's 10 s).", hidden=True
    ),
    load: list[Path] = typer.Option(
        [],
        "--load",
        metavar="FILE|DIR",
        help="Create the objects of FILE or DIR at start (CRDs first), before the nodes start. Repeatable.",
    ),
    nrt_period: str | None = typer.Option(
        None,
        "--nrt-period",
        metavar="DURATION",
        help="Exporters publish NRT only every DURATION (e.g. 30s), never on a change, as RTE's periodic mode: "
        "stale NRT on purpose.",
    ),
    node_monitor_grace_period: str = typer.Option(
        "40s",
        "--node-monitor-grace-period",
        metavar="DURATION",
        help="How long a node's kubelet may be silent (a node annotated sim.knuma.io/heartbeat=stopped) before the "
        "node is NotReady and tainted unreachable, as kube-controller-manager's flag (default 40s).",
    ),
    node_monitor_period: str = typer.Option(
        "5s",
        "--node-monitor-period",
        metavar="DURATION",
        help="How often the node lifecycle controller checks node health, as kube-controller-manager's flag "
        "(default 5s).",
    ),
    node_startup_grace_period: str = typer.Option(
        "60s",
        "--node-startup-grace-period",
        metavar="DURATION",
        help="--node-monitor-grace-period for a node that never reported Ready, as kube-controller-manager's flag "
        "(default 60s).",
    ),
    node_eviction_rate: float = typer.Option(
        0.1,
        "--node-eviction-rate",
        metavar="PER_SECOND",
        help="Failed nodes tainted NoExecute (their pods evicted) per second per zone, as kube-controller-manager's "
        "flag (0: one per zone, then none); none when every zone is down.",
    ),
    secondary_node_eviction_rate: float = typer.Option(
        0.01,
        "--secondary-node-eviction-rate",
        metavar="PER_SECOND",
        help="The same in a zone with --unhealthy-zone-threshold of its nodes down, if it has more than "
        "--large-cluster-size-threshold nodes (otherwise none).",
    ),
    large_cluster_size_threshold: int = typer.Option(
        50, "--large-cluster-size-threshold", metavar="NODES", help="See --secondary-node-eviction-rate."
    ),
    unhealthy_zone_threshold: float = typer.Option(
        0.55,
        "--unhealthy-zone-threshold",
        metavar="SHARE",
        help="Share of a zone's nodes (more than 2) not Ready that slows its evictions to the secondary rate.",
    ),
    fabric_gpus: int = typer.Option(
        0,
        "--fabric-gpus",
        metavar="N",
        help="Run a simulated fabric DRA driver (fabric.sim.knuma.io) with N GPUs every node reaches, each attached to "
        "the node it is allocated for before its pod is bound (binding conditions, KEP-5007).",
    ),
    fabric_attach_delay: str | None = typer.Option(
        None,
        "--fabric-attach-delay",
        metavar="DURATION",
        help="How long attaching a fabric GPU takes (default 3s). A claim annotated sim.knuma.io/fabric-attach=fail "
        "fails to attach.",
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logs."),
    log_level: str | None = log_level_option(),
) -> None:
    """Start a local cluster: API server, simulated NUMA nodes, exporters and the scheduler; Ctrl-C stops it.

    The kubeconfig path is printed; use it with kubectl. On a terminal a live summary shows nodes, pods and free
    CPUs per NUMA zone; when piped, a log line is written whenever that summary changes.
    """
    import asyncio
    import sys

    from rich.console import Console
    from rich.live import Live
    from rich.logging import RichHandler

    from knuma.duration import format_duration
    from knuma.local.apiserver.loader import read_manifests
    from knuma.local.up.options import (
        UpError,
        UpOptions,
        eviction_rates,
        fabric_options,
        grace_period_seconds,
        monitor_period_seconds,
        nrt_period_seconds,
        resolve_cluster,
    )
    from knuma.local.up.stack import LocalCluster, run
    from knuma.local.up.summary import line
    from knuma.testbed.fabric import DRIVER as FABRIC_DRIVER

    options = UpOptions(
        nodes=nodes,
        shapes=tuple(shape),
        policy=policy,
        scope=scope,
        cluster_file=cluster,
        data_dir=data_dir.absolute() if data_dir is not None else None,
        port=port,
        kubeconfig_out=kubeconfig_out.absolute() if kubeconfig_out is not None else None,
        exporters=exporters,
        scheduler=scheduler,
        lease_renew_interval=lease_renew_interval,
        load=tuple(p.absolute() for p in load),
    )
    err = Console(stderr=True)
    # errors reach the one mapping in knuma.cli.errors: bad options and --load files (UpError, LoadError) exit 2
    # before anything starts; a cluster that cannot start (UpFailed) or a data dir in use (DataDirInUse) exit 1
    if options.kubeconfig_out is not None:
        from knuma.local.apiserver.kubeconfig import check_writable

        check_writable(options.kubeconfig_out)  # someone else's kubeconfig is not replaced (exit 2)
    if nrt_period is not None:
        options = replace(options, nrt_period=nrt_period_seconds(nrt_period))
    grace = grace_period_seconds(node_monitor_grace_period, lease_renew_interval)
    fabric, attach_delay = fabric_options(fabric_gpus, fabric_attach_delay)
    rates = eviction_rates(
        node_eviction_rate, secondary_node_eviction_rate, large_cluster_size_threshold, unhealthy_zone_threshold
    )
    options = replace(
        options,
        node_monitor_period=monitor_period_seconds(node_monitor_period, grace),
        node_monitor_grace_period=grace,
        node_startup_grace_period=grace_period_seconds(
            node_startup_grace_period, lease_renew_interval, "--node-startup-grace-period"
        ),
        eviction_rates=rates,
        fabric_gpus=fabric,
        fabric_attach_delay=attach_delay,
    )
    if exporters not in ("auto", "process", "in-process"):
        raise UpError(f"--exporters must be auto, process or in-process, got {exporters!r}")
    spec, document = resolve_cluster(options)
    read_manifests(options.load)  # unreadable files fail here, before anything starts
    interactive = err.is_terminal
    level = resolve(verbose, log_level, logging.INFO)
    handler: logging.Handler = (
        RichHandler(console=err, show_path=False) if interactive else logging.StreamHandler(sys.stderr)
    )
    # RichHandler shows time and level itself: its formatter adds only the logger's name (basicConfig would give it
    # the default "%(levelname)s:%(name)s:" one, and every line would read "INFO     INFO:knuma.local.up:...")
    handler.setFormatter(
        logging.Formatter("%(name)s] %(message)s")
        if interactive
        else logging.Formatter("%(asctime)s %(levelname).1s %(name)s] %(message)s")
    )
    logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)
    for name in ("knuma.local.up", "knuma.local.controllers", "knuma.local.apiserver"):
        logging.getLogger(name).setLevel(level)
    log = logging.getLogger("knuma.local.up")
    live = Live(console=err, refresh_per_second=2, transient=True) if interactive else None
    last = [""]
    title = f"knuma up — {spec.describe()}"

    def announce(local: LocalCluster) -> None:
        count = len(local.nodes)
        exporter = f"{count} process{'es' if count != 1 else ''}" if local.exporter_mode == "process" else "in-process"
        if options.nrt_period is not None:
            exporter += f", NRT every {format_duration(options.nrt_period)} only"
        profiles = ", ".join(local.scheduler_profiles) or "none (--no-scheduler)"
        typer.echo(f"knuma up: {count} node{'s' if count != 1 else ''} ({spec.describe()}); API server {local.url}")
        typer.echo(f"  exporters: {exporter}; scheduler profiles: {profiles}")
        if options.fabric_gpus:
            typer.echo(
                f"  fabric: {options.fabric_gpus} GPU{'s' if options.fabric_gpus != 1 else ''} (DeviceClass "
                f"{FABRIC_DRIVER}), attached {format_duration(options.fabric_attach_delay)} after allocation"
            )
        typer.echo(f"  kubeconfig: {local.kubeconfig}")
        typer.echo(f"  logs: {local.logs}")
        typer.echo(f"  try: kubectl --kubeconfig {local.kubeconfig} get nodes,noderesourcetopologies")
        sys.stdout.flush()
        if live is not None:
            live.start()

    def progress(message: str) -> None:
        log.info("%s", message)

    def show(summary: ClusterSummary) -> None:
        if live is not None:
            live.update(summary_view(summary, title, err.width))
            return
        text = line(summary)
        if text != last[0]:
            last[0] = text
            log.info("%s", text)

    try:
        code = asyncio.run(run(options, spec, document, announce=announce, progress=progress, show=show))
    finally:
        if live is not None:
            live.stop()
    raise typer.Exit(code)


def summary_view(summary: ClusterSummary, title: str, width: int) -> RenderableType:
    """The live summary for a terminal `width` columns wide: `knuma.cli.output.fitted_table` leaves out the shape and
    the policy first when the nodes' zones need the room, and says so under the table."""
    from rich.console import Group
    from rich.text import Text

    from knuma.cli.output import Column, fitted_table
    from knuma.local.up.summary import COLUMNS, caption, table_rows

    columns = [Column(header, "right" if justify == "right" else "left", drop) for header, justify, drop in COLUMNS]
    fitted = fitted_table(
        columns,
        table_rows(summary),
        width=width,
        title=title,
        caption=caption(summary),
        shows_all="a wider terminal shows them",
    )
    return Group(fitted.table, Text(fitted.note)) if fitted.note else fitted.table
