"""Regenerate `fieldschema.json.gz`, the field tree of the built-in kinds `knuma apiserver` serves, from the upstream
OpenAPI definitions that `kubernetes-validate` (a dev dependency) ships:

    python -m knuma.local.apiserver.fieldschema_gen

The file keeps, per definition reachable from a served kind, its property names and each property's JSON type (for an
integer, its Go width; for a string, whether it is base64 `[]byte`), list or map element, `$ref`, and whether it is a
`resource.Quantity`, an `IntOrString` or a free-form value: what is needed to find unknown fields and the values
kube-apiserver's decoder rejects, a small fraction of the 4.5 MB of definitions.
`tests/local/apiserver/test_fieldschema.py` checks the committed file is what this produces.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

from knuma.local.apiserver.version import KUBERNETES_VERSION

__all__ = ["KUBERNETES_VERSION", "OUTPUT", "generate"]

OUTPUT = Path(__file__).with_name("fieldschema.json.gz")
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
FREE_FORM = (
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
)
INTEGER_FORMATS = {"int32": "i32", "int64": "i64"}
"""The Go type behind an OpenAPI integer: what decoding a larger value fails on (`replicas` is an int32)."""
SKIPPED_KINDS = frozenset({"CustomResourceDefinition"})
"""CRDs have their own structural validation (`knuma.local.apiserver.crd`)."""

Node = Any


def _short(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _types(schema: dict[str, Any]) -> list[str]:
    raw = schema.get("type")
    types = raw if isinstance(raw, list) else [raw] if raw else []
    return [t for t in types if t != "null"]


def _node(schema: dict[str, Any], wanted: set[str]) -> Node:
    if "$ref" in schema:
        name = _short(schema["$ref"])
        if name == QUANTITY:
            return "q"
        if name == INT_OR_STRING:
            return "is"
        if name in FREE_FORM:
            return "x"
        wanted.add(name)
        return {"r": name}
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return _node(schema["allOf"][0], wanted)
    types = _types(schema)
    if types == ["array"]:
        return {"l": _node(schema.get("items") or {}, wanted)}
    if types == ["object"] or "properties" in schema:
        if "properties" in schema:
            return _object(schema, wanted)
        extra = schema.get("additionalProperties")
        return {"m": _node(extra, wanted)} if isinstance(extra, dict) else "x"
    if types == ["string"]:
        return "y" if schema.get("format") == "byte" else "s"
    if types == ["integer"]:
        return INTEGER_FORMATS.get(str(schema.get("format")), "i")
    if types == ["number"]:
        return "n"
    if types == ["boolean"]:
        return "b"
    return "x"


def _object(schema: dict[str, Any], wanted: set[str]) -> Node:
    props = {key: _node(value, wanted) for key, value in sorted((schema.get("properties") or {}).items())}
    return {"p": props}


def generate(definitions: dict[str, Any], kinds: list[tuple[str, str, str]]) -> dict[str, Any]:
    """`{"kinds": {"group/version/Kind": definition}, "defs": {definition: node}}` for `kinds` and every definition
    they reach."""
    by_gvk: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions.items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            by_gvk[(gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", ""))] = name
    roots = {f"{g}/{v}/{k}": by_gvk[(g, v, k)] for g, v, k in kinds if (g, v, k) in by_gvk}
    wanted = set(roots.values())
    defs: dict[str, Node] = {}
    while wanted - defs.keys():
        name = min(wanted - defs.keys())
        defs[name] = _node(_strip_ref(definitions[name]), wanted)
    return {"kubernetes": KUBERNETES_VERSION, "kinds": dict(sorted(roots.items())), "defs": dict(sorted(defs.items()))}


def _strip_ref(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != "$ref"}


def served_kinds() -> list[tuple[str, str, str]]:
    from knuma.local.apiserver.resources import BUILTIN

    return sorted({(rt.group, rt.version, rt.kind) for rt in BUILTIN if rt.kind not in SKIPPED_KINDS})


def upstream_definitions(version: str = KUBERNETES_VERSION) -> dict[str, Any]:
    import kubernetes_validate

    schemas = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    path = schemas / f"v{version}-local" / "_definitions.json"
    definitions: dict[str, Any] = json.loads(path.read_text())["$defs"]
    return definitions


def render() -> bytes:
    tree = generate(upstream_definitions(), served_kinds())
    text = json.dumps(tree, sort_keys=True, separators=(",", ":")).encode()
    return gzip.compress(text, mtime=0)


def main() -> int:
    data = render()
    OUTPUT.write_bytes(data)
    print(f"wrote {OUTPUT} ({len(data)} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
