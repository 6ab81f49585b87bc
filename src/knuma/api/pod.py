"""The parts of a core/v1 Pod that scheduling and kubelet admission read.

`Pod.from_manifest` applies the API server's defaulting that matters here (a container limit without a request sets
the request; pod-level requests and hugepages limits, `default_pod_resources`), classifies containers (init,
sidecar = init with `restartPolicy: Always`, app) and computes the QoS class by the Kubernetes rules.

Pod-level resources (`spec.resources`, PodLevelResources, beta and on by default in 1.34): the pod's QoS class comes
from them (`ComputePodQOS`), its request for CPU, memory and hugepages is theirs where they name one
(`resourcehelper.PodRequests`), and the static CPU and memory managers leave such a pod alone: no hints, no exclusive
CPUs, no pinned memory (`staticPolicy.GetTopologyHints` / `Allocate` in both managers return early when
`IsPodLevelResourcesSet`), so it is never NUMA-aligned nor rejected for alignment (`Pod.pinned_by_managers`).

In-place resize (KEP-1287, on by default since 1.33, GA in 1.35): a running pod's container requests can change in
its spec before the kubelet accepts them. The kubelet reports what it allocated (`allocatedResources`) and what the
runtime applies (`resources`) in the container statuses, and marks a resize it will not make `PodResizePending` /
`Infeasible` (a Guaranteed pod's CPUs under the static CPU manager, its memory under the static memory manager).
The scheduler counts the largest of spec, allocated and actuated (`Pod.aggregate_requests`, the spec left out when
infeasible); the kubelet's admission sees the allocation (`Pod.as_allocated`).
"""

from __future__ import annotations

import difflib
import enum
import json
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from knuma.api.podaffinity import PodAffinityTerms, pod_affinity_terms
from knuma.api.podresource_validation import is_supported_pod_level_resource
from knuma.api.podvalidation import FieldError, container_name_errors, init_restart_policy_errors
from knuma.api.resources import CPU, MEMORY, ResourceList, add, is_hugepages, parse_resource_list
from knuma.errors import InvalidInput

__all__ = [
    "DRA_NUMA_ANNOTATION",
    "Container",
    "ContainerKind",
    "InvalidPodError",
    "Pod",
    "PodError",
    "QOSClass",
    "default_pod_resources",
    "is_pod_ready",
    "long_running_request",
    "without_requests",
]

DRA_NUMA_ANNOTATION = "scheduling.knuma.io/dra-numa"
"""Written by knuma's scheduler before binding a pod with ResourceClaims: container -> {`driver/pool/device`: NUMA
node} (JSON), so every later prediction of the kubelet's decision (the scheduler's cache, after a restart too) aligns
the pod's CPUs with its devices, as the Topology Manager will."""


class PodError(InvalidInput):
    """A pod manifest that cannot be scheduled as written."""


class InvalidPodError(PodError):
    """A pod kube-apiserver would refuse (422 Invalid): scheduling it would judge it with the wrong container's
    verdict, so knuma refuses it as invalid instead."""

    def __init__(self, where: str, errors: list[FieldError]) -> None:
        listed = "; ".join(str(e) for e in errors)
        hints = []
        if any(e.field.endswith(".name") for e in errors):
            hints.append("container names must be unique across initContainers and containers")
        if any(e.field.endswith(".restartPolicy") for e in errors):
            hints.append("an init container's restartPolicy is Always (a sidecar) or not set")
        super().__init__(f"{where} is invalid: {listed} ({'; '.join(hints)})")
        self.errors = errors


class ContainerKind(enum.Enum):
    INIT = "init"
    SIDECAR = "sidecar"
    APP = "app"


