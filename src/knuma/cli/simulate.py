"""`knuma simulate`: compare schedulers on a simulated cluster (thin: parse, call `knuma.sim`, format)."""

from __future__ import annotations

import dataclasses
import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from knuma.cli import completion

if TYPE_CHECKING:  # the simulator pulls in numpy, pandas and OR-Tools: imported inside the command only
    from rich.console import Console

    from knuma.sim.comparison import Comparison
    from knuma.sim.spec import Scenario


class Output(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"


OUTPUTS = tuple(o.value for o in Output)


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate)


def simulate(
    scenario: str = typer.Option(
        "default",
        "--scenario",
        metavar="NAME|FILE",
        autocompletion=completion.scenarios,
        help="A built-in scenario name (see --list-scenarios) or a scenario YAML file.",
    ),
    cluster: Path | None = typer.Option(
        None, "--cluster", metavar="FILE", help="Cluster spec YAML; replaces the scenario's."
    ),
    workload: Path | None = typer.Option(
        None, "--workload", metavar="FILE", help="Workload spec YAML; replaces the scenario's."
    ),
    seed: int = typer.Option(0, "--seed", metavar="N", help="Random seed; the same seed gives the same placements."),
    nrt_period: float | None = typer.Option(
        None,
        "--nrt-period",
        min=0.001,
        metavar="SECONDS",
        help="Seconds between NRT publications (exporter lag); default 60.",
    ),
    schedulers: str | None = typer.Option(
        None,
        "--schedulers",
        metavar="A,B,...",
        autocompletion=completion.schedulers,
        help="Comma-separated: default, nrt-passthrough, nrt-overreserve, nrt-discardreserved, knuma, optimal (the "
        "most pods), optimal-cpus (the most CPUs). Default: all but optimal-cpus that apply.",
    ),
    output_name: str = typer.Option(
        "table", "-o", "--output", help="table, json or yaml.", autocompletion=completion.output_formats(*OUTPUTS)
    ),
    report: Path | None = typer.Option(
        None,
        "--report",
        metavar="DIR|FILE.html",
        help="Write an HTML report with PNG plots: DIR/index.html, or FILE.html with its images in FILE_files/.",
    ),
    jobs: int | None = typer.Option(
        None,
        "--jobs",
        "-j",
        min=1,
        metavar="N",
        help="Simulate up to N schedulers at once, in worker processes (same results as 1). "
        "Default: the CPUs this process may use.",
    ),
    list_scenarios: bool = typer.Option(False, "--list-scenarios", help="List the built-in scenarios and exit."),
) -> None:
    """Simulate a cluster with exporter lag and kubelet admission; compare default, upstream and knuma scheduling."""
    from rich.console import Console

    from knuma.cli.output import output_format, table_console
    from knuma.sim.comparison import OFFLINE, parse_schedulers

    output = Output(output_format(output_name, OUTPUTS))
    out = table_console()
    err = Console(stderr=True)
    if list_scenarios:
        _list(out)
        return
    from knuma.sim.scenarios import DRA_SCENARIO

    if scenario == DRA_SCENARIO:
        ignored = [
            flag
            for flag, value in (("--cluster", cluster), ("--workload", workload), ("--nrt-period", nrt_period))
            if value is not None
        ]
        if ignored:
            from knuma.testbed.cluster import SpecError

            verb = "does" if len(ignored) == 1 else "do"
            raise SpecError(
                f"{' and '.join(ignored)} {verb} not apply to scenario {DRA_SCENARIO} (its DGX-like cluster and "
                "GPU/NIC pods are fixed; it takes --seed, --schedulers, -o and --report)"
            )
        _dra(out, err, seed, schedulers, output, report)
        return
    # a bad scenario, spec file or scheduler list is an InvalidInput (SpecError): knuma.cli.errors prints it, exit 2
    chosen = _scenario(scenario, cluster, workload, nrt_period)
    names = parse_schedulers(schedulers, chosen)
    target = None
    if report is not None:
        from knuma.sim.report import report_target

        target = report_target(report)  # checked before the simulation runs
    if jobs is None:
        from knuma.sim.parallel import available_cpus

        jobs = available_cpus()
    comparison = _run(chosen, names, seed, err, jobs, keep_runs=report is not None or any(n in OFFLINE for n in names))
    for note in comparison.notes:
        err.print(f"note: {note}", highlight=False)
    if target is not None:
        from knuma.sim.report import write_report

        page = write_report(comparison, target)
        err.print(f"report written to {page}", highlight=False)
    if output is not Output.table:
        _document(comparison.to_json(), output)
        return
    _table(out, comparison)


