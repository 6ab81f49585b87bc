"""Scenario `dra`, all schedulers on the same arrivals (`knuma.sim.dra` has the scenario and two schedulers,
`knuma.sim.dra_optimal` the CP-SAT bound)."""

from __future__ import annotations

from collections.abc import Sequence

from knuma.errors import InvalidInput
from knuma.sim.dra import DraRun, DraScenario, run_knuma, run_upstream
from knuma.sim.dra_optimal import optimal_dra

__all__ = ["run_dra"]


def run_dra(
    scenario: DraScenario, seed: int = 0, schedulers: Sequence[str] = ("knuma", "upstream", "optimal")
) -> list[DraRun]:
    """Run the chosen schedulers on the same arrivals."""
    runners = {"knuma": run_knuma, "upstream": run_upstream, "optimal": optimal_dra}
    unknown = [s for s in schedulers if s not in runners]
    if unknown:
        raise InvalidInput(
            f"unknown scheduler(s) for scenario dra: {', '.join(unknown)}; choose from knuma, upstream, optimal"
        )
    return [runners[name](scenario, seed) for name in schedulers]
