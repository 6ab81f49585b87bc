"""The offline optimum: the most pods of a static workload that can run at once, by CP-SAT (ortools).

Every pod is known in advance and arrival order does not matter, so this is an upper limit for any online scheduler.
With `Objective.CPUS` the model maximises the CPUs the placed pods request instead (then, among those placements,
the pods): in a cluster too small for its workload the most pods are placed by leaving the largest pods out, which
no scheduler that places every pod that fits when it comes can do; the CPUs placed measure packing, the part of the
gap a scheduler's placements decide.
Rules are the kubelet's for `single-numa-node` (and `restricted` where a container fits one zone on an empty node,
which makes the two policies coincide): the exclusive resources of each container (pod scope: of the pod) — whole
CPUs of Guaranteed pods, memory and hugepages of Guaranteed pods, devices of any pod — come from one NUMA zone; every
pod's effective request fits the node's allocatable. Init containers are not modelled (they run before the app and
release what they took), which only loosens the bound.

The model counts pods per (identical-pod group, node, zone assignment), so identical pods are not told apart and it
stays small for about 50 nodes; nodes of the same pool are ordered by CPU use to cut symmetry. A time limit bounds the
search; the result says whether optimality was proven and the best bound.
"""

from __future__ import annotations

import enum
import itertools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ortools.sat.python import cp_model

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import ContainerKind, Pod
from knuma.api.resources import CPU, PODS
from knuma.errors import InvalidInput
from knuma.testbed.simkubelet import SimKubelet
from knuma.topology.managers import exclusive_request

__all__ = ["Objective", "OptimalResult", "OptimalUnsupported", "solve"]

DEFAULT_TIME_LIMIT = 20.0
MILLI = 1000


class Objective(enum.StrEnum):
    PODS = "pods"
    """The most pods placed."""
    CPUS = "cpus"
    """The most CPUs requested by the placed pods, then the most pods."""


class OptimalUnsupported(InvalidInput):
    """The instance uses rules the CP-SAT model does not express (a container wider than one zone, `best-effort`)."""


@dataclass(frozen=True)
class OptimalResult:
    placed: int
    total: int
    bound: int
    """The best bound of the objective: pods (`Objective.PODS`) or milli-CPUs (`Objective.CPUS`)."""
    proven: bool
    seconds: float
    cpu_used: int
    """Milli-CPU requested by the placed pods."""
    placement: Mapping[str, Mapping[str, int]]
    """node -> group label -> pods placed there."""


@dataclass(frozen=True)
class _Group:
    label: str
    pod: Pod
    count: int


