"""`knuma simulate --report DIR|FILE.html`: an HTML page with the comparison and PNG plots (matplotlib, Agg backend).

`--report DIR` writes `DIR/index.html` with the PNGs and `metrics.json` beside it; `--report NAME.html` writes that
page, with its files in `NAME_files/` next to it. `report_target` checks the path before the simulation runs, so a
file where a directory is wanted or a directory that cannot be written is a one-line error, not a traceback after
the run.

Plots: CPU utilisation over time, cumulative TopologyAffinityError over time, pending pods over time, and a per-zone
heat map of exclusive CPUs in use at the end for each scheduler. `metrics.json` holds every metric.
"""

from __future__ import annotations

import html
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from knuma.errors import InvalidInput
from knuma.sim.comparison import Comparison

__all__ = ["ReportPathError", "ReportTarget", "report_target", "write_report"]


class ReportPathError(InvalidInput):
    """`--report` names something the report cannot be written to; the message says what to give instead."""


@dataclass(frozen=True)
class ReportTarget:
    page: Path
    """The HTML file."""
    assets: Path
    """The directory of the PNGs and `metrics.json`."""


def report_target(path: Path) -> ReportTarget:
    """Where `--report PATH` writes, checked (and created) now: PATH ending in .html is the page itself, anything else
    a directory."""
    if path.suffix.lower() in (".html", ".htm"):
        if path.is_dir():
            raise ReportPathError(f"--report {path}: is a directory; give a path ending in .html that is not one")
        target = ReportTarget(path, path.with_name(f"{path.stem}_files"))
    elif path.exists() and not path.is_dir():
        raise ReportPathError(
            f"--report {path}: is a file, not a directory; give a directory (the report is DIR/index.html) "
            "or a path ending in .html"
        )
    else:
        target = ReportTarget(path / "index.html", path)
    for directory in dict.fromkeys((target.page.parent, target.assets)):
        try:
            directory.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=directory):
                pass
        except OSError as err:
            raise ReportPathError(
                f"--report {path}: cannot write into {directory}: {err.strerror or err}; give a writable directory"
            ) from None
    return target


def write_report(comparison: Comparison, where: Path | ReportTarget) -> Path:
    """Write the page, the PNGs and `metrics.json` (`where`: a directory, or a checked `report_target`); return the
    HTML path."""
    target = where if isinstance(where, ReportTarget) else report_target(where)
    directory = target.assets
    images = [
        _timeline(comparison, directory, "cpu_utilization", "CPU requested / allocatable", "utilization.png"),
        _timeline(
            comparison, directory, "topology_affinity_errors", "TopologyAffinityError (cumulative)", "errors.png"
        ),
        _timeline(comparison, directory, "pending", "pending pods", "pending.png"),
        _heatmap(comparison, directory),
    ]
    (directory / "metrics.json").write_text(
        json.dumps(
            {
                "scenario": comparison.scenario.name,
                "seed": comparison.seed,
                "results": comparison.results,
                "notes": comparison.notes,
            },
            indent=2,
            sort_keys=True,
        )
        + "\n"
    )
    relative = Path(os.path.relpath(directory, target.page.parent))
    target.page.write_text(_html(comparison, [(relative / name).as_posix() for name in images]))
    return target.page


def _timeline(comparison: Comparison, directory: Path, attribute: str, label: str, filename: str) -> str:
    figure = _figure((8, 3.5))
    axes = figure.subplots()
    for name, result in comparison.runs.items():
        times = [s.time for s in result.samples]
        values = [getattr(s, attribute) for s in result.samples]
        axes.plot(times, values, label=name, drawstyle="steps-post" if attribute != "cpu_utilization" else "default")
    axes.set_xlabel("simulated time (s)")
    axes.set_ylabel(label)
    axes.grid(alpha=0.3)
    axes.legend(loc="best", fontsize="small")
    figure.savefig(directory / filename)
    return filename


def _heatmap(comparison: Comparison, directory: Path) -> str:
    runs = list(comparison.runs.items())
    figure = _figure((3 * max(1, len(runs)), 6))
    axes_list = figure.subplots(1, max(1, len(runs)), squeeze=False)
    image = None
    for axes, (name, result) in zip(axes_list[0], runs, strict=False):
        kubelets = list(result.kubelets.values())
        width = max((len(k.topology.zones) for k in kubelets), default=1)
        grid = np.full((len(kubelets), width), np.nan)
        for row, kubelet in enumerate(kubelets):
            for column, (used, total) in enumerate(kubelet.exclusive_cpu_used()):
                grid[row, column] = used / total if total else 0.0
        image = axes.imshow(grid, aspect="auto", vmin=0, vmax=1, cmap="viridis", interpolation="nearest")
        axes.set_title(name, fontsize="small")
        axes.set_xticks(range(width))
        axes.set_xlabel("NUMA zone")
        axes.set_ylabel("node")
    if image is not None:
        figure.colorbar(image, ax=axes_list[0].tolist(), label="exclusive CPUs in use at the end")
    figure.savefig(directory / "zones.png")
    return "zones.png"


def _figure(size: tuple[float, float]) -> Figure:
    """A figure on the Agg canvas (no pyplot: no global state, no display needed)."""
    figure = Figure(figsize=size, dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return html.escape(str(value))


def _html(comparison: Comparison, images: list[str]) -> str:
    scenario = comparison.scenario
    keys: list[str] = []
    for metrics in comparison.results.values():
        keys += [k for k in metrics if k not in keys]
    head = "".join(f"<th>{html.escape(name)}</th>" for name in comparison.results)
    rows = "".join(
        f"<tr><th>{html.escape(key)}</th>"
        + "".join(f"<td>{_cell(m.get(key, ''))}</td>" for m in comparison.results.values())
        + "</tr>"
        for key in keys
    )
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in comparison.notes)
    figures = "".join(f'<p><img src="{name}" alt="{name}"></p>' for name in images)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>knuma simulate: {html.escape(scenario.name)}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}th{{background:#f4f4f4}}img{{max-width:100%}}</style>
</head><body>
<h1>knuma simulate: {html.escape(scenario.name)}</h1>
<p>{html.escape(scenario.description)}</p>
<p>Cluster: {html.escape(scenario.cluster.describe())}. Pods: {scenario.workload.pods}. Exporter period
{scenario.nrt_period:g} s{"" if scenario.nrt_event_delay is None else f", event delay {scenario.nrt_event_delay:g} s"}.
Seed {comparison.seed}.</p>
<p><strong>{html.escape(comparison.verdict())}</strong></p>
<table><tr><th>metric</th>{head}</tr>{rows}</table>
<ul>{notes}</ul>
{figures}
</body></html>
"""
