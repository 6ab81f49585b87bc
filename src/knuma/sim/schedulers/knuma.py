"""`knuma`: the knuma profile (the kubelet model as Filter, upstream-compatible scores) with reservations on the
zones the kubelet model predicts, a shadow kubelet per node, and NRT as a drift check."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from knuma.api.nrt import Scope
from knuma.api.pod import ContainerKind, Pod
from knuma.scheduler.cache.reservation import apply_pod
from knuma.scheduler.framework.interface import SUCCESS, Code, CycleState, NodeInfo, ScheduleResult, Status
from knuma.scheduler.framework.profiles import default_profile
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.plugins.strategies import ScoringStrategy
from knuma.sim.exporter import NRTSnapshot, fingerprint
from knuma.sim.schedulers.base import NodeSetup, SimScheduler
from knuma.testbed.simkubelet import RunningPod, SimKubelet, freed
from knuma.topology.kubelet import admit
from knuma.topology.node import NodeTopology

__all__ = ["KnumaScheduler", "StableUnderRelease"]


@dataclass
class _Model:
    """knuma's model of one node: a shadow kubelet driven by the informer events, plus the pods bound but not yet
    admitted, replayed on top in bind order."""

    shadow: SimKubelet
    reserved: list[Pod] = field(default_factory=list)
    predicted: NodeTopology | None = None

    def view(self) -> NodeTopology:
        return self.predicted or self.shadow.topology

    def replay(self) -> None:
        topology = self.shadow.topology
        for pod in self.reserved:
            topology = apply_pod(pod, topology)
        self.predicted = topology if self.reserved else None


class KnumaScheduler(SimScheduler):
    """knuma's profile, with reservations on the zones the kubelet model predicts.

    Per node, a shadow kubelet (the same kubelet model) starts from the first NRT. Reserve puts the pod on the zones
    the model predicts; when the pod's status shows the kubelet admitted it (`status.startTime` is set at admission,
    before images are pulled), the shadow admits it for real, and when a pod terminates the shadow frees its zones.
    Status updates arrive late but in the order they happened, so the shadow replays the kubelet's history and
    picks the zones the kubelet picked. A fresh NRT whose pod fingerprint equals the shadow's pods is a consistency
    check: if the zones differ (drift), the NRT wins and the zones of the pods already running become unknown
    (their release frees nothing until the next NRT).
    """

    name = "knuma"

    def __init__(self, nodes: Sequence[NodeSetup], scoring: ScoringStrategy | None = None, **_: Any) -> None:
        profile = default_profile(scoring)
        self.stable = StableUnderRelease(self)
        super().__init__(nodes, replace(profile, filters=(*profile.filters, self.stable)))
        self.numa = next(p for p in self.profile.filters if isinstance(p, NodeResourceTopologyMatch))
        self.models = {n.name: _Model(SimKubelet(n.name, n.allocatable, n.nrt.topology)) for n in nodes}
        self.reconciled = 0
        self.unmatched = 0
        self.drift = 0

    def topology(self, node: str) -> NodeTopology | None:
        return self.models[node].view()

    def reserve(self, pod: Pod, node: str, result: ScheduleResult, now: float) -> None:
        model = self.models[node]
        admission = self.numa.admission(result.state, node)
        model.reserved.append(pod)
        model.predicted = (
            admission.node if admission is not None and admission.admitted else apply_pod(pod, model.view())
        )

    def pod_running(self, key: str, node: str, now: float) -> None:
        super().pod_running(key, node, now)
        model = self.models[node]
        pod = next((p for p in model.reserved if p.key == key), None)
        if pod is None:
            return
        model.reserved.remove(pod)
        if not model.shadow.admit(pod).admitted:
            # The kubelet admitted what the model would not: the model has drifted. Hold the pod pessimistically
            # until an NRT corrects the zones.
            model.shadow.topology = apply_pod(pod, model.shadow.topology)
            model.shadow.running[key] = RunningPod(pod, ())
            self.drift += 1
        model.replay()
        self.invalidate(node)

    def forget(self, pod: Pod, node: str, now: float) -> None:
        model = self.models[node]
        model.reserved = [p for p in model.reserved if p.key != pod.key]
        model.shadow.release(pod.key)
        model.replay()

    def nrt_published(self, snapshot: NRTSnapshot, now: float) -> bool:
        model = self.models[snapshot.node]
        if fingerprint(model.shadow.running) != snapshot.fingerprint:
            self.unmatched += 1
            return False  # the NRT counts other pods than the shadow (in flight): wait for the next one
        self.reconciled += 1
        published = {z.id: z.available for z in snapshot.topology.zones}
        if all(published.get(z.id) == z.available for z in model.shadow.topology.zones):
            return False
        self.drift += 1
        model.shadow.adopt(snapshot.topology)
        model.replay()
        self.invalidate(snapshot.node)
        return True


class StableUnderRelease:
    """Filter: the kubelet's decision must not flip if one pod on the node terminates before admission.

    Kubelet admission is not monotonic in free resources for container scope: an init container takes exclusive
    CPUs (or memory) on the lowest zone that fits, and the app containers must then include that zone (reusable
    CPUs). Freeing a few CPUs on a lower zone can move the init container there, or move a pod bound just before
    there, and leave the app container without a single zone. Pods terminate during the bind-to-admission window, so
    for pods with Guaranteed init containers knuma checks the prediction against every single release the node could
    see meanwhile (`_single_releases`).
    """

    name = "knuma/StableUnderRelease"

    def __init__(self, scheduler: KnumaScheduler) -> None:
        self.scheduler = scheduler
        self.rejected = 0

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        if not _fragile(pod) or node.topology is None or node.topology.config.scope is not Scope.CONTAINER:
            return SUCCESS
        model = self.scheduler.models[node.name]
        for released, topology in _single_releases(model):
            if not admit(pod, topology).admitted:
                self.rejected += 1
                return Status(
                    Code.UNSCHEDULABLE,
                    "cannot align init container",
                    self.name,
                    f"admission would fail if {released} terminated first",
                )
        return SUCCESS


def _single_releases(model: _Model) -> Iterator[tuple[str, NodeTopology]]:
    """The node as the kubelet may see it when the next pod arrives, if exactly one pod terminates first: a running
    pod, or a pod bound here that the kubelet admits and that ends at once. The release happens before the kubelet
    admits the pods bound here and not yet admitted, which may then take other zones (the lowest that fits) than the
    model predicted, so they are replayed after it."""
    for running in model.shadow.running.values():
        if running.placements:
            topology = freed(model.shadow.topology, running.placements)
            for reserved in model.reserved:
                topology = apply_pod(reserved, topology)
            yield running.pod.key, topology
    for index, gone in enumerate(model.reserved):
        topology = model.shadow.topology
        for reserved in model.reserved[:index] + model.reserved[index + 1 :]:
            topology = apply_pod(reserved, topology)
        yield gone.key, topology


def _fragile(pod: Pod) -> bool:
    """Pods whose admission can fail after a release: Guaranteed with init containers holding exclusive resources."""
    return pod.is_guaranteed and any(c.kind is ContainerKind.INIT for c in pod.init_containers)
