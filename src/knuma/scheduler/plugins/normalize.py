"""kube-scheduler's `helper.DefaultNormalizeScore`, shared by the plugins whose raw scores are counts."""

from __future__ import annotations

from collections.abc import Mapping

from knuma.scheduler.framework.interface import MAX_NODE_SCORE

__all__ = ["default_normalize_score"]


def default_normalize_score(
    scores: Mapping[str, int], *, reverse: bool, max_priority: int = MAX_NODE_SCORE
) -> dict[str, int]:
    """Scale to `max_priority * score // max(scores)`; `reverse` turns it into `max_priority - that`, so the node
    with the highest count scores 0. All zero: 0 everywhere, or `max_priority` everywhere when reversed."""
    highest = max((s for s in scores.values() if s > 0), default=0)
    if highest == 0:
        return {name: max_priority if reverse else score for name, score in scores.items()}
    out = {}
    for name, score in scores.items():
        product = max_priority * score
        scaled = product // highest if product >= 0 else -(-product // highest)  # Go truncates toward zero
        out[name] = max_priority - scaled if reverse else scaled
    return out
