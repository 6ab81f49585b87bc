"""`knuma bench`: scheduler_perf-style throughput of the knuma scheduling core against a reference."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from knuma.cli import completion
from knuma.cli.output import Column

if TYPE_CHECKING:  # numpy and the scheduler only when the command runs
    from knuma.bench.throughput import BenchResult

OUTPUTS = ("table", "wide", "json")
MAX_NODES = 50_000
"""Ten times Kubernetes' largest supported cluster (5000 nodes): beyond it the run only fills memory (10^20 nodes
grew without bound)."""
MAX_PODS = 1_000_000


def register(app: typer.Typer) -> None:
    app.command("bench")(bench)


def bench(
    nodes: int = typer.Option(5000, "--nodes", min=1, max=MAX_NODES, help="Simulated single-numa-node worker nodes."),
    pods: int = typer.Option(
        10000, "--pods", min=1, max=MAX_PODS, help="Pods to schedule, one at a time, with reservation."
    ),
    zones: str = typer.Option("2,4,8", "--zones", help="NUMA zones per node, cycled over the nodes."),
    reference_pods: int = typer.Option(
        20, "--reference-pods", min=1, max=MAX_PODS, help="Pods timed on the reference scheduler."
    ),
    uncached_pods: int = typer.Option(
        2000,
        "--uncached-pods",
        min=0,
        max=MAX_PODS,
        help="Pods timed on the vectorised path without its cache (0: skip).",
    ),
    new_shape_pods: int = typer.Option(
        2000,
        "--new-shape-pods",
        min=0,
        max=MAX_PODS,
        help="Pods timed in the worst case, every pod a shape never seen before, on a fresh cluster (0: skip).",
    ),
    output: str = typer.Option(
        "table",
        "-o",
        "--output",
        help="table (fits the terminal), wide (every column) or json.",
        autocompletion=completion.output_formats(*OUTPUTS),
    ),
) -> None:
    """Schedule PODS pods on NODES nodes (filter + score + reserve on every node, no sampling) and report
    SchedulingThroughput, per-pod latency, and the speed-up over the straightforward implementation; the vectorised
    path without its per-shape cache is timed too, as the before/after comparison, and the worst case: every pod a
    new shape (target: 1000 pods/s at 5000 nodes)."""
    from knuma.cli.output import output_format

    output_format(output, OUTPUTS)
    try:
        zone_counts = tuple(int(z) for z in zones.split(",") if z.strip())
        if not zone_counts or any(z < 1 or z > 64 for z in zone_counts):
            raise ValueError
    except ValueError:
        typer.echo(f"error: invalid --zones {zones!r}; expected NUMA zone counts from 1 to 64, such as 2,4,8", err=True)
        raise typer.Exit(2) from None
    from knuma.bench.throughput import run  # numpy and the scheduler only when the command runs

    result = run(
        nodes=nodes,
        pods=pods,
        zones=zone_counts,
        reference_pods=reference_pods,
        uncached_pods=uncached_pods,
        new_shape_pods=new_shape_pods,
    )
    doc = result.to_dict()
    if output == "json":
        typer.echo(json.dumps(doc, indent=2))
        return
    _print_table(result, f"knuma bench: {nodes} nodes ({zones} NUMA zones), {pods} pods", wide=output == "wide")


COLUMNS = (
    Column("scheduler"),
    Column("pods", "right", drop=3),
    Column("avg pods/s", "right"),
    Column("p50", "right", drop=4),
    Column("p90", "right", drop=5),
    Column("p99", "right", drop=2),
    Column("latency p50 ms", "right"),
    Column("latency p99 ms", "right", drop=1),
)
"""The throughput percentiles go first on a narrow terminal; the average and the median latency stay."""


def _print_table(result: BenchResult, title: str, *, wide: bool) -> None:
    from knuma.cli.output import fitted_table, print_table, table_console

    k = result.knuma
    rows = [
        [
            "knuma (vectorised)",
            str(k.pods),
            f"{k.average:.1f}",
            f"{k.p50}",
            f"{k.p90}",
            f"{k.p99}",
            f"{k.latency_ms['p50']}",
            f"{k.latency_ms['p99']}",
        ]
    ]
    if result.uncached is not None:
        u = result.uncached
        rows.append(["vectorised, no cache", str(u.pods), f"{u.average:.1f}", "", "", "", f"{u.latency_ms['p50']}", ""])
    if result.new_shapes is not None:
        w = result.new_shapes
        rows.append(
            [
                "every pod a new shape",
                str(w.pods),
                f"{w.average:.1f}",
                "",
                "",
                "",
                f"{w.latency_ms['p50']}",
                f"{w.latency_ms['p99']}",
            ]
        )
    ref = result.reference
    rows.append(
        ["reference (per node)", str(ref.pods), f"{ref.average:.2f}", "", "", "", f"{ref.latency_ms['p50']}", ""]
    )
    console = table_console()
    print_table(console, fitted_table(COLUMNS, rows, width=console.width, wide=wide, title=title))
    console.print(f"speed-up: {result.speedup:.1f}x; scheduled {k.scheduled}/{k.pods} pods", highlight=False)
