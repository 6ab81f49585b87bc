"""NodeResourceTopology (`topology.node.k8s.io`): read v1alpha1 and v1alpha2 objects, write v1alpha2.

The object is cluster-scoped and named after its node. Only zones of type `Node` named `node-<id>` (0 <= id <= 64)
describe NUMA nodes; other zones are kept when round-tripping but ignored by scheduling, as upstream does.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from knuma.api.resources import amount_of, format_amount
from knuma.errors import InvalidInput
from knuma.quantity import QuantityError, parse_quantity

__all__ = [
    "GROUP",
    "NRTError",
    "NodeResourceTopology",
    "Policy",
    "ResourceInfo",
    "Scope",
    "TopologyManagerConfig",
    "Zone",
    "numa_id_from_zone_name",
]

GROUP = "topology.node.k8s.io"
VERSIONS = ("v1alpha2", "v1alpha1")
KIND = "NodeResourceTopology"
ZONE_TYPE_NUMA = "Node"
MAX_NUMA_ID = 64
DEFAULT_MAX_NUMA_NODES = 8
MAX_NUMA_NODES_CAP = 1024
#: Costs are NUMA distances (10 local, at most 255 in an ACPI SLIT), int64 on the wire: negative or wider is corrupt.
MAX_COST = 2**63 - 1
MAX_ZONE_CPUS = 16384
"""CPUs one NUMA zone may report; the largest machines have a few thousand in all. Beyond it the NRT is invalid:
the packing score's per-zone tables grow with the free CPUs, and one object claiming 10^9 CPUs stalled the
scheduler."""

ATTR_POLICY = "topologyManagerPolicy"
ATTR_SCOPE = "topologyManagerScope"
ATTR_MAX_NUMA_NODES = "topologyManagerMaxNUMANodes"
ATTR_FINGERPRINT = "nodeTopologyPodsFingerprint"
ATTR_FINGERPRINT_METHOD = "nodeTopologyPodsFingerprintMethod"
ANNOTATION_FINGERPRINT = "topology.node.k8s.io/fingerprint"

_ATOI = re.compile(r"[+-]?[0-9]+")


class NRTError(InvalidInput):
    """A NodeResourceTopology object that cannot be read; the message names the object and the field."""


class Policy(enum.StrEnum):
    NONE = "none"
    BEST_EFFORT = "best-effort"
    RESTRICTED = "restricted"
    SINGLE_NUMA_NODE = "single-numa-node"

    @classmethod
    def parse(cls, value: str) -> Policy:
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(p.value for p in cls)
            raise InvalidInput(f"unknown Topology Manager policy {value!r}; expected one of: {choices}") from None


class Scope(enum.StrEnum):
    CONTAINER = "container"
    POD = "pod"

    @classmethod
    def parse(cls, value: str) -> Scope:
        try:
            return cls(value)
        except ValueError:
            raise InvalidInput(f"unknown Topology Manager scope {value!r}; expected container or pod") from None


_LEGACY_POLICIES = {
    "SingleNUMANodePodLevel": (Policy.SINGLE_NUMA_NODE, Scope.POD),
    "SingleNUMANodeContainerLevel": (Policy.SINGLE_NUMA_NODE, Scope.CONTAINER),
    "BestEffortPodLevel": (Policy.BEST_EFFORT, Scope.POD),
    "BestEffortContainerLevel": (Policy.BEST_EFFORT, Scope.CONTAINER),
    "RestrictedPodLevel": (Policy.RESTRICTED, Scope.POD),
    "RestrictedContainerLevel": (Policy.RESTRICTED, Scope.CONTAINER),
}
_LEGACY_BY_CONFIG = {v: k for k, v in _LEGACY_POLICIES.items()}


@dataclass(frozen=True, slots=True)
class TopologyManagerConfig:
    policy: Policy = Policy.NONE
    scope: Scope = Scope.CONTAINER
    max_numa_nodes: int = DEFAULT_MAX_NUMA_NODES


def numa_id_from_zone_name(name: str) -> int | None:
    """`node-3` -> 3; anything else (including ids above 64) -> None, as upstream's `numanode.NameToID`."""
    numa_id = _atoi(name[len("node-") :]) if name.startswith("node-") else None
    return numa_id if numa_id is not None and 0 <= numa_id <= MAX_NUMA_ID else None


def _atoi(text: str) -> int | None:
    """Go's `strconv.Atoi`: optional sign, ASCII digits, within int64; None where Go returns an error. Digits beyond
    int64's 19 (after leading zeros) are out of range before any conversion: Python refuses to convert strings of more
    than 4300 digits, and an object's text must not get that far."""
    if not _ATOI.fullmatch(text) or len(text.lstrip("+-").lstrip("0")) > 19:
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    name: str
    capacity: int
    allocatable: int
    available: int

    def to_dict(self) -> dict[str, str]:
        return {
            "name": self.name,
            "capacity": format_amount(self.name, self.capacity),
            "allocatable": format_amount(self.name, self.allocatable),
            "available": format_amount(self.name, self.available),
        }


