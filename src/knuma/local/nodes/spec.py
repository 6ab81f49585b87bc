"""Which simulated nodes exist: one `NodeSpec` per node of a cluster spec (the simulator's node pools and shapes).

A node's name, shape and Topology Manager settings come from its pool; its index in the cluster fixes its addresses.
Addresses are in the loopback range 127.0.0.0/8 (node `i` is `127.1.x.y`, its pods `127.128+.x.y`), so no tool ever
sends traffic off the machine by following a simulated node's or pod's IP.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from knuma.api.nrt import Policy, Scope
from knuma.errors import SpecError
from knuma.local.nodes.machine import Machine
from knuma.testbed.cluster import ClusterSpec
from knuma.testbed.shapes import NodeShape

__all__ = ["MAX_NODES", "NodeSpec", "nodes_of"]

MAX_NODES = 64 * 250
"""Addresses run out beyond this many nodes (more than one process can simulate anyway)."""


@dataclass(frozen=True)
class NodeSpec:
    name: str
    index: int
    shape: NodeShape
    pool: str = ""
    policy: Policy = Policy.SINGLE_NUMA_NODE
    scope: Scope = Scope.CONTAINER

    @cached_property
    def machine(self) -> Machine:
        return Machine(self.shape)

    @property
    def internal_ip(self) -> str:
        return f"127.1.{self.index // 250}.{self.index % 250 + 1}"

    @property
    def pod_subnet(self) -> str:
        """The first three octets of the node's pod CIDR (a /24)."""
        return f"127.{128 + self.index // 256}.{self.index % 256}"

    @property
    def pod_cidr(self) -> str:
        return f"{self.pod_subnet}.0/24"


def nodes_of(cluster: ClusterSpec) -> list[NodeSpec]:
    """Every node of `cluster`, pools in order, named by the pool (`<pool>-000`, `<pool>-001`, ...)."""
    if cluster.node_count > MAX_NODES:  # before building them: a count of 10^8 would take hours
        raise SpecError(
            f"{cluster.node_count} nodes: at most {MAX_NODES} simulated nodes are supported (each gets a loopback /24 "
            "for its pods); use fewer, or `knuma simulate` for capacity planning at that size"
        )
    specs: list[NodeSpec] = []
    for pool in cluster.pools:
        for name in pool.node_names():
            specs.append(NodeSpec(name, len(specs), pool.shape, pool.name, pool.policy, pool.scope))
    return specs