class QOSClass(enum.StrEnum):
    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    kind: ContainerKind
    requests: ResourceList
    limits: ResourceList

    @property
    def is_init(self) -> bool:
        """Init and sidecar containers are both declared under `initContainers`."""
        return self.kind is not ContainerKind.APP


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    init_containers: tuple[Container, ...]
    containers: tuple[Container, ...]
    overhead: ResourceList = field(default_factory=dict)
    uid: str = ""
    priority: int = 0
    scheduler_name: str = "default-scheduler"
    node_name: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    spec: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The raw spec, for plugins that read fields this model does not name (affinity, tolerations, ports)."""
    dra_devices: Mapping[str, Mapping[str, int | None]] = field(default_factory=dict, repr=False, compare=False)
    """The NUMA nodes of the DRA devices allocated to each container (`DRA_NUMA_ANNOTATION`); what
    `knuma.topology.admit` aligns the container's CPUs and memory with."""
    dra_backed: frozenset[tuple[str, str]] = field(default=frozenset(), repr=False, compare=False)
    """(container, extended resource) pairs DRA backs: the request mappings of the pod's extended resource claim
    (`status.extendedResourceClaimStatus.requestMappings`, KEP-5004), which the kubelet's admission leaves out
    (`removeMissingExtendedResources`' `isResourceBackedByDRA`; `knuma.topology.kubelet.kubelet_view`)."""
    terminating: bool = field(default=False, compare=False)
    """`metadata.deletionTimestamp` is set: the pod is being deleted (PodTopologySpread no longer counts it)."""
    preempted: bool = field(default=False, compare=False)
    """Its first `DisruptionTarget` condition is `True` with reason `PreemptionByScheduler`: a scheduler's
    preemption chose it as a victim (with `terminating`, upstream's `podTerminatingByPreemption`)."""
    start_time: str = field(default="", compare=False)
    """`status.startTime` (RFC 3339, UTC), empty until the kubelet admits the pod: which of two pods of equal
    priority preemption spares first (the one running longer)."""
    pod_requests: ResourceList = field(default_factory=dict)
    """Pod-level requests (`spec.resources.requests`, defaulted as `defaultPodRequests` does)."""
    pod_limits: ResourceList = field(default_factory=dict)
    """Pod-level limits (`spec.resources.limits`)."""
    has_pod_resources: bool = False
    """`spec.resources` is there (even empty): the QoS class is then computed from it alone."""
    allocated: Mapping[str, ResourceList] = field(default_factory=dict)
    """Container name -> the requests the kubelet allocated it (`status.containerStatuses[].allocatedResources`, and
    of init containers): what the node holds for it while a resize of its spec is pending."""
    actuated: Mapping[str, ResourceList] = field(default_factory=dict)
    """Container name -> the requests the runtime applies (`status.containerStatuses[].resources.requests`)."""
    resize_infeasible: bool = False
    """`PodResizePending` with reason `Infeasible` (`IsPodResizeInfeasible`): the kubelet will not make the resize,
    so the spec's requests count for nothing until the spec is changed back."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def all_containers(self) -> tuple[Container, ...]:
        """Init and sidecar containers in order, then app containers: the kubelet's admission order."""
        return self.init_containers + self.containers

    @cached_property
    def qos(self) -> QOSClass:
        """`ComputePodQOS`: from `spec.resources` when the pod has it, else from its containers."""
        if self.has_pod_resources:
            return _qos_class([Container("", ContainerKind.APP, self.pod_requests, self.pod_limits)])
        return _qos_class(self.all_containers)

    @property
    def is_guaranteed(self) -> bool:
        return self.qos is QOSClass.GUARANTEED

    @cached_property
    def pod_level_resources(self) -> bool:
        """`IsPodLevelResourcesSet`: pod-level requests or limits name CPU, memory or hugepages."""
        return any(is_supported_pod_level_resource(name) for name in (*self.pod_requests, *self.pod_limits))

    @property
    def pinned_by_managers(self) -> bool:
        """Whether the static CPU and memory managers act on this pod: Guaranteed and without pod-level resources
        (1.34's managers skip pods with them: no hints, no exclusive CPUs or memory). Devices are aligned for any
        pod."""
        return self.is_guaranteed and not self.pod_level_resources

    def exclusive_cpus(self, container: Container) -> int:
        """CPUs the static CPU manager pins for `container` (kubelet `guaranteedCPUs`): integral CPU of a
        Guaranteed pod without pod-level resources, else 0."""
        if not self.pinned_by_managers:
            return 0
        milli = container.requests.get(CPU, 0)
        return milli // 1000 if milli % 1000 == 0 else 0

    @cached_property
    def effective_request(self) -> dict[str, int]:
        """What the scheduler reserves for the pod (`resourcehelper.PodRequests` with `UseStatusResources`): the
        larger of init and long-running needs (of spec, allocation and actuation, `aggregate_requests`), the
        pod-level request instead for CPU, memory and hugepages it names, plus overhead."""
        return add(self.with_pod_level_requests(self.aggregate_requests()), self.overhead)

    @cached_property
    def resize_state(self) -> tuple[Any, ...]:
        """What of the kubelet's report can make the pod count more than its spec, as a hashable: an infeasible resize
        (the spec then counts for nothing) with every container's report, or else each container reporting an
        allocated or applied amount above its spec's. Empty for a pod whose reports stay within its spec (what a 1.33+
        kubelet reports for nearly every pod): the largest of the three is then the spec's, counted alone."""

        def reported(source: Mapping[str, ResourceList], c: Container) -> tuple[tuple[str, int], ...] | None:
            requests = source.get(c.name)
            if requests is None:
                return None
            if self.resize_infeasible or any(amount > c.requests.get(name, 0) for name, amount in requests.items()):
                return tuple(sorted(requests.items()))
            return None

        differs = []
        for c in self.all_containers:
            allocated, actuated = reported(self.allocated, c), reported(self.actuated, c)
            if allocated is not None or actuated is not None:
                differs.append((c.name, allocated, actuated))
        return (self.resize_infeasible, tuple(differs)) if self.resize_infeasible or differs else ()

    @property
    def resizing(self) -> bool:
        """The kubelet holds or applies more than the spec asks, or refused a resize (`resize_state`)."""
        return bool(self.resize_state)

    def aggregate_requests(self, adjust: Callable[[ResourceList], ResourceList] | None = None) -> dict[str, int]:
        """`AggregateContainerRequests` with `UseStatusResources` (kube-scheduler's `PodInfo` and NodeResourcesFit
        set it while InPlacePodVerticalScaling is on): the KEP-753 aggregate (`long_running_request`) of the spec's
        requests, of the allocated ones (`containerAllocatedRequests`) and of the actuated ones
        (`containerActuatedRequests`), the largest of the three per resource, the spec's left out when the resize is
        infeasible. `adjust` rewrites each container's list first (`NonMissingContainerRequests`)."""

        def aggregate(requests_of: Callable[[Container], ResourceList]) -> dict[str, int]:
            def rewritten(containers: tuple[Container, ...]) -> list[Container]:
                return [replace(c, requests=adjust(requests_of(c)) if adjust else requests_of(c)) for c in containers]

            return long_running_request(rewritten(self.init_containers), rewritten(self.containers))

        if not self.resizing:
            if adjust is None:
                return long_running_request(self.init_containers, self.containers)
            return aggregate(lambda c: c.requests)
        infeasible = self.resize_infeasible

        def allocated(c: Container) -> ResourceList:
            if c.name in self.allocated:
                return self.allocated[c.name]
            return {} if infeasible else c.requests

        def actuated(c: Container) -> ResourceList:
            return self.actuated[c.name] if c.name in self.actuated else allocated(c)

        totals = [aggregate(actuated), aggregate(allocated)]
        if not infeasible:
            totals.append(aggregate(lambda c: c.requests))
        out: dict[str, int] = {}
        for total in totals:
            for name, amount in total.items():
                out[name] = max(out.get(name, amount), amount)
        return out

    @cached_property
    def as_allocated(self) -> Pod:
        """The pod as its kubelet admits and runs it (`UpdatePodFromAllocation`): each container's requests the
        ones it was allocated, and no resize left to count; the pod itself when no allocation differs from its spec.
        The status reports requests only; a resize never changes the QoS class (`ValidatePodResize`), so a
        Guaranteed pod's cpu and memory limits are its allocated requests and the class stays the pod's."""
        if not self.allocated:
            return self
        guaranteed = self.is_guaranteed

        def allocated(containers: tuple[Container, ...]) -> tuple[Container, ...]:
            out = []
            for c in containers:
                requests = self.allocated.get(c.name)
                if requests is not None and requests != c.requests:
                    limits = dict(c.limits)
                    if guaranteed:
                        limits.update((name, requests[name]) for name in (CPU, MEMORY) if name in requests)
                    c = replace(c, requests=dict(requests), limits=limits)
                out.append(c)
            return tuple(out)

        init, apps = allocated(self.init_containers), allocated(self.containers)
        if init == self.init_containers and apps == self.containers:
            return self
        view = replace(self, init_containers=init, containers=apps, allocated={}, actuated={}, resize_infeasible=False)
        view.__dict__["qos"] = self.qos  # a cached property, pinned: the class is the pod's, whatever the status says
        return view

    def with_pod_level_requests(self, containers: Mapping[str, int]) -> dict[str, int]:
        """`PodRequests`' second step: the containers' aggregate request with the pod-level request instead for
        each CPU, memory or hugepages amount the pod states (`IsPodLevelRequestsSet`)."""
        return {
            **containers,
            **{name: amount for name, amount in self.pod_requests.items() if is_supported_pod_level_resource(name)},
        }

    @cached_property
    def admission_key(self) -> Hashable:
        """What the kubelet's admission reads of the pod (QoS, each container's name, kind and allocated requests,
        the NUMA nodes of its DRA devices), as a hashable: pods with equal keys are admitted alike on equal nodes."""
        allocated = self.as_allocated
        containers = tuple((c.name, c.kind, tuple(sorted(c.requests.items()))) for c in allocated.all_containers)
        devices = tuple(sorted((name, tuple(sorted(d.items()))) for name, d in self.dra_devices.items()))
        return (self.qos, self.pinned_by_managers, containers, devices, tuple(sorted(self.dra_backed)))

    @cached_property
    def affinity_terms(self) -> PodAffinityTerms:
        """The pod's processed pod affinity and anti-affinity terms (kube-scheduler's `PodInfo`), read once."""
        return pod_affinity_terms(self.namespace, self.labels, self.spec)

    @cached_property
    def requested_names(self) -> frozenset[str]:
        return frozenset(name for c in self.all_containers for name, amount in c.requests.items() if amount)

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> Pod:
        """Build from a core/v1 Pod (as a dict); raise `PodError` saying what is wrong."""
        if not isinstance(manifest, Mapping):
            raise PodError("a Pod must be a mapping with metadata and spec")
        kind = manifest.get("kind", "Pod")
        if kind != "Pod":
            raise PodError(f"expected kind Pod, got {kind!r}")
        metadata = manifest.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise PodError("a Pod's metadata must be a mapping with name and namespace")
        name = metadata.get("name") or metadata.get("generateName") or ""
        namespace = metadata.get("namespace") or "default"
        if not isinstance(name, str) or not isinstance(namespace, str):
            raise PodError("a Pod's metadata.name and metadata.namespace must be strings")
        where = f"pod {namespace}/{name or '<unnamed>'}"
        spec = manifest.get("spec")
        if not isinstance(spec, Mapping):
            raise PodError(f"{where}: missing spec")
        raw_containers = _containers(spec.get("containers"), f"{where}: spec.containers")
        if not raw_containers:
            raise PodError(f"{where}: spec.containers is empty; a pod needs at least one container{_misspelt(spec)}")
        invalid = container_name_errors(spec) + init_restart_policy_errors(spec)
        if invalid:
            raise InvalidPodError(where, invalid)
        init = tuple(
            _container(c, where, init=True)
            for c in _containers(spec.get("initContainers"), f"{where}: spec.initContainers")
        )
        apps = tuple(_container(c, where, init=False) for c in raw_containers)
        overhead = _resource_list(spec.get("overhead"), f"{where}: spec.overhead")
        pod_resources = spec.get("resources")
        if pod_resources is not None and not isinstance(pod_resources, Mapping):
            raise PodError(f"{where}: spec.resources must be a mapping with requests and limits")
        pod_requests = _resource_list((pod_resources or {}).get("requests"), f"{where}: spec.resources.requests")
        pod_limits = _resource_list((pod_resources or {}).get("limits"), f"{where}: spec.resources.limits")
        if pod_resources is not None:
            pod_requests, pod_limits = default_pod_resources(pod_requests, pod_limits, init, apps)
        try:
            priority = int(spec.get("priority") or 0)
        except (TypeError, ValueError, OverflowError):
            raise PodError(f"{where}: spec.priority must be an integer") from None
        for key in ("schedulerName", "nodeName"):
            if not isinstance(spec.get(key) or "", str):
                raise PodError(f"{where}: spec.{key} must be a string")
        return cls(
            namespace=namespace,
            name=name,
            init_containers=init,
            containers=apps,
            overhead=overhead,
            uid=str(metadata.get("uid") or ""),
            priority=priority,
            scheduler_name=spec.get("schedulerName") or "default-scheduler",
            node_name=spec.get("nodeName") or "",
            labels=_string_map(metadata.get("labels"), f"{where}: metadata.labels"),
            annotations=_string_map(metadata.get("annotations"), f"{where}: metadata.annotations"),
            spec=spec,
            dra_devices=_dra_devices((metadata.get("annotations") or {}).get(DRA_NUMA_ANNOTATION)),
            dra_backed=_dra_backed(manifest.get("status")),
            terminating=bool(metadata.get("deletionTimestamp")),
            preempted=_preempted(manifest.get("status")),
            start_time=_start_time(manifest.get("status")),
            pod_requests=pod_requests,
            pod_limits=pod_limits,
            has_pod_resources=pod_resources is not None,
            allocated=_status_requests(manifest.get("status"), "allocatedResources"),
            actuated=_status_requests(manifest.get("status"), "resources"),
            resize_infeasible=_resize_infeasible(manifest.get("status")),
        )


