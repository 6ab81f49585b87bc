"""Scenario `dra`: knuma places GPU + NIC + CPU pods NUMA-aligned where an upstream-like allocator (first solution,
no topology) gets TopologyAffinityErrors; the CP-SAT optimum bounds both."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from knuma.api.nrt import Policy
from knuma.cli.main import app
from knuma.sim.comparison_table import dra_comparison_table
from knuma.sim.dra import DraRun, DraScenario, pods_of, run_knuma
from knuma.sim.dra_comparison import run_dra

SMALL = DraScenario(nodes=4, pods=20)


@pytest.mark.parametrize("seed", [0, 1])
def test_knuma_is_never_rejected_and_places_as_many_as_the_optimum(seed: int) -> None:
    knuma, upstream, optimal = run_dra(SMALL, seed)
    assert knuma.topology_affinity_errors == 0 and knuma.misaligned == 0
    assert upstream.topology_affinity_errors >= 4  # devices picked in slice order, blind to the CPUs' NUMA node
    assert optimal.optimal_proven
    assert upstream.placed < knuma.placed == optimal.placed
    assert knuma.placed + knuma.pending == SMALL.pods
    # every admitted knuma pod holds distinct devices
    held = [d for _, devices in knuma.placements.values() for d in devices]
    taken = [(node, d) for node, devices in knuma.placements.values() for d in devices]
    assert len(taken) == len(set(taken)) and held


def test_best_effort_admits_misaligned_pods_that_knuma_aligns() -> None:
    scenario = DraScenario(nodes=4, pods=20, policy=Policy.BEST_EFFORT)
    knuma, upstream = run_dra(scenario, 0, ("knuma", "upstream"))
    assert upstream.topology_affinity_errors == knuma.topology_affinity_errors == 0
    assert upstream.misaligned > knuma.misaligned


def test_arrivals_are_deterministic_per_seed() -> None:
    assert [p.name for p, _, _ in pods_of(SMALL, 3)] == [p.name for p, _, _ in pods_of(SMALL, 3)]
    assert [p.name for p, _, _ in pods_of(SMALL, 3)] != [p.name for p, _, _ in pods_of(SMALL, 4)]


def test_cli_json_and_bad_scheduler() -> None:
    result = CliRunner().invoke(app, ["simulate", "--scenario", "dra", "--schedulers", "knuma,upstream", "-o", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert [r["scheduler"] for r in document["results"]] == ["knuma", "upstream"]
    assert document["results"][0]["topology_affinity_errors"] == 0
    bad = CliRunner().invoke(app, ["simulate", "--scenario", "dra", "--schedulers", "knuma,nope"])
    assert bad.exit_code == 2 and "unknown scheduler(s) for scenario dra: nope" in bad.output


def test_the_default_scenario_reaches_the_optimum() -> None:
    """40 pods on 8 DGX-like nodes: with the least-fragmenting term of DynamicResources' score (fill partly used NUMA
    nodes first) knuma places all 40, as the optimum; locality alone left one 2-GPU pod pending."""
    knuma, optimal = run_dra(DraScenario(), 0, ("knuma", "optimal"))
    assert knuma.placed == optimal.placed == 40


@pytest.mark.parametrize("seed", [0, 2])
def test_oversubscribed_pods_without_claims_leave_the_gpus_their_cpus(seed: int) -> None:
    """60 pods for 64 GPUs: without the DRA devices in the zones KnumaBinPacking scores, CPU packing put 16-CPU pods
    on NUMA nodes whose GPUs then lacked CPUs and stayed free; with them (and claim pods charged the same way), more
    pods are placed, never rejected, with no more GPUs left free."""
    scenario = DraScenario(pods=60)
    before = run_knuma(scenario, seed, device_zones=False)
    after = run_knuma(scenario, seed)
    assert after.topology_affinity_errors == after.misaligned == 0
    assert after.placed > before.placed
    assert gpus_left(after) <= gpus_left(before)


def gpus_left(run: DraRun) -> int:
    return 64 - sum(1 for _, devices in run.placements.values() for d in devices if d.startswith("gpu."))


def test_report_page_shows_the_terminal_table_and_its_plots(tmp_path: Path) -> None:
    report = tmp_path / "report"
    result = CliRunner().invoke(
        app, ["simulate", "--scenario", "dra", "--schedulers", "knuma,upstream", "--report", str(report)]
    )
    assert result.exit_code == 0, result.output
    page = (report / "index.html").read_text()
    runs = run_dra(DraScenario(), 0, ("knuma", "upstream"))
    shown = dra_comparison_table(DraScenario(), 0, runs)
    for label, cells in shown.rows:  # the same labels and cells the terminal prints
        assert f"<td>{html.escape(label)}</td>" in page
        marks = [' class="knuma"' if column == "knuma" else "" for column in shown.columns]
        assert "".join(f"<td{m}>{v}</td>" for m, v in zip(marks, cells, strict=True)) in page
        assert label in " ".join(result.stdout.split())
    assert html.escape(shown.verdict) in page and "knuma: 0 TopologyAffinityError (vs upstream" in shown.verdict
    for name in ("outcomes.png", "gpus.png"):
        assert (report / name).read_bytes().startswith(b"\x89PNG") and f'src="{name}"' in page
    metrics = json.loads((report / "metrics.json").read_text())
    assert [r["placed"] for r in metrics["results"]] == [r.placed for r in runs]


def test_a_bad_report_path_is_a_one_line_error_before_the_simulation(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = CliRunner().invoke(app, ["simulate", "--scenario", "dra", "--report", str(blocker)])
    assert result.exit_code == 2
    assert result.output.startswith(f"error: --report {blocker}: is a file, not a directory")
