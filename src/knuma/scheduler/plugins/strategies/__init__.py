"""Scoring strategies of NodeResourceTopologyMatch, one module each as scheduler-plugins has them (`score.go` here;
`most_allocated`, `least_allocated`, `balanced_allocation`, `least_numa_nodes`, and knuma's `knuma_bin_packing`),
with upstream's integer arithmetic.

Per-NUMA formulas read the zone's *available* amount, in whole units rounded up (Go `Quantity.Value()`), so 1500m
cpu counts as 2.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence

from knuma.errors import InvalidInput
from knuma.scheduler.plugins.strategies.balanced_allocation import balanced_allocation
from knuma.scheduler.plugins.strategies.knuma_bin_packing import bin_packing_score
from knuma.scheduler.plugins.strategies.least_allocated import least_allocated
from knuma.scheduler.plugins.strategies.least_numa_nodes import (
    least_numa_nodes_required,
    normalize_numa_count,
    suitable,
)
from knuma.scheduler.plugins.strategies.most_allocated import most_allocated
from knuma.scheduler.plugins.strategies.units import MAX_SCORE, whole_units

__all__ = [
    "DEFAULT_WEIGHTS",
    "MAX_SCORE",
    "ScoringStrategy",
    "StrategyType",
    "bin_packing_score",
    "least_numa_nodes_required",
    "node_score_from_numa",
    "normalize_numa_count",
    "numa_score",
    "suitable",
    "whole_units",
]


class StrategyType(enum.StrEnum):
    MOST_ALLOCATED = "MostAllocated"
    LEAST_ALLOCATED = "LeastAllocated"
    BALANCED_ALLOCATION = "BalancedAllocation"
    LEAST_NUMA_NODES = "LeastNUMANodes"
    KNUMA_BIN_PACKING = "KnumaBinPacking"
    """knuma's own (not upstream): the share of the node's NUMA-managed CPUs in use once the pod is where the kubelet
    model puts it, less a penalty for the zone remainders the recent mix of pod sizes is expected to strand
    (`bin_packing_score`). Packs exclusive CPUs onto fewer nodes, leaving whole nodes and zones for large pods;
    knuma's default."""

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


def numa_score(strategy: ScoringStrategy, requested: Mapping[str, int], available: Mapping[str, int]) -> int:
    """The score of one NUMA zone for a request (Most/Least/Balanced, one module each)."""
    req = {name: whole_units(name, amount) for name, amount in requested.items()}
    avail = {name: whole_units(name, available.get(name, 0)) for name in requested}
    if strategy.type is StrategyType.BALANCED_ALLOCATION:
        return balanced_allocation(req, avail)
    if strategy.type is StrategyType.MOST_ALLOCATED:
        return most_allocated(req, avail, strategy.weight)
    return least_allocated(req, avail, strategy.weight)


def node_score_from_numa(scores: Sequence[int]) -> int:
    """`scoreForEachNUMANode`: the smallest non-zero zone score (the kubelet may pick the worst zone), or 0."""
    non_zero = [s for s in scores if s]
    return min(non_zero) if non_zero else 0
