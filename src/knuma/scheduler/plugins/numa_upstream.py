"""Upstream NodeResourceTopologyMatch's Filter, literally (scheduler-plugins `filter.go`, `numaresources.go`).

This is the behaviour users have today, kept as a reference: the simulator's `nrt-*` baselines run it, and tests
check that knuma agrees with it wherever upstream is right (single-numa-node nodes, contiguous NUMA ids, no sidecars).
It only acts on `single-numa-node` nodes, checks current `available` per zone, subtracts each app container from the
lowest-id zone that fits, and does not hold sidecars.
"""

from __future__ import annotations

from collections.abc import Mapping

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import ContainerKind, Pod, QOSClass
from knuma.api.resources import ALWAYS_ON_NODE, is_host_level, is_native, is_numa_affine
from knuma.scheduler.framework.interface import SUCCESS, Code, CycleState, NodeInfo, Status
from knuma.scheduler.plugins.numa import (
    CANNOT_ALIGN_CONTAINER,
    CANNOT_ALIGN_INIT_CONTAINER,
    CANNOT_ALIGN_POD,
    CANNOT_ALIGN_SIDECAR_CONTAINER,
)

__all__ = ["UpstreamNodeResourceTopologyMatch", "upstream_filter"]


def upstream_filter(pod: Pod, node: NodeInfo) -> Status:
    if pod.qos is QOSClass.BEST_EFFORT and all(is_native(n) for n in pod.requested_names):
        return SUCCESS
    topology = node.topology
    if topology is None or topology.config.policy is not Policy.SINGLE_NUMA_NODE:
        return SUCCESS
    zones = [(z.id, dict(z.available)) for z in topology.zones]
    node_keys = set(node.allocatable) | ALWAYS_ON_NODE
    if topology.config.scope is Scope.POD:
        if _fit(zones, pod.effective_request, pod.qos, node_keys) is None:
            return Status(Code.UNSCHEDULABLE, CANNOT_ALIGN_POD, "NodeResourceTopologyMatch")
        return SUCCESS
    for container in pod.init_containers:
        if _fit(zones, container.requests, pod.qos, node_keys) is None:
            reason = (
                CANNOT_ALIGN_SIDECAR_CONTAINER
                if container.kind is ContainerKind.SIDECAR
                else CANNOT_ALIGN_INIT_CONTAINER
            )
            return Status(Code.UNSCHEDULABLE, reason, "NodeResourceTopologyMatch")
    for container in pod.containers:
        numa_id = _fit(zones, container.requests, pod.qos, node_keys)
        if numa_id is None:
            return Status(Code.UNSCHEDULABLE, CANNOT_ALIGN_CONTAINER, "NodeResourceTopologyMatch")
        available = dict(zones)[numa_id]
        for name, amount in container.requests.items():
            if not amount or name not in available:
                continue
            if pod.qos is not QOSClass.GUARANTEED and is_numa_affine(name):
                continue
            available[name] -= amount
    return SUCCESS


def _fit(
    zones: list[tuple[int, dict[str, int]]], request: Mapping[str, int], qos: QOSClass, node_keys: set[str]
) -> int | None:
    """`resourcesAvailableInAnyNUMANodes`: the lowest NUMA id where every request fits, or None."""
    mask = {numa_id for numa_id, _ in zones}
    for name, amount in request.items():
        if amount == 0:
            continue
        if name not in node_keys:
            return None
        listed = [(numa_id, available) for numa_id, available in zones if name in available]
        if not listed and is_host_level(name):
            continue
        fits = {
            numa_id
            for numa_id, available in listed
            if (qos is not QOSClass.GUARANTEED and is_numa_affine(name)) or available[name] >= amount
        }
        mask &= fits
        if not mask:
            return None
    return min(mask) if mask else None


class UpstreamNodeResourceTopologyMatch:
    """The upstream filter as a plugin, for baselines and comparisons."""

    name = "NodeResourceTopologyMatch"

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        del state
        return upstream_filter(pod, node)
