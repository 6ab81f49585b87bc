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
from dataclasses import dataclass
from pathlib import Path

from knuma.errors import InvalidInput
from knuma.sim.comparison import Comparison
from knuma.sim.comparison_table import comparison_table
from knuma.sim.report_plots import Plot, write_plots

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
    shown = comparison_table(comparison)

    def cls(name: str) -> str:
        return ' class="knuma"' if name == "knuma" else ""

    head = "".join(f"<th{cls(name)}>{html.escape(name)}</th>" for name in shown.columns)
    rows = "".join(
        f"<tr><td>{html.escape(label)}</td>"
        + "".join(f"<td{cls(name)}>{html.escape(cell)}</td>" for name, cell in zip(shown.columns, cells, strict=True))
        + "</tr>"
        for label, cells in shown.rows
    )
    caption = f"<caption>{html.escape(shown.caption)}</caption>" if shown.caption else ""
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in comparison.notes)
    figures = "".join(
        f'<figure><img src="{html.escape(src)}" alt="{html.escape(plot.title)}"></figure>'
        for plot in plots
        for src in [(assets / plot.filename).as_posix()]
    )
    metrics = html.escape((assets / "metrics.json").as_posix())
    delay = "" if scenario.nrt_event_delay is None else f", event delay {scenario.nrt_event_delay:g} s"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>knuma simulate: {html.escape(scenario.name)}</title>
<link rel="icon" href="data:,">
<style>{_STYLE}</style>
</head><body>
<h1>knuma simulate: {html.escape(scenario.name)}</h1>
<p>{html.escape(scenario.description)}</p>
<p>Cluster: {html.escape(scenario.cluster.describe())}. Pods: {scenario.workload.pods}. Exporter period
{scenario.nrt_period:g} s{delay}. Seed {comparison.seed}.</p>
<p class="verdict">{html.escape(shown.verdict)}</p>
<table><thead><tr><th>metric</th>{head}</tr></thead><tbody>{rows}</tbody>{caption}</table>
<p>Every metric, unformatted: <a href="{metrics}">metrics.json</a>.</p>
<ul>{notes}</ul>
{figures}
</body></html>
"""
