"""Which NUMA nodes a pod's devices may (or should) use so that they sit with the CPUs and memory the kubelet's
Topology Manager will give the pod.

knuma's model (part 2's simulated kubelet uses the same one): DRA devices take part in the Topology Manager's hint
merge like device-plugin devices do (a hint for the NUMA nodes of the devices allocated to the pod). The kubelet then
admits the pod under `single-numa-node` / `restricted` only when one NUMA mask is preferred by every provider: the CPU
manager, the memory manager, the device manager (classic device-plugin resources from NRT) and the DRA devices. So
the allocator walks the masks that the CPU, memory and device-plugin hints all prefer, narrowest first (the order
of the kubelet's `IterateBitMasks` and its "narrowest preferred" merge), and looks for devices inside each. Under
`best-effort` the same masks are tried, then any device; under `none` (or without NRT) there is no NUMA restriction
and only the locality score applies.

The hints come from `knuma.topology` (`WorkingNode.countable_hints`, `memory_hints`, `exclusive_request`), so they are
the kubelet model's own. The pod's request is taken as a whole (pod scope); under the container scope knuma aligns the
claims with the pod's combined exclusive request, which is exact for the usual one-container pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from knuma.api.nrt import Policy
from knuma.api.pod import Pod
from knuma.api.resources import CPU, format_amount
from knuma.devices.numa import sockets_from_distances
from knuma.topology.hints import Hint, bits, iterate_masks
from knuma.topology.kubelet import MAX_MODELLED_NUMA_NODES
from knuma.topology.managers import WorkingNode, exclusive_request, memory_types
from knuma.topology.node import NodeTopology, is_device

__all__ = ["NumaPlan", "plan_alignment"]


@dataclass(frozen=True)
class NumaPlan:
    masks: tuple[int, ...] | None
    """Candidate NUMA masks, best first; None: no NUMA restriction."""
    required: bool
    """single-numa-node / restricted: no allocation outside `masks`."""
    policy: Policy = Policy.NONE
    sockets: Mapping[int, int] = field(default_factory=dict)
    numa_ids: tuple[int, ...] = ()
    detail: str = ""
    """Why the masks are what they are (the pod's exclusive request), for explanations."""

    def describe(self, mask: int | None) -> str:
        return "any NUMA node" if mask is None else "NUMA " + ",".join(str(n) for n in bits(mask))

    def describe_all(self) -> str:
        """The candidate masks, e.g. `NUMA 2 or NUMA 3`."""
        return " or ".join(self.describe(m) for m in self.masks or ()) or "no NUMA node"


def _pod_request(pod: Pod, node: NodeTopology) -> dict[str, int]:
    total: dict[str, int] = {}
    for container in pod.containers:
        request = exclusive_request(node, container.requests, pod.exclusive_cpus(container), pod.pinned_by_managers)
        for name, amount in request.items():
            total[name] = total.get(name, 0) + amount
    return total


def _hint_lists(request: Mapping[str, int], node: NodeTopology) -> list[list[Hint]]:
    work = WorkingNode.of(node)
    lists: list[list[Hint]] = []
    if CPU in request:
        lists.append(work.countable_hints(CPU, request[CPU]))
    memory = memory_types(request)
    if memory:
        lists.append(work.memory_hints(memory))
    for name, amount in request.items():
        if name != CPU and is_device(name) and name not in memory:
            lists.append(work.countable_hints(name, amount))
    return lists


def plan_alignment(node: NodeTopology | None, pod: Pod | None) -> NumaPlan:
    if node is None or not node.zones:
        return NumaPlan(None, False)
    sockets = sockets_from_distances(node.distances)
    policy = node.config.policy
    if policy is Policy.NONE:
        return NumaPlan(None, False, policy, sockets, node.numa_ids)
    if len(node.zones) > MAX_MODELLED_NUMA_NODES:  # the NUMA filter refuses such a node too (TopologyNotModelled)
        detail = f"more than the {MAX_MODELLED_NUMA_NODES} NUMA nodes knuma models"
        return NumaPlan((), True, policy, sockets, node.numa_ids, detail)
    masks = [1 << n for n in node.numa_ids] if policy is Policy.SINGLE_NUMA_NODE else iterate_masks(node.numa_ids)
    request = _pod_request(pod, node) if pod is not None else {}
    lists = _hint_lists(request, node) if request else []
    preferred_masks = [{h.mask for h in hints if h.preferred} for hints in lists]
    preferred = [m for m in masks if all(m in found or None in found for found in preferred_masks)]
    detail = (
        ", ".join(
            f"{name}={format_amount(name, amount * 1000 if name == CPU else amount)}"
            for name, amount in sorted(request.items())
        )
        or "no exclusive CPUs or memory"
    )
    required = policy in (Policy.SINGLE_NUMA_NODE, Policy.RESTRICTED)
    return NumaPlan(tuple(preferred), required, policy, sockets, node.numa_ids, detail)
