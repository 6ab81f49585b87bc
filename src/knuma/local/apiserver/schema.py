"""Structural-schema validation of custom objects against a CRD version's `openAPIV3Schema`.

Covers what matters for clients: `type` (with `x-kubernetes-int-or-string` and `nullable`), `required`,
`properties`, `items`, `additionalProperties`, `enum`, `minimum`/`maximum`, `minItems`/`maxItems`,
`minLength`/`maxLength` and `pattern`. Failures become one 422 `Invalid` with a cause per field, worded like
kube-apiserver (`spec.zones: Required value`, `spec.x: Invalid value: "string": ... must be of type integer`).
"""

from __future__ import annotations

from typing import Any

from knuma.api.types import JsonObj
from knuma.local.apiserver import patterns

Cause = tuple[str, str, str]

_SKIP_TOP = frozenset({"apiVersion", "kind", "metadata"})


def type_name(value: Any) -> str:
    """The OpenAPI type a decoded JSON value has (`null`, `boolean`, `integer`, ...), as error messages name it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_ok(expected: str, value: Any, schema: JsonObj) -> bool:
    actual = type_name(value)
    if schema.get("x-kubernetes-int-or-string"):
        return actual in ("integer", "string")
    if expected == "number":
        return actual in ("integer", "number")
    return actual == expected


def validate(schema: JsonObj, value: Any, path: str = "", *, top: bool = True) -> list[Cause]:
    causes: list[Cause] = []
    if value is None and (schema.get("nullable") or top):
        return causes
    expected = schema.get("type")
    if not expected and schema.get("x-kubernetes-int-or-string"):
        expected = "integer or string"
    label = path or "<root>"
    if expected and not _type_ok(expected, value, schema) and not (value is None and schema.get("nullable")):
        shown = f'"{type_name(value)}"'
        return [
            (
                "FieldValueTypeInvalid",
                label,
                f"Invalid value: {shown}: {label} in body must be of type {expected}: {shown}",
            )
        ]
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(f'"{e}"' for e in schema["enum"])
        causes.append(("FieldValueNotSupported", label, f"Unsupported value: {value!r}: supported values: {allowed}"))
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            causes.append(
                (
                    "FieldValueInvalid",
                    label,
                    f"Invalid value: {value}: {label} in body should be greater than or equal to {schema['minimum']}",
                )
            )
        if "maximum" in schema and value > schema["maximum"]:
            causes.append(
                (
                    "FieldValueInvalid",
                    label,
                    f"Invalid value: {value}: {label} in body should be less than or equal to {schema['maximum']}",
                )
            )
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            causes.append(
                (
                    "FieldValueInvalid",
                    label,
                    f'Invalid value: "{value}": {label} in body should be at least {schema["minLength"]} chars long',
                )
            )
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            causes.append(("FieldValueTooLong", label, f"Too long: may not be more than {schema['maxLength']} bytes"))
        if "pattern" in schema and not patterns.search(schema["pattern"], value):
            causes.append(
                (
                    "FieldValueInvalid",
                    label,
                    f"Invalid value: \"{value}\": {label} in body should match '{schema['pattern']}'",
                )
            )
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            causes.append(
                (
                    "FieldValueInvalid",
                    label,
                    f"Invalid value: {len(value)}: {label} in body should have at least {schema['minItems']} items",
                )
            )
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            causes.append(
                ("FieldValueTooMany", label, f"Too many: {len(value)}: must have at most {schema['maxItems']} items")
            )
        items = schema.get("items")
        if isinstance(items, dict):
            for n, item in enumerate(value):
                causes += validate(items, item, f"{path}[{n}]", top=False)
    if isinstance(value, dict):
        props: JsonObj = schema.get("properties") or {}
        for req in schema.get("required") or []:
            if req not in value or (value[req] is None and not (props.get(req) or {}).get("nullable")):
                causes.append(("FieldValueRequired", f"{path}.{req}" if path else req, "Required value"))
        additional = schema.get("additionalProperties")
        for key, sub in value.items():
            if top and key in _SKIP_TOP:
                continue
            child = f"{path}.{key}" if path else key
            if key in props:
                causes += validate(props[key], sub, child, top=False)
            elif isinstance(additional, dict):
                causes += validate(additional, sub, child, top=False)
    return causes


def prune(schema: JsonObj, value: Any, *, top: bool = True) -> Any:
    """Drop fields the schema does not know (kube-apiserver's pruning), unless it preserves unknown fields."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        if isinstance(value, dict) and "properties" in schema:
            props = schema["properties"]
            return {k: prune(props[k], v, top=False) if k in props else v for k, v in value.items()}
        return value
    if isinstance(value, dict):
        props = schema.get("properties")
        additional = schema.get("additionalProperties")
        if props is None and additional is None:
            return value if schema.get("type") != "object" else ({} if not top else value)
        out: JsonObj = {}
        for key, sub in value.items():
            if top and key in _SKIP_TOP:
                out[key] = sub
            elif props is not None and key in props:
                out[key] = prune(props[key], sub, top=False)
            elif isinstance(additional, dict):
                out[key] = prune(additional, sub, top=False)
            elif additional is True:
                out[key] = sub
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [prune(schema["items"], v, top=False) for v in value]
    return value


def unknown_fields(schema: JsonObj, value: Any, path: str = "", *, top: bool = True) -> list[str]:
    """Dotted paths of the fields `prune` would drop (what `fieldValidation=Strict` reports)."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        props = schema.get("properties") or {}
        if not isinstance(value, dict):
            return []
        return [
            f
            for k, v in value.items()
            if k in props
            for f in unknown_fields(props[k], v, f"{path}.{k}" if path else k, top=False)
        ]
    out: list[str] = []
    if isinstance(value, dict):
        props = schema.get("properties")
        additional = schema.get("additionalProperties")
        if props is None and additional is None:
            return [] if top or schema.get("type") != "object" else [f"{path}.{k}" if path else k for k in value]
        for key, sub in value.items():
            child = f"{path}.{key}" if path else key
            if top and key in _SKIP_TOP:
                continue
            if props is not None and key in props:
                out += unknown_fields(props[key], sub, child, top=False)
            elif isinstance(additional, dict):
                out += unknown_fields(additional, sub, child, top=False)
            elif additional is not True:
                out.append(child)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for n, item in enumerate(value):
            out += unknown_fields(schema["items"], item, f"{path}[{n}]", top=False)
    return out
