"""`KnumaBinPacking` (knuma's own, its profile's default): node-level best fit of exclusive CPUs with a penalty for
the zone remainders the recent mix of pod sizes is expected to strand (`knuma.scheduler.plugins.stranding`) and for
the devices left in a zone without what any recent device pod needs with them
(`knuma.scheduler.plugins.device_stranding`)."""

from __future__ import annotations

from collections.abc import Mapping

from knuma.api.resources import CPU
from knuma.scheduler.plugins.device_stranding import device_stranding_penalty, gap_penalty
from knuma.scheduler.plugins.stranding import CPUDemand, stranding_penalty
from knuma.scheduler.plugins.strategies.units import MAX_SCORE
from knuma.topology.node import NodeTopology

__all__ = ["bin_packing_score"]


def bin_packing_score(
    before: NodeTopology,
    after: NodeTopology,
    demand: CPUDemand | None = None,
    *,
    devices: bool = True,
    gaps: Mapping[int, int] | None = None,
) -> int:
    """`KnumaBinPacking`: the share (0-100) of the node's NUMA-managed CPUs allocated once the pod is admitted (`after`
    is the kubelet model's node after admission), less `stranding_penalty` for the CPUs its zones are expected to
    strand under the recent mix of sizes once the pod is there (a credit when that drops) and
    `device_stranding_penalty` for the devices it leaves unusable and `gap_penalty` for how it changes the cluster's
    device gap counts (`gaps`, `gap_counts` before the pod; `devices` False: neither is charged, for pods with
    ResourceClaims, whose DRA devices `after` does not hold: DynamicResources scores their device choice); 0 on a
    node whose zones report no CPU.

    Exclusive CPUs are what fragments a NUMA cluster: the CPU manager pins whole CPUs in one zone, so free CPUs spread
    thinly over many nodes cannot take a large pod. Best fit at the node level keeps empty nodes and zones for those,
    and the stranding term keeps zone remainders usable; the node-level NodeResourcesFit score still spreads the pods
    that hold no exclusive CPUs."""
    total = sum(zone.total(CPU) for zone in before.zones)
    if total <= 0:
        return 0
    free = sum(zone.available.get(CPU, 0) for zone in after.zones)
    packed = (total - free) * MAX_SCORE // total
    if demand is not None:
        packed -= stranding_penalty(before, after, demand)
        if devices:
            packed -= device_stranding_penalty(before, after, demand.devices)
            if gaps is not None and demand.devices:
                packed -= gap_penalty(before, after, gaps)
    return max(0, min(MAX_SCORE, packed))
