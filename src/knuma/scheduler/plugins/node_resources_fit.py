"""NodeResourcesFit (Filter): the pod's effective request must fit the node's allocatable minus what is requested.

Node-level only: this is what kube-scheduler checks, and all a topology-unaware scheduler knows.
"""

from __future__ import annotations

from knuma.api.pod import Pod
from knuma.api.resources import PODS
from knuma.scheduler.framework import SUCCESS, Code, CycleState, NodeInfo, Status

NAME = "NodeResourcesFit"


class NodeResourcesFit:
    name = NAME

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        if not node.allocatable:
            return SUCCESS  # no Node object known: nothing to check at node level
        if PODS in node.allocatable and node.pod_count + 1 > node.allocatable[PODS]:
            return Status(Code.UNSCHEDULABLE, "Too many pods", NAME)
        short = [
            name
            for name, amount in sorted(pod.effective_request.items())
            if amount > 0
            and (node.has_node_object or name in node.allocatable)  # summed from NRT zones: only what they report
            and amount > node.allocatable.get(name, 0) - node.requested.get(name, 0)
        ]
        if short:
            # kube-scheduler reports the first insufficient resource as the reason.
            detail = ", ".join(
                f"{n}: requested {pod.effective_request[n]}, free "
                f"{node.allocatable.get(n, 0) - node.requested.get(n, 0)}"
                for n in short
            )
            return Status(Code.UNSCHEDULABLE, f"Insufficient {short[0]}", NAME, detail)
        return SUCCESS
