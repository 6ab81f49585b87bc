"""The same `-o` checking and table widths on every command: errors name the value and the choices (exit 2, no
framed usage box), tables fit `COLUMNS` (80 here) without hiding a verdict behind an ellipsis, and piped output keeps
whole rows unless `COLUMNS` says otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from knuma.cli.output import PIPED_WIDTH, output_format, table_console
from knuma.errors import InvalidInput

ROOT = Path(__file__).resolve().parents[2]
KNUMA = str(Path(sys.executable).with_name("knuma"))
SCHEDULE = [
    "schedule",
    "--pod",
    str(ROOT / "examples/schedule/pod.yaml"),
    "--nodes",
    str(ROOT / "examples/schedule/nodes.yaml"),
]


def knuma(*args: str, columns: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run([KNUMA, *args], capture_output=True, text=True, env=env, timeout=120)


def test_output_format_names_the_value_and_the_choices() -> None:
    assert output_format("yaml", ("table", "json", "yaml")) == "yaml"
    with pytest.raises(InvalidInput, match=r"unknown output format 'yml'; use table, json or yaml"):
        output_format("yml", ("table", "json", "yaml"))


def test_piped_tables_keep_whole_rows_unless_columns_says_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert table_console().width == PIPED_WIDTH
    monkeypatch.setenv("COLUMNS", "80")
    assert table_console().width == 80


@pytest.mark.parametrize("command", [SCHEDULE, ["simulate"]], ids=["schedule", "simulate"])
def test_a_bad_output_format_is_the_same_one_line_error(command: list[str]) -> None:
    done = knuma(*command, "-o", "yml")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] in ("error: unknown output format 'yml'; use table, json or yaml",), (
        done.stderr
    )
    assert "╭" not in done.stderr


def test_schedule_fits_80_columns_and_shows_every_verdict() -> None:
    done = knuma(*SCHEDULE, columns="80")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    assert "…" not in done.stdout
    cells = [cell.strip() for line in lines for cell in line.split("│")]
    for column in range(1, 7):  # each column's text, read down the rows
        column_text = "".join(line.split("│")[column].strip() for line in lines if line.count("│") == 7)
        assert column_text, done.stdout
    assert "cannot align" in cells and any(c.startswith("TopologyAff") for c in cells), done.stdout
    assert "restricted" in cells and "worker-c" in cells


def test_simulate_prints_yaml_too() -> None:
    done = knuma("simulate", "--scenario", "fragmented", "--schedulers", "default", "-o", "yaml")
    assert done.returncode == 0, done.stderr
    document = yaml.safe_load(done.stdout)["results"]["default"]
    as_json = json.loads(knuma("simulate", "--scenario", "fragmented", "--schedulers", "default", "-o", "json").stdout)
    timing = ("throughput_pods_per_s", "latency_ms")  # measured, so they differ between runs
    assert {k: v for k, v in document.items() if k not in timing} == {
        k: v for k, v in as_json["results"]["default"].items() if k not in timing
    }
