"""Assume: what a node looks like to the scheduler once a pod is reserved on it (kube-scheduler's `AssumePod`).

One function shared by every scheduling path (the per-node reference, the vectorised path, the simulator, the daemon's
cache), so that they all count a reserved pod the same way: its effective request, its non-zero request for scoring,
one more pod, and the NUMA zones the kubelet model predicts.
"""

from __future__ import annotations

from dataclasses import replace

from knuma.api.pod import Pod
from knuma.api.resources import add
from knuma.scheduler.framework.interface import NodeInfo
from knuma.scheduler.plugins.node_resources_fit import SCORED_RESOURCES, non_zero_request
from knuma.topology.kubelet import Admission

__all__ = ["assume"]


def assume(node: NodeInfo, pod: Pod, admission: Admission | None) -> NodeInfo:
    """`node` with `pod` reserved on it; its zones become the admission's when the kubelet model admitted the pod
    (a rejected or missing prediction leaves the zones as they were)."""
    on_node = node.non_zero_requested
    if on_node is None:
        on_node = {name: node.requested.get(name, 0) for name, _ in SCORED_RESOURCES}
    return replace(
        node,
        requested=add(node.requested, pod.effective_request),
        non_zero_requested=add(on_node, non_zero_request(pod)),
        pod_count=node.pod_count + 1,
        pods=(*node.pods, pod),
        topology=admission.node if admission is not None and admission.admitted else node.topology,
    )
