"""Validation of `metadata` (ObjectMeta): every field's type and format, before anything reads or stores it.

Why a module of its own: everything downstream (sorting keys in the store, the garbage collector's indexes, field
ownership, selectors, the scheduler's informers) assumes `metadata.name` is a string, `labels` a map of strings,
`ownerReferences` a list of objects. One object that breaks those assumptions, once stored, breaks every LIST of its
resource and every restart. So every write path (create, update, patch result, server-side apply configuration)
checks the whole `metadata` here first and answers 422 with the field path, for built-in kinds and custom resources
alike.

Follows kube-apiserver's `ValidateObjectMeta` (k8s.io/apimachinery/pkg/api/validation/objectmeta.go): labels and
annotation keys are qualified names, annotations total at most 256 KiB, owner references need apiVersion, kind, name
and uid with at most one controller, finalizers are qualified names, managedFields have an operation Apply or
Update and fieldsType FieldsV1. kube-apiserver rejects a wrongly typed field while decoding (400); here the same
mistake is a 422 naming the field, which says more.
"""

from __future__ import annotations

import re
from typing import Any

from knuma.api.names import qualified_name_errors
from knuma.local.apiserver.schema import type_name

JsonObj = dict[str, Any]
Cause = tuple[str, str, str]

#: kube-apiserver's `TotalAnnotationSizeLimitB`.
ANNOTATIONS_MAX_BYTES = 256 * 1024
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_STRING_FIELDS = ("name", "generateName", "namespace", "uid", "resourceVersion", "selfLink")
_TIME_FIELDS = ("creationTimestamp", "deletionTimestamp")
_INT_FIELDS = ("generation", "deletionGracePeriodSeconds")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _wrong_type(path: str, value: Any, expected: str) -> Cause:
    return (
        "FieldValueTypeInvalid",
        path,
        f"Invalid value: {_shown(value)}: must be {expected}, not {type_name(value)}",
    )


def qualified_name_causes(key: str, path: str) -> list[Cause]:
    """kube's `IsQualifiedName` (`knuma.api.names`): an optional DNS-subdomain prefix and `/`, then a name of at most
    63 characters."""
    return [("FieldValueInvalid", path, f'Invalid value: "{key}": {message}') for message in qualified_name_errors(key)]


def _string_map(md: JsonObj, field: str) -> tuple[dict[str, str], list[Cause]]:
    value = md.get(field)
    path = f"metadata.{field}"
    if value is None:
        return {}, []
    if not isinstance(value, dict):
        return {}, [_wrong_type(path, value, "a map of string keys to string values")]
    causes: list[Cause] = []
    good: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            causes.append(_wrong_type(path, key, "a string key"))
        elif not isinstance(item, str):
            causes.append(_wrong_type(f"{path}.{key}" if field == "labels" else path, item, "a string"))
        else:
            good[key] = item
    return good, causes


