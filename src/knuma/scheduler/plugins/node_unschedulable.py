"""NodeUnschedulable (Filter): cordoned nodes (`spec.unschedulable`) take only pods that tolerate the
`node.kubernetes.io/unschedulable:NoSchedule` taint.

A node without a Node object (NRT data only, offline) counts as schedulable; kube-scheduler never sees such nodes.
"""

from __future__ import annotations

from knuma.api.pod import Pod
from knuma.api.taints import NO_SCHEDULE, TAINT_NODE_UNSCHEDULABLE, Taint, tolerations_of, tolerations_tolerate_taint
from knuma.scheduler.framework.interface import SUCCESS, Code, CycleState, FastPathKind, NodeInfo, Status

__all__ = ["ERR_REASON", "NAME", "NodeUnschedulable"]

NAME = "NodeUnschedulable"
ERR_REASON = "node(s) were unschedulable"
_UNSCHEDULABLE_TAINT = Taint(TAINT_NODE_UNSCHEDULABLE, "", NO_SCHEDULE)


def _tolerates_unschedulable(pod: Pod) -> bool:
    return tolerations_tolerate_taint(tolerations_of(pod.spec), _UNSCHEDULABLE_TAINT)


class NodeUnschedulable:
    name = NAME
    fast_path = FastPathKind.NODE_LOCAL

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        if not node.unschedulable or state.pod_data(NAME, pod, _tolerates_unschedulable):
            return SUCCESS
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON, NAME)
