"""One scheduling cycle's decision for the daemon: which node, or why none fits.

Pure: a profile, a pod and the cache's `NodeInfo`s in, an `Outcome` out. The failure message is kube-scheduler's
`FailedScheduling` text (`0/5 nodes are available: 3 cannot align container, 2 Insufficient cpu.`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from knuma.api.pod import Pod
from knuma.scheduler.framework.interface import NodeInfo, Profile, Status, schedule_one

__all__ = ["Outcome", "decide"]

NO_NODES = "0/0 nodes are available: no nodes available to schedule pods."


@dataclass(frozen=True)
class Outcome:
    node: str | None
    """The chosen node; the daemon's cache predicts the NUMA zones when it assumes the pod there."""
    message: str = ""
    """Why no node fits (empty when one does)."""
    statuses: Mapping[str, Status] | None = None
    """Each node's filter verdict when no node fits (what preemption picks its candidates from); None when the
    decision did not compute them."""

    @property
    def scheduled(self) -> bool:
        return self.node is not None


def decide(profile: Profile, pod: Pod, nodes: Sequence[NodeInfo]) -> Outcome:
    if not nodes:
        return Outcome(None, message=NO_NODES)
    result = schedule_one(profile, pod, nodes, explain=False)
    if result.selected is None:
        return Outcome(None, message=result.failure_summary(), statuses={r.name: r.filter for r in result.nodes})
    return Outcome(result.selected)
