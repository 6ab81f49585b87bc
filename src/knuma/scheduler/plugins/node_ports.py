"""NodePorts (PreFilter + Filter): a pod's host ports must be free on the node.

Host ports of app containers and sidecars count (`knuma.api.ports`); ports the pod's own containers repeat are not
checked against each other, as upstream.
"""

from __future__ import annotations

from knuma.api.pod import Pod
from knuma.api.ports import HostPort, conflicts, pod_host_ports
from knuma.scheduler.framework.interface import (
    SUCCESS,
    Code,
    CycleState,
    FastPathKind,
    NodeInfo,
    PreFilterResult,
    Status,
)

__all__ = ["ERR_REASON", "NAME", "NodePorts"]

NAME = "NodePorts"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"


def _wanted(pod: Pod) -> tuple[HostPort, ...]:
    return pod_host_ports(pod.spec)


class NodePorts:
    name = NAME
    fast_path = FastPathKind.NODE_LOCAL

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult:
        return PreFilterResult(skip=not state.pod_data(NAME, pod, _wanted))

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        if not node.used_ports:
            return SUCCESS
        for port in state.pod_data(NAME, pod, _wanted):
            if conflicts(node.used_ports, port):
                return Status(Code.UNSCHEDULABLE, ERR_REASON, NAME, f"{port.protocol} {port.ip}:{port.port} is taken")
        return SUCCESS
