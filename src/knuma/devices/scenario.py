"""A scheduling question as plain objects: what `knuma claims schedule` and `knuma claims allocate` read.

Either the k8srm prototype's objects (DeviceClaim, DevicePool, optionally DeviceClass / DeviceDriver) or
`resource.k8s.io/v1` objects (ResourceSlice, DeviceClass, ResourceClaim, ResourceClaimTemplate) with an optional Pod,
Nodes, NodeResourceTopology objects and Namespaces. Other kinds (a ConfigMap in the prototype's classes.yaml) are
skipped with a warning.

The pod's claims are what it references in `spec.resourceClaims`: a `resourceClaimName`, or a
`resourceClaimTemplateName` from which the claim is generated as the resourceclaim controller would (named
`<pod>-<entry>` here, deterministic; a claim of that name in the input is used as is). Without a Pod, every claim
without an allocation is to be allocated. Allocated claims hold their devices.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from knuma.api.devmgmt.types import (
    API_VERSION,
    DeviceClaim,
    DevicePool,
    parse_prototype,
)
from knuma.api.dra.deviceclass import DeviceClass
from knuma.api.dra.resourceclaim import ResourceClaim, ResourceClaimTemplate
from knuma.api.dra.resourceslice import ResourceSlice
from knuma.api.nrt import NodeResourceTopology
from knuma.api.pod import Pod
from knuma.devices.allocator import NodeView
from knuma.errors import InvalidInput
from knuma.topology.node import NodeTopology

__all__ = ["ADMIN_ACCESS_LABEL", "DRAScenario", "PrototypeScenario", "ScenarioError", "read_scenario"]

ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
_DRA_KINDS = ("ResourceSlice", "DeviceClass", "ResourceClaim", "ResourceClaimTemplate")


class ScenarioError(InvalidInput):
    """Input that cannot be read as a scheduling question."""


@dataclass(frozen=True)
class PrototypeScenario:
    claims: tuple[DeviceClaim, ...]
    pools: tuple[DevicePool, ...]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class DRAScenario:
    claims: tuple[ResourceClaim, ...]
    """Every claim of the input plus the pod's generated ones."""
    to_allocate: tuple[ResourceClaim, ...]
    classes: Mapping[str, DeviceClass]
    slices: tuple[ResourceSlice, ...]
    nodes: tuple[NodeView, ...]
    pod: Pod | None = None
    admin_namespaces: frozenset[str] | None = None
    """Namespaces labelled for admin access; None when the input holds no Namespace (offline: allowed)."""
    warnings: tuple[str, ...] = field(default=())

    def admin_access_allowed(self, namespace: str) -> bool:
        return self.admin_namespaces is None or namespace in self.admin_namespaces


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, Mapping) else ""


def _named(obj: Mapping[str, Any], kind: str) -> tuple[str, Mapping[str, str]]:
    """The name and labels of a Node or Namespace, which must have a name (a string) and labels (a mapping)."""
    meta = obj.get("metadata") or {}
    if not isinstance(meta, Mapping):
        raise ScenarioError(
            f"{kind} metadata must be a mapping with the {kind}'s name and labels, got {reprlib.repr(meta)}"
        )
    name = meta.get("name")
    if not name or not isinstance(name, str):
        raise ScenarioError(f"{kind} without metadata.name (the {kind}'s name, a string)")
    labels = meta.get("labels") or {}
    if not isinstance(labels, Mapping):
        raise ScenarioError(
            f"{kind} {name}: metadata.labels must be a mapping of label to value, got {reprlib.repr(labels)}"
        )
    return name, labels


def read_scenario(objects: Sequence[tuple[str, Mapping[str, Any]]]) -> PrototypeScenario | DRAScenario:
    """The scheduling question the objects ask; each object comes with where it is (`FILE: document N`, as
    `knuma.manifests.load_objects` gives them), and an object that cannot be read is a `ScenarioError` naming it."""
    prototype = [o for _, o in objects if str(o.get("apiVersion", "")) == API_VERSION]
    dra = [o for _, o in objects if str(o.get("apiVersion", "")).startswith("resource.k8s.io/")]
    if prototype and dra:
        raise ScenarioError(
            f"the input mixes {API_VERSION} objects with resource.k8s.io objects; give one kind of input at a time"
        )
    if prototype:
        return _prototype(objects)
    return _dra(objects)


@contextmanager
def _at(where: str) -> Iterator[None]:
    """An object's errors, naming where it is: `FILE: document N: ...`."""
    try:
        yield
    except InvalidInput as err:
        raise ScenarioError(f"{where}: {err}") from None


def _prototype(objects: Sequence[tuple[str, Mapping[str, Any]]]) -> PrototypeScenario:
    claims, pools, warnings = [], [], []
    for where, obj in objects:
        if obj.get("apiVersion") != API_VERSION:
            warnings.append(f"skipping {obj.get('kind', 'object')} {_name(obj)!r}: not a {API_VERSION} object")
            continue
        with _at(where):
            parsed, found = parse_prototype(obj)
        warnings += found
        if isinstance(parsed, DeviceClaim):
            claims.append(parsed)
        elif isinstance(parsed, DevicePool):
            pools.append(parsed)
    if not pools:
        raise ScenarioError("no DevicePool objects in the input: nothing to schedule on")
    return PrototypeScenario(tuple(claims), tuple(pools), tuple(warnings))


