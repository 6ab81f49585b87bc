"""The Node and Lease objects of a simulated node, as a kubelet registers and renews them.

- Node: labels a kubelet and a cluster's tooling set (`kubernetes.io/hostname`, `kubernetes.io/os`,
  `kubernetes.io/arch`, `node-role.kubernetes.io/worker`, `node.kubernetes.io/instance-type` = the shape,
  `topology.kubernetes.io/zone` = the pool), capacity and allocatable from the shape (cpu, memory, hugepages, devices,
  pods, ephemeral-storage), the four standard conditions with `Ready`, addresses, `nodeInfo`, `podCIDR`.
- Lease `kube-node-lease/<node>`: `holderIdentity` = the node, `leaseDurationSeconds` 40, `renewTime` (MicroTime)
  renewed every 10 s, owned by the Node (as the kubelet's node lease controller does).
"""

from __future__ import annotations

import platform
import uuid
from datetime import UTC, datetime

from knuma import __version__
from knuma.api.resources import format_amount
from knuma.api.types import JsonObj
from knuma.local.nodes.kubeletconfig import KUBELET_VERSION
from knuma.local.nodes.podstatus import timestamp
from knuma.local.nodes.spec import NodeSpec

__all__ = [
    "LEASE_DURATION_SECONDS",
    "NODE_LEASE_NAMESPACE",
    "SIMULATED_ANNOTATION",
    "lease_manifest",
    "micro_time",
    "node_conditions",
    "node_manifest",
]

NODE_LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_SECONDS = 40
SIMULATED_ANNOTATION = "sim.knuma.io/simulated"
SHAPE_LABEL = "sim.knuma.io/shape"


def micro_time(when: datetime | None = None) -> str:
    """`metav1.MicroTime`: RFC 3339 with microseconds (`2024-05-01T12:00:00.123456Z`)."""
    return (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _resources(node: NodeSpec) -> tuple[dict[str, str], dict[str, str]]:
    """Capacity (every zone's hardware) and allocatable (minus reservations), as quantity strings."""
    shape = node.shape
    allocatable = shape.allocatable()
    capacity = {name: amount * shape.zones for name, amount in shape.zone_capacity().items()}
    for name in ("pods", "ephemeral-storage"):
        capacity[name] = allocatable[name]
    return (
        {name: format_amount(name, amount) for name, amount in sorted(capacity.items())},
        {name: format_amount(name, amount) for name, amount in sorted(allocatable.items())},
    )


def node_conditions(now: datetime | None = None, *, since: str | None = None) -> list[JsonObj]:
    """MemoryPressure, DiskPressure, PIDPressure false and Ready true; heartbeat `now`, transition at `since`."""
    beat = timestamp(now)
    changed = since or beat
    healthy = [
        ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ]
    conditions = [
        {
            "type": kind,
            "status": "False",
            "lastHeartbeatTime": beat,
            "lastTransitionTime": changed,
            "reason": reason,
            "message": message,
        }
        for kind, reason, message in healthy
    ]
    conditions.append(
        {
            "type": "Ready",
            "status": "True",
            "lastHeartbeatTime": beat,
            "lastTransitionTime": changed,
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
        }
    )
    return conditions


def node_manifest(node: NodeSpec, now: datetime | None = None) -> JsonObj:
    """The Node object the simulated kubelet registers."""
    capacity, allocatable = _resources(node)
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": node.name,
        "kubernetes.io/os": "linux",
        "node-role.kubernetes.io/worker": "",
        "node.kubernetes.io/instance-type": node.shape.name,
        SHAPE_LABEL: node.shape.name,
    }
    if node.pool:
        labels["topology.kubernetes.io/zone"] = node.pool
    machine_id = uuid.uuid5(uuid.NAMESPACE_DNS, f"{node.name}.knuma.sim").hex
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node.name,
            "labels": labels,
            "annotations": {
                SIMULATED_ANNOTATION: "true",
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"podCIDR": node.pod_cidr, "podCIDRs": [node.pod_cidr]},
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": node_conditions(now),
            "addresses": [
                {"type": "InternalIP", "address": node.internal_ip},
                {"type": "Hostname", "address": node.name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": str(uuid.uuid4()),
                "containerRuntimeVersion": f"knuma://{__version__}",
                "kernelVersion": platform.release(),
                "kubeProxyVersion": "",
                "kubeletVersion": KUBELET_VERSION,
                "machineID": machine_id,
                "operatingSystem": "linux",
                "osImage": f"knuma simulated node ({node.shape.name})",
                "systemUUID": str(uuid.UUID(machine_id)),
            },
        },
    }


def lease_manifest(node_name: str, node_uid: str, now: datetime | None = None) -> JsonObj:
    """The node's Lease, renewed at `now`."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": node_name,
            "namespace": NODE_LEASE_NAMESPACE,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": node_uid}],
        },
        "spec": {
            "holderIdentity": node_name,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": micro_time(now),
        },
    }
