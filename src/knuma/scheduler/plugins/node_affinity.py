"""NodeAffinity (PreFilter + Filter + Score): `nodeSelector`, required and preferred node affinity, and the
profile's `addedAffinity` (`NodeAffinityArgs`), with kube-scheduler's semantics (`knuma.api.nodeaffinity`).

PreFilter narrows the nodes to the names of `matchFields metadata.name In` terms (how DaemonSet pods pin their node);
the other nodes fail with `node(s) didn't satisfy plugin(s) [NodeAffinity]`, and terms that name no common node
fail the pod with `pod affinity terms conflict`. Score sums the weights of the matching preferred terms, normalized
so that the best node scores 100.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from knuma.api.nodeaffinity import (
    NodeSelector,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
    preferred_terms_of,
    required_node_names,
)
from knuma.api.pod import Pod
from knuma.scheduler.framework.interface import (
    SUCCESS,
    Code,
    CycleState,
    FastPathKind,
    NodeInfo,
    PreFilterResult,
    Status,
)
from knuma.scheduler.plugins.normalize import default_normalize_score

__all__ = ["ERR_REASON_CONFLICT", "ERR_REASON_ENFORCED", "ERR_REASON_POD", "NAME", "NodeAffinity"]

NAME = "NodeAffinity"
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"


@dataclass(frozen=True, slots=True)
class _PodAffinity:
    required: RequiredNodeAffinity
    preferred: PreferredSchedulingTerms
    has_required_affinity: bool


def _pod_affinity(pod: Pod) -> _PodAffinity:
    affinity = pod.spec.get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    has_required = isinstance(node_affinity, Mapping) and isinstance(
        node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"), Mapping
    )
    return _PodAffinity(RequiredNodeAffinity.from_pod_spec(pod.spec), preferred_terms_of(pod.spec), has_required)


class NodeAffinity:
    name = NAME
    fast_path = FastPathKind.NODE_LOCAL

    def __init__(
        self, added_required: NodeSelector | None = None, added_preferred: PreferredSchedulingTerms | None = None
    ) -> None:
        """`added_required` / `added_preferred`: the profile's `NodeAffinityArgs.addedAffinity`, applied to every
        pod of the profile on top of its own."""
        self.added_required = added_required
        self.added_preferred = added_preferred if added_preferred and added_preferred.terms else None

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult:
        found = state.pod_data(NAME, pod, _pod_affinity)
        if found.required.empty and self.added_required is None:
            return PreFilterResult(skip=True)
        if not found.has_required_affinity:
            return PreFilterResult()
        names = required_node_names(pod.spec)
        if names is None:
            return PreFilterResult()
        if not names:
            return PreFilterResult(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT, NAME))
        return PreFilterResult(node_names=names)

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        if self.added_required is not None and not self.added_required.matches(node.labels, node.name):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_ENFORCED, NAME)
        required = state.pod_data(NAME, pod, _pod_affinity).required
        if required.empty or required.matches(node.labels, node.name):
            return SUCCESS
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_POD, NAME)

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        """The raw sum of the weights of the matching preferred terms, the profile's and the pod's (see
        `normalize`)."""
        count = 0
        if self.added_preferred is not None:
            count += self.added_preferred.score(node.labels, node.name)
        preferred = state.pod_data(NAME, pod, _pod_affinity).preferred
        if preferred.terms:
            count += preferred.score(node.labels, node.name)
        return count

    def normalize(self, scores: Mapping[str, int]) -> dict[str, int]:
        return default_normalize_score(scores, reverse=False)
