"""The NodeResourceTopology CustomResourceDefinition, generated from the models in `knuma.api.nrt`.

One source of truth: the schema is derived from the dataclasses' fields and types (a field added to `Zone` appears
in the CRD), and the few places where the wire format differs from the Python shape are named here (maps that are
lists of `{name, value}` on the wire, quantities, fields that live in `metadata`). A test checks the result against
the upstream CRD (k8stopologyawareschedwg/noderesourcetopology-api): `v1alpha2` served and stored, `v1alpha1` served,
cluster-scoped, short name `node-res-topo`.
"""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any

from knuma.api.nrt import GROUP, KIND, NodeResourceTopology, ResourceInfo, Zone

__all__ = ["CRD_NAME", "NRT_CRD", "nrt_crd", "openapi_schema"]

PLURAL = "noderesourcetopologies"
CRD_NAME = f"{PLURAL}.{GROUP}"
SHORT_NAME = "node-res-topo"

#: The pattern Kubernetes puts on `resource.Quantity` (int-or-string) fields in generated CRDs.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

#: Fields that are Kubernetes object metadata, not part of the schema body.
_METADATA_FIELDS = {NodeResourceTopology: {"name", "annotations", "labels", "resource_version"}}
#: int fields that are resource quantities on the wire (int-or-string with the quantity pattern).
_QUANTITY_FIELDS = {ResourceInfo: {"capacity", "allocatable", "available"}}
#: Fields with a default in Python that the API nevertheless requires.
_ALSO_REQUIRED = {Zone: {"type"}}
#: Value types of `Mapping[str, V]` fields, which are lists of `{name, value}` on the wire.
_NAMED_VALUE = {str: {"type": "string"}, int: {"type": "integer", "format": "int64"}}
_DESCRIPTIONS = {
    (
        NodeResourceTopology,
        "topology_policies",
    ): "DEPRECATED (to be removed in v1beta1): use top level attributes if needed"
}
_ROOT_DESCRIPTION = "NodeResourceTopology describes node resources and their topology."


def _json_name(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _quantity() -> dict[str, Any]:
    return {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": True,
    }


def _type_schema(hint: Any, where: str) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is str:
        return {"type": "string"}
    if hint is int:
        return {"type": "integer", "format": "int64"}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return openapi_schema(hint)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return {"type": "array", "items": _type_schema(args[0], where)}
    if origin in (Mapping, dict, typing.Mapping) and args and args[0] is str and args[1] in _NAMED_VALUE:
        item = {
            "type": "object",
            "required": ["name", "value"],
            "properties": {"name": {"type": "string"}, "value": dict(_NAMED_VALUE[args[1]])},
        }
        return {"type": "array", "items": item}
    if isinstance(hint, types.UnionType):
        raise TypeError(f"{where}: optional fields have no CRD mapping yet; give the field a default instead")
    raise TypeError(f"{where}: no CRD schema for type {hint!r}; extend knuma.api.crd")


def openapi_schema(model: type[Any]) -> dict[str, Any]:
    """The OpenAPI v3 schema of a model dataclass, as its objects look on the wire (`to_dict`)."""
    hints = typing.get_type_hints(model)
    properties: dict[str, Any] = {}
    required: list[str] = []
    skip = _METADATA_FIELDS.get(model, set())
    for f in dataclasses.fields(model):
        if f.name in skip:
            continue
        name = _json_name(f.name)
        where = f"{model.__name__}.{f.name}"
        quantity = f.name in _QUANTITY_FIELDS.get(model, set())
        schema = _quantity() if quantity else _type_schema(hints[f.name], where)
        if (model, f.name) in _DESCRIPTIONS:
            schema = {"description": _DESCRIPTIONS[(model, f.name)], **schema}
        properties[name] = schema
        no_default = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if no_default or f.name in _ALSO_REQUIRED.get(model, set()):
            required.append(name)
    return {"type": "object", "required": sorted(required), "properties": dict(sorted(properties.items()))}


def _version_schema(version: str) -> dict[str, Any]:
    body = openapi_schema(NodeResourceTopology)
    properties = body["properties"]
    if version == "v1alpha1":
        # v1alpha1 has no top-level attributes, and topologyPolicies was still the way to publish the policy.
        del properties["attributes"]
        properties["topologyPolicies"] = {k: v for k, v in properties["topologyPolicies"].items() if k != "description"}
        body["required"] = sorted({*body["required"], "topologyPolicies"})
    properties.update(apiVersion={"type": "string"}, kind={"type": "string"}, metadata={"type": "object"})
    body["properties"] = dict(sorted(properties.items()))
    return {"description": _ROOT_DESCRIPTION, **body}


def nrt_crd() -> dict[str, Any]:
    """The CRD object (`apiextensions.k8s.io/v1`); a fresh copy on every call, so callers may mutate it."""
    return copy.deepcopy(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {
                "name": CRD_NAME,
                "annotations": {"api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1870"},
            },
            "spec": {
                "group": GROUP,
                "names": {
                    "kind": KIND,
                    "listKind": f"{KIND}List",
                    "plural": PLURAL,
                    "singular": KIND.lower(),
                    "shortNames": [SHORT_NAME],
                },
                "scope": "Cluster",
                "versions": [
                    {
                        "name": "v1alpha1",
                        "served": True,
                        "storage": False,
                        "schema": {"openAPIV3Schema": _version_schema("v1alpha1")},
                    },
                    {
                        "name": "v1alpha2",
                        "served": True,
                        "storage": True,
                        "schema": {"openAPIV3Schema": _version_schema("v1alpha2")},
                    },
                ],
            },
        }
    )


#: The CRD as a value, for callers that only send it (`knuma up`, tests); use `nrt_crd()` to get a copy to modify.
NRT_CRD: dict[str, Any] = nrt_crd()
