"""Run several schedulers on one scenario and seed, and compare them (what `knuma simulate` prints).

Each online scheduler gets its own fresh cluster and the same pod arrivals; `optimal` places the same pods offline
(the most pods), `optimal-cpus` too (the most CPUs: what packing decides, `knuma.sim.optimal.Objective`).
The online schedulers' simulations are independent, so they can run in worker processes (`jobs`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from knuma.api.resources import CPU
from knuma.errors import InvalidInput
from knuma.sim.engine import RunResult, arrivals, build_kubelets
from knuma.sim.metrics import JSON_KEYS, PREEMPTION_KEYS
from knuma.sim.optimal import DEFAULT_TIME_LIMIT, Objective, OptimalResult, OptimalUnsupported, solve
from knuma.sim.parallel import simulate
from knuma.sim.schedulers import ALL_SCHEDULERS, PRODUCT
from knuma.sim.spec import Scenario

__all__ = ["OFFLINE", "OPTIMAL", "OPTIMAL_CPUS", "Comparison", "compare", "parse_schedulers"]

OPTIMAL = "optimal"
OPTIMAL_CPUS = "optimal-cpus"
OFFLINE = {OPTIMAL: Objective.PODS, OPTIMAL_CPUS: Objective.CPUS}
"""The offline columns and what each maximises."""


@dataclass
class Comparison:
    scenario: Scenario
    seed: int
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Scheduler -> all metrics."""
    runs: dict[str, RunResult] = field(default_factory=dict)
    optimal: OptimalResult | None = None
    optimal_cpus: OptimalResult | None = None
    notes: list[str] = field(default_factory=list)
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    """Scheduler -> CPU seconds its simulation took (in its own process when run in parallel)."""
    wall_seconds: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The documented `-o json` shape: only the contract's keys."""
        return {
            "scenario": self.scenario.name,
            "results": {
                name: {key: metrics[key] for key in (*JSON_KEYS, *PREEMPTION_KEYS) if key in metrics}
                for name, metrics in self.results.items()
            },
        }

    def verdict(self) -> str:
        """One line: knuma's admission errors, its share of the optimum (and of the CPU optimum, when it ran), its
        highest-priority pods running (with priorities), its false negatives vs overreserve."""
        knuma = self.results.get("knuma")
        if knuma is None:
            return "knuma was not part of this run."
        parts = []
        tae = knuma["topology_affinity_errors"]
        online = {n: m for n, m in self.results.items() if n != "knuma" and n not in OFFLINE}
        others = {n: m["topology_affinity_errors"] for n, m in online.items()}
        worst = ", ".join(f"{n} {v}" for n, v in others.items())
        parts.append(f"knuma: {tae} TopologyAffinityError" + (f" (vs {worst})" if worst else ""))
        if OPTIMAL in self.results and self.results[OPTIMAL]["placed"]:
            best = self.results[OPTIMAL]["placed"]
            share = knuma["placed"] / best
            proven = "" if self.optimal is None or self.optimal.proven else ", not proven optimal"
            parts.append(f"placed {knuma['placed']} = {share:.1%} of optimal ({best}{proven})")
        else:
            parts.append(f"placed {knuma['placed']}")
        if self.optimal_cpus is not None and self.optimal_cpus.cpu_used and "cpus_placed" in knuma:
            best_cpus = self.optimal_cpus.cpu_used / 1000
            proven = "" if self.optimal_cpus.proven else ", not proven optimal"
            parts.append(
                f"CPUs placed {knuma['cpus_placed']:g} = {knuma['cpus_placed'] / best_cpus:.1%} of optimal-cpus "
                f"({best_cpus:g}{proven})"
            )
        if "top_priority_running" in knuma:
            others_running = ", ".join(
                f"{n} {m['top_priority_running']}" for n, m in online.items() if "top_priority_running" in m
            )
            parts.append(
                f"highest-priority pods running {knuma['top_priority_running']} of {knuma['top_priority_pods']}"
                + (f" (vs {others_running})" if others_running else "")
                + f" after {knuma['preempted']} evictions"
            )
        if "nrt-overreserve" in self.results:
            over = self.results["nrt-overreserve"]["false_negative_pending"]
            parts.append(f"false-negative pending {knuma['false_negative_pending']} vs nrt-overreserve {over}")
        return "; ".join(parts) + "."


