"""NodeName (Filter): a pod that names a node in `spec.nodeName` fits only that node."""

from __future__ import annotations

from knuma.api.pod import Pod
from knuma.scheduler.framework.interface import SUCCESS, Code, CycleState, FastPathKind, NodeInfo, Status

__all__ = ["ERR_REASON", "NAME", "NodeName"]

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = NAME
    fast_path = FastPathKind.NODE_LOCAL

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        if not pod.node_name or pod.node_name == node.name:
            return SUCCESS
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON, NAME)