def _preempted(status: Any) -> bool:
    """`podTerminatingByPreemption`'s condition test: the first `DisruptionTarget` condition decides."""
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, Mapping) and condition.get("type") == "DisruptionTarget":
            return condition.get("status") == "True" and condition.get("reason") == "PreemptionByScheduler"
    return False


def _status_requests(status: Any, key: str) -> dict[str, dict[str, int]]:
    """Container name -> the requests its status reports under `key` (`allocatedResources`, or `resources` whose
    `requests` are read), app and init containers alike (`findContainerStatus`). Read leniently: the kubelet writes
    them and the API server validates their quantities, so an entry this cannot read is no information."""
    out: dict[str, dict[str, int]] = {}
    if not isinstance(status, Mapping):
        return out
    for statuses in (status.get("initContainerStatuses"), status.get("containerStatuses")):
        for entry in statuses if isinstance(statuses, list) else ():
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                continue
            raw = entry.get(key)
            if key == "resources":
                raw = raw.get("requests") if isinstance(raw, Mapping) else None
            if raw is None:
                continue
            try:
                out[entry["name"]] = parse_resource_list(raw, key)
            except ValueError:
                continue
    return out


def _resize_infeasible(status: Any) -> bool:
    """`IsPodResizeInfeasible`: the first `PodResizePending` condition has reason `Infeasible`."""
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, Mapping) and condition.get("type") == "PodResizePending":
            return condition.get("reason") == "Infeasible"
    return False