def parse_schedulers(raw: str | None, scenario: Scenario) -> list[str]:
    """`a,b,...` -> names; default: every online scheduler, plus `optimal` when the scenario supports it
    (`optimal-cpus` only when asked for: a second solve)."""
    if not raw:
        names = list(PRODUCT)
        if scenario.optimal_supported:
            names.append(OPTIMAL)
        return names
    names = [n.strip() for n in raw.split(",") if n.strip()]
    unknown = [n for n in names if n not in ALL_SCHEDULERS]
    if unknown:
        raise InvalidInput(f"unknown scheduler(s) {', '.join(unknown)}; expected some of: {', '.join(ALL_SCHEDULERS)}")
    return list(dict.fromkeys(names))


def compare(
    scenario: Scenario,
    schedulers: Sequence[str],
    seed: int = 0,
    *,
    progress: Callable[[str, float], None] | None = None,
    optimal_time_limit: float = DEFAULT_TIME_LIMIT,
    jobs: int = 1,
    keep_runs: bool = True,
) -> Comparison:
    """Simulate every online scheduler in `schedulers` (in up to `jobs` worker processes, `knuma.sim.parallel`: the
    same results as one after the other), then the optimum if asked for. `keep_runs` False: `runs` stays empty
    (only `results` are wanted; the optimum's solver then starts without a hint)."""
    scenario.check_length(arrivals(scenario, seed))  # a run that would never finish: InvalidInput, before it starts
    comparison = Comparison(scenario, seed)
    online = [name for name in schedulers if name not in OFFLINE]
    simulated_all = simulate(scenario, online, seed, jobs=jobs, progress=progress, keep_runs=keep_runs)
    for name, simulated in simulated_all.items():
        if simulated.result is not None:
            comparison.runs[name] = simulated.result
        comparison.results[name] = simulated.metrics
        comparison.cpu_seconds[name] = simulated.cpu_seconds
        comparison.wall_seconds[name] = simulated.wall_seconds
    for name in [n for n in OFFLINE if n in schedulers]:
        if progress is not None:
            progress(name, 0.0)
        _optimal(comparison, optimal_time_limit, name)
        if progress is not None:
            progress(name, 1.0)
    return comparison


def _optimal(comparison: Comparison, time_limit: float, name: str = OPTIMAL) -> None:
    scenario = comparison.scenario
    if not scenario.workload.static:
        comparison.notes.append(f"{name} skipped: pods terminate in this workload (it packs static workloads)")
        return
    kubelets = build_kubelets(scenario)
    pods = [a.pod for a in arrivals(scenario, comparison.seed)]
    pools = {node: pool.name for pool in scenario.cluster.pools for node in pool.node_names()}
    try:
        best = max(
            comparison.runs.values(), key=lambda r: sum(len(k.running) for k in r.kubelets.values()), default=None
        )
        hint = list(best.kubelets.values()) if best is not None else None
        objective = OFFLINE[name]
        result = solve(
            pods, list(kubelets.values()), time_limit=time_limit, pools=pools, hint=hint, objective=objective
        )
    except OptimalUnsupported as err:
        comparison.notes.append(f"{name} skipped: {err}")
        return
    if objective is Objective.CPUS:
        comparison.optimal_cpus = result
    else:
        comparison.optimal = result
    cpu_total = sum(k.allocatable.get(CPU, 0) for k in kubelets.values())
    comparison.results[name] = {
        "placed": result.placed,
        "running": result.placed,
        "topology_affinity_errors": 0,
        "smt_alignment_errors": 0,
        "pending": result.total - result.placed,
        "false_negative_pending": 0,
        "cpu_utilization": round(result.cpu_used / cpu_total, 4) if cpu_total else 0.0,
        "throughput_pods_per_s": round(result.placed / result.seconds, 1) if result.seconds else 0.0,
        "cpus_placed": result.cpu_used / 1000,
        "proven_optimal": result.proven,
        "bound": result.bound / 1000 if objective is Objective.CPUS else result.bound,
        "solve_seconds": round(result.seconds, 2),
    }
    if not result.proven:
        found = f"{result.cpu_used / 1000:g} CPUs" if objective is Objective.CPUS else str(result.placed)
        bound = f"{result.bound / 1000:g} CPUs" if objective is Objective.CPUS else str(result.bound)
        comparison.notes.append(f"{name}: time limit ({time_limit:.0f} s) reached; best found {found}, bound {bound}")
