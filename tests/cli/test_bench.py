"""`knuma bench` end to end on a small cluster: the JSON contract and bad input."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from knuma.cli.main import app

runner = CliRunner()


def test_json_output_shape() -> None:
    args = ["bench", "--nodes", "40", "--pods", "60", "--reference-pods", "3", "--uncached-pods", "10", "-o", "json"]
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


def test_bad_zones_are_a_usage_error() -> None:
    result = runner.invoke(app, ["bench", "--zones", "two"])
    assert result.exit_code == 2
    assert "invalid --zones" in result.stderr
