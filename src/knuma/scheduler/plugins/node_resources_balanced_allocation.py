"""NodeResourcesBalancedAllocation (Score), as kube-scheduler's default plugin of that name (`balanced_allocation.go`):
nodes whose resources would be used in like proportions after the pod are preferred, so that a node does not run out
of memory with CPUs left idle (or the reverse).

Per resource of `NodeResourcesBalancedAllocationArgs.resources` (cpu and memory by default), the fraction of the
node's allocatable that its requests plus the pod's take (capped at 1; resources the node has none of are left out),
read as `resourceAllocationScorer` does with `useRequested`: the *actual* requests, not NodeResourcesFit's non-zero
defaults. The score is `(1 - std) * 100` truncated, where std is the fractions' standard deviation (`|f1 - f2| / 2`
for two, 0 for one: `balancedResourceScorer`), in float64 as Go computes it. A pod that requests none of the resources
scores 0 everywhere (upstream's PreScore returns Skip for it, so that best-effort pods do not all go to one node, issue
129138). A resource a DeviceClass serves on a node with none of it in its allocatable counts the class's devices there
(`DRAExtendedResource`), as NodeResourcesFit's strategies do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from knuma.api.pod import Pod
from knuma.scheduler.framework.interface import MAX_NODE_SCORE, CycleState, FastPathKind, NodeInfo
from knuma.scheduler.plugins.dra_extended import ExtendedResourceMap
from knuma.scheduler.plugins.node_resources_balanced_allocation_args import (
    NODE_RESOURCES_BALANCED_ALLOCATION,
    NodeResourcesBalancedAllocationArgs,
)
from knuma.scheduler.plugins.node_resources_fit import DRADevices, allocatable_and_requested, dra_devices_on

__all__ = ["NAME", "NodeResourcesBalancedAllocation", "balanced_score"]

NAME = NODE_RESOURCES_BALANCED_ALLOCATION


class NodeResourcesBalancedAllocation:
    name = NAME
    fast_path = FastPathKind.NODE_BALANCE

    def __init__(
        self,
        args: NodeResourcesBalancedAllocationArgs | None = None,
        extended: ExtendedResourceMap | None = None,
        devices: DRADevices | None = None,
    ) -> None:
        self.args = args or NodeResourcesBalancedAllocationArgs()
        self.extended = extended
        """The DeviceClasses' extended resources (the daemon's `DeviceState.extended`); None: no DRA."""
        self.devices = devices
        """The DRA devices (the daemon's `DeviceState`), for a resource a class serves; None: not counted."""

    def requests(self, pod: Pod) -> tuple[int, ...]:
        """`calculatePodResourceRequestList` with `useRequested`: the pod's requests for the args' resources."""
        return tuple(pod.effective_request.get(name, 0) for name, _ in self.args.resources)

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        if not any(state.pod_data(NAME, pod, self.requests)):
            return 0  # `isBestEffortPod`: PreScore skips the plugin for this pod
        allocatable, requested = allocatable_and_requested(
            self.args.resources, pod, node, None, dra_devices_on(node, self.extended, self.devices)
        )
        return balanced_score(requested, allocatable)


def balanced_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """`balancedResourceScorer`: `(1 - std) * MaxNodeScore` of the used fractions, in float64 as Go computes it."""
    fractions = [
        min(float(used) / float(capacity), 1.0)
        for used, capacity in zip(requested, allocatable, strict=True)
        if capacity
    ]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return int((1 - std) * float(MAX_NODE_SCORE))
