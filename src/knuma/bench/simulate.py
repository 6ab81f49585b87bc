"""`knuma simulate` at real-cluster size: every compared scheduler on 5000 nodes and 50,000 pod arrivals.

    python -m knuma.bench.simulate [--nodes 5000] [--pods 50000] [--rate 100] [--seed 0] [--jobs N]

The cluster is the built-in `default` scenario scaled up (half two-socket, a third four-NUMA, the rest eight-NUMA
nodes, single-numa-node), the workload is `default`'s pod templates arriving as a Poisson stream at `rate` pods/s, the
exporters publish every 60 s. The schedulers run as `knuma simulate` runs them (`knuma.sim.comparison.compare`: each
simulation, then its metrics, in up to `jobs` worker processes; default: the CPUs this process may use); the CP-SAT
optimum is left out (it does not scale to this size). Target: under 2 minutes of wall time for all of them together.
Reported: that wall time, and per scheduler the wall and CPU seconds of its simulation in its own process.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from knuma.sim.comparison import compare
from knuma.sim.parallel import available_cpus
from knuma.sim.scenarios import BUILTIN
from knuma.sim.schedulers import PRODUCT
from knuma.sim.spec import Scenario, scenario_from_dict

__all__ = ["SimulateResult", "SimulateRun", "run", "scenario"]


@dataclass(frozen=True)
class SimulateResult:
    scheduler: str
    seconds: float
    """Wall seconds of this scheduler's simulation and metrics (in its worker process when run in parallel)."""
    cpu_seconds: float
    placed: int
    topology_affinity_errors: int
    pending: int
    pods_per_second: float
    """The scheduler's own throughput (wall time of its scheduling attempts only)."""


@dataclass(frozen=True)
class SimulateRun:
    """The whole comparison: wall seconds from start to the last scheduler's metrics, and each scheduler's run."""

    seconds: float
    jobs: int
    cpus: int
    """CPUs this process may use (`os.sched_getaffinity`)."""
    results: list[SimulateResult]

    @property
    def cpu_seconds(self) -> float:
        return sum(r.cpu_seconds for r in self.results)


def scenario(nodes: int = 5000, pods: int = 50_000, rate: float = 100.0) -> Scenario:
    """`default` scaled to `nodes` nodes and `pods` arrivals."""
    two, four = nodes // 2, nodes // 3
    pools = [
        {"name": "socket2", "shape": "two-socket", "count": two},
        {"name": "numa4", "shape": "four-numa", "count": four},
        {"name": "numa8", "shape": "eight-numa", "count": nodes - two - four},
    ]
    workload: dict[str, Any] = {
        **BUILTIN["default"]["workload"],
        "pods": pods,
        "arrival": {"process": "poisson", "rate": rate},
    }
    return scenario_from_dict(
        {
            "name": f"default-x{nodes}",
            "description": f"{nodes} nodes, {pods} pods arriving at {rate:g}/s",
            "cluster": {"pools": [p for p in pools if p["count"]]},
            "workload": workload,
            "optimal": False,
        }
    )


def run(
    nodes: int = 5000,
    pods: int = 50_000,
    rate: float = 100.0,
    seed: int = 0,
    schedulers: Sequence[str] = PRODUCT,
    jobs: int | None = None,
) -> SimulateRun:
    chosen = scenario(nodes, pods, rate)
    cpus = available_cpus()
    jobs = cpus if jobs is None else jobs
    started = time.perf_counter()
    # as `knuma simulate` without --report: only the metrics come back from the workers
    comparison = compare(chosen, list(schedulers), seed, jobs=jobs, keep_runs=False)
    seconds = time.perf_counter() - started
    results = []
    for name in schedulers:
        metrics = comparison.results[name]
        results.append(
            SimulateResult(
                name,
                comparison.wall_seconds[name],
                comparison.cpu_seconds[name],
                metrics["placed"],
                metrics["topology_affinity_errors"],
                metrics["pending"],
                metrics["throughput_pods_per_s"],
            )
        )
    return SimulateRun(seconds, min(jobs, len(results)), cpus, results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--rate", type=float, default=100.0, help="pod arrivals per simulated second")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--schedulers", default=",".join(PRODUCT), help="comma-separated, default: all but optimal")
    parser.add_argument(
        "--jobs", type=int, default=None, help="worker processes (default: the CPUs this process may use)"
    )
    args = parser.parse_args()
    names = [n.strip() for n in args.schedulers.split(",") if n.strip()]
    unknown = [n for n in names if n not in PRODUCT]
    if unknown:
        parser.error(f"unknown scheduler(s) {', '.join(unknown)}; expected some of: {', '.join(PRODUCT)}")
    if args.jobs is not None and args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    measured = run(args.nodes, args.pods, args.rate, args.seed, names, args.jobs)
    for r in measured.results:
        print(
            f"{r.scheduler}: {r.seconds:.1f} s ({r.cpu_seconds:.1f} s CPU); placed {r.placed}, "
            f"TopologyAffinityError {r.topology_affinity_errors}, pending {r.pending}; {r.pods_per_second:.0f} pods/s"
        )
    print(
        f"all: {measured.seconds:.1f} s wall with {measured.jobs} worker process(es) on {measured.cpus} CPU(s) "
        f"({measured.cpu_seconds:.1f} s CPU in all)"
    )


if __name__ == "__main__":
    main()
