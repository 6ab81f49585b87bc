"""CustomResourceDefinitions for the prototype's kinds, generated from the models in `knuma.api.devmgmt.types`.

The prototype served its kinds from a schema-less mock API server; knuma's API server (part 2) and real clusters need
CRDs. Each field's schema comes from the dataclass field's type (a field added to a model appears in its CRD); the
layout (which fields sit in `spec`, which in `status`, which at the top level as in DeviceDriver) and the wire names
that are not plain camelCase are named here. Scopes follow the prototype's mock server registration: drivers, classes
and pools cluster-scoped, claims namespaced.
"""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
from typing import Any

from knuma.api.devmgmt.types import (
    GROUP,
    Attribute,
    ConfigReference,
    DeviceClaim,
    DeviceClass,
    DeviceDriver,
    DevicePool,
    DevicePrivilegedClaim,
)
from knuma.quantity import Quantity

__all__ = ["prototype_crds"]

#: The group is under k8s.io, which needs API review; like upstream's experimental CRDs, these say they are unapproved.
APPROVAL = "api-approved.kubernetes.io"
UNAPPROVED = "unapproved, experimental-only"
_WIRE_NAMES = {"semver_value": "semVerValue", "api_version": "apiVersion"}
_QUANTITY = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
_ALLOCATIONS = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["devicePoolName", "deviceCount"],
        "properties": {"devicePoolName": {"type": "string"}, "deviceCount": {"type": "integer"}},
    },
}
_REQUIRED = {"device_types", "device_type", "device_class", "driver", "name"}
"""Fields the prototype marks required (`+required`); `driver` is optional on classes and claims."""
_OPTIONAL_IN = {DeviceClass: {"driver"}, DeviceClaim: {"driver"}}

# kind -> (model, plural, scope, {section: field names})
_LAYOUT: dict[str, tuple[type[Any], str, str, dict[str, tuple[str, ...]]]] = {
    "DeviceDriver": (DeviceDriver, "devicedrivers", "Cluster", {"": ("device_types",)}),
    "DeviceClass": (
        DeviceClass,
        "deviceclasses",
        "Cluster",
        {
            "spec": (
                "device_type",
                "driver",
                "constraints",
                "min_device_count",
                "max_device_count",
                "match_attributes",
                "configs",
            )
        },
    ),
    "DeviceClaim": (
        DeviceClaim,
        "deviceclaims",
        "Namespaced",
        {
            "spec": (
                "device_class",
                "driver",
                "constraints",
                "min_device_count",
                "max_device_count",
                "match_attributes",
                "configs",
            ),
            "status": ("allocations", "pod_names"),
        },
    ),
    "DevicePrivilegedClaim": (
        DevicePrivilegedClaim,
        "deviceprivilegedclaims",
        "Namespaced",
        {"spec": ("driver", "constraints", "configs")},
    ),
    "DevicePool": (
        DevicePool,
        "devicepools",
        "Cluster",
        {"spec": ("node_name", "driver", "attributes", "count"), "status": ("available_devices",)},
    ),
}


def _wire(name: str) -> str:
    if name in _WIRE_NAMES:
        return _WIRE_NAMES[name]
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _schema(hint: Any, where: str) -> dict[str, Any]:
    if isinstance(hint, types.UnionType):
        (inner,) = [a for a in typing.get_args(hint) if a is not type(None)]
        return _schema(inner, where)
    if hint is str:
        return {"type": "string"}
    if hint is int:
        return {"type": "integer"}
    if hint is Quantity:
        return dict(_QUANTITY)
    if hint in (Attribute, ConfigReference):
        return _object(hint, tuple(f.name for f in dataclasses.fields(hint)))
    args = typing.get_args(hint)
    if typing.get_origin(hint) is tuple and len(args) == 2 and args[1] is Ellipsis:
        if typing.get_origin(args[0]) is tuple:
            return copy.deepcopy(_ALLOCATIONS)
        return {"type": "array", "items": _schema(args[0], where)}
    raise TypeError(f"{where}: no CRD schema for {hint!r}; extend knuma.api.devmgmt.crd")


def _object(model: type[Any], names: tuple[str, ...]) -> dict[str, Any]:
    hints = typing.get_type_hints(model)
    properties = {_wire(n): _schema(hints[n], f"{model.__name__}.{n}") for n in names}
    required = sorted(
        _wire(n)
        for n in names
        if n in _REQUIRED and n not in _OPTIONAL_IN.get(model, set()) and not isinstance(hints[n], types.UnionType)
    )
    body: dict[str, Any] = {"type": "object", "properties": dict(sorted(properties.items()))}
    if required:
        body["required"] = required
    return body


def _root(kind: str) -> dict[str, Any]:
    model, _, _, sections = _LAYOUT[kind]
    properties: dict[str, Any] = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
    }
    required: list[str] = []
    for section, names in sections.items():
        body = _object(model, names)
        if section:
            properties[section] = body
        else:
            properties.update(body["properties"])
            required += body.get("required", [])
    root: dict[str, Any] = {"type": "object", "properties": dict(sorted(properties.items()))}
    if required:
        root["required"] = sorted(required)
    return root


def prototype_crds() -> list[dict[str, Any]]:
    """One `apiextensions.k8s.io/v1` CRD per prototype kind (fresh objects on every call)."""
    crds = []
    for kind, (_, plural, scope, sections) in _LAYOUT.items():
        version: dict[str, Any] = {
            "name": "v1alpha1",
            "served": True,
            "storage": True,
            "schema": {"openAPIV3Schema": _root(kind)},
        }
        if "status" in sections:
            version["subresources"] = {"status": {}}
        crds.append(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                # A *.k8s.io group: kube-apiserver (and knuma's) refuse the CRD without this annotation.
                "metadata": {"name": f"{plural}.{GROUP}", "annotations": {APPROVAL: UNAPPROVED}},
                "spec": {
                    "group": GROUP,
                    "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
                    "scope": scope,
                    "versions": [version],
                },
            }
        )
    return crds
