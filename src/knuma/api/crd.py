"""The NodeResourceTopology CRD (v1alpha2 schema of k8stopologyawareschedwg/noderesourcetopology-api): what `knuma up`
installs in its API server, and what tests that publish NRT objects install."""

from __future__ import annotations

from typing import Any

__all__ = ["NRT_CRD"]

_QUANTITY = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": (
        r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
        r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
    ),
    "x-kubernetes-int-or-string": True,
}
_ATTRIBUTES = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["name", "value"],
        "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
    },
}
_ZONE = {
    "type": "object",
    "required": ["name", "type"],
    "properties": {
        "name": {"type": "string"},
        "type": {"type": "string"},
        "parent": {"type": "string"},
        "attributes": _ATTRIBUTES,
        "costs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "value"],
                "properties": {"name": {"type": "string"}, "value": {"type": "integer", "format": "int64"}},
            },
        },
        "resources": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["allocatable", "available", "capacity", "name"],
                "properties": {
                    "name": {"type": "string"},
                    "capacity": _QUANTITY,
                    "allocatable": _QUANTITY,
                    "available": _QUANTITY,
                },
            },
        },
    },
}

NRT_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "noderesourcetopologies.topology.node.k8s.io"},
    "spec": {
        "group": "topology.node.k8s.io",
        "names": {
            "kind": "NodeResourceTopology",
            "listKind": "NodeResourceTopologyList",
            "plural": "noderesourcetopologies",
            "singular": "noderesourcetopology",
            "shortNames": ["node-res-topo"],
        },
        "scope": "Cluster",
        "versions": [
            {
                "name": "v1alpha2",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "required": ["zones"],
                        "properties": {
                            "apiVersion": {"type": "string"},
                            "kind": {"type": "string"},
                            "metadata": {"type": "object"},
                            "topologyPolicies": {"type": "array", "items": {"type": "string"}},
                            "attributes": _ATTRIBUTES,
                            "zones": {"type": "array", "items": _ZONE},
                        },
                    }
                },
            }
        ],
    },
}
