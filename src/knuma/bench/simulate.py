"""`knuma simulate` at real-cluster size: every compared scheduler on 5000 nodes and 50,000 pod arrivals.

    python -m knuma.bench.simulate [--nodes 5000] [--pods 50000] [--rate 100] [--seed 0]

The cluster is the built-in `default` scenario scaled up (half two-socket, a third four-NUMA, the rest eight-NUMA
nodes, single-numa-node), the workload is `default`'s pod templates arriving as a Poisson stream at `rate` pods/s, the
exporters publish every 60 s. Each scheduler runs as `knuma simulate` runs it (`knuma.sim.comparison.compare`: the
simulation, then the metrics); the CP-SAT optimum is left out (it does not scale to this size). Target: under 2
minutes for all of them together.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from knuma.sim.comparison import compare
from knuma.sim.scenarios import BUILTIN
from knuma.sim.schedulers import PRODUCT
from knuma.sim.spec import Scenario, scenario_from_dict

__all__ = ["SimulateResult", "run", "scenario"]


@dataclass(frozen=True)
class SimulateResult:
    scheduler: str
    seconds: float
    cpu_seconds: float
    placed: int
    topology_affinity_errors: int
    pending: int
    pods_per_second: float
    """The scheduler's own throughput (wall time of its scheduling attempts only)."""


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
) -> list[SimulateResult]:
    chosen = scenario(nodes, pods, rate)
    results = []
    for name in schedulers:
        started, cpu = time.perf_counter(), time.process_time()
        metrics = compare(chosen, [name], seed).results[name]
        results.append(
            SimulateResult(
                name,
                time.perf_counter() - started,
                time.process_time() - cpu,
                metrics["placed"],
                metrics["topology_affinity_errors"],
                metrics["pending"],
                metrics["throughput_pods_per_s"],
            )
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--rate", type=float, default=100.0, help="pod arrivals per simulated second")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--schedulers", default=",".join(PRODUCT), help="comma-separated, default: all but optimal")
    args = parser.parse_args()
    names = [n.strip() for n in args.schedulers.split(",") if n.strip()]
    unknown = [n for n in names if n not in PRODUCT]
    if unknown:
        parser.error(f"unknown scheduler(s) {', '.join(unknown)}; expected some of: {', '.join(PRODUCT)}")
    results = run(args.nodes, args.pods, args.rate, args.seed, names)
    for r in results:
        print(
            f"{r.scheduler}: {r.seconds:.1f} s ({r.cpu_seconds:.1f} s CPU); placed {r.placed}, "
            f"TopologyAffinityError {r.topology_affinity_errors}, pending {r.pending}; {r.pods_per_second:.0f} pods/s"
        )
    total = sum(r.seconds for r in results)
    print(f"total: {total:.1f} s ({sum(r.cpu_seconds for r in results):.1f} s CPU)")


if __name__ == "__main__":
    main()
