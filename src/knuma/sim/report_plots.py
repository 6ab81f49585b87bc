"""The PNG plots of `knuma simulate --report` (matplotlib, Agg canvas: no pyplot state, no display needed).

Every plot has a title, axes labelled with their units and a legend (a colour bar for the heat map). A scheduler
keeps its colour across plots, and earlier curves are drawn wider, so schedulers with identical curves all show.
Where the CP-SAT optimum ran (static workloads), its final packing is drawn as a dashed black line, so each curve
reads against the best possible end state. The heat map names its nodes (every k-th when there are many, long names
trimmed) and its NUMA zones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator, PercentFormatter

from knuma.sim.comparison import OPTIMAL, Comparison
from knuma.sim.comparison_table import DRA_ROWS, LABELS, format_metric
from knuma.sim.dra import GPU, DraRun, DraScenario, pods_of
from knuma.sim.engine import Sample
from knuma.testbed.dra import devices_of
from knuma.testbed.shapes import BUILTIN_SHAPES

__all__ = ["MAX_NODE_LABELS", "Plot", "write_dra_plots", "write_plots"]

MAX_NODE_LABELS = 40
"""Node names on the heat map's axis at most; with more nodes every k-th is named."""
MAX_NAME = 18
"""Longer node names are trimmed to their last characters (where node names differ)."""
_NO_ZONE = "#e0e0e0"


@dataclass(frozen=True)
class Plot:
    filename: str
    title: str
    """Also the page's caption and the image's alt text."""


@dataclass(frozen=True)
class _Timeline:
    filename: str
    title: str
    ylabel: str
    value: Callable[[Sample], float]
    optimum_key: str | None
    """The optimum's metric this curve ends comparable to, drawn as a line."""
    percent: bool = False
    steps: bool = True


_TIMELINES = (
    _Timeline("running.png", "Pods running over time", "pods running (count)", lambda s: s.running, "placed"),
    _Timeline(
        "utilization.png",
        "CPU utilisation over time (requests of running pods / allocatable)",
        "CPU utilisation (%)",
        lambda s: s.cpu_utilization,
        "cpu_utilization",
        percent=True,
        steps=False,
    ),
    _Timeline(
        "errors.png",
        "TopologyAffinityError over time (cumulative kubelet rejections)",
        "pods rejected (count)",
        lambda s: s.topology_affinity_errors,
        "topology_affinity_errors",
    ),
    _Timeline(
        "pending.png",
        "Pending pods over time (not bound to a node yet)",
        "pods pending (count)",
        lambda s: s.pending,
        "pending",
    ),
)


def write_plots(comparison: Comparison, directory: Path) -> list[Plot]:
    """Write every plot into `directory`; return them in page order."""
    colours = _colours(list(comparison.runs))
    plots = [_timeline(comparison, spec, colours, directory) for spec in _TIMELINES]
    if comparison.runs:
        plots.append(_heatmap(comparison, directory))
    return plots


def _colours(names: Sequence[str]) -> dict[str, str]:
    """A colour per scheduler (matplotlib's default cycle, `C0`..`C9`), the same in every plot."""
    return {name: f"C{index % 10}" for index, name in enumerate(names)}


def _timeline(comparison: Comparison, spec: _Timeline, colours: dict[str, str], directory: Path) -> Plot:
    figure = _figure((9, 3.8))
    axes = figure.subplots()
    last = len(comparison.runs) - 1
    for index, (name, result) in enumerate(comparison.runs.items()):
        times = [s.time for s in result.samples]
        values = [spec.value(s) for s in result.samples]
        style = "steps-post" if spec.steps else "default"
        width = 1.3 + 0.5 * (last - index)  # earlier curves wider: one equal to a later one still shows beneath it
        axes.plot(times, values, label=name, color=colours[name], drawstyle=style, linewidth=width)
    optimal = comparison.results.get(OPTIMAL)
    if optimal is not None and spec.optimum_key is not None and optimal.get(spec.optimum_key) is not None:
        value = optimal[spec.optimum_key]
        shown = format_metric(spec.optimum_key, value)
        proven = "" if optimal.get("proven_optimal") else ", best found"
        axes.axhline(
            value,
            color="black",
            linestyle="--",
            linewidth=1.3,
            label=f"optimal (CP-SAT{proven}) at the end: {shown}",
        )
    axes.set_title(spec.title, fontsize="medium")
    axes.set_xlabel("simulated time (s)")
    axes.set_ylabel(spec.ylabel)
    if spec.percent:
        axes.yaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=0))
        axes.set_ylim(bottom=0)
    else:
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_ylim(bottom=0)
    axes.set_xlim(left=0)
    axes.grid(alpha=0.3)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small", title="scheduler")
    figure.savefig(directory / spec.filename)
    return Plot(spec.filename, spec.title)


