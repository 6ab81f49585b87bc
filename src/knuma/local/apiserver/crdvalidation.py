"""Validation of a CustomResourceDefinition as a whole, before it is stored or served.

Why all of it up front: a stored CRD is turned into served resource types at every start (`crd.resource_types`) and
its schema is applied to every write of its objects, so a CRD with a version without a name, a list as a name, a
`pattern` that does not compile or a `minimum` that is a string must be refused (422) before it is persisted; once
stored it would break discovery, writes or the next start.

Follows kube-apiserver's `ValidateCustomResourceDefinition` (k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/
validation/validation.go): `metadata.name` is `<plural>.<group>`, the group a DNS subdomain with at least one dot,
plural, singular, kind, listKind, short names and categories DNS-1035 labels (kind and listKind lower-cased),
version names DNS-1035 labels and unique, exactly one storage version, patterns valid RE2, and `validateAPIApproval`:
a CRD in a protected group (`k8s.io`, `kubernetes.io` and their subdomains) needs the `api-approved.kubernetes.io`
annotation (a URL, or a reason starting with "unapproved").

One rule upstream does not need: a CRD may not define a resource the server serves itself (`deployments.apps`,
`leases.coordination.k8s.io`, `customresourcedefinitions.apiextensions.k8s.io`, ...). kube-apiserver serves its
built-in handlers first so such a CRD is dead weight there; here it would replace the built-in type, and deleting it
would delete every real object of that type, so it is refused outright.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from knuma.local.apiserver import celrules
from knuma.local.apiserver.patterns import SchemaPatternError, compile_pattern

JsonObj = dict[str, Any]
Cause = tuple[str, str, str]

APPROVAL_ANNOTATION = "api-approved.kubernetes.io"
_APPROVAL_HELP = "see https://github.com/kubernetes/enhancements/pull/1111"
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SCHEMA_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})
_NUMBER_KEYS = ("minimum", "maximum", "multipleOf")
_COUNT_KEYS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
_BOOL_KEYS = (
    "nullable",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "uniqueItems",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource",
)


def _invalid(path: str, value: Any, why: str) -> Cause:
    shown = f'"{value}"' if isinstance(value, str) else repr(value)
    return ("FieldValueInvalid", path, f"Invalid value: {shown}: {why}")


def _dns1035(path: str, value: Any, *, required: bool = True) -> list[Cause]:
    if value is None or value == "":
        return [("FieldValueRequired", path, "Required value")] if required else []
    if not isinstance(value, str):
        return [_invalid(path, value, "must be a string")]
    if len(value) > 63 or not _DNS1035_LABEL.match(value):
        return [
            _invalid(
                path,
                value,
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex "
                "used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            )
        ]
    return []


def _string_list(path: str, value: Any) -> tuple[list[str], list[Cause]]:
    if value is None:
        return [], []
    if not isinstance(value, list):
        return [], [_invalid(path, value, "must be a list of strings")]
    good = [v for v in value if isinstance(v, str)]
    bad = [_invalid(f"{path}[{n}]", v, "must be a string") for n, v in enumerate(value) if not isinstance(v, str)]
    return good, bad


def _names(names: Any) -> list[Cause]:
    path = "spec.names"
    if names is None:
        return [("FieldValueRequired", path, "Required value")]
    if not isinstance(names, dict):
        return [_invalid(path, names, "must be an object")]
    causes = _dns1035(f"{path}.plural", names.get("plural"))
    causes += _dns1035(f"{path}.singular", names.get("singular"), required=False)
    for key, required in (("kind", True), ("listKind", False)):
        value = names.get(key)
        if isinstance(value, str) and value:
            causes += [
                (r, f, m.replace(f'"{value.lower()}"', f'"{value}"'))
                for r, f, m in _dns1035(f"{path}.{key}", value.lower())
            ]
        else:
            causes += _dns1035(f"{path}.{key}", value, required=required)
    if isinstance(names.get("kind"), str) and names.get("kind") == names.get("listKind"):
        causes.append(_invalid(f"{path}.listKind", names["listKind"], "kind and listKind may not be the same"))
    for key in ("shortNames", "categories"):
        items, bad = _string_list(f"{path}.{key}", names.get(key))
        causes += bad
        for n, item in enumerate(items):
            causes += _dns1035(f"{path}.{key}[{n}]", item)
    return causes


def schema_causes(node: Any, path: str) -> list[Cause]:
    """Type and syntax problems of an `openAPIV3Schema` (the parts the validator and pruner rely on)."""
    if not isinstance(node, dict):
        return [_invalid(path, node, "must be an object")]
    causes: list[Cause] = []
    type_ = node.get("type")
    if type_ is not None and (not isinstance(type_, str) or type_ not in _SCHEMA_TYPES):
        causes.append(
            (
                "FieldValueNotSupported",
                f"{path}.type",
                f'Unsupported value: {type_!r}: supported values: "array", "boolean", "integer", "number", "object", '
                '"string"',
            )
        )
    for key in _NUMBER_KEYS:
        value = node.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            causes.append(_invalid(f"{path}.{key}", value, "must be a number"))
    for key in _COUNT_KEYS:
        value = node.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            causes.append(_invalid(f"{path}.{key}", value, "must be a non-negative integer"))
    for key in _BOOL_KEYS:
        value = node.get(key)
        if value is not None and not isinstance(value, bool):
            causes.append(_invalid(f"{path}.{key}", value, "must be a boolean"))
    pattern = node.get("pattern")
    if pattern is not None:
        if not isinstance(pattern, str):
            causes.append(_invalid(f"{path}.pattern", pattern, "must be a string"))
        else:
            try:
                compile_pattern(pattern)
            except SchemaPatternError as exc:
                causes.append(
                    _invalid(f"{path}.pattern", pattern, f"must be a valid regular expression, but isn't: {exc}")
                )
    _, bad = _string_list(f"{path}.required", node.get("required"))
    causes += bad
    if "enum" in node and not isinstance(node["enum"], list):
        causes.append(_invalid(f"{path}.enum", node["enum"], "must be a list"))
    props = node.get("properties")
    if props is not None:
        if not isinstance(props, dict):
            causes.append(_invalid(f"{path}.properties", props, "must be an object"))
        else:
            for key, sub in props.items():
                causes += schema_causes(sub, f"{path}.properties[{key}]")
    items = node.get("items")
    if items is not None:
        causes += schema_causes(items, f"{path}.items")
    additional = node.get("additionalProperties")
    if additional is not None and not isinstance(additional, bool):
        causes += schema_causes(additional, f"{path}.additionalProperties")
    for key in ("allOf", "anyOf", "oneOf"):
        alternatives = node.get(key)
        if alternatives is None:
            continue
        if not isinstance(alternatives, list):
            causes.append(_invalid(f"{path}.{key}", alternatives, "must be a list"))
            continue
        for n, sub in enumerate(alternatives):
            causes += schema_causes(sub, f"{path}.{key}[{n}]")
    if "not" in node:
        causes += schema_causes(node["not"], f"{path}.not")
    return causes


def _version(version: Any, path: str) -> list[Cause]:
    if not isinstance(version, dict):
        return [_invalid(path, version, "must be an object")]
    causes = _dns1035(f"{path}.name", version.get("name"))
    for key in ("served", "storage", "deprecated"):
        value = version.get(key)
        if value is not None and not isinstance(value, bool):
            causes.append(_invalid(f"{path}.{key}", value, "must be a boolean"))
    schema = version.get("schema")
    if schema is not None:
        if not isinstance(schema, dict):
            causes.append(_invalid(f"{path}.schema", schema, "must be an object"))
        elif schema.get("openAPIV3Schema") is not None:
            causes += schema_causes(schema["openAPIV3Schema"], f"{path}.schema.openAPIV3Schema")
            causes += celrules.compile_causes(schema["openAPIV3Schema"], f"{path}.schema.openAPIV3Schema")
    subresources = version.get("subresources")
    if subresources is not None and not isinstance(subresources, dict):
        causes.append(_invalid(f"{path}.subresources", subresources, "must be an object"))
    elif isinstance(subresources, dict) and subresources.get("scale") is not None:
        scale = subresources["scale"]
        if not isinstance(scale, dict):
            causes.append(_invalid(f"{path}.subresources.scale", scale, "must be an object"))
        else:
            for key in ("specReplicasPath", "statusReplicasPath", "labelSelectorPath"):
                if scale.get(key) is not None and not isinstance(scale[key], str):
                    causes.append(_invalid(f"{path}.subresources.scale.{key}", scale[key], "must be a string"))
    columns = version.get("additionalPrinterColumns")
    if columns is not None:
        if not isinstance(columns, list):
            causes.append(_invalid(f"{path}.additionalPrinterColumns", columns, "must be a list"))
        else:
            for n, column in enumerate(columns):
                at = f"{path}.additionalPrinterColumns[{n}]"
                if not isinstance(column, dict):
                    causes.append(_invalid(at, column, "must be an object"))
                    continue
                for key in ("name", "type", "jsonPath"):
                    if not isinstance(column.get(key), str) or not column[key]:
                        causes.append(("FieldValueRequired", f"{at}.{key}", "Required value"))
    return causes


def _versions(versions: Any) -> list[Cause]:
    path = "spec.versions"
    if versions is None or versions == []:
        return [("FieldValueRequired", path, "Required value: must have exactly one version marked as storage version")]
    if not isinstance(versions, list):
        return [_invalid(path, versions, "must be a list of versions")]
    causes: list[Cause] = []
    seen: set[str] = set()
    for n, version in enumerate(versions):
        causes += _version(version, f"{path}[{n}]")
        name = version.get("name") if isinstance(version, dict) else None
        if isinstance(name, str):
            if name in seen:
                causes.append(("FieldValueDuplicate", f"{path}[{n}].name", f'Duplicate value: "{name}"'))
            seen.add(name)
    if not causes and sum(1 for v in versions if v.get("storage") is True) != 1:
        causes.append(_invalid(path, "", "must have exactly one version marked as storage version"))
    if not causes and not any(v.get("served", True) for v in versions):
        causes.append(_invalid(path, "", "must have at least one served version"))
    return causes


def _approval(crd: JsonObj, old: JsonObj | None, group: str) -> list[Cause]:
    """kube-apiserver's `validateAPIApproval`: protected groups need the approval annotation on create, and an update
    may keep whatever value was already there."""
    if not (group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))):
        return []
    path = f"metadata.annotations[{APPROVAL_ANNOTATION}]"
    value = ((crd.get("metadata") or {}).get("annotations") or {}).get(APPROVAL_ANNOTATION)
    if old is not None:
        old_value = ((old.get("metadata") or {}).get("annotations") or {}).get(APPROVAL_ANNOTATION)
        if value == old_value and value:
            return []
    if not value:
        return [
            (
                "FieldValueRequired",
                path,
                f'Required value: protected groups must have approval annotation "{APPROVAL_ANNOTATION}", '
                f"{_APPROVAL_HELP}",
            )
        ]
    if value.startswith("unapproved") or re.match(r"^https?://\S+$", value):
        return []
    return [
        _invalid(
            path,
            value,
            f'protected groups must have approval annotation "{APPROVAL_ANNOTATION}" with either a URL or a reason '
            f'starting with "unapproved", {_APPROVAL_HELP}',
        )
    ]


def causes(
    crd: JsonObj, old: JsonObj | None, builtins: Iterable[tuple[str, str]], *, approval: bool = True
) -> list[Cause]:
    """Every problem of `crd` (`old` is the stored CRD on update); `builtins` are the (group, plural) pairs the
    server serves itself, which no CRD may define. `approval=False` skips the protected-group annotation (for CRDs
    stored before the rule existed, which upstream keeps serving too)."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return (
            [("FieldValueRequired", "spec", "Required value")]
            if spec is None
            else [_invalid("spec", spec, "must be an object")]
        )
    found: list[Cause] = []
    group = spec.get("group")
    if group is None or group == "":
        found.append(("FieldValueRequired", "spec.group", "Required value"))
    elif not isinstance(group, str):
        found.append(_invalid("spec.group", group, "must be a string"))
    elif len(group) > 253 or not _DNS1123_SUBDOMAIN.match(group) or "." not in group:
        found.append(_invalid("spec.group", group, "should be a domain with at least one dot"))
    names = spec.get("names")
    found += _names(names)
    scope = spec.get("scope")
    if scope not in ("Namespaced", "Cluster"):
        found.append(
            (
                "FieldValueNotSupported",
                "spec.scope",
                f'Unsupported value: {scope!r}: supported values: "Cluster", "Namespaced"',
            )
        )
    found += _versions(spec.get("versions"))
    if spec.get("validation") is not None:
        legacy = spec["validation"]
        if not isinstance(legacy, dict):
            found.append(_invalid("spec.validation", legacy, "must be an object"))
        elif legacy.get("openAPIV3Schema") is not None:
            found += schema_causes(legacy["openAPIV3Schema"], "spec.validation.openAPIV3Schema")
            found += celrules.compile_causes(legacy["openAPIV3Schema"], "spec.validation.openAPIV3Schema")
    if found:
        return found
    assert isinstance(group, str) and isinstance(names, dict)
    plural = names["plural"]
    expected = f"{plural}.{group}"
    if (crd.get("metadata") or {}).get("name") != expected:
        found.append(
            _invalid(
                "metadata.name",
                (crd.get("metadata") or {}).get("name"),
                f'must be spec.names.plural+"."+spec.group ({expected})',
            )
        )
    if (group, plural) in set(builtins):
        found.append(
            (
                "FieldValueForbidden",
                "spec.names.plural",
                f'Forbidden: "{expected}" is a built-in resource of this API server; a CustomResourceDefinition '
                "may not replace it",
            )
        )
    if approval:
        found += _approval(crd, old, group)
    return found