def is_pod_ready(manifest: Mapping[str, Any]) -> bool:
    """`podutil.IsPodReady`: the pod's `Ready` condition is `True` (what controllers and PodDisruptionBudgets count)."""
    status = manifest.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    return any(
        isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True" for c in conditions or ()
    )


def _start_time(status: Any) -> str:
    started = status.get("startTime") if isinstance(status, Mapping) else None
    return started if isinstance(started, str) else ""


def without_requests(pod: Pod, dropped: Callable[[Container], Collection[str]]) -> Pod:
    """`pod` with each container's requests and limits of the resources `dropped(container)` names left out (the
    pod as a kubelet that does not count those resources sees it); `pod` itself when nothing is dropped."""

    def strip(containers: tuple[Container, ...]) -> tuple[Container, ...]:
        out = []
        for c in containers:
            drop = dropped(c)
            if drop:
                kept = {k: v for k, v in c.requests.items() if k not in drop}
                c = replace(c, requests=kept, limits={k: v for k, v in c.limits.items() if k not in drop})
            out.append(c)
        return tuple(out)

    init, apps = strip(pod.init_containers), strip(pod.containers)
    if init == pod.init_containers and apps == pod.containers:
        return pod
    return replace(pod, init_containers=init, containers=apps)


def long_running_request(init: Iterable[Container], apps: Iterable[Container]) -> dict[str, int]:
    """Kubernetes' pod request with sidecars (KEP-753, ≥ 1.29), without overhead.

    Sidecars add to the app sum and to every later init container; the result is the larger of that sum and the
    largest init-time need.
    """
    total = add(*(c.requests for c in apps))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for container in init:
        if container.kind is ContainerKind.SIDECAR:
            total = add(total, container.requests)
            sidecars = add(sidecars, container.requests)
            need = sidecars
        else:
            need = add(container.requests, sidecars)
        for name, amount in need.items():
            init_peak[name] = max(init_peak.get(name, 0), amount)
    for name, amount in init_peak.items():
        total[name] = max(total.get(name, 0), amount)
    return total