def _dra(out: Console, err: Console, seed: int, schedulers: str | None, output: Output, report: Path | None) -> None:
    """Scenario `dra` (`knuma.sim.dra`): devices, CPUs and memory per pod, knuma vs upstream vs the optimum."""
    from rich.table import Table

    from knuma.sim.comparison_table import dra_comparison_table
    from knuma.sim.dra import DraScenario
    from knuma.sim.dra_comparison import run_dra

    scenario = DraScenario()
    names = [s.strip() for s in (schedulers or "knuma,upstream,optimal").split(",") if s.strip()]
    target = None
    if report is not None:
        from knuma.sim.report import report_target

        target = report_target(report)  # checked before the simulation runs
    runs = run_dra(scenario, seed, names)  # unknown schedulers: InvalidInput, reported by knuma.cli.errors
    if target is not None:
        from knuma.sim.report import write_dra_report

        page = write_dra_report(scenario, seed, runs, target)
        err.print(f"report written to {page}", highlight=False)
    if output is not Output.table:
        document = {"scenario": "dra", "seed": seed, "nodes": scenario.nodes, "pods": scenario.pods}
        _document({**document, "results": [r.to_json() for r in runs]}, output)
        return
    shown = dra_comparison_table(scenario, seed, runs)
    table = Table(title=shown.title, title_justify="left")
    table.add_column("", overflow="fold")
    for run in runs:
        table.add_column(run.scheduler + (" (proven)" if run.optimal_proven else ""), justify="right", overflow="fold")
    for label, cells in shown.rows:
        table.add_row(label, *cells)
    out.print(table)


def _document(document: dict[str, Any], output: Output) -> None:
    """`-o json` or `-o yaml`: the same document either way."""
    if output is Output.yaml:
        import yaml

        sys.stdout.write(yaml.safe_dump(document, sort_keys=False))
    else:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")


def _scenario(name: str, cluster: Path | None, workload: Path | None, nrt_period: float | None) -> Scenario:
    from knuma.sim.scenarios import BUILTIN, DRA_SCENARIO, builtin_scenario
    from knuma.sim.spec import cluster_for_simulation, scenario_from_dict, workload_from_dict
    from knuma.testbed.cluster import SpecError, load_yaml

    path = Path(name)
    if name in BUILTIN:
        chosen = builtin_scenario(name)
    elif path.suffix in (".yaml", ".yml", ".json") or path.exists():
        chosen = scenario_from_dict(load_yaml(path), name=path.stem, base=path.parent, where=str(path))
    else:
        builtins = ", ".join([*BUILTIN, DRA_SCENARIO])
        raise SpecError(f"unknown scenario {name!r}: not a built-in ({builtins}) and not a file")
    if cluster is not None:
        chosen = dataclasses.replace(chosen, cluster=cluster_for_simulation(load_yaml(cluster), str(cluster)))
    if workload is not None:
        spec = workload_from_dict(load_yaml(workload), str(workload), base=workload.parent)
        chosen = dataclasses.replace(chosen, workload=spec)
    if nrt_period is not None:
        chosen = dataclasses.replace(chosen, nrt_period=nrt_period)
    return chosen


def _run(scenario: Scenario, names: list[str], seed: int, err: Console, jobs: int, *, keep_runs: bool) -> Comparison:
    """The comparison; the runs (every pod and kubelet) are kept only for the report's plots and the optimum's
    hint."""
    from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    from knuma.sim.comparison import compare

    if not err.is_terminal:
        return compare(scenario, names, seed, jobs=jobs, keep_runs=keep_runs)
    columns = (TextColumn("{task.description:<16}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"))
    with Progress(*columns, TimeElapsedColumn(), console=err, transient=True) as progress:
        tasks: dict[str, TaskID] = {name: progress.add_task(name, total=1.0) for name in names}

        def update(name: str, fraction: float) -> None:
            progress.update(tasks[name], completed=fraction)

        return compare(scenario, names, seed, progress=update, jobs=jobs, keep_runs=keep_runs)


def _list(out: Console) -> None:
    from rich.table import Table

    from knuma.sim.scenarios import BUILTIN, DRA_SCENARIO, builtin_scenario

    table = Table(title="built-in scenarios", title_justify="left")
    table.add_column("name")
    table.add_column("nodes", justify="right")
    table.add_column("pods", justify="right")
    table.add_column("optimal")
    table.add_column("description")
    for name in BUILTIN:
        scenario = builtin_scenario(name)
        table.add_row(
            name,
            str(scenario.cluster.node_count),
            str(scenario.workload.pods),
            "yes" if scenario.optimal_supported else "no",
            scenario.description,
        )
    table.add_row(
        DRA_SCENARIO,
        "8",
        "40",
        "yes",
        "GPU + NIC + CPU pods on DGX-like nodes (DRA): knuma vs an upstream-like allocator (first solution, no "
        "topology) vs the CP-SAT optimum",
    )
    out.print(table)


def _table(out: Console, comparison: Comparison) -> None:
    from rich.table import Table

    from knuma.sim.comparison_table import comparison_table

    shown = comparison_table(comparison)
    table = Table(title=shown.title, title_justify="left", caption=shown.caption)
    table.add_column("metric", overflow="fold")  # wrapped, never an ellipsis over a verdict
    for name in shown.columns:
        table.add_column(name, justify="right", style="bold" if name == "knuma" else None, overflow="fold")
    for label, cells in shown.rows:
        table.add_row(label, *cells)
    out.print(table)
    out.print(shown.verdict, highlight=False)
