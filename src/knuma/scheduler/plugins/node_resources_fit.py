"""NodeResourcesFit (Filter + Score), as kube-scheduler's default plugin of that name.

Filter: the pod's effective request must fit the node's allocatable minus what is requested. Node-level only: this is
what kube-scheduler checks, and all a topology-unaware scheduler knows.

Score: the profile's `scoringStrategy` (`NodeResourcesFitArgs`, `knuma.scheduler.plugins.node_resources_fit_args`;
kube-scheduler's default is `LeastAllocated` over cpu and memory, weight 1 each). As upstream, it reads the *non-zero*
requests for cpu and memory: a container that requests no cpu (memory) counts as 100m (200Mi), on the node and for
the pod, so that pods without requests still spread instead of piling on the first node. The filter skips the
extended resources the args ignore, and those a DeviceClass serves on a node whose allocatable has none of them
(KEP-5004: DynamicResources allocates them, `knuma.scheduler.plugins.dra_extended`), as 1.34's `fitsRequest`. A
scoring strategy that names such a resource scores it on such a node from the class's devices there, as upstream's
`calculateResourceAllocatableRequest` does with `DRAExtendedResource` (`DRADevices`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from knuma.api.pod import Pod
from knuma.api.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    ResourceList,
    add,
    is_dra_extended_resource_name,
)
from knuma.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    SUCCESS,
    Code,
    CycleState,
    FastPathKind,
    NodeInfo,
    Status,
)
from knuma.scheduler.plugins.dra_extended import ExtendedResourceMap
from knuma.scheduler.plugins.node_resources_fit_args import (
    DEFAULT_FIT_RESOURCES,
    LEAST_ALLOCATED,
    MAX_CUSTOM_PRIORITY_SCORE,
    MOST_ALLOCATED,
    FitStrategy,
    NodeResourcesFitArgs,
)

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "NAME",
    "SCORED_RESOURCES",
    "DRADevices",
    "NodeResourcesFit",
    "allocatable_and_requested",
    "dra_devices_on",
    "least_allocated",
    "non_zero_request",
    "strategy_score",
]

NAME = "NodeResourcesFit"

DEFAULT_MILLI_CPU_REQUEST = 100
"""`schedutil.DefaultMilliCPURequest`: what scoring counts for a container without a cpu request."""
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
"""`schedutil.DefaultMemoryRequest` (200 MiB)."""

SCORED_RESOURCES = DEFAULT_FIT_RESOURCES
"""kube-scheduler's default `NodeResourcesFitArgs.scoringStrategy.resources` (name, weight)."""

_DEFAULTS = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}


def non_zero_request(pod: Pod) -> dict[str, int]:
    """The pod's cpu and memory as scoring counts them (`PodRequests` with `NonMissingContainerRequests`): every
    container (init and sidecar included) that has no cpu (memory) request key counts the default, then the
    KEP-753 aggregation (of spec, allocation and actuation while a resize is pending, each container defaulted), the
    pod-level requests over it and the overhead, as for the effective request."""

    def defaulted(requests: ResourceList) -> ResourceList:
        missing = {name: amount for name, amount in _DEFAULTS.items() if name not in requests}
        return {**requests, **missing} if missing else requests

    total = add(pod.with_pod_level_requests(pod.aggregate_requests(defaulted)), pod.overhead)
    return {name: total.get(name, 0) for name in _DEFAULTS}


def least_allocated(allocatable: Mapping[str, int], requested: Mapping[str, int]) -> int:
    """`leastResourceScorer` over `SCORED_RESOURCES`: resources the node has none of are left out of the weights;
    `requested` already includes the pod."""
    return _weighted_mean(
        [allocatable.get(name, 0) for name, _ in SCORED_RESOURCES],
        [requested.get(name, 0) for name, _ in SCORED_RESOURCES],
        [weight for _, weight in SCORED_RESOURCES],
        _least_requested,
    )


class DRADevices(Protocol):
    """The DRA devices NodeResourcesFit scores an extended resource by (`DeviceState`)."""

    version: int
    """Changes whenever a device, class or allocation may have (the vectorised path re-scores its cached rows)."""

    def class_devices(self, node: str, labels: Mapping[str, str], class_name: str) -> tuple[int, int]:
        """The devices of the class on the node, and how many of them are allocated."""
        ...