def _containers(raw: Any, where: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise PodError(f"{where}: must be a list of containers, got {type(raw).__name__}")
    return raw


def _string_map(raw: Any, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise PodError(f"{where}: must be a map of strings")
    return dict(raw)


def _container(raw: Any, where: str, *, init: bool) -> Container:
    if not isinstance(raw, Mapping):
        raise PodError(f"{where}: every container must be a mapping")
    name = raw.get("name")
    if not name or not isinstance(name, str):
        raise PodError(f"{where}: a container has no name")
    resources = raw.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise PodError(f"{where}: container {name} resources must be a mapping with requests and limits")
    requests = _resource_list(resources.get("requests"), f"{where}: container {name} requests")
    limits = _resource_list(resources.get("limits"), f"{where}: container {name} limits")
    for resource, limit in limits.items():  # API server defaulting: request defaults to the limit
        requests.setdefault(resource, limit)
    for resource, request in requests.items():
        if request < 0:
            raise PodError(f"{where}: container {name} requests a negative {resource}")
        if resource in limits and request > limits[resource]:
            raise PodError(f"{where}: container {name} requests more {resource} than its limit")
    if not init:
        kind = ContainerKind.APP
    elif raw.get("restartPolicy") == "Always":
        kind = ContainerKind.SIDECAR
    else:
        kind = ContainerKind.INIT
    return Container(name=name, kind=kind, requests=requests, limits=limits)


def _resource_list(raw: Any, where: str) -> dict[str, int]:
    """`parse_resource_list`, raising `PodError` (invalid quantities are errors in the pod manifest)."""
    try:
        return parse_resource_list(raw, where)
    except ValueError as err:
        raise PodError(str(err)) from None


def default_pod_resources(
    requests: ResourceList, limits: ResourceList, init: Sequence[Container], apps: Sequence[Container]
) -> tuple[dict[str, int], dict[str, int]]:
    """The API server's defaulting of pod-level resources (`pkg/apis/core/v1/defaults.go`), as (requests, limits):
    `defaultHugePagePodLimits` first (with pod-level requests or limits, a hugepages size the pod states neither a
    request nor a limit for is limited to the containers' aggregate limit), then `defaultPodRequests` (with pod-level
    limits, a missing CPU or memory request is the containers' aggregate request when they state one,
    `IsOvercommitAllowed`; every supported resource still missing requests its pod-level limit)."""
    limits = dict(limits)
    if requests or limits:
        container_limits = long_running_request(
            [Container(c.name, c.kind, c.limits, c.limits) for c in init],
            [Container(c.name, c.kind, c.limits, c.limits) for c in apps],
        )
        for name, amount in container_limits.items():
            if is_hugepages(name) and name not in requests and name not in limits:
                limits[name] = amount
    out = dict(requests)
    if limits:
        for name, amount in long_running_request(init, apps).items():
            if name in (CPU, MEMORY) and name not in out:
                out[name] = amount
        for name, amount in limits.items():
            if name not in out and is_supported_pod_level_resource(name):
                out[name] = amount
    return out, limits


def _qos_class(containers: Iterable[Container]) -> QOSClass:
    """`ComputePodQOS`: only cpu and memory count; Guaranteed needs limits for both in every container and
    requests equal to limits."""
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    for container in containers:
        for name in (CPU, MEMORY):
            if container.requests.get(name, 0) > 0:
                requests[name] = requests.get(name, 0) + container.requests[name]
        found = set()
        for name in (CPU, MEMORY):
            if container.limits.get(name, 0) > 0:
                found.add(name)
                limits[name] = limits.get(name, 0) + container.limits[name]
        if found != {CPU, MEMORY}:
            guaranteed = False
    if not requests and not limits:
        return QOSClass.BEST_EFFORT
    if guaranteed and requests == limits:
        return QOSClass.GUARANTEED
    return QOSClass.BURSTABLE


def _dra_backed(status: object) -> frozenset[tuple[str, str]]:
    """`status.extendedResourceClaimStatus.requestMappings` as (container, resource) pairs, read leniently (the
    API server validates them: `podstatus_validation`)."""
    claim_status = status.get("extendedResourceClaimStatus") if isinstance(status, Mapping) else None
    mappings = claim_status.get("requestMappings") if isinstance(claim_status, Mapping) else None
    if not isinstance(mappings, list):
        return frozenset()
    return frozenset(
        (str(m.get("containerName")), str(m.get("resourceName")))
        for m in mappings
        if isinstance(m, Mapping) and m.get("containerName") and m.get("resourceName")
    )


def _dra_devices(raw: object) -> dict[str, dict[str, int | None]]:
    """`DRA_NUMA_ANNOTATION` read leniently: a malformed value is no information (the scheduler wrote it)."""
    if not isinstance(raw, str):
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    out: dict[str, dict[str, int | None]] = {}
    for container, devices in value.items():
        if isinstance(devices, dict):
            out[str(container)] = {
                str(k): v if isinstance(v, int) and not isinstance(v, bool) else None for k, v in devices.items()
            }
    return out


def _misspelt(spec: Mapping[str, Any]) -> str:
    """A hint when the spec names `containers` with a typo (`container:`, `Containers:`): the pod model ignores
    unknown keys as a lenient decoder does, so without it the user only learns that no container was found."""
    real = {"containers", "initContainers", "ephemeralContainers"}
    near = difflib.get_close_matches("containers", [k for k in spec if isinstance(k, str) and k not in real])
    return f" (spec has {near[0]!r}: did you mean containers?)" if near else ""