@dataclass(frozen=True, slots=True)
class Zone:
    name: str
    type: str = ZONE_TYPE_NUMA
    parent: str = ""
    costs: Mapping[str, int] = field(default_factory=dict)
    attributes: Mapping[str, str] = field(default_factory=dict)
    resources: tuple[ResourceInfo, ...] = ()

    @property
    def numa_id(self) -> int | None:
        """The NUMA id when this zone describes a NUMA node, else None."""
        return numa_id_from_zone_name(self.name) if self.type == ZONE_TYPE_NUMA else None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.parent:
            out["parent"] = self.parent
        if self.costs:
            out["costs"] = [{"name": k, "value": v} for k, v in sorted(self.costs.items(), key=_zone_sort_key)]
        if self.attributes:
            out["attributes"] = [{"name": k, "value": v} for k, v in sorted(self.attributes.items())]
        out["resources"] = [r.to_dict() for r in sorted(self.resources, key=lambda r: r.name)]
        return out


@dataclass(frozen=True)
class NodeResourceTopology:
    name: str
    zones: tuple[Zone, ...]
    attributes: Mapping[str, str] = field(default_factory=dict)
    topology_policies: tuple[str, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    resource_version: str = ""

    @property
    def topology_manager(self) -> TopologyManagerConfig:
        """Legacy `topologyPolicies[0]` first, then the `topologyManager*` attributes override (upstream rules:
        invalid values are ignored, max NUMA nodes must be > 1 and is capped at 1024)."""
        policy, scope, max_numa = Policy.NONE, Scope.CONTAINER, DEFAULT_MAX_NUMA_NODES
        if self.topology_policies and self.topology_policies[0] in _LEGACY_POLICIES:
            policy, scope = _LEGACY_POLICIES[self.topology_policies[0]]
        raw_policy = self.attributes.get(ATTR_POLICY, "")
        if raw_policy in Policy._value2member_map_:
            policy = Policy(raw_policy)
        raw_scope = self.attributes.get(ATTR_SCOPE, "")
        if raw_scope in Scope._value2member_map_:
            scope = Scope(raw_scope)
        raw_max = self.attributes.get(ATTR_MAX_NUMA_NODES, "")
        parsed_max = _atoi(raw_max)
        if parsed_max is not None and parsed_max > 1:
            max_numa = min(parsed_max, MAX_NUMA_NODES_CAP)
        return TopologyManagerConfig(policy, scope, max_numa)

    @property
    def fingerprint(self) -> str:
        return self.attributes.get(ATTR_FINGERPRINT) or self.annotations.get(ANNOTATION_FINGERPRINT, "")

    def numa_zones(self) -> list[tuple[int, Zone]]:
        """NUMA zones with their ids, sorted by id; duplicates keep the first occurrence."""
        seen: dict[int, Zone] = {}
        for zone in self.zones:
            numa_id = zone.numa_id
            if numa_id is not None and numa_id not in seen:
                seen[numa_id] = zone
        return sorted(seen.items())

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> NodeResourceTopology:
        """Read a v1alpha1 or v1alpha2 object; raise `NRTError` naming the offending field."""
        if not isinstance(obj, Mapping):
            raise NRTError("a NodeResourceTopology must be a mapping")
        api_version = str(obj.get("apiVersion", f"{GROUP}/v1alpha2"))
        group, _, version = api_version.partition("/")
        if group != GROUP or version not in VERSIONS:
            raise NRTError(
                f"unsupported apiVersion {api_version!r} for NodeResourceTopology; expected {GROUP}/v1alpha2"
            )
        metadata = obj.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise NRTError("NodeResourceTopology: metadata must be a mapping")
        name = metadata.get("name")
        if not name or not isinstance(name, str):
            raise NRTError("NodeResourceTopology without metadata.name (it must be the node name, a string)")
        where = f"NodeResourceTopology {name}"
        raw_zones = obj.get("zones")
        if raw_zones is None:
            raw_zones = []
        if not isinstance(raw_zones, Sequence) or isinstance(raw_zones, str):
            raise NRTError(f"{where}: zones must be a list")
        zones = tuple(_zone_from_dict(z, f"{where}: zones[{i}]") for i, z in enumerate(raw_zones))
        policies = _list(obj.get("topologyPolicies"), f"{where}: topologyPolicies")
        return cls(
            name=name,
            zones=zones,
            attributes=_attributes(obj.get("attributes"), f"{where}: attributes"),
            topology_policies=tuple(str(p) for p in policies),
            annotations=_string_map(metadata.get("annotations"), f"{where}: metadata.annotations"),
            labels=_string_map(metadata.get("labels"), f"{where}: metadata.labels"),
            resource_version=str(metadata.get("resourceVersion") or ""),
        )

    def to_dict(self) -> dict[str, Any]:
        """The v1alpha2 object, deterministically ordered."""
        metadata: dict[str, Any] = {"name": self.name}
        if self.labels:
            metadata["labels"] = dict(sorted(self.labels.items()))
        if self.annotations:
            metadata["annotations"] = dict(sorted(self.annotations.items()))
        out: dict[str, Any] = {"apiVersion": f"{GROUP}/v1alpha2", "kind": KIND, "metadata": metadata}
        if self.topology_policies:
            out["topologyPolicies"] = list(self.topology_policies)
        out["zones"] = [z.to_dict() for z in sorted(self.zones, key=lambda z: _zone_sort_key((z.name, 0)))]
        if self.attributes:
            out["attributes"] = [{"name": k, "value": v} for k, v in sorted(self.attributes.items())]
        return out


def legacy_policy_name(config: TopologyManagerConfig) -> str | None:
    """The deprecated `topologyPolicies` value for a config, for producers that still fill it."""
    return _LEGACY_BY_CONFIG.get((config.policy, config.scope))


def _zone_sort_key(item: tuple[str, int]) -> tuple[int, int, str]:
    """Zones and costs sort by NUMA id numerically (node-2 before node-10), others by name after them."""
    numa_id = numa_id_from_zone_name(item[0])
    return (0, numa_id, "") if numa_id is not None else (1, 0, item[0])


def _list(raw: Any, where: str) -> Sequence[Any]:
    """A list field (None reads as empty); anything else is an error naming the field."""
    if raw is None:
        return []
    if not isinstance(raw, Sequence) or isinstance(raw, str | bytes):
        raise NRTError(f"{where}: must be a list, got {type(raw).__name__}")
    return raw


def _string_map(raw: Any, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise NRTError(f"{where}: must be a map of strings")
    return dict(raw)


def _attributes(raw: Any, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Sequence) or isinstance(raw, str | bytes):
        raise NRTError(f"{where}: must be a list of {{name, value}}")
    out: dict[str, str] = {}
    for item in raw:
        if not isinstance(item, Mapping) or "name" not in item:
            raise NRTError(f"{where}: every attribute needs a name and a value")
        out[str(item["name"])] = str(item.get("value", ""))
    return out


def _zone_from_dict(raw: Any, where: str) -> Zone:
    if not isinstance(raw, Mapping):
        raise NRTError(f"{where}: a zone must be a mapping")
    name = raw.get("name")
    if not name or not isinstance(name, str):
        raise NRTError(f"{where}: zone without a name")
    where = f"{where} ({name})"
    costs: dict[str, int] = {}
    for cost in _list(raw.get("costs"), f"{where}: costs"):
        value = cost.get("value") if isinstance(cost, Mapping) else None
        if isinstance(value, str) and _ATOI.fullmatch(value):
            converted = _atoi(value)
            if converted is None:
                shown = value if len(value) <= 30 else f"{value[:30]}..."
                raise NRTError(f"{where}: cost {shown} to {cost.get('name')} is out of range (0 to {MAX_COST})")
            value = converted
        if not isinstance(cost, Mapping) or "name" not in cost or isinstance(value, bool) or not isinstance(value, int):
            raise NRTError(f"{where}: costs entries need a name and an integer value, got {cost!r}")
        if not 0 <= value <= MAX_COST:
            raise NRTError(f"{where}: cost {value} to {cost['name']} is out of range (0 to {MAX_COST})")
        costs[str(cost["name"])] = value
    resources = []
    for info in _list(raw.get("resources"), f"{where}: resources"):
        if not isinstance(info, Mapping) or not info.get("name"):
            raise NRTError(f"{where}: resources entries need a name")
        rname = str(info["name"])
        try:
            capacity = _amount(rname, info.get("capacity"))
            allocatable = _amount(rname, info.get("allocatable"))
            available = _amount(rname, info.get("available"))
        except QuantityError as err:
            raise NRTError(f"{where}: resource {rname}: {err}") from None
        if rname == "cpu" and max(capacity, allocatable, available) > MAX_ZONE_CPUS * 1000:
            raise NRTError(
                f"{where}: resource cpu: {max(capacity, allocatable, available) // 1000} CPUs is more than any NUMA "
                f"zone has (at most {MAX_ZONE_CPUS}); the exporter that wrote it is wrong"
            )
        resources.append(ResourceInfo(rname, capacity, allocatable, available))
    return Zone(
        name=str(name),
        type=str(raw.get("type") or ""),
        parent=str(raw.get("parent") or ""),
        costs=costs,
        attributes=_attributes(raw.get("attributes"), f"{where}: attributes"),
        resources=tuple(resources),
    )


def _amount(name: str, raw: Any) -> int:
    """Missing quantities read as 0: producers and upstream tests emit objects without `allocatable`."""
    if raw is None or raw == "":
        return 0
    return amount_of(name, parse_quantity(raw))