class NodeResourcesFit:
    name = NAME
    fast_path = FastPathKind.NODE_RESOURCES

    def __init__(
        self,
        args: NodeResourcesFitArgs | None = None,
        extended: ExtendedResourceMap | None = None,
        devices: DRADevices | None = None,
    ) -> None:
        self.args = args or NodeResourcesFitArgs()
        self.extended = extended
        """The DeviceClasses' extended resources (the daemon's `DeviceState.extended`); None: no DRA."""
        self.devices = devices
        """The DRA devices (the daemon's `DeviceState`): a scoring strategy that names an extended resource a class
        serves counts the class's devices on a node whose allocatable has none. None: not counted."""
        self.default_scoring = self.args.strategy == FitStrategy()
        """kube-scheduler's default strategy: what the vectorised path computes in arrays."""

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
            and not self.args.ignores(name)
            and amount > node.allocatable.get(name, 0) - node.requested.get(name, 0)
            and not self.served_by_dra(name, node.allocatable)
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

    def served_by_dra(self, name: str, allocatable: Mapping[str, int]) -> bool:
        """A DeviceClass serves `name` and the node has none of it: DynamicResources allocates it there."""
        return self.extended is not None and not allocatable.get(name, 0) and self.extended.maps(name)

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        """The strategy over the node's allocatable and its (non-zero) requested plus the pod's."""
        on_node = node.non_zero_requested if node.non_zero_requested is not None else node.requested
        non_zero = state.pod_data(f"{NAME}/non-zero", pod, non_zero_request)  # once per cycle, not per node
        if self.default_scoring:
            return least_allocated(node.allocatable, add(_scored(on_node), non_zero))
        return strategy_score(
            self.args.strategy, pod, node, non_zero, dra_devices_on(node, self.extended, self.devices)
        )


def dra_devices_on(
    node: NodeInfo, extended: ExtendedResourceMap | None, devices: DRADevices | None
) -> Callable[[str], tuple[int, int]] | None:
    """`allocatable_and_requested`'s `dra` on `node`: the devices of the class that serves a resource (`DRADevices`),
    as `getDRAPreScoredParams` and `calculateDRAExtendedResourceAllocatableRequest` read them; None without DRA."""
    if not extended or devices is None:
        return None
    serving, counted = extended, devices

    def totals(name: str) -> tuple[int, int]:
        class_name = serving.class_for(name) if is_dra_extended_resource_name(name) else None
        return (0, 0) if class_name is None else counted.class_devices(node.name, node.labels, class_name)

    return totals


def strategy_score(
    strategy: FitStrategy,
    pod: Pod,
    node: NodeInfo,
    non_zero: Mapping[str, int] | None = None,
    dra: Callable[[str], tuple[int, int]] | None = None,
) -> int:
    """`resourceAllocationScorer.score` with the strategy's scorer (`leastResourceScorer`, `mostResourceScorer`,
    `requestedToCapacityRatioScorer`) over `allocatable_and_requested` with the non-zero requests for cpu and memory.
    `non_zero`: `non_zero_request(pod)`, when the caller has it."""
    non_zero = non_zero_request(pod) if non_zero is None else non_zero
    allocatable, requested = allocatable_and_requested(strategy.resources, pod, node, non_zero, dra)
    weights = [weight for _, weight in strategy.resources]
    if strategy.type == LEAST_ALLOCATED:
        return _weighted_mean(allocatable, requested, weights, _least_requested)
    if strategy.type == MOST_ALLOCATED:
        return _weighted_mean(allocatable, requested, weights, _most_requested)
    return _requested_to_capacity_ratio(strategy.shape, allocatable, requested, weights)