def _dra(objects: Sequence[tuple[str, Mapping[str, Any]]]) -> DRAScenario:
    classes: dict[str, DeviceClass] = {}
    slices: list[ResourceSlice] = []
    claims: dict[str, ResourceClaim] = {}
    templates: dict[str, ResourceClaimTemplate] = {}
    pods: list[tuple[str, Mapping[str, Any]]] = []
    labels: dict[str, Mapping[str, str]] = {}
    topologies: dict[str, NodeTopology] = {}
    admin: set[str] | None = None
    warnings: list[str] = []
    for where, obj in objects:
        with _at(where):
            kind = str(obj.get("kind", ""))
            api_version = str(obj.get("apiVersion", ""))
            if api_version.startswith("resource.k8s.io/") and api_version != "resource.k8s.io/v1":
                raise ScenarioError(
                    f"{kind} {_name(obj)!r}: apiVersion {api_version} is not supported; use resource.k8s.io/v1"
                )
            if kind == "DeviceClass":
                cls = DeviceClass.from_dict(obj)
                classes[cls.name] = cls
            elif kind == "ResourceSlice":
                slices.append(ResourceSlice.from_dict(obj))
            elif kind == "ResourceClaim":
                claim = ResourceClaim.from_dict(obj)
                claims[claim.key] = claim
            elif kind == "ResourceClaimTemplate":
                template = ResourceClaimTemplate.from_dict(obj)
                templates[f"{template.namespace}/{template.name}"] = template
            elif kind == "Pod":
                pods.append((where, obj))
            elif kind == "Node":
                name, node_labels = _named(obj, kind)
                labels[name] = node_labels
            elif kind == "NodeResourceTopology":
                nrt = NodeResourceTopology.from_dict(obj)
                topologies[nrt.name] = NodeTopology.from_nrt(nrt)
            elif kind == "Namespace":
                admin = admin if admin is not None else set()
                name, namespace_labels = _named(obj, kind)
                if namespace_labels.get(ADMIN_ACCESS_LABEL) == "true":
                    admin.add(name)
            else:
                warnings.append(f"skipping {kind or 'object'} {_name(obj)!r}: not used for device scheduling")
    if len(pods) > 1:
        raise ScenarioError(f"the input holds {len(pods)} Pods; give at most one")
    pod = None
    to_allocate: list[ResourceClaim]
    if pods:
        where, manifest = pods[0]
        with _at(where):
            pod = Pod.from_manifest(manifest)
            to_allocate = _pod_claims(manifest, pod, claims, templates)
        for claim in to_allocate:
            claims.setdefault(claim.key, claim)
    else:
        to_allocate = [c for c in claims.values() if c.allocation is None]
    names = set(labels) | set(topologies)
    for s in slices:
        if s.node.node_name:
            names.add(s.node.node_name)
        for device in s.devices:
            if device.node is not None and device.node.node_name:
                names.add(device.node.node_name)
    nodes = tuple(NodeView(n, labels.get(n, {}), topologies.get(n)) for n in sorted(names))
    return DRAScenario(
        tuple(claims.values()),
        tuple(to_allocate),
        classes,
        tuple(slices),
        nodes,
        pod,
        frozenset(admin) if admin is not None else None,
        tuple(warnings),
    )


def _pod_claims(
    manifest: Mapping[str, Any],
    pod: Pod,
    claims: Mapping[str, ResourceClaim],
    templates: Mapping[str, ResourceClaimTemplate],
) -> list[ResourceClaim]:
    out = []
    entries = manifest["spec"].get("resourceClaims")  # Pod.from_manifest checked that spec is a mapping
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        raise ScenarioError(
            f"Pod {pod.namespace}/{pod.name}: spec.resourceClaims must be a list of entries with a name and a "
            f"resourceClaimName or resourceClaimTemplateName, got {reprlib.repr(entries)}"
        )
    for i, entry in enumerate(entries):
        where = f"Pod {pod.namespace}/{pod.name}: spec.resourceClaims[{i}]"
        if not isinstance(entry, Mapping) or not entry.get("name"):
            raise ScenarioError(f"{where}: needs a name")
        if entry.get("resourceClaimName"):
            key = f"{pod.namespace}/{entry['resourceClaimName']}"
            if key not in claims:
                raise ScenarioError(f"{where}: ResourceClaim {key} is not in the input")
            out.append(claims[key])
        elif entry.get("resourceClaimTemplateName"):
            key = f"{pod.namespace}/{entry['resourceClaimTemplateName']}"
            if key not in templates:
                raise ScenarioError(f"{where}: ResourceClaimTemplate {key} is not in the input")
            generated = templates[key].claim_for(pod.name, str(entry["name"]))
            out.append(claims.get(generated.key, generated))
        else:
            raise ScenarioError(f"{where}: set resourceClaimName or resourceClaimTemplateName")
    return out
