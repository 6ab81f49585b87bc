"""What a PostFilter plugin answers when no node fits a pod: kube-scheduler's `PostFilterResult` (the node to
nominate) with preemption's `Candidate` (the node and the pods to evict there)."""

from __future__ import annotations

from dataclasses import dataclass

from knuma.api.pod import Pod

__all__ = ["Candidate", "Preemption"]


@dataclass(frozen=True)
class Candidate:
    node: str
    victims: tuple[Pod, ...]
    """Most important first."""
    pdb_violations: int = 0

    @property
    def to_evict(self) -> tuple[Pod, ...]:
        """The victims to delete: those not being deleted already (`prepareCandidate` makes no second call)."""
        return tuple(v for v in self.victims if not v.terminating)


@dataclass(frozen=True)
class Preemption:
    """PostFilter's answer."""

    candidate: Candidate | None = None
    """Where to nominate the pod and whom to evict; None: preemption does not help (now)."""
    message: str = ""
    """`preemption: ...`, appended to the `FailedScheduling` message when there is no candidate."""
    clear_nomination: bool = False
    """No node would fit even with preemption: the pod's `status.nominatedNodeName` is cleared (upstream's
    `NewPostFilterResultWithNominatedNode("")`); False with no candidate keeps it (the pod waits for its victims)."""