def allocatable_and_requested(
    resources: Sequence[tuple[str, int]],
    pod: Pod,
    node: NodeInfo,
    non_zero: Mapping[str, int] | None,
    dra: Callable[[str], tuple[int, int]] | None = None,
) -> tuple[list[int], list[int]]:
    """Per resource, the node's allocatable and requested plus the pod's as `calculateResourceAllocatableRequest`
    reads them (an extended or hugepages resource the pod does not request, or the node does not have, is (0, 0)).
    `non_zero`: the pod's non-zero cpu and memory requests, counted against the node's non-zero requested
    (NodeResourcesFit); None: the pod's and the node's actual requests (`useRequested`, BalancedAllocation). `dra`:
    resource -> (devices, allocated devices) of the DeviceClass that serves it on the node
    (`dra_devices_on`): where the node's allocatable has none of a resource the pod requests and the
    class has devices there, those are its allocatable and the allocated ones plus the pod's its requested
    (`DRAExtendedResource`, `calculateDRAExtendedResourceAllocatableRequest`)."""
    if non_zero is None:
        on_node: Mapping[str, int] = node.requested
    else:
        on_node = node.non_zero_requested if node.non_zero_requested is not None else node.requested
    allocatable: list[int] = []
    requested: list[int] = []
    for name, _ in resources:
        if non_zero is not None and name in (CPU, MEMORY):
            wanted = non_zero[name]
        else:
            wanted = pod.effective_request.get(name, 0)
        capacity = node.allocatable.get(name, 0)
        devices = (0, 0) if capacity or not wanted or dra is None or name in _NOT_SCALAR else dra(name)
        if name in (CPU, MEMORY):
            used = on_node.get(name, 0) + wanted
        elif devices[0] > 0:  # none in the allocatable: the class's devices on the node
            capacity, used = devices[0], devices[1] + wanted
        elif name == EPHEMERAL_STORAGE or (wanted and name in node.allocatable):
            used = node.requested.get(name, 0) + wanted
        else:
            capacity = used = 0  # not requested (a scalar resource), or not on the node
        allocatable.append(capacity)
        requested.append(used)
    return allocatable, requested


_NOT_SCALAR = frozenset({CPU, MEMORY, EPHEMERAL_STORAGE})


def _least_requested(requested: int, capacity: int) -> int:
    """`leastRequestedScore`."""
    return 0 if capacity == 0 or requested > capacity else (capacity - requested) * MAX_NODE_SCORE // capacity


def _most_requested(requested: int, capacity: int) -> int:
    """`mostRequestedScore`: a request above capacity (pods without requests count minimums) counts as full."""
    return 0 if capacity == 0 else min(requested, capacity) * MAX_NODE_SCORE // capacity


def _weighted_mean(
    allocatable: list[int], requested: list[int], weights: list[int], scorer: Callable[[int, int], int]
) -> int:
    """`leastResourceScorer` / `mostResourceScorer`: resources the node has none of are left out of the weights."""
    total = weight_sum = 0
    for capacity, used, weight in zip(allocatable, requested, weights, strict=True):
        if capacity == 0:
            continue
        total += scorer(used, capacity) * weight
        weight_sum += weight
    return total // weight_sum if weight_sum else 0


def _broken_linear(shape: tuple[tuple[int, int], ...], utilization: int) -> int:
    """`helper.BuildBrokenLinearFunction` on the shape scaled to node scores (`score * MaxNodeScore /
    MaxCustomPriorityScore`); Go's integer division truncates towards zero."""
    points = [(u, s * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for u, s in shape]
    for index, (u, s) in enumerate(points):
        if utilization <= u:
            if index == 0:
                return s
            u0, s0 = points[index - 1]
            step = (s - s0) * (utilization - u0)
            return s0 + int(step / (u - u0)) if step < 0 else s0 + step // (u - u0)
    return points[-1][1]


def _requested_to_capacity_ratio(
    shape: tuple[tuple[int, int], ...], allocatable: list[int], requested: list[int], weights: list[int]
) -> int:
    """`buildRequestedToCapacityRatioScorerFunction`: each resource's utilisation (100 when over capacity) through the
    shape; only resources scoring above 0 count, weighted; the mean rounded half away from zero (`math.Round`)."""
    total = weight_sum = 0
    for capacity, used, weight in zip(allocatable, requested, weights, strict=True):
        if capacity == 0:
            continue
        utilization = 100 if used > capacity else used * 100 // capacity
        score = _broken_linear(shape, utilization)
        if score > 0:
            total += score * weight
            weight_sum += weight
    return (2 * total + weight_sum) // (2 * weight_sum) if weight_sum else 0


def _scored(resources: Mapping[str, int]) -> dict[str, int]:
    return {name: resources.get(name, 0) for name, _ in SCORED_RESOURCES}
