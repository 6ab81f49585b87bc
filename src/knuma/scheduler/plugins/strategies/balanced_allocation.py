"""`BalancedAllocation` (scheduler-plugins `balanced_allocation.go`): `(1 - variance) * 100` of the per-resource
`request / available` fractions, with gonum's sample variance (n - 1); 0 when any fraction exceeds 1. No weights."""

from __future__ import annotations

from collections.abc import Mapping

from knuma.scheduler.plugins.strategies.units import MAX_SCORE

__all__ = ["balanced_allocation"]


def balanced_allocation(request: Mapping[str, int], available: Mapping[str, int]) -> int:
    """One zone's score; amounts in whole units (`units.whole_units`)."""
    fractions = [1.0 if available[name] == 0 else amount / available[name] for name, amount in request.items()]
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
