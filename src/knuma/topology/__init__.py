"""The NUMA model of a node and a faithful model of the kubelet Topology Manager. Pure: no I/O."""

from knuma.topology.kubelet import Admission, ContainerPlacement, admit
from knuma.topology.node import NodeTopology, NUMAZone

__all__ = ["Admission", "ContainerPlacement", "NUMAZone", "NodeTopology", "admit"]
