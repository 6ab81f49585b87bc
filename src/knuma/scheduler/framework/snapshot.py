"""Build the scheduler's view of nodes (`NodeInfo`) from NodeResourceTopology and core/v1 Node objects."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from knuma.api.nrt import KIND as NRT_KIND
from knuma.api.nrt import NodeResourceTopology
from knuma.api.resources import parse_resource_list
from knuma.errors import InvalidInput
from knuma.scheduler.framework.interface import NodeInfo
from knuma.topology.node import NodeTopology

__all__ = ["SnapshotError", "node_infos_from_objects"]


class SnapshotError(InvalidInput):
    """Objects that do not describe a set of nodes."""


def node_infos_from_objects(objects: Iterable[Mapping[str, Any]]) -> list[NodeInfo]:
    """Pair NRT objects with Node objects by name, in order of first appearance.

    A Node without NRT is a node without NUMA data; an NRT without a Node gets the per-resource sum of its zones'
    available as node allocatable.
    """
    order: list[str] = []
    nrts: dict[str, NodeResourceTopology] = {}
    nodes: dict[str, Mapping[str, Any]] = {}
    for index, obj in enumerate(_flatten(objects)):
        if not isinstance(obj, Mapping):
            raise SnapshotError(f"document {index + 1}: expected a Kubernetes object, got {type(obj).__name__}")
        kind = obj.get("kind")
        if kind == NRT_KIND:
            nrt = NodeResourceTopology.from_dict(obj)
            if nrt.name in nrts:
                raise SnapshotError(f"NodeResourceTopology {nrt.name} is given twice")
            nrts[nrt.name] = nrt
            name = nrt.name
        elif kind == "Node":
            name = (obj.get("metadata") or {}).get("name") or ""
            if not name:
                raise SnapshotError(f"document {index + 1}: Node without metadata.name")
            if name in nodes:
                raise SnapshotError(f"Node {name} is given twice")
            nodes[name] = obj
        else:
            raise SnapshotError(
                f"document {index + 1}: unexpected kind {kind!r}; node files hold NodeResourceTopology and Node objects"
            )
        if name not in order:
            order.append(name)
    return [_node_info(name, nrts.get(name), nodes.get(name)) for name in order]


def _flatten(objects: Iterable[Any]) -> Iterable[Any]:
    """`kind: List` documents (what `kubectl get -o yaml` prints) contribute their items."""
    for obj in objects:
        if isinstance(obj, Mapping) and obj.get("kind") == "List":
            yield from _flatten(obj.get("items") or [])
        else:
            yield obj


def _node_info(name: str, nrt: NodeResourceTopology | None, node: Mapping[str, Any] | None) -> NodeInfo:
    topology = NodeTopology.from_nrt(nrt) if nrt is not None else None
    if node is not None:
        status = node.get("status") or {}
        raw = status.get("allocatable") or status.get("capacity") or {}
        allocatable = parse_resource_list(raw, f"Node {name}: status.allocatable")
    elif topology is not None:
        allocatable = topology.available_total()
    else:
        allocatable = {}
    return NodeInfo(name=name, allocatable=allocatable, topology=topology, manifest=node)
