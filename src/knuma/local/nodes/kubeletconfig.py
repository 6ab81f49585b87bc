"""The KubeletConfiguration of a simulated node, as `/configz` serves it and as a file for `knuma exporter`.

Every simulated node runs the static CPU manager (with `reservedSystemCPUs`), the Static memory manager (with
`reservedMemory` per NUMA zone) and the Topology Manager policy and scope of its pool, which is the configuration
NUMA-aware scheduling needs; `knuma validate` reads it through the node proxy
(`/api/v1/nodes/NAME/proxy/configz`), and the exporter reads the same document from `--kubelet-config-file`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from knuma.api.resources import MEMORY, format_amount
from knuma.local.apiserver.proxy import ProxyRequest, ProxyResponse
from knuma.local.nodes.spec import NodeSpec

__all__ = ["KUBELET_VERSION", "configz_handler", "kubelet_configuration"]

KUBELET_VERSION = "v1.34.0"
"""The kubelet version simulated nodes report (`status.nodeInfo.kubeletVersion`): the first whose PodResources API has
`Get`, lists only active pods (`KubeletPodResourcesListUseActivePods`) and reports DRA devices as dynamic resources,
with DRA at `resource.k8s.io/v1`: what the simulated kubelet serves."""

DEFAULT_MAX_NUMA_NODES = 8


def kubelet_configuration(node: NodeSpec) -> dict[str, Any]:
    """The node's KubeletConfiguration (`kubelet.config.k8s.io/v1beta1`)."""
    shape = node.shape
    config: dict[str, Any] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "cgroupDriver": "systemd",
        "cpuManagerPolicy": "static",
        "cpuManagerReconcilePeriod": "10s",
        "memoryManagerPolicy": "Static",
        "topologyManagerPolicy": node.policy.value,
        "topologyManagerScope": node.scope.value,
        "maxPods": shape.max_pods,
        "nodeStatusReportFrequency": "5m0s",
        "nodeStatusUpdateFrequency": "10s",
        "nodeLeaseDurationSeconds": 40,
        "featureGates": {
            "CPUManagerPolicyOptions": True,
            "KubeletPodResourcesGet": True,
            "MemoryManager": True,
            "TopologyManagerPolicyOptions": True,
        },
    }
    options = shape.cpu_manager.enabled()
    if options:
        config["cpuManagerPolicyOptions"] = dict.fromkeys(options, "true")
    if shape.zones > DEFAULT_MAX_NUMA_NODES:
        config["topologyManagerPolicyOptions"] = {"max-allowable-numa-nodes": str(shape.zones)}
    if shape.reserved_cpus:
        config["reservedSystemCPUs"] = node.machine.reserved_cpus_text
    if shape.reserved_memory:
        per_zone = format_amount(MEMORY, shape.reserved_memory)
        config["reservedMemory"] = [{"numaNode": zone, "limits": {MEMORY: per_zone}} for zone in range(shape.zones)]
        config["systemReserved"] = {MEMORY: format_amount(MEMORY, shape.reserved_memory * shape.zones)}
        config["evictionHard"] = {"memory.available": "0"}
    return config


def configz_handler(node: NodeSpec) -> Callable[[ProxyRequest], ProxyResponse]:
    """A node proxy handler serving `configz` (`{"kubeletconfig": {...}}`, as the kubelet does); 404 otherwise."""
    body = json.dumps({"kubeletconfig": kubelet_configuration(node)}).encode()

    def handle(request: ProxyRequest) -> ProxyResponse:
        path = request.path.strip("/")
        if request.method == "GET" and path == "configz":
            return ProxyResponse(200, body)
        if request.method == "GET" and path in ("healthz", ""):
            return ProxyResponse(200, b"ok", "text/plain; charset=utf-8")
        return ProxyResponse(404, b"404 page not found\n", "text/plain; charset=utf-8")

    return handle