def _labels(md: JsonObj) -> list[Cause]:
    labels, causes = _string_map(md, "labels")
    for key, value in labels.items():
        causes += qualified_name_causes(key, "metadata.labels")
        if len(value) > 63 or not _LABEL_VALUE.match(value):
            causes.append(
                (
                    "FieldValueInvalid",
                    "metadata.labels",
                    f'Invalid value: "{value}": a valid label must be an empty string or consist of alphanumeric '
                    "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
                    "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                )
            )
    return causes


def _annotations(md: JsonObj) -> list[Cause]:
    annotations, causes = _string_map(md, "annotations")
    total = 0
    for key, value in annotations.items():
        causes += qualified_name_causes(key.lower(), "metadata.annotations")
        total += len(key.encode()) + len(value.encode())
    if total > ANNOTATIONS_MAX_BYTES:
        causes.append(
            (
                "FieldValueTooLong",
                "metadata.annotations",
                f"Too long: may not be more than {ANNOTATIONS_MAX_BYTES} bytes",
            )
        )
    return causes


def _owner_references(md: JsonObj) -> list[Cause]:
    refs = md.get("ownerReferences")
    path = "metadata.ownerReferences"
    if refs is None:
        return []
    if not isinstance(refs, list):
        return [_wrong_type(path, refs, "a list of owner references")]
    causes: list[Cause] = []
    controllers = 0
    for n, ref in enumerate(refs):
        at = f"{path}[{n}]"
        if not isinstance(ref, dict):
            causes.append(_wrong_type(at, ref, "an object"))
            continue
        for key in ("apiVersion", "kind", "name", "uid"):
            value = ref.get(key)
            if value is None or value == "":
                causes.append(("FieldValueRequired", f"{at}.{key}", f"Required value: {key} must not be empty"))
            elif not isinstance(value, str):
                causes.append(_wrong_type(f"{at}.{key}", value, "a string"))
        for key in ("controller", "blockOwnerDeletion"):
            value = ref.get(key)
            if value is not None and not isinstance(value, bool):
                causes.append(_wrong_type(f"{at}.{key}", value, "a boolean"))
        if ref.get("controller") is True:
            controllers += 1
    if controllers > 1:
        causes.append(("FieldValueInvalid", path, "Invalid value: Only one reference can have Controller set to true"))
    return causes


def _finalizers(md: JsonObj) -> list[Cause]:
    finalizers = md.get("finalizers")
    path = "metadata.finalizers"
    if finalizers is None:
        return []
    if not isinstance(finalizers, list):
        return [_wrong_type(path, finalizers, "a list of strings")]
    causes: list[Cause] = []
    for n, item in enumerate(finalizers):
        if not isinstance(item, str):
            causes.append(_wrong_type(f"{path}[{n}]", item, "a string"))
        else:
            causes += qualified_name_causes(item, f"{path}[{n}]")
    return causes


def _managed_fields(md: JsonObj) -> list[Cause]:
    entries = md.get("managedFields")
    path = "metadata.managedFields"
    if entries is None:
        return []
    if not isinstance(entries, list):
        return [_wrong_type(path, entries, "a list of managed fields entries")]
    causes: list[Cause] = []
    for n, entry in enumerate(entries):
        at = f"{path}[{n}]"
        if not isinstance(entry, dict):
            causes.append(_wrong_type(at, entry, "an object"))
            continue
        for key in ("manager", "apiVersion", "subresource", "time"):
            if key in entry and entry[key] is not None and not isinstance(entry[key], str):
                causes.append(_wrong_type(f"{at}.{key}", entry[key], "a string"))
        if isinstance(entry.get("manager"), str) and len(entry["manager"]) > 128:
            causes.append(("FieldValueTooLong", f"{at}.manager", "Too long: may not be more than 128 bytes"))
        if entry.get("operation") not in ("Apply", "Update"):
            causes.append(
                (
                    "FieldValueNotSupported",
                    f"{at}.operation",
                    f'Unsupported value: {_shown(entry.get("operation"))}: supported values: "Apply", "Update"',
                )
            )
        if entry.get("fieldsType") != "FieldsV1":
            causes.append(
                (
                    "FieldValueNotSupported",
                    f"{at}.fieldsType",
                    f'Unsupported value: {_shown(entry.get("fieldsType"))}: supported values: "FieldsV1"',
                )
            )
        if "fieldsV1" in entry and not isinstance(entry["fieldsV1"], dict):
            causes.append(_wrong_type(f"{at}.fieldsV1", entry["fieldsV1"], "an object"))
    return causes


def causes(md: Any) -> list[Cause]:
    """Every type and format problem of `metadata` (not whether a name is required, nor its kind-specific format:
    the name may still come from `generateName` or the URL, see `validation.validate_object`)."""
    if md is None:
        return []
    if not isinstance(md, dict):
        return [_wrong_type("metadata", md, "an object")]
    found: list[Cause] = []
    for key in _STRING_FIELDS:
        value = md.get(key)
        if value is not None and not isinstance(value, str):
            found.append(_wrong_type(f"metadata.{key}", value, "a string"))
    for key in _TIME_FIELDS:
        value = md.get(key)
        if value is not None and not isinstance(value, str):
            found.append(_wrong_type(f"metadata.{key}", value, "an RFC 3339 time string"))
    for key in _INT_FIELDS:
        value = md.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            found.append(_wrong_type(f"metadata.{key}", value, "an integer"))
        elif key == "generation" and isinstance(value, int) and value < 0:
            found.append(("FieldValueInvalid", "metadata.generation", f"Invalid value: {value}: must be >= 0"))
    namespace = md.get("namespace")
    if isinstance(namespace, str) and namespace and (len(namespace) > 63 or not _DNS1123_LABEL.match(namespace)):
        found.append(
            (
                "FieldValueInvalid",
                "metadata.namespace",
                f'Invalid value: "{namespace}": a lowercase RFC 1123 label must consist of lower case alphanumeric '
                "characters or '-', and must start and end with an alphanumeric character",
            )
        )
    found += _labels(md)
    found += _annotations(md)
    found += _owner_references(md)
    found += _finalizers(md)
    found += _managed_fields(md)
    return found
