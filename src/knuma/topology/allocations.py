"""The kubelet's allocation state of one node: which pods hold which exclusive resources on which NUMA zones.

The CPU, memory and device managers keep this state (and checkpoint it); admission decisions depend on it, and a
pod's termination gives back exactly the zones it held. `knuma.topology.kubelet.admit` decides one admission over a
`NodeTopology`; `Allocations` is the ledger around it: admitting a pod records its placements, releasing it frees
them. Both the simulated kubelets (`knuma.testbed.simkubelet`) and knuma's NRT cache (a shadow of each node's kubelet,
`knuma.scheduler.cache.knuma`) keep one per node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from knuma.api.pod import ContainerKind, Pod
from knuma.api.resources import MEMORY, is_hugepages
from knuma.topology.kubelet import Admission, ContainerPlacement, DeviceNUMA, admit
from knuma.topology.node import NodeTopology

__all__ = ["Allocations", "RunningPod", "freed"]


@dataclass
class RunningPod:
    pod: Pod
    placements: tuple[ContainerPlacement, ...]
    """Where its containers hold exclusive resources; empty when unknown (taken from an NRT, not admitted here)."""


class Allocations:
    """The ledger; subclasses may declare `topology` and `running` as their own (dataclass) fields."""

    topology: NodeTopology
    running: dict[str, RunningPod]

    def __init__(self, topology: NodeTopology) -> None:
        self.topology = topology
        self.running = {}

    def allocate(self, pod: Pod, dra_devices: DeviceNUMA | None = None) -> Admission:
        """Topology Manager admission on the current zones (`dra_devices`: the NUMA nodes of the DRA devices allocated
        to each container); an admitted pod takes its placements."""
        admission = admit(pod, self.topology, dra_devices)
        if admission.admitted:
            self.topology = admission.node
            self.running[pod.key] = RunningPod(pod, admission.placements)
        return admission

    def hold(self, pod: Pod, placements: tuple[ContainerPlacement, ...]) -> None:
        """Record a pod admitted elsewhere with the placements it holds (a kubelet reading its checkpoints), taking
        them from the zones without deciding admission again; empty placements take nothing (the zones already
        account for the pod)."""
        available = {z.id: dict(z.available) for z in self.topology.zones}
        for placement in placements:
            if placement.kind is ContainerKind.INIT:
                continue
            for name, per_numa in placement.allocated.items():
                for numa_id, amount in per_numa.items():
                    available[numa_id][name] = available[numa_id].get(name, 0) - amount
        self.running[pod.key] = RunningPod(pod, placements)
        self.topology = self.topology.with_available(available, self._memory_groups())

    def release(self, key: str) -> Pod | None:
        """The pod terminated: give its exclusive resources back to their zones."""
        entry = self.running.pop(key, None)
        if entry is None:
            return None
        released = freed(self.topology, entry.placements)
        self.topology = released.with_zones(released.zones, self._memory_groups())
        return entry.pod

    def adopt(self, topology: NodeTopology) -> None:
        """Take zone availability from a published NRT (correcting drift): which zones each running pod holds is
        then unknown, so later releases free nothing per zone until the next NRT."""
        self.topology = self.topology.with_available({z.id: z.available for z in topology.zones})
        for key, entry in self.running.items():
            self.running[key] = RunningPod(entry.pod, ())

    def _memory_groups(self) -> dict[int, frozenset[int]]:
        """Multi-NUMA memory groups still held by running pods (the memory manager forgets a group when its last
        user leaves)."""
        groups: dict[int, frozenset[int]] = {}
        for entry in self.running.values():
            for placement in entry.placements:
                for name, per_numa in placement.allocated.items():
                    ids = frozenset(n for n, amount in per_numa.items() if amount)
                    if (name == MEMORY or is_hugepages(name)) and len(ids) > 1:
                        for numa_id in ids:
                            groups[numa_id] = ids
        return groups


def freed(topology: NodeTopology, placements: Sequence[ContainerPlacement]) -> NodeTopology:
    """`topology` with the exclusive resources held by `placements` (app and sidecar containers) given back."""
    available = {z.id: dict(z.available) for z in topology.zones}
    for placement in placements:
        if placement.kind is ContainerKind.INIT:
            continue
        for name, per_numa in placement.allocated.items():
            for numa_id, amount in per_numa.items():
                available[numa_id][name] = available[numa_id].get(name, 0) + amount
    return topology.with_available(available)