def _heatmap(comparison: Comparison, directory: Path) -> Plot:
    title = "Exclusive CPUs pinned per NUMA zone at the end of the run (% of the zone's allocatable CPUs)"
    runs = list(comparison.runs.items())
    nodes = list(runs[0][1].kubelets)
    height = min(11.0, max(4.5, 1.6 + 0.22 * min(len(nodes), 2 * MAX_NODE_LABELS)))
    figure = _figure((2.2 + 2.2 * len(runs), height))
    axes_row = figure.subplots(1, len(runs), squeeze=False)[0]
    colour_map = colormaps["viridis"].with_extremes(bad=_NO_ZONE)
    image = None
    missing_zones = False
    for index, (axes, (name, result)) in enumerate(zip(axes_row, runs, strict=True)):
        kubelets = list(result.kubelets.values())
        width = max((len(k.topology.zones) for k in kubelets), default=1)
        grid = np.full((len(kubelets), width), np.nan)
        for row, kubelet in enumerate(kubelets):
            for column, (used, total) in enumerate(kubelet.exclusive_cpu_used()):
                grid[row, column] = used / total if total else 0.0
        missing_zones = missing_zones or bool(np.isnan(grid).any())
        image = axes.imshow(grid, aspect="auto", vmin=0, vmax=1, cmap=colour_map, interpolation="nearest")
        placed = format_metric("placed", comparison.results[name].get("placed"))
        axes.set_title(f"{name}\n({LABELS['placed']} {placed})", fontsize="small")
        axes.set_xticks(range(width), [str(z) for z in range(width)], fontsize="small")
        axes.set_xlabel("NUMA zone")
        _node_axis(axes, [k.name for k in kubelets], named=index == 0)
    figure.suptitle(title.replace(" (", "\n("), fontsize="medium")
    if missing_zones:
        absent = Patch(facecolor=_NO_ZONE, edgecolor="#999999", label="no such NUMA zone on this node")
        figure.legend(handles=[absent], loc="outside lower right", fontsize="small")
    if image is not None:
        bar = figure.colorbar(image, ax=axes_row.tolist(), fraction=0.05, pad=0.02)
        bar.set_label("exclusive CPUs in use (% of zone)")
        bar.formatter = PercentFormatter(xmax=1.0, decimals=0)
        bar.update_ticks()
    figure.savefig(directory / "zones.png")
    return Plot("zones.png", title)


