"""The NodeResourceTopology of a simulated node, built in-process with the exporter's own builder.

For many nodes, one exporter process per node is too heavy; the node process then publishes NRT itself. It calls
`knuma.exporter.builder.build` with exactly what the exporter would read (the machine's sysfs topology, PodResources
`GetAllocatableResources` and `List`, the Topology Manager settings of the kubelet configuration), so the object is
the same either way (a test compares both paths).
"""

from __future__ import annotations

from knuma.api.nrt import NodeResourceTopology
from knuma.exporter.builder import BuildOptions, KubeletState, build
from knuma.exporter.tmconfig import TopologyManagerSettings
from knuma.local.nodes.kubeletconfig import DEFAULT_MAX_NUMA_NODES
from knuma.local.nodes.simulated_kubelet import SimulatedKubelet
from knuma.local.nodes.spec import NodeSpec

__all__ = ["build_options", "node_resource_topology"]


def build_options(node: NodeSpec) -> BuildOptions:
    """What `knuma exporter --kubelet-config-file` resolves from the node's KubeletConfiguration."""
    zones = node.shape.zones
    settings = TopologyManagerSettings(
        policy=node.policy,
        scope=node.scope,
        max_numa_nodes=zones if zones > DEFAULT_MAX_NUMA_NODES else None,
    )
    return BuildOptions(
        node_name=node.name,
        topology_manager=settings,
        reserved_cpus=node.machine.reserved_cpus,
        cpu_manager=node.shape.cpu_manager,
    )


def node_resource_topology(kubelet: SimulatedKubelet, options: BuildOptions | None = None) -> NodeResourceTopology:
    machine = kubelet.spec.machine
    state = KubeletState(machine.allocatable(), kubelet.podresources())
    return build(machine.topology(), state, options or build_options(kubelet.spec)).nrt
