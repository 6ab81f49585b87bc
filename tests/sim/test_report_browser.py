"""`knuma simulate --report`, read in a real headless Chromium: the page shows what the terminal shows, every plot
loads, nothing errs, and the screenshot is a page with plots on it (not blank)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from knuma.testing.browser import load_page, pixels

from .conftest import small_scenario


def _terminal_rows(table: str) -> list[list[str]]:
    """The header and body rows of rich's table, as cells (`┃ metric ┃ default ┃` -> ["metric", "default"])."""
    rows = []
    for line in table.splitlines():
        for bar in ("┃", "│"):
            if line.startswith(bar):
                rows.append([cell.strip() for cell in line.strip(bar).split(bar)])
    return rows


@pytest.mark.slow
async def test_the_report_shows_the_terminal_table_and_its_plots_in_a_browser(tmp_path: Path, chromium: str) -> None:
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(yaml.safe_dump(small_scenario()))
    report = tmp_path / "report"
    command = [sys.executable, "-m", "knuma", "simulate", "--scenario", str(scenario), "--report", str(report)]
    run = subprocess.run(
        command, capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "250"}, check=False
    )
    assert run.returncode == 0, run.stderr
    rows = _terminal_rows(run.stdout)
    assert rows[0][:2] == ["metric", "default"] and rows[0][-1] == "optimal"  # the optimum ran: its line is drawn
    assert len(rows) > 10
    verdict = run.stdout.strip().splitlines()[-1]
    assert verdict.startswith("knuma: ")

    check = await load_page((report / "index.html").as_uri(), chromium=chromium, timeout=180)

    assert check.console_errors == []
    assert [i.src for i in check.images] == ["running.png", "utilization.png", "errors.png", "pending.png", "zones.png"]
    assert all(i.complete and i.natural_width > 0 and i.natural_height > 0 for i in check.images), check.images
    lines = check.text.splitlines()
    for row in rows:  # label and cells, in the terminal's order: the same labels and percentages, not keys/fractions
        assert "\t".join(row) in lines, f"terminal row {row} not on the page"
    percentages = [cell for row in rows for cell in row if cell.endswith("%")]
    assert len(percentages) > 10
    assert "CPU utilisation (last 25% of the run)" in check.text
    assert "cpu_utilization" not in check.text
    assert verdict in check.text
    assert "optimal: CP-SAT" in check.text

    shot = pixels(check.screenshot)
    assert shot.width == 1280 and shot.height > 2000  # the whole page: table and five plots
    assert shot.colours > 1000 and shot.inked > 0.05 and shot.coloured > 0.01, shot
