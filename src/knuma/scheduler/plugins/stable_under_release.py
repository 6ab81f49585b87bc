"""StableUnderRelease: a Filter that keeps knuma's prediction true when a pod terminates before the kubelet admits.

Kubelet admission is not monotonic in free resources for container scope: an init container takes exclusive CPUs (or
memory) on the lowest zone that fits, and the app containers must then include that zone (reusable CPUs). Freeing a
few CPUs on a lower zone can move the init container there, or move a pod bound just before there, and leave the app
container without a single zone. Pods terminate during the bind-to-admission window, so for pods with Guaranteed init
containers the plugin checks the prediction against every single release the node could see meanwhile.

For the same reason a node whose zones the cache does not know exactly (after a scheduler restart, pods running
before it hold zones it can only bound; see `knuma.scheduler.cache.knuma`) is no place for such a pod until an NRT
gives its zones: more may be free there than the view shows. Measured on the simulator's `restart` scenario.

It needs to know which pod holds which zones, which only knuma's NRT cache (a shadow of each node's kubelet) knows:
the profile gets this filter when the daemon runs that cache. Measured in the simulator (lag60 and restricted, seeds
0-9): without it, knuma's cache has TopologyAffinityErrors from these releases; with it, none.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from knuma.api.nrt import Scope
from knuma.api.pod import ContainerKind, Pod
from knuma.scheduler.framework.interface import SUCCESS, Code, CycleState, FastPathKind, NodeInfo, Status
from knuma.scheduler.plugins.dra_extended import ExtendedResourceMap, as_admitted, served_on_node
from knuma.scheduler.plugins.numa import CANNOT_ALIGN_INIT_CONTAINER
from knuma.topology.kubelet import admits
from knuma.topology.node import NodeTopology

__all__ = ["NAME", "ReleaseScenarios", "StableUnderRelease"]

NAME = "StableUnderRelease"


@runtime_checkable
class ReleaseScenarios(Protocol):
    def single_releases(self, node: str) -> Iterator[tuple[str, NodeTopology]]:
        """(pod key, the node's zones if that pod terminated before the pods bound there are admitted)."""
        ...

    def exact(self, node: str) -> bool:
        """Whether the node's zones are known (no pod with unknown zones held or released since the last NRT that
        counted the same pods): when they are not, more may be free than the view shows."""
        ...


class StableUnderRelease:
    name = NAME
    fast_path = FastPathKind.FEASIBLE_ROWS
    checks_bind_window = True
    """Preemption's dry run skips it: the releases it checks are those of the node with its victims, and the
    preemptor's own cycle, after they are gone, checks the node as it then is."""

    def __init__(self, cache: ReleaseScenarios, extended: ExtendedResourceMap | None = None) -> None:
        self.cache = cache
        self.extended = extended
        """The DeviceClasses' extended resources: the pod is checked as the kubelet admits it on the node, without
        those DRA serves there (`NodeResourceTopologyMatch.kubelet_pod`); None: no DRA."""
        self.rejected = 0

    def applies_to(self, pod: Pod) -> bool:
        """Pods whose admission can fail after a release: Guaranteed with init containers holding exclusive
        resources."""
        return pod.pinned_by_managers and any(c.kind is ContainerKind.INIT for c in pod.init_containers)

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        del state
        topology = node.numa
        if not self.applies_to(pod) or topology is None or topology.config.scope is not Scope.CONTAINER:
            return SUCCESS
        if not self.cache.exact(node.name):
            self.rejected += 1
            return Status(
                Code.UNSCHEDULABLE, CANNOT_ALIGN_INIT_CONTAINER, NAME, "the node's zones are not known exactly yet"
            )
        admitted = as_admitted(pod, served_on_node(pod.requested_names, self.extended, node.allocatable))
        for released, after in self.cache.single_releases(node.name):
            if not admits(admitted, after):
                self.rejected += 1
                return Status(
                    Code.UNSCHEDULABLE,
                    CANNOT_ALIGN_INIT_CONTAINER,
                    NAME,
                    f"admission would fail if {released} terminated first",
                )
        return SUCCESS
