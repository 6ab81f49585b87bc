"""Build the scheduler's view of nodes (`NodeInfo`) from NodeResourceTopology and core/v1 Node objects."""

from __future__ import annotations

import reprlib
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


def node_infos_from_objects(documents: Iterable[tuple[str, Any]]) -> list[NodeInfo]:
    """Pair NRT objects with Node objects by name, in order of first appearance. Each object comes with where it is
    (`FILE: document N`, as `knuma.manifests.load_objects` gives them), which errors name.

    A Node without NRT is a node without NUMA data; an NRT without a Node gets the per-resource sum of its zones'
    available as node allocatable.
    """
    order: list[str] = []
    nrts: dict[str, tuple[str, NodeResourceTopology]] = {}
    nodes: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for where, obj in _flatten(documents):
        if not isinstance(obj, Mapping):
            raise SnapshotError(f"{where}: expected a Kubernetes object (a mapping), got {reprlib.repr(obj)}")
        kind = obj.get("kind")
        if kind == NRT_KIND:
            try:
                nrt = NodeResourceTopology.from_dict(obj)
            except InvalidInput as err:
                raise SnapshotError(f"{where}: {err}") from None
            if nrt.name in nrts:
                raise SnapshotError(f"{where}: NodeResourceTopology {nrt.name} is given twice")
            nrts[nrt.name] = (where, nrt)
            name = nrt.name
        elif kind == "Node":
            name = _node_name(obj, where)
            if name in nodes:
                raise SnapshotError(f"{where}: Node {name} is given twice")
            nodes[name] = (where, obj)
        elif kind is None:
            raise SnapshotError(f"{where}: the object has no kind; set kind: Node or kind: {NRT_KIND} ({_KINDS})")
        else:
            raise SnapshotError(f"{where}: unexpected kind {kind!r}; {_KINDS}")
        if name not in order:
            order.append(name)
    return [_node_info(name, nrts.get(name), nodes.get(name)) for name in order]


_KINDS = f"node files hold {NRT_KIND} and Node objects, or a List of them"


def _node_name(node: Mapping[str, Any], where: str) -> str:
    metadata = node.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise SnapshotError(
            f"{where}: Node metadata must be a mapping with the node's name (metadata: {{name: NODE}}), "
            f"got {reprlib.repr(metadata)}"
        )
    name = metadata.get("name")
    if not name or not isinstance(name, str):
        raise SnapshotError(f"{where}: Node without metadata.name (the node's name, a string)")
    return name


def _flatten(documents: Iterable[tuple[str, Any]]) -> Iterable[tuple[str, Any]]:
    """`kind: List` documents (what `kubectl get -o yaml` prints) contribute their items."""
    for where, obj in documents:
        if isinstance(obj, Mapping) and obj.get("kind") == "List":
            items = obj.get("items")
            if items is None:
                continue
            if not isinstance(items, list):
                raise SnapshotError(f"{where}: a List's items must be a list of objects, got {reprlib.repr(items)}")
            yield from _flatten((f"{where}, items[{index}]", item) for index, item in enumerate(items))
        else:
            yield where, obj


def _node_info(
    name: str, nrt: tuple[str, NodeResourceTopology] | None, node: tuple[str, Mapping[str, Any]] | None
) -> NodeInfo:
    topology = None
    if nrt is not None:
        try:
            topology = NodeTopology.from_nrt(nrt[1])
        except InvalidInput as err:
            raise SnapshotError(f"{nrt[0]}: {err}") from None
    manifest = None
    if node is not None:
        where, manifest = node
        status = manifest.get("status") or {}
        if not isinstance(status, Mapping):
            raise SnapshotError(f"{where}: Node {name}: status must be a mapping with allocatable or capacity")
        key = "allocatable" if status.get("allocatable") else "capacity"
        allocatable = parse_resource_list(status.get(key) or {}, f"{where}: Node {name}: status.{key}")
    elif topology is not None:
        allocatable = topology.available_total()
    else:
        allocatable = {}
    return NodeInfo(name=name, allocatable=allocatable, topology=topology, manifest=manifest)
