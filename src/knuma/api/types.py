"""Kubernetes objects as decoded JSON, and the content types of the requests that change them.

One definition for every layer (the product, the local API server, the simulator and the tools), so that a function
taking a `JsonObj` means the same thing everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "APPLY_PATCH",
    "INT32_MAX",
    "INT64_MAX",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "JsonObj",
    "JsonView",
    "go_json_type",
    "meta_of",
    "spec_of",
]

JsonObj = dict[str, Any]
"""A Kubernetes object or fragment as decoded JSON, owned by the caller (may be changed)."""
JsonView = Mapping[str, Any]
"""The same, read-only: what a function that only looks at an object takes."""

MERGE_PATCH = "application/merge-patch+json"
"""RFC 7386 JSON merge patch: `null` deletes a key, lists are replaced."""
JSON_PATCH = "application/json-patch+json"
"""RFC 6902 JSON patch: a list of operations."""
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
"""Kubernetes strategic merge patch (built-in kinds only): lists merged by their patch merge key."""
APPLY_PATCH = "application/apply-patch+yaml"
"""Server-side apply."""


INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
"""The largest values of the API's `int32` and `int64` fields (Go's types, which decoding and validation enforce)."""


def meta_of(obj: JsonView) -> JsonView:
    """The object's `metadata`, or an empty mapping when it has none (or a malformed one): for reading."""
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def spec_of(obj: JsonView) -> JsonView:
    """The object's `spec`, or an empty mapping when it has none (or a malformed one): for reading."""
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def go_json_type(value: Any) -> str:
    """The JSON type Go's `json.UnmarshalTypeError` names for a decoded value (`json: cannot unmarshal number into
    ...`): bool, number, string, array, object or null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return "object"
