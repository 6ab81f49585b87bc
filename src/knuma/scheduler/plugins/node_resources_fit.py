"""NodeResourcesFit (Filter + Score), as kube-scheduler's default plugin of that name.

Filter: the pod's effective request must fit the node's allocatable minus what is requested. Node-level only: this is
what kube-scheduler checks, and all a topology-unaware scheduler knows.

Score: kube-scheduler's default `scoringStrategy` (`LeastAllocated` over cpu and memory, weight 1 each). As upstream,
it reads the *non-zero* requests: a container that requests no cpu (memory) counts as 100m (200Mi), on the node and
for the pod, so that pods without requests still spread instead of piling on the first node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from knuma.api.pod import Container, Pod, long_running_request
from knuma.api.resources import CPU, MEMORY, PODS, add
from knuma.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    SUCCESS,
    Code,
    CycleState,
    FastPathKind,
    NodeInfo,
    Status,
)

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "NAME",
    "SCORED_RESOURCES",
    "NodeResourcesFit",
    "least_allocated",
    "non_zero_request",
]

NAME = "NodeResourcesFit"

DEFAULT_MILLI_CPU_REQUEST = 100
"""`schedutil.DefaultMilliCPURequest`: what scoring counts for a container without a cpu request."""
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
"""`schedutil.DefaultMemoryRequest` (200 MiB)."""

SCORED_RESOURCES: tuple[tuple[str, int], ...] = ((CPU, 1), (MEMORY, 1))
"""kube-scheduler's default `NodeResourcesFitArgs.scoringStrategy.resources` (name, weight)."""

_DEFAULTS = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}


def non_zero_request(pod: Pod) -> dict[str, int]:
    """The pod's cpu and memory as scoring counts them (`PodRequests` with `NonMissingContainerRequests`): every
    container (init and sidecar included) that has no cpu (memory) request key counts the default, then the
    KEP-753 aggregation, the pod-level requests over it and the overhead, as for the effective request."""

    def defaulted(container: Container) -> Container:
        missing = {name: amount for name, amount in _DEFAULTS.items() if name not in container.requests}
        return replace(container, requests={**container.requests, **missing}) if missing else container

    containers = long_running_request(
        [defaulted(c) for c in pod.init_containers], [defaulted(c) for c in pod.containers]
    )
    total = add(pod.with_pod_level_requests(containers), pod.overhead)
    return {name: total.get(name, 0) for name in _DEFAULTS}


def least_allocated(allocatable: Mapping[str, int], requested: Mapping[str, int]) -> int:
    """`leastResourceScorer` over `SCORED_RESOURCES`: resources the node has none of are left out of the weights;
    `requested` already includes the pod."""
    total = weights = 0
    for name, weight in SCORED_RESOURCES:
        capacity = allocatable.get(name, 0)
        if capacity == 0:
            continue
        used = requested.get(name, 0)
        total += ((capacity - used) * MAX_NODE_SCORE // capacity if used <= capacity else 0) * weight
        weights += weight
    return total // weights if weights else 0


class NodeResourcesFit:
    name = NAME
    fast_path = FastPathKind.NODE_RESOURCES

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

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        """LeastAllocated over the node's allocatable and its non-zero requested plus the pod's."""
        del state
        on_node = node.non_zero_requested if node.non_zero_requested is not None else node.requested
        return least_allocated(node.allocatable, add(_scored(on_node), non_zero_request(pod)))


def _scored(resources: Mapping[str, int]) -> dict[str, int]:
    return {name: resources.get(name, 0) for name, _ in SCORED_RESOURCES}
