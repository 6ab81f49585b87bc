"""TaintToleration (Filter + Score).

Filter: a node with a `NoSchedule` or `NoExecute` taint the pod does not tolerate is out; the message names the
first such taint, in the node's order. Score: the number of `PreferNoSchedule` taints the pod does not tolerate
(counting only its tolerations with that effect or with no effect), normalized and reversed, so the node with the
most such taints scores 0 and nodes without any score 100.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from knuma.api.pod import Pod
from knuma.api.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    Toleration,
    find_untolerated_taint,
    tolerations_of,
    tolerations_tolerate_taint,
)
from knuma.scheduler.framework.interface import SUCCESS, Code, CycleState, FastPathKind, NodeInfo, Status
from knuma.scheduler.plugins.normalize import default_normalize_score

__all__ = ["NAME", "TaintToleration"]

NAME = "TaintToleration"
_DO_NOT_SCHEDULE = frozenset({NO_SCHEDULE, NO_EXECUTE})


@dataclass(frozen=True, slots=True)
class _Tolerations:
    all: tuple[Toleration, ...]
    prefer_no_schedule: tuple[Toleration, ...]


def _tolerations(pod: Pod) -> _Tolerations:
    tolerations = tolerations_of(pod.spec)
    prefer = tuple(t for t in tolerations if t.effect in ("", PREFER_NO_SCHEDULE))
    return _Tolerations(tolerations, prefer)


class TaintToleration:
    name = NAME
    fast_path = FastPathKind.NODE_LOCAL

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        taints = node.taints
        if not taints:
            return SUCCESS
        tolerations = state.pod_data(NAME, pod, _tolerations).all
        taint = find_untolerated_taint(taints, tolerations, _DO_NOT_SCHEDULE)
        if taint is None:
            return SUCCESS
        return Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}", NAME
        )

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        """The raw count of intolerable `PreferNoSchedule` taints (see `normalize`)."""
        taints = node.taints
        if not taints:
            return 0
        prefer = state.pod_data(NAME, pod, _tolerations).prefer_no_schedule
        return sum(1 for t in taints if t.effect == PREFER_NO_SCHEDULE and not tolerations_tolerate_taint(prefer, t))

    def normalize(self, scores: Mapping[str, int]) -> dict[str, int]:
        return default_normalize_score(scores, reverse=True)