def solve(
    pods: Sequence[Pod],
    kubelets: Sequence[SimKubelet],
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    workers: int = 2,
    pools: Mapping[str, str] | None = None,
    hint: Sequence[SimKubelet] | None = None,
    objective: Objective = Objective.PODS,
) -> OptimalResult:
    """Place as many of `pods` as possible on the empty `kubelets` (as many CPUs with `Objective.CPUS`).

    `pools` maps node names to a pool name; nodes of the same pool must be identical (used for symmetry breaking).
    `hint`: the final state of an online run on the same nodes, as a starting solution (so the optimum found within
    the time limit is never below it).
    """
    started = time.perf_counter()
    groups = _groups(pods)
    model = cp_model.CpModel()
    placed_terms: list[Any] = []
    weights: list[int] = []
    """Per term of `placed_terms`: what one pod of it is worth to the objective."""
    per_cpu = len(pods) + 1  # Objective.CPUS: a milli-CPU outweighs every pod count
    per_group: dict[str, list[Any]] = {g.label: [] for g in groups}
    cpu_use: dict[str, Any] = {}
    counts: dict[tuple[str, str], list[Any]] = {}
    option_vars: dict[tuple[str, str, tuple[Any, ...]], Any] = {}
    for kubelet in kubelets:
        node = kubelet.name
        topology = kubelet.empty_topology
        zones = {z.id: z.allocatable for z in topology.zones}
        zone_load: dict[tuple[int, str], list[Any]] = {}
        node_load: dict[str, list[Any]] = {}
        for group in groups:
            options = _assignments(group.pod, kubelet)
            node_vars = []
            for index, assignment in enumerate(options):
                var = model.new_int_var(0, group.count, f"n[{group.label},{node},{index}]")
                node_vars.append(var)
                option_vars[group.label, node, _assignment_key(assignment)] = var
                for numa_id, request in assignment.items():
                    for name, amount in request.items():
                        zone_load.setdefault((numa_id, name), []).append(var * amount)
            if not node_vars:
                continue
            total = sum(node_vars)
            counts[group.label, node] = node_vars
            per_group[group.label].extend(node_vars)
            placed_terms.extend(node_vars)
            worth = 1 + (group.pod.effective_request.get(CPU, 0) * per_cpu if objective is Objective.CPUS else 0)
            weights.extend([worth] * len(node_vars))
            for name, amount in group.pod.effective_request.items():
                if amount:
                    node_load.setdefault(name, []).append(total * amount)
            node_load.setdefault(PODS, []).append(total)
        for (numa_id, name), terms in zone_load.items():
            capacity = zones[numa_id].get(name, 0)
            model.add(sum(terms) <= (capacity // MILLI if name == CPU else capacity))
        for name, terms in node_load.items():
            model.add(sum(terms) <= kubelet.allocatable.get(name, 0))
        cpu_terms = node_load.get(CPU, [])
        cpu_use[node] = sum(cpu_terms) if cpu_terms else 0
    for group in groups:
        if per_group[group.label]:
            model.add(sum(per_group[group.label]) <= group.count)
    if pools:
        by_pool: dict[str, list[str]] = {}
        for kubelet in kubelets:
            by_pool.setdefault(pools.get(kubelet.name, kubelet.name), []).append(kubelet.name)
        for members in by_pool.values():
            for a, b in itertools.pairwise(members):
                if not isinstance(cpu_use[a], int) and not isinstance(cpu_use[b], int):
                    model.add(cpu_use[a] >= cpu_use[b])
    if hint is not None:
        _add_hint(model, option_vars, groups, hint, pools or {})
    model.maximize(sum(w * v for w, v in zip(weights, placed_terms, strict=True)) if placed_terms else 0)
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = time_limit  # reproducible, unlike wall time
    # Wall time is only a backstop (a loaded machine): at least a second, so that loading the model and the hint never
    # runs out before the deterministic budget starts.
    solver.parameters.max_time_in_seconds = max(1.0, 3 * time_limit)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = 0
    status = solver.solve(model)
    seconds = time.perf_counter() - started
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return OptimalResult(0, len(pods), len(pods), False, seconds, 0, {})
    placement: dict[str, dict[str, int]] = {}
    cpu_used = placed = 0
    by_label = {g.label: g for g in groups}
    for (label, node), node_vars in counts.items():
        value = sum(int(solver.value(v)) for v in node_vars)
        if value:
            placement.setdefault(node, {})[label] = value
            cpu_used += value * by_label[label].pod.effective_request.get(CPU, 0)
            placed += value
    bound = int(solver.best_objective_bound + 1e-6)
    if objective is Objective.CPUS:
        bound //= per_cpu  # milli-CPUs: the pod count below one milli-CPU's worth
    return OptimalResult(placed, len(pods), bound, status == cp_model.OPTIMAL, seconds, cpu_used, placement)


def _group_key(pod: Pod) -> tuple[Any, ...]:
    return (
        pod.qos,
        tuple(sorted(pod.pod_requests.items())),
        tuple((c.kind, tuple(sorted(c.requests.items()))) for c in pod.all_containers),
        tuple(sorted(pod.overhead.items())),
    )


def _groups(pods: Sequence[Pod]) -> list[_Group]:
    found: dict[tuple[Any, ...], list[Pod]] = {}
    for pod in pods:
        found.setdefault(_group_key(pod), []).append(pod)
    return [_Group(f"g{index}", members[0], len(members)) for index, members in enumerate(found.values())]


def _assignment_key(assignment: Mapping[int, Mapping[str, int]]) -> tuple[Any, ...]:
    return tuple(sorted((numa_id, tuple(sorted(r.items()))) for numa_id, r in assignment.items() if r))


def _add_hint(
    model: cp_model.CpModel,
    option_vars: Mapping[tuple[str, str, tuple[Any, ...]], Any],
    groups: Sequence[_Group],
    kubelets: Sequence[SimKubelet],
    pools: Mapping[str, str],
) -> None:
    """Hint the solver with where an online run put its running pods. Identical nodes of a pool are renamed so that
    the hint respects the symmetry-breaking order (CPU use descending)."""
    label = {_group_key(g.pod): g.label for g in groups}
    per_node: dict[str, dict[tuple[str, tuple[Any, ...]], int]] = {}
    cpu: dict[str, int] = {}
    for kubelet in kubelets:
        counts = per_node.setdefault(kubelet.name, {})
        cpu[kubelet.name] = kubelet.requested.get(CPU, 0)
        for running in kubelet.running.values():
            group = label.get(_group_key(running.pod))
            if group is None:
                continue
            assignment: dict[int, dict[str, int]] = {}
            for placement in running.placements:
                if placement.kind is ContainerKind.INIT:
                    continue
                for name, per_numa in placement.allocated.items():
                    for numa_id, amount in per_numa.items():
                        if amount:
                            zone = assignment.setdefault(numa_id, {})
                            zone[name] = zone.get(name, 0) + (amount // MILLI if name == CPU else amount)
            key = (group, _assignment_key(assignment))
            counts[key] = counts.get(key, 0) + 1
    rename: dict[str, str] = {}
    by_pool: dict[str, list[str]] = {}
    for name in per_node:
        by_pool.setdefault(pools.get(name, name), []).append(name)
    for members in by_pool.values():
        for target, source in zip(members, sorted(members, key=lambda n: -cpu[n]), strict=True):
            rename[source] = target
    hinted: dict[Any, int] = {}
    for node, counts in per_node.items():
        for (group, key), count in counts.items():
            var = option_vars.get((group, rename[node], key))
            if var is not None:
                hinted[var.index] = count
    for var in option_vars.values():
        model.add_hint(var, hinted.get(var.index, 0))


def _assignments(pod: Pod, kubelet: SimKubelet) -> list[dict[int, dict[str, int]]]:
    """Every way to put the pod's exclusive resources on zones: NUMA id -> resources taken there."""
    topology = kubelet.empty_topology
    policy, scope = topology.config.policy, topology.config.scope
    if policy in (Policy.NONE, Policy.BEST_EFFORT):
        raise OptimalUnsupported(f"node {kubelet.name}: the {policy} policy is not modelled")
    if any(name not in kubelet.allocatable for name, amount in pod.effective_request.items() if amount):
        return []  # the node does not offer a resource the pod needs
    parts: list[dict[str, int]] = []
    if scope is Scope.POD:
        total: dict[str, int] = {}
        for container in pod.all_containers:
            if container.kind is ContainerKind.INIT:
                continue
            for name, amount in _exclusive(pod, container, kubelet).items():
                total[name] = total.get(name, 0) + amount
        parts = [total] if total else []
    else:
        parts = [
            request
            for container in pod.all_containers
            if container.kind is not ContainerKind.INIT and (request := _exclusive(pod, container, kubelet))
        ]
    zones = {z.id: z.allocatable for z in topology.zones}
    if not parts:
        return [{}]

    def fits_one(request: Mapping[str, int]) -> list[int]:
        return [
            numa_id
            for numa_id, allocatable in zones.items()
            if all(
                amount <= (allocatable.get(name, 0) // MILLI if name == CPU else allocatable.get(name, 0))
                for name, amount in request.items()
            )
        ]

    choices = []
    for request in parts:
        fitting = fits_one(request)
        if not fitting:
            widest = max(
                sum(z.get(n, 0) // (MILLI if n == CPU else 1) for z in zones.values()) >= a for n, a in request.items()
            )
            if policy is Policy.RESTRICTED and widest:
                raise OptimalUnsupported(f"a container of {pod.name} needs several NUMA zones under restricted")
            return []  # single-numa-node never admits it
        choices.append(fitting)
    out = []
    for combo in itertools.product(*choices):
        assignment: dict[int, dict[str, int]] = {}
        for numa_id, request in zip(combo, parts, strict=True):
            zone = assignment.setdefault(numa_id, {})
            for name, amount in request.items():
                zone[name] = zone.get(name, 0) + amount
        out.append(assignment)
    return out


def _exclusive(pod: Pod, container: Any, kubelet: SimKubelet) -> dict[str, int]:
    return exclusive_request(
        kubelet.topology, container.requests, pod.exclusive_cpus(container), pod.pinned_by_managers
    )
