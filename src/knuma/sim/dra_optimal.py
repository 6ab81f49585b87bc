"""The CP-SAT optimum of scenario `dra`: the most pods whose devices, CPUs and memory each fit on one NUMA node.

Pods of one template are interchangeable, and so are the NUMA nodes of identical machines, so the model counts:
one integer per (template, node, NUMA node), the pods of that template placed there. Per NUMA node the pods may not
use more CPUs, memory, GPUs or NICs than it has, and pods asking for a GPU and a NIC on one PCIe root take a whole
root: with `r` roots of one GPU and one NIC each, `p` such pods plus `g` other GPUs and `n` other NICs fit exactly
when `p + g <= r` and `p + n <= r` (the paired pods take `p` roots, the others fill the remaining devices). Nodes are
ordered by the pods they hold (symmetry breaking). Every pod is known in advance, so this is an upper bound on what
any scheduler could place, not a scheduler; which pods of a template are placed is then arbitrary (arrival order).
"""

from __future__ import annotations

import itertools

from ortools.sat.python import cp_model

from knuma.api.resources import CPU, MEMORY
from knuma.sim.dra import GPU, NIC, DraRun, DraScenario, pods_of
from knuma.testbed.dra import devices_of
from knuma.testbed.shapes import BUILTIN_SHAPES

__all__ = ["optimal_dra"]

TIME_LIMIT = 10.0


def optimal_dra(scenario: DraScenario, seed: int = 0) -> DraRun:
    shape = BUILTIN_SHAPES[scenario.shape]
    arrivals = pods_of(scenario, seed)
    templates = list(dict.fromkeys(t for _, t, _ in arrivals))
    wanted = {t: sum(1 for _, u, _ in arrivals if u == t) for t in templates}
    devices = devices_of(shape)
    model = cp_model.CpModel()
    count: dict[tuple[int, int, int], cp_model.IntVar] = {}
    for i, t in enumerate(templates):
        for n in range(scenario.nodes):
            for z in range(shape.zones):
                count[i, n, z] = model.new_int_var(0, wanted[t], f"c{i}_{n}_{z}")
        model.add(sum(count[i, n, z] for n in range(scenario.nodes) for z in range(shape.zones)) <= wanted[t])
    for n in range(scenario.nodes):
        for z in range(shape.zones):
            allocatable = shape.zone_allocatable(z)
            gpus = sum(1 for d in devices if d.numa == z and d.driver == GPU)
            nics = sum(1 for d in devices if d.numa == z and d.driver == NIC)
            roots = len({d.pcie_root for d in devices if d.numa == z})
            here = [(count[i, n, z], t) for i, t in enumerate(templates)]
            model.add(sum(x * t.cpus * 1000 for x, t in here) <= allocatable[CPU])
            model.add(sum(x * t.memory_gi for x, t in here) <= allocatable[MEMORY] // 1024**3)
            paired = sum(x for x, t in here if t.same_root)
            model.add(paired + sum(x * t.gpus for x, t in here if not t.same_root) <= min(gpus, roots))
            model.add(paired + sum(x * t.nics for x, t in here if not t.same_root) <= min(nics, roots))
    totals = [
        sum(count[i, n, z] for i in range(len(templates)) for z in range(shape.zones)) for n in range(scenario.nodes)
    ]
    for a, b in itertools.pairwise(totals):
        model.add(a >= b)
    model.maximize(sum(count.values()))
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = TIME_LIMIT
    solver.parameters.num_workers = 2
    solver.parameters.random_seed = 0
    status = solver.solve(model)
    run = DraRun("optimal")
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        run.pending = len(arrivals)
        run.optimal_proven = False
        return run
    slots = {
        t: [
            (n, z)
            for n in range(scenario.nodes)
            for z in range(shape.zones)
            for _ in range(solver.value(count[i, n, z]))
        ]
        for i, t in enumerate(templates)
    }
    for pod, template, _ in arrivals:
        if slots[template]:
            n, z = slots[template].pop(0)
            run.placed += 1
            run.placements[pod.name] = (f"dgx-{n:03d}", (f"NUMA {z}",))
        else:
            run.pending += 1
    run.optimal_proven = status == cp_model.OPTIMAL
    return run