def _node_axis(axes: Axes, names: Sequence[str], *, named: bool) -> None:
    """Node names on the first heat map's y axis: at most `MAX_NODE_LABELS` of them, trimmed to `MAX_NAME`."""
    step = max(1, -(-len(names) // MAX_NODE_LABELS))
    rows = list(range(0, len(names), step))
    if not named:
        axes.set_yticks(rows, [""] * len(rows))
        return
    size = "small" if len(rows) <= 20 else "x-small"
    axes.set_yticks(rows, [_trim(names[row]) for row in rows], fontsize=size)
    axes.set_ylabel("node" if step == 1 else f"node (1 in {step} named)")


def _trim(name: str) -> str:
    return name if len(name) <= MAX_NAME else "…" + name[-(MAX_NAME - 1) :]


def _figure(size: tuple[float, float]) -> Figure:
    """A figure on the Agg canvas (no pyplot: no global state, no display needed)."""
    figure = Figure(figsize=size, dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def write_dra_plots(scenario: DraScenario, seed: int, runs: Sequence[DraRun], directory: Path) -> list[Plot]:
    """Scenario `dra`'s plots: each scheduler's outcome counts side by side, and the GPUs in use per NUMA node at
    the end (where free GPUs were left, and whether they sit next to free CPUs), into `directory`."""
    return [_dra_outcomes(scenario, runs, directory), _dra_gpus(scenario, seed, runs, directory)]


def _dra_outcomes(scenario: DraScenario, runs: Sequence[DraRun], directory: Path) -> Plot:
    title = f"Pod outcomes per scheduler ({scenario.pods} pods arriving)"
    figure = _figure((9, 3.8))
    axes = figure.subplots()
    keys = [key for key, _ in DRA_ROWS]
    width = 0.8 / max(1, len(runs))
    colours = _colours([run.scheduler for run in runs])
    for index, run in enumerate(runs):
        document = run.to_json()
        positions = np.arange(len(keys)) + (index - (len(runs) - 1) / 2) * width
        bars = axes.bar(
            positions, [document[key] for key in keys], width, label=run.scheduler, color=colours[run.scheduler]
        )
        axes.bar_label(bars, fontsize="small")
    axes.set_xticks(range(len(keys)), [label.split(" (")[0] for _, label in DRA_ROWS])
    axes.set_ylabel("pods (count)")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend(fontsize="small")
    axes.set_title(title, fontsize="medium")
    figure.savefig(directory / "outcomes.png")
    return Plot("outcomes.png", title)


def _gpus_in_use(scenario: DraScenario, seed: int, run: DraRun) -> npt.NDArray[np.float64]:
    """[node, NUMA node] -> share of that NUMA node's GPUs the admitted pods hold (the optimum names a NUMA node per
    pod, not devices: its pods' GPU counts are used)."""
    shape = BUILTIN_SHAPES[scenario.shape]
    devices = {d.key: d for d in devices_of(shape)}
    per_zone = [sum(1 for d in devices.values() if d.numa == z and d.driver == GPU) for z in range(shape.zones)]
    templates = {pod.name: template for pod, template, _ in pods_of(scenario, seed)}
    used = np.zeros((scenario.nodes, shape.zones))
    for pod, (node, held) in run.placements.items():
        row = int(node.rsplit("-", 1)[-1])
        for item in held:
            if item.startswith("NUMA "):
                used[row, int(item.split()[1])] += templates[pod].gpus
            elif item in devices and devices[item].driver == GPU:
                used[row, devices[item].numa] += 1
    share: npt.NDArray[np.float64] = used / np.maximum(np.array(per_zone, dtype=np.float64), 1.0)
    return share


def _dra_gpus(scenario: DraScenario, seed: int, runs: Sequence[DraRun], directory: Path) -> Plot:
    title = "GPUs in use per NUMA node at the end (% of the NUMA node's GPUs)"
    height = min(11.0, max(4.5, 1.6 + 0.22 * min(scenario.nodes, 2 * MAX_NODE_LABELS)))
    figure = _figure((2.2 + 2.2 * len(runs), height))
    axes_row = figure.subplots(1, len(runs), squeeze=False)[0]
    image = None
    names = [f"dgx-{i:03d}" for i in range(scenario.nodes)]
    for index, (axes, run) in enumerate(zip(axes_row, runs, strict=True)):
        grid = _gpus_in_use(scenario, seed, run)
        image = axes.imshow(grid, aspect="auto", vmin=0, vmax=1, cmap=colormaps["viridis"], interpolation="nearest")
        axes.set_title(f"{run.scheduler}\n(placed {run.placed})", fontsize="small")
        axes.set_xticks(range(grid.shape[1]), [str(z) for z in range(grid.shape[1])], fontsize="small")
        axes.set_xlabel("NUMA node")
        _node_axis(axes, names, named=index == 0)
    figure.suptitle(title.replace(" (", "\n("), fontsize="medium")
    if image is not None:
        bar = figure.colorbar(image, ax=axes_row.tolist(), fraction=0.05, pad=0.02)
        bar.set_label("GPUs in use (% of NUMA node)")
        bar.formatter = PercentFormatter(xmax=1.0, decimals=0)
        bar.update_ticks()
    figure.savefig(directory / "gpus.png")
    return Plot("gpus.png", title)
