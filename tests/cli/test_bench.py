"""`knuma bench` end to end on a small cluster: the JSON contract and bad input."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from knuma.cli.main import app

runner = CliRunner()


def test_json_output_shape() -> None:
    args = ["bench", "--nodes", "40", "--pods", "60", "--reference-pods", "3", "--uncached-pods", "10"]
    args += ["--new-shape-pods", "20", "-o", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["nodes"] == 40 and doc["pods"] == 60 and doc["zones"] == [2, 4, 8]
    assert 0 < doc["scheduled"] <= 60
    assert set(doc["throughput"]) == {"average", "p50", "p90", "p99"}
    assert doc["throughput"]["average"] > 0
    assert doc["reference_throughput"]["pods"] == 3 and doc["reference_throughput"]["average"] > 0
    assert doc["uncached_throughput"]["pods"] == 10
    assert doc["speedup"] > 0
    worst = doc["new_shape_throughput"]
    assert worst["pods"] == 20 and 0 < worst["scheduled"] <= 20 and worst["average"] > 0
    assert worst["latency_ms"]["p50"] <= worst["latency_ms"]["p99"] and worst["target"] == 1000
    assert worst["per_cpu_second"] > 0


def test_table_output_names_every_row() -> None:
    args = ["bench", "--nodes", "20", "--pods", "20", "--reference-pods", "2", "--uncached-pods", "5"]
    result = runner.invoke(app, [*args, "--new-shape-pods", "5"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for row in ("knuma (vectorised)", "vectorised, no cache", "every pod a new shape", "reference (per node)"):
        assert row in result.stdout


def test_bad_zones_are_a_usage_error() -> None:
    result = runner.invoke(app, ["bench", "--zones", "two"])
    assert result.exit_code == 2
    assert "invalid --zones" in result.stderr


def test_sizes_beyond_the_limits_are_usage_errors_before_anything_is_built() -> None:
    """`--nodes 10^20` grew memory without bound; 65 NUMA zones is beyond what a node reports."""
    too_many = runner.invoke(app, ["bench", "--nodes", str(10**20)])
    assert too_many.exit_code == 2
    assert "Invalid value for '--nodes'" in too_many.stderr and "50000" in too_many.stderr
    zones = runner.invoke(app, ["bench", "--zones", "2,65"])
    assert zones.exit_code == 2
    assert (
        zones.stderr.strip() == "error: invalid --zones '2,65'; expected NUMA zone counts from 1 to 64, such as 2,4,8"
    )
