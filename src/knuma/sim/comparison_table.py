"""The comparison as a table of labelled, formatted cells: what `knuma simulate` prints and its HTML report shows.

One definition of the row labels and value formats (`CPU utilisation (last 25% of the run)`, `93.4%`), so the
terminal and the report cannot drift apart: the CLI renders `comparison_table(...)` with rich, the report as HTML.
Raw keys and fractions stay in `-o json` and the report's `metrics.json`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from knuma.sim.comparison import OFFLINE, OPTIMAL, Comparison
from knuma.sim.dra import DraRun, DraScenario

__all__ = [
    "DRA_ROWS",
    "LABELS",
    "ROWS",
    "ComparisonTable",
    "comparison_table",
    "dra_comparison_table",
    "format_metric",
]

ROWS: tuple[tuple[str, str], ...] = (
    ("placed", "placed"),
    ("running", "running"),
    ("topology_affinity_errors", "TopologyAffinityError"),
    ("smt_alignment_errors", "SMTAlignmentError"),
    ("other_admission_errors", "other admission errors"),
    ("pending", "pending"),
    ("top_priority_running", "highest-priority pods running"),
    ("preempted", "preempted (victims evicted)"),
    ("false_negative_pending", "false-negative pending"),
    ("cpu_utilization", "CPU utilisation (last 25% of the run)"),
    ("mean_cpu_utilization", "CPU utilisation (whole run)"),
    ("memory_utilization", "memory utilisation (last 25%)"),
    ("cpus_placed", "CPUs placed (end)"),
    ("zone_cpu_utilization", "zone exclusive CPU p10/mean/p90"),
    ("zone_memory_utilization", "zone exclusive memory p10/mean/p90"),
    ("stranded_cpus", "stranded CPUs (no Guaranteed template fits)"),
    ("throughput_pods_per_s", "throughput (pods/s)"),
    ("latency_ms", "latency p50/p90/p99 (ms)"),
)
"""Metric key -> row label, in table order."""

LABELS = dict(ROWS)
"""Metric key -> row label."""

DRA_ROWS: tuple[tuple[str, str], ...] = (
    ("placed", "placed (admitted)"),
    ("topology_affinity_errors", "TopologyAffinityError"),
    ("misaligned", "misaligned (devices off the CPUs' NUMA node)"),
    ("pending", "pending (no node fits)"),
)
"""Scenario `dra`'s rows (`knuma.sim.dra.DraRun`): metric key -> row label, in table order."""


def format_metric(key: str, value: Any) -> str:
    """One cell: fractions as percentages, percentile dicts as `p10 / mean / p90`, `-` for a metric not measured."""
    if value is None or value == "":
        return "-"
    if key.startswith("zone_") and isinstance(value, dict):
        return f"{value['p10']:.0%} / {value['mean']:.0%} / {value['p90']:.0%}"
    if key.endswith("utilization"):
        return f"{value:.1%}"
    if key == "latency_ms" and isinstance(value, dict):
        return f"{value['p50']:.2f} / {value['p90']:.2f} / {value['p99']:.2f}"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return str(value)


@dataclass(frozen=True)
class ComparisonTable:
    title: str
    columns: list[str]
    """Scheduler names, in run order (`optimal` last when it ran)."""
    rows: list[tuple[str, list[str]]]
    """(label, one formatted cell per column); rows no scheduler measured are left out."""
    caption: str | None
    """How the optimum (and the CPU optimum) was found, when it was."""
    verdict: str


def comparison_table(comparison: Comparison) -> ComparisonTable:
    scenario = comparison.scenario
    title = (
        f"knuma simulate — scenario {scenario.name}: {scenario.cluster.describe()}; {scenario.workload.pods} pods; "
        f"NRT every {scenario.nrt_period:g} s; scoring {scenario.scoring or 'default'}; seed {comparison.seed}"
    )
    columns = list(comparison.results)
    rows = []
    for key, label in ROWS:
        values = [comparison.results[name].get(key) for name in columns]
        if all(v is None for v in values):
            continue
        cells = [format_metric(key, v) for v in values]
        if key == "top_priority_running":  # "57 of 57": running of the workload's highest-priority pods
            totals = [comparison.results[name].get("top_priority_pods") for name in columns]
            cells = [c if v is None else f"{c} of {t}" for c, v, t in zip(cells, values, totals, strict=True)]
        rows.append((label, cells))
    captions = []
    for name in [n for n in OFFLINE if n in comparison.results]:
        optimal = comparison.results[name]
        bound = optimal.get("bound")
        unit = "" if name == OPTIMAL else " CPUs"
        proven = "proven optimal" if optimal.get("proven_optimal") else f"bound {bound}{unit}"
        what = "" if name == OPTIMAL else " (most CPUs)"
        captions.append(f"{name}: CP-SAT{what}, {optimal.get('solve_seconds')} s, {proven}")
    caption = "; ".join(captions) or None
    return ComparisonTable(title, columns, rows, caption, comparison.verdict())


def dra_comparison_table(scenario: DraScenario, seed: int, runs: Sequence[DraRun]) -> ComparisonTable:
    """Scenario `dra` as the same kind of table (the terminal and `--report` both render it)."""
    title = (
        f"knuma simulate — scenario dra: {scenario.nodes}x {scenario.shape} ({scenario.policy.value}); "
        f"{scenario.pods} GPU/NIC/CPU pods; seed {seed}"
    )
    columns = [run.scheduler for run in runs]
    documents = [run.to_json() for run in runs]
    rows = [(label, [format_metric(key, d[key]) for d in documents]) for key, label in DRA_ROWS]
    by_name = {run.scheduler: run for run in runs}
    optimal = by_name.get(OPTIMAL)
    caption = None
    if optimal is not None:
        caption = "optimal: CP-SAT, all pods known in advance, " + (
            "proven optimal" if optimal.optimal_proven else "best found within the time limit (not proven)"
        )
    knuma = by_name.get("knuma")
    if knuma is None:
        verdict = "knuma was not part of this run."
    else:
        others = ", ".join(
            f"{r.scheduler} {r.topology_affinity_errors}" for r in runs if r.scheduler not in ("knuma", OPTIMAL)
        )
        parts = [
            f"knuma: {knuma.topology_affinity_errors} TopologyAffinityError" + (f" (vs {others})" if others else "")
        ]
        if optimal is not None and optimal.placed:
            parts.append(f"placed {knuma.placed} = {knuma.placed / optimal.placed:.1%} of optimal ({optimal.placed})")
        else:
            parts.append(f"placed {knuma.placed}")
        verdict = "; ".join(parts) + "."
    return ComparisonTable(title, columns, rows, caption, verdict)
