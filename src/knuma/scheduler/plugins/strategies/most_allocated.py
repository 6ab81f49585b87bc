"""`MostAllocated` (scheduler-plugins `most_allocated.go`): per resource `request * 100 / available` (0 when the zone
has none or too little), weighted mean in integers. It prefers the zone with the least room left."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from knuma.scheduler.plugins.strategies.units import MAX_SCORE

__all__ = ["most_allocated"]


def most_allocated(request: Mapping[str, int], available: Mapping[str, int], weight: Callable[[str], int]) -> int:
    """One zone's score; amounts in whole units (`units.whole_units`)."""
    total = weights = 0
    for name, amount in request.items():
        have = available[name]
        score = 0 if have == 0 or amount > have else amount * MAX_SCORE // have
        total += score * weight(name)
        weights += weight(name)
    return total // weights if weights else 0
