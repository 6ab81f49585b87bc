"""The `devices` scenario at the seeds where knuma stayed below 98% of the CP-SAT optimum before the Sum-of-Squares
term of KnumaBinPacking (`knuma.scheduler.plugins.device_stranding.gap_penalty`; docs/placement.md): both now reach
it, with no TopologyAffinityError."""

from __future__ import annotations

import pytest

from knuma.sim.comparison import compare
from knuma.sim.scenarios import builtin_scenario


@pytest.mark.parametrize(("seed", "before"), [(14, 69), (31, 69)])
def test_gpu_packing_reaches_98_percent_of_the_optimum(seed: int, before: int) -> None:
    result = compare(builtin_scenario("devices"), ["knuma", "optimal"], seed, keep_runs=True).results
    knuma, optimal = result["knuma"], result["optimal"]
    assert knuma["topology_affinity_errors"] == 0
    assert knuma["placed"] > before
    assert knuma["placed"] >= 0.98 * optimal["placed"], (knuma["placed"], optimal["placed"])
