"""`knuma simulate --report DIR|FILE.html`: an HTML page with the comparison and PNG plots (matplotlib, Agg backend).

`--report DIR` writes `DIR/index.html` with the PNGs and `metrics.json` beside it; `--report NAME.html` writes that
page, with its files in `NAME_files/` next to it. `report_target` checks the path before the simulation runs, so a
file where a directory is wanted or a directory that cannot be written is a one-line error, not a traceback after
the run.

The page shows the comparison table exactly as the terminal does (the same labels and formatted cells, from
`knuma.sim.comparison_table`), the verdict, the notes and the plots of `knuma.sim.report_plots`; `metrics.json`
holds every metric unformatted.
"""

from __future__ import annotations

import html
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from knuma.errors import InvalidInput
from knuma.sim.comparison import Comparison
from knuma.sim.comparison_table import ComparisonTable, comparison_table, dra_comparison_table
from knuma.sim.dra import DraRun, DraScenario
from knuma.sim.report_plots import Plot, write_dra_plots, write_plots

__all__ = ["ReportPathError", "ReportTarget", "report_target", "write_dra_report", "write_report"]


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
    plots = write_plots(comparison, directory)
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
    target.page.write_text(_html(comparison, plots, relative))
    return target.page


def write_dra_report(scenario: DraScenario, seed: int, runs: Sequence[DraRun], where: Path | ReportTarget) -> Path:
    """Scenario `dra`'s page: the table the terminal shows, its verdict, `metrics.json` and the plots of
    `knuma.sim.report_plots.write_dra_plots`; return the HTML path."""
    target = where if isinstance(where, ReportTarget) else report_target(where)
    directory = target.assets
    plots = write_dra_plots(scenario, seed, runs, directory)
    document = {"scenario": "dra", "seed": seed, "nodes": scenario.nodes, "pods": scenario.pods}
    (directory / "metrics.json").write_text(
        json.dumps({**document, "results": [r.to_json() for r in runs]}, indent=2, sort_keys=True) + "\n"
    )
    relative = Path(os.path.relpath(directory, target.page.parent))
    shown = dra_comparison_table(scenario, seed, runs)
    about = (
        f"{scenario.nodes} DGX-like nodes ({scenario.shape}: per NUMA node 4 GPUs and 4 NICs with their CPUs and "
        f"memory) under {scenario.policy.value}; {scenario.pods} pods with ResourceClaims for GPUs and NICs, or "
        "CPUs only, arriving one by one and never leaving. Every bound pod is admitted or rejected by the simulated "
        f"kubelet with its devices. Seed {seed}."
    )
    target.page.write_text(_page("dra", about, shown, plots, relative))
    return target.page


_STYLE = """
body{font-family:sans-serif;max-width:1150px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}caption{caption-side:bottom;text-align:left;color:#555;padding-top:4px}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:right;white-space:nowrap}th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left;white-space:normal}th.knuma,td.knuma{font-weight:bold}
figure{margin:2em 0}img{max-width:100%}
.verdict{font-weight:bold}
"""


def _html(comparison: Comparison, plots: list[Plot], assets: Path) -> str:
    scenario = comparison.scenario
    delay = "" if scenario.nrt_event_delay is None else f", event delay {scenario.nrt_event_delay:g} s"
    about = (
        f"{scenario.description}\n\nCluster: {scenario.cluster.describe()}. Pods: {scenario.workload.pods}. "
        f"Exporter period {scenario.nrt_period:g} s{delay}. Seed {comparison.seed}."
    )
    return _page(scenario.name, about, comparison_table(comparison), plots, assets, comparison.notes)


def _page(
    name: str, about: str, shown: ComparisonTable, plots: list[Plot], assets: Path, notes: Sequence[str] = ()
) -> str:
    """The page every scenario's report has: its description, the verdict, the table, the notes and the plots."""

    def cls(column: str) -> str:
        return ' class="knuma"' if column == "knuma" else ""

    head = "".join(f"<th{cls(column)}>{html.escape(column)}</th>" for column in shown.columns)
    rows = "".join(
        f"<tr><td>{html.escape(label)}</td>"
        + "".join(f"<td{cls(c)}>{html.escape(cell)}</td>" for c, cell in zip(shown.columns, cells, strict=True))
        + "</tr>"
        for label, cells in shown.rows
    )
    caption = f"<caption>{html.escape(shown.caption)}</caption>" if shown.caption else ""
    items = "".join(f"<li>{html.escape(note)}</li>" for note in notes)
    figures = "".join(
        f'<figure><img src="{html.escape(src)}" alt="{html.escape(plot.title)}"></figure>'
        for plot in plots
        for src in [(assets / plot.filename).as_posix()]
    )
    metrics = html.escape((assets / "metrics.json").as_posix())
    paragraphs = "\n".join(f"<p>{html.escape(part)}</p>" for part in about.split("\n\n"))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>knuma simulate: {html.escape(name)}</title>
<link rel="icon" href="data:,">
<style>{_STYLE}</style>
</head><body>
<h1>knuma simulate: {html.escape(name)}</h1>
{paragraphs}
<p class="verdict">{html.escape(shown.verdict)}</p>
<table><thead><tr><th>metric</th>{head}</tr></thead><tbody>{rows}</tbody>{caption}</table>
<p>Every metric, unformatted: <a href="{metrics}">metrics.json</a>.</p>
<ul>{items}</ul>
{figures}
</body></html>
"""
