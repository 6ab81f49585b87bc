"""`LeastNUMANodes` (scheduler-plugins `least_numa.go`, KEP 454): the fewest NUMA zones that together fit the
request, with a half-step bonus when a closest (minimum average distance) combination of that size fits. Zone ids
are real NUMA ids (upstream indexes some lists by position, issue #614)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np

from knuma.api.pod import QOSClass
from knuma.api.resources import is_numa_affine
from knuma.scheduler.plugins.strategies.units import MAX_SCORE
from knuma.topology.node import NodeTopology

__all__ = ["least_numa_nodes_required", "normalize_numa_count", "suitable"]

DISTANCE_UNKNOWN = 255


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
