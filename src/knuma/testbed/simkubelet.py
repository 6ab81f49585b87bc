"""A simulated kubelet: the ground truth of one node.

Admission is `knuma.topology.admit`, the same kubelet model the knuma scheduler uses, preceded by the kubelet's
node-level resource check (`OutOfcpu`, ...). An admitted pod holds the exclusive resources the model allocated on
concrete NUMA zones until it terminates. A rejected pod is `Failed` and never retried by the kubelet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from knuma.api.pod import ContainerKind, Pod
from knuma.api.resources import CPU, MEMORY, PODS, is_native
from knuma.errors import KnumaError
from knuma.topology.allocations import Allocations, RunningPod, freed
from knuma.topology.kubelet import Admission, ContainerPlacement, DeviceNUMA, admit
from knuma.topology.node import NodeTopology

__all__ = [
    "RESIZE_DEFERRED",
    "RESIZE_INFEASIBLE",
    "AdmissionResult",
    "ConservationError",
    "RunningPod",
    "SimKubelet",
    "freed",
]

RESIZE_INFEASIBLE = "Infeasible"
"""`v1.PodReasonInfeasible`: the kubelet will not make the resize (until the spec changes again)."""
RESIZE_DEFERRED = "Deferred"
"""`v1.PodReasonDeferred`: the resize does not fit now; the kubelet retries it when pods leave."""


class ConservationError(KnumaError, AssertionError):
    """The ground truth holds more than the node has: a bug in the simulator or the kubelet model."""


@dataclass(frozen=True, slots=True)
class AdmissionResult:
    admitted: bool
    reason: str = ""
    message: str = ""


@dataclass
class SimKubelet(Allocations):
    """A node's kubelet: the allocation ledger (`knuma.topology.allocations`) plus node-level requests."""

    name: str
    allocatable: Mapping[str, int]
    topology: NodeTopology
    requested: dict[str, int] = field(default_factory=dict)
    running: dict[str, RunningPod] = field(default_factory=dict)
    generation: int = 0
    """Bumped on every change of the node's resources (what the exporter publishes)."""

    @property
    def empty_topology(self) -> NodeTopology:
        return self.topology.with_available({z.id: z.allocatable for z in self.topology.zones})

    def fits_node_level(self, pod: Pod) -> str:
        """The kubelet's `predicateAdmitHandler` resource check: "" if it fits, else the missing resource. An
        extended resource the node does not list at all is not checked (`removeMissingExtendedResources`: a device
        plugin not registered yet, or a resource that comes from elsewhere, e.g. a DRA-backed extended resource);
        the device manager then allocates nothing for it, as its `isDevicePluginResource` skips it."""
        if self.allocatable.get(PODS, 0) and len(self.running) + 1 > self.allocatable[PODS]:
            return PODS
        for name, amount in sorted(pod.effective_request.items()):
            if not is_native(name) and name not in self.allocatable:
                continue
            if amount and amount > self.allocatable.get(name, 0) - self.requested.get(name, 0):
                return name
        return ""

    def lists_resources_of(self, pod: Pod) -> bool:
        """Whether the node lists every resource `pod` requests: NodeResourcesFit places a pod only there, where the
        kubelet alone would also admit one whose extended resource the node does not list (`fits_node_level`)."""
        return all(name in self.allocatable for name, amount in pod.effective_request.items() if amount)

    def would_admit(self, pod: Pod) -> bool:
        """Whether the node, as it is now, would admit `pod` (no state change)."""
        return not self.fits_node_level(pod) and admit(pod, self.topology).admitted

    def admit(self, pod: Pod, dra_devices: DeviceNUMA | None = None) -> AdmissionResult:
        """`dra_devices`: NUMA nodes of the DRA devices allocated to each container (`knuma.topology.admit`)."""
        missing = self.fits_node_level(pod)
        if missing:
            reason = "OutOfpods" if missing == PODS else f"OutOf{missing}"
            return AdmissionResult(False, reason, f"Node didn't have enough resource: {missing}")
        admission: Admission = self.allocate(pod, dra_devices)
        if not admission.admitted:
            return AdmissionResult(False, admission.reason, admission.message)
        for name, amount in pod.effective_request.items():
            self.requested[name] = self.requested.get(name, 0) + amount
        self.generation += 1
        return AdmissionResult(True)

    def resize(self, pod: Pod) -> AdmissionResult:
        """Allocate a running pod's resized spec (`pod`, its allocation not yet changed), as the kubelet's
        `handlePodResourcesResize` does, or say why not. This kubelet runs the static CPU and memory managers, so a
        Guaranteed pod's cpu or memory cannot change (`podResizesAdmitHandler`: infeasible unless the alpha
        `InPlacePodVerticalScalingExclusiveCPUs` / `...ExclusiveMemory` gates are on); a pod asking more memory or cpu
        than the node has is infeasible (`Node didn't have enough capacity`), more than is free now deferred (the
        admit handlers' `Node didn't have enough resource`). An accepted resize changes the node-level requests
        only: what a pod may resize holds no exclusive resources."""
        running = self.running[pod.key]
        held = running.pod
        if held.is_guaranteed:
            for name, manager in ((CPU, 'CPU Manager policy "static"'), (MEMORY, 'Memory Manager policy "Static"')):
                if _resized(held, pod, name):
                    message = f"Resize is infeasible for Guaranteed Pods alongside {manager}"
                    return AdmissionResult(False, RESIZE_INFEASIBLE, message)
        wanted = pod.effective_request
        for name in (MEMORY, CPU):
            if wanted.get(name, 0) > self.allocatable.get(name, 0):
                message = (
                    f"Node didn't have enough capacity: {name}, requested: {wanted[name]}, "
                    f"capacity: {self.allocatable.get(name, 0)}"
                )
                return AdmissionResult(False, RESIZE_INFEASIBLE, message)
        others = {name: amount - held.effective_request.get(name, 0) for name, amount in self.requested.items()}
        for name, amount in sorted(wanted.items()):
            if not is_native(name) and name not in self.allocatable:
                continue
            capacity = self.allocatable.get(name, 0)
            if amount and amount > capacity - others.get(name, 0):
                message = (
                    f"Node didn't have enough resource: {name}, requested: {amount}, used: "
                    f"{others.get(name, 0)}, capacity: {capacity}"
                )
                return AdmissionResult(False, RESIZE_DEFERRED, message)
        self.requested = {name: others.get(name, 0) + wanted.get(name, 0) for name in {*others, *wanted}}
        self.running[pod.key] = RunningPod(pod, running.placements)
        self.generation += 1
        return AdmissionResult(True)

    def restore(self, pod: Pod, placements: tuple[ContainerPlacement, ...]) -> None:
        """Take back a pod admitted before a restart with the placements it held (the kubelet reading its CPU and
        memory manager checkpoints), without deciding admission again."""
        self.hold(pod, placements)
        for name, amount in pod.effective_request.items():
            self.requested[name] = self.requested.get(name, 0) + amount
        self.generation += 1

    def release(self, key: str) -> Pod | None:
        """The pod terminated: give its exclusive resources back to their zones."""
        pod = super().release(key)
        if pod is None:
            return None
        for name, amount in pod.effective_request.items():
            self.requested[name] = self.requested.get(name, 0) - amount
        self.generation += 1
        return pod

    def adopt(self, topology: NodeTopology) -> None:
        super().adopt(topology)
        self.generation += 1

    def check(self) -> None:
        """Raise `ConservationError` if any zone or the node holds more than it has."""
        for zone in self.topology.zones:
            for name, amount in zone.available.items():
                if amount < 0 or amount > zone.allocatable.get(name, amount):
                    raise ConservationError(f"{self.name} NUMA {zone.id}: {name} available {amount} out of range")
        for name, amount in self.requested.items():
            if amount < 0 or amount > self.allocatable.get(name, 0):
                raise ConservationError(f"{self.name}: {name} requested {amount} of {self.allocatable.get(name, 0)}")
        if len(self.running) > self.allocatable.get(PODS, len(self.running)):
            raise ConservationError(f"{self.name}: {len(self.running)} pods on the node")

    def exclusive_cpu_used(self) -> list[tuple[int, int]]:
        """(used, allocatable) exclusive milli-CPU per zone, for heat maps."""
        return [
            (z.allocatable.get(CPU, 0) - z.available.get(CPU, 0), z.allocatable.get(CPU, 0))
            for z in self.topology.zones
        ]


def _resized(held: Pod, wanted: Pod, name: str) -> bool:
    """`guaranteedPodResourceResizeRequired`: a resizable container (app or sidecar) asks another amount of `name`."""
    before = {c.name: c.requests.get(name, 0) for c in held.all_containers if c.kind is not ContainerKind.INIT}
    return any(
        c.requests.get(name, 0) != before.get(c.name, 0)
        for c in wanted.all_containers
        if c.kind is not ContainerKind.INIT
    )
