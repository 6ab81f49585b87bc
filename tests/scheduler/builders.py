"""Small builders for scheduler tests: NRT and Pod manifests as plain dicts, DRA device state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knuma.api.nrt import NodeResourceTopology
from knuma.api.pod import Pod
from knuma.scheduler.framework.interface import NodeInfo
from knuma.scheduler.plugins.device_state import DeviceState
from knuma.testbed.dra import device_classes, resource_slices
from knuma.testbed.shapes import NodeShape
from knuma.topology.node import NodeTopology


def nrt(
    name: str,
    zones: Mapping[int, Mapping[str, tuple[str, str] | str]],
    policy: str = "single-numa-node",
    scope: str = "container",
    **attributes: str,
) -> dict[str, Any]:
    """zones: numa id -> resource -> available, or (allocatable, available)."""
    out_zones = []
    for numa_id, resources in zones.items():
        rows = []
        for rname, value in resources.items():
            allocatable, available = value if isinstance(value, tuple) else (value, value)
            rows.append({"name": rname, "capacity": allocatable, "allocatable": allocatable, "available": available})
        out_zones.append({"name": f"node-{numa_id}", "type": "Node", "resources": rows})
    attrs = [{"name": "topologyManagerPolicy", "value": policy}, {"name": "topologyManagerScope", "value": scope}]
    attrs += [{"name": k, "value": v} for k, v in attributes.items()]
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name},
        "zones": out_zones,
        "attributes": attrs,
    }


def node_info(nrt_obj: dict[str, Any], allocatable: dict[str, int] | None = None) -> NodeInfo:
    topology = NodeTopology.from_nrt(NodeResourceTopology.from_dict(nrt_obj))
    return NodeInfo(
        name=nrt_obj["metadata"]["name"],
        allocatable=allocatable if allocatable is not None else topology.available_total(),
        topology=topology,
    )


def container(
    name: str, limits: dict[str, str] | None = None, requests: dict[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if limits:
        resources["limits"] = limits
    if requests:
        resources["requests"] = requests
    return {"name": name, "image": "busybox", "resources": resources, **extra}


def pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = (), name: str = "p") -> Pod:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    return Pod.from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})


def guaranteed(
    name: str, cpu: str, memory: str = "1Gi", limits: dict[str, str] | None = None, **fields: Any
) -> dict[str, Any]:
    return container(name, limits={"cpu": cpu, "memory": memory, **(limits or {})}, **fields)


def device_state(shape: NodeShape, nodes: list[str] | tuple[str, ...]) -> DeviceState:
    """The scheduler's DRA objects for `nodes` of one testbed shape: its DeviceClasses and each node's slices."""
    state = DeviceState()
    for body in device_classes([shape]):
        state.set_class(body)
    for node in nodes:
        for body in resource_slices(node, shape):
            state.set_slice(body)
    return state
