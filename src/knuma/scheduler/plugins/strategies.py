"""Scoring strategies of NodeResourceTopologyMatch, with upstream's integer arithmetic (`score.go`,
`most_allocated.go`, `least_allocated.go`, `balanced_allocation.go`, `least_numa.go`).

Per-NUMA formulas read the zone's *available* amount, in whole units rounded up (Go `Quantity.Value()`), so 1500m
cpu counts as 2.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Mapping, Sequence

import numpy as np

from knuma.api.pod import QOSClass
from knuma.api.resources import CPU, is_numa_affine
from knuma.errors import InvalidInput
from knuma.scheduler.plugins.stranding import CPUDemand, stranding_penalty
from knuma.topology.node import NodeTopology

__all__ = [
    "ScoringStrategy",
    "StrategyType",
    "bin_packing_score",
    "least_numa_nodes_required",
    "numa_score",
    "whole_units",
]

MAX_SCORE = 100
DISTANCE_UNKNOWN = 255


class StrategyType(enum.StrEnum):
    MOST_ALLOCATED = "MostAllocated"
    LEAST_ALLOCATED = "LeastAllocated"
    BALANCED_ALLOCATION = "BalancedAllocation"
    LEAST_NUMA_NODES = "LeastNUMANodes"
    KNUMA_BIN_PACKING = "KnumaBinPacking"
    """knuma's own (not upstream): the share of the node's NUMA-managed CPUs in use once the pod is where the kubelet
    model puts it, less a penalty for zone remainders no recent pod size fills (`bin_packing_score`). Packs exclusive
    CPUs onto fewer nodes, leaving whole nodes and zones for large pods; knuma's default."""

    @classmethod
    def parse(cls, value: str) -> StrategyType:
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(s.value for s in cls)
            raise InvalidInput(
                f"scoringStrategy.type: Invalid value: {value!r}: invalid ScoringStrategyType; "
                f"expected one of: {choices}"
            ) from None


DEFAULT_WEIGHTS: Mapping[str, int] = {"cpu": 1, "memory": 1}


class ScoringStrategy:
    """`scoringStrategy` args: a type and resource weights (missing or < 1 means 1)."""

    def __init__(self, type: StrategyType = StrategyType.LEAST_ALLOCATED, weights: Mapping[str, int] | None = None):
        self.type = type
        self.weights = dict(weights or DEFAULT_WEIGHTS)

    def weight(self, name: str) -> int:
        weight = self.weights.get(name, 1)
        return weight if weight >= 1 else 1


def whole_units(name: str, amount: int) -> int:
    """Go `Quantity.Value()` of an amount in knuma's base unit (ceil for milli-CPU)."""
    return -(-amount // 1000) if name == CPU else amount


def numa_score(strategy: ScoringStrategy, requested: Mapping[str, int], available: Mapping[str, int]) -> int:
    """The score of one NUMA zone for a request (Most/Least/Balanced)."""
    req = {name: whole_units(name, amount) for name, amount in requested.items()}
    avail = {name: whole_units(name, available.get(name, 0)) for name in requested}
    if strategy.type is StrategyType.BALANCED_ALLOCATION:
        return _balanced(req, avail)
    total = weights = 0
    for name, amount in req.items():
        have = avail[name]
        if have == 0 or amount > have:
            score = 0
        elif strategy.type is StrategyType.MOST_ALLOCATED:
            score = amount * MAX_SCORE // have
        else:
            score = (have - amount) * MAX_SCORE // have
        weight = strategy.weight(name)
        total += score * weight
        weights += weight
    return total // weights if weights else 0


def bin_packing_score(before: NodeTopology, after: NodeTopology, demand: CPUDemand | None = None) -> int:
    """`KnumaBinPacking`: the share (0-100) of the node's NUMA-managed CPUs allocated once the pod is admitted (`after`
    is the kubelet model's node after admission), less `stranding_penalty` for the CPUs the placement leaves in its
    zones that no recent pod size can fill; 0 on a node whose zones report no CPU.

    Exclusive CPUs are what fragments a NUMA cluster: the CPU manager pins whole CPUs in one zone, so free CPUs spread
    thinly over many nodes cannot take a large pod. Best fit at the node level keeps empty nodes and zones for those,
    and the stranding term keeps zone remainders usable; the node-level NodeResourcesFit score still spreads the pods
    that hold no exclusive CPUs."""
    total = sum(zone.total(CPU) for zone in before.zones)
    if total <= 0:
        return 0
    free = sum(zone.available.get(CPU, 0) for zone in after.zones)
    packed = (total - free) * MAX_SCORE // total
    if demand is not None:
        packed -= stranding_penalty(before, after, demand)
    return max(0, min(MAX_SCORE, packed))


def _balanced(req: Mapping[str, int], avail: Mapping[str, int]) -> int:
    fractions = [1.0 if avail[name] == 0 else amount / avail[name] for name, amount in req.items()]
    if any(f > 1 for f in fractions):
        return 0
    n = len(fractions)
    if n < 2:
        return MAX_SCORE  # gonum's sample variance of one value is NaN; a single resource is perfectly balanced
    mean = sum(fractions) / n
    ss = sum((f - mean) ** 2 for f in fractions)
    compensation = sum(f - mean for f in fractions)
    variance = (ss - compensation * compensation / n) / (n - 1)
    return int((1 - variance) * MAX_SCORE)


def node_score_from_numa(scores: Sequence[int]) -> int:
    """`scoreForEachNUMANode`: the smallest non-zero zone score (the kubelet may pick the worst zone), or 0."""
    non_zero = [s for s in scores if s]
    return min(non_zero) if non_zero else 0


def suitable(qos: QOSClass, name: str, request: int, available: int) -> bool:
    return (qos is not QOSClass.GUARANTEED and is_numa_affine(name)) or available >= request


def least_numa_nodes_required(
    node: NodeTopology, available: Mapping[int, Mapping[str, int]], request: Mapping[str, int], qos: QOSClass
) -> tuple[tuple[int, ...], bool] | None:
    """`numaNodesRequired`: the fewest zones that together fit the request, and whether a closest (minimum average
    distance) combination of that size fits. Zone ids are real NUMA ids (upstream indexes by list position)."""
    ids = node.numa_ids
    for k in range(1, len(ids) + 1):
        combos = list(itertools.combinations(ids, k))
        distances = {combo: _average_distance(node, combo) for combo in combos}
        min_distance = min(distances.values())
        best: tuple[tuple[int, ...], float] | None = None
        for combo in combos:
            if not all(name in available[n] for n in combo for name in request):
                continue
            if not all(
                suitable(qos, name, amount, sum(available[n][name] for n in combo))
                for name, amount in request.items()
                if amount
            ):
                continue
            if distances[combo] == min_distance:
                return combo, True
            if best is None or distances[combo] < best[1]:
                best = (combo, distances[combo])
        if best is not None:
            return best[0], False
    return None


def _average_distance(node: NodeTopology, combo: Sequence[int]) -> float:
    total = sum(node.zone_by_id[a].distances.get(b, DISTANCE_UNKNOWN) for a in combo for b in combo)
    return float(np.float32(total) / np.float32(len(combo) * len(combo)))


def normalize_numa_count(count: int, is_min_distance: bool, max_numa_nodes: int) -> int:
    """`normalizeScore`: fewer zones score higher, with half a step of bonus for the closest combination."""
    step = MAX_SCORE // max_numa_nodes
    return MAX_SCORE - count * step + (step // 2 if is_min_distance else 0)
