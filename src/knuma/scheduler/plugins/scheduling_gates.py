"""SchedulingGates (PreEnqueue): a pod with `spec.schedulingGates` waits outside the active queue until every gate
is removed."""

from __future__ import annotations

from collections.abc import Mapping

from knuma.api.pod import Pod
from knuma.scheduler.framework.interface import SUCCESS, Code, Status

__all__ = ["NAME", "SchedulingGates"]

NAME = "SchedulingGates"


class SchedulingGates:
    name = NAME

    def pre_enqueue(self, pod: Pod) -> Status:
        gates = [str(g.get("name", "")) for g in pod.spec.get("schedulingGates") or () if isinstance(g, Mapping)]
        if not gates:
            return SUCCESS
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"waiting for scheduling gates: [{' '.join(gates)}]", NAME)
