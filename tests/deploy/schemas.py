"""Strict Kubernetes schema validation with kubernetes-validate's schemas, cached per version and kind.

`kubernetes_validate.validate` re-reads the whole definitions file on every call (about 0.1 s); validating every
rendered object against every supported version that way would take most of a minute. This builds the same
validator (same files, same draft, same registry) once per (version, apiVersion, kind).
"""

from __future__ import annotations

import functools
import re
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import kubernetes_validate
from kubernetes_validate import utils
from referencing import Registry, Resource


@functools.cache
def _definitions(schema_dir: str, version: str) -> Resource[Any]:
    return Resource.from_contents(
        utils.schema_contents(f"kubernetes-json-schema/{schema_dir}/_definitions.json", version)
    )


@functools.cache
def _validator(version: str, api_version: str, kind: str) -> jsonschema.protocols.Validator:
    schema_version = [v for v in utils.all_versions() if utils.major_minor(v) <= utils.major_minor(version)][-1]
    schema_dir = f"v{schema_version}-local-strict"
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema = utils.schema_contents(f"kubernetes-json-schema/{schema_dir}/{kind.lower()}-{group_version}.json", version)
    registry: Registry[Any] = Resource.from_contents(schema) @ Registry()
    registry = _definitions(schema_dir, version) @ registry
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def validate_strict(obj: dict[str, Any], version: str) -> None:
    """Raise `kubernetes_validate.ValidationError` like `kubernetes_validate.validate(obj, version, strict=True)`."""
    try:
        _validator(version, obj["apiVersion"], obj["kind"]).validate(obj)
    except jsonschema.ValidationError as err:
        raise kubernetes_validate.ValidationError(err, version=utils.major_minor(version)) from err
