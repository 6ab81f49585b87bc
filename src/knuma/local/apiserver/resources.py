"""Resource types the server serves: the built-in kinds and the ones CRDs add at runtime.

A `ResourceType` is what discovery advertises (`name`, `singularName`, `shortNames`, `verbs`, ...) and what the
router resolves a URL to. Storage is keyed by (group, plural): the versions of one resource share their objects, the
way a CRD with several served versions and conversion strategy `None` behaves.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    #: The openAPIV3Schema of a CRD version, used for validation; None for built-in kinds.
    schema: dict[str, Any] | None = None
    #: Whether `schema` has `x-kubernetes-validations` rules anywhere (most CRDs have none; their writes skip CEL).
    validation_rules: bool = False
    #: True for kinds defined by a CRD (strategic merge patch is then rejected, like a real server does).
    custom: bool = False
    #: The version objects are stored in (the CRD's storage version); equals `version` for built-ins.
    storage_version: str = ""
    #: Where objects live when another resource's storage is shared (events.k8s.io Events are core Events).
    storage: tuple[str, str] | None = None
    #: A CRD version's `additionalPrinterColumns` (for `kubectl get` tables).
    printer_columns: tuple[dict[str, Any], ...] = ()
    #: The scale subresource's (specReplicasPath, statusReplicasPath, labelSelectorPath), dotted JSON paths.
    scale_paths: tuple[str, str, str] = (".spec.replicas", ".status.replicas", "")

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> tuple[str, str]:
        return (self.group, self.plural)

    @property
    def storage_gr(self) -> tuple[str, str]:
        """The (group, plural) objects are stored under."""
        return self.storage or self.group_resource

    @property
    def storage_api_version(self) -> str:
        if self.custom:
            return f"{self.group}/{self.storage_version}"
        if self.storage is not None:
            return f"{self.storage[0]}/v1" if self.storage[0] else "v1"
        return self.api_version

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def discovery(self) -> list[dict[str, Any]]:
        """The `APIResourceList` entries for this resource and its subresources."""
        main: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular_name,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(self.verbs),
        }
        if self.short_names:
            main["shortNames"] = list(self.short_names)
        if self.categories:
            main["categories"] = list(self.categories)
        entries = [main]
        for sub in self.subresources:
            verbs = ["create"] if sub in ("binding", "eviction") else ["get", "patch", "update"]
            if sub == "proxy":
                verbs = ["create", "delete", "get", "patch", "update"]
            kind = {"binding": "Binding", "eviction": "Eviction", "proxy": "NodeProxyOptions", "scale": "Scale"}.get(
                sub, self.kind
            )
            entry: dict[str, Any] = {
                "name": f"{self.plural}/{sub}",
                "singularName": "",
                "namespaced": self.namespaced,
                "kind": kind,
                "verbs": verbs,
            }
            if sub == "scale":
                entry.update(group="autoscaling", version="v1")
            if sub == "eviction":  # kubectl drain evicts only when discovery names the Eviction's group and version
                entry.update(group="policy", version="v1")
            entries.append(entry)
        return entries


def _rt(
    group: str,
    version: str,
    plural: str,
    kind: str,
    namespaced: bool,
    short: Iterable[str] = (),
    sub: Iterable[str] = (),
    categories: Iterable[str] = (),
) -> ResourceType:
    return ResourceType(
        group=group,
        version=version,
        plural=plural,
        kind=kind,
        namespaced=namespaced,
        singular=kind.lower(),
        short_names=tuple(short),
        subresources=tuple(sub),
        categories=tuple(categories),
        storage_version=version,
    )


BUILTIN: tuple[ResourceType, ...] = (
    _rt("", "v1", "namespaces", "Namespace", False, ["ns"], ["status", "finalize"]),
    _rt("", "v1", "nodes", "Node", False, ["no"], ["status", "proxy"]),
    _rt("", "v1", "pods", "Pod", True, ["po"], ["status", "binding", "eviction", "resize"], ["all"]),
    _rt("", "v1", "configmaps", "ConfigMap", True, ["cm"]),
    _rt("", "v1", "secrets", "Secret", True),
    _rt("", "v1", "serviceaccounts", "ServiceAccount", True, ["sa"]),
    _rt("", "v1", "services", "Service", True, ["svc"], ["status"], ["all"]),
    _rt("", "v1", "events", "Event", True, ["ev"]),
    dataclasses.replace(_rt("events.k8s.io", "v1", "events", "Event", True, ["ev"]), storage=("", "events")),
    _rt("coordination.k8s.io", "v1", "leases", "Lease", True),
    _rt("apps", "v1", "deployments", "Deployment", True, ["deploy"], ["status", "scale"], ["all"]),
    _rt("apps", "v1", "daemonsets", "DaemonSet", True, ["ds"], ["status"], ["all"]),
    _rt("apps", "v1", "replicasets", "ReplicaSet", True, ["rs"], ["status", "scale"], ["all"]),
    _rt("apps", "v1", "statefulsets", "StatefulSet", True, ["sts"], ["status", "scale"], ["all"]),
    _rt("apps", "v1", "controllerrevisions", "ControllerRevision", True),
    _rt("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _rt("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _rt("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    _rt("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    _rt("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ["pc"]),
    _rt("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ["pdb"], ["status"]),
    _rt("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, ["netpol"]),
    # Dynamic Resource Allocation (kube-apiserver serves them without short names; `pkg/registry/resource/*`).
    _rt("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False),
    _rt("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True, sub=["status"]),
    _rt("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True),
    _rt("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False),
    # 1.34 serves DeviceTaintRules (KEP-5055) at v1alpha3 behind `DRADeviceTaints`; served here as if it were on
    _rt("resource.k8s.io", "v1alpha3", "devicetaintrules", "DeviceTaintRule", False, sub=["status"]),
    _rt(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        ["crd", "crds"],
        ["status"],
    ),
)

#: The (group, plural) pairs served by the server itself, which a CRD may never replace.
BUILTIN_RESOURCES: frozenset[tuple[str, str]] = frozenset(rt.group_resource for rt in BUILTIN)


@dataclass
class Registry:
    """All served resource types, indexed the ways the router and discovery need them."""

    _types: dict[tuple[str, str, str], ResourceType] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def with_builtins(cls) -> Registry:
        registry = cls()
        for rt in BUILTIN:
            registry.add(rt)
        return registry

    def add(self, rt: ResourceType) -> None:
        with self._lock:
            self._types[(rt.group, rt.version, rt.plural)] = rt

    def remove_group_resource(self, group: str, plural: str) -> None:
        with self._lock:
            for key in [k for k in self._types if k[0] == group and k[2] == plural]:
                del self._types[key]

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._types.values())

    def versions(self, group: str) -> list[str]:
        """Served versions of a group, preferred first (stable before beta before alpha, newer first)."""
        found = {v for g, v, _ in list(self._types) if g == group}
        return sorted(found, key=version_priority)

    def groups(self) -> list[str]:
        seen: list[str] = []
        for g, _, _ in list(self._types):
            if g and g not in seen:
                seen.append(g)
        return seen

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for (g, v, _), rt in list(self._types.items()) if g == group and v == version]

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        for rt in self.in_group_version(group, version):
            if rt.kind == kind:
                return rt
        return None


def version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes version ordering: GA > beta > alpha, then by major, then by minor (higher first)."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not m:
        return (3, 0, 0)
    major = int(m.group(1))
    stage = {"alpha": 2, "beta": 1, None: 0}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor)
