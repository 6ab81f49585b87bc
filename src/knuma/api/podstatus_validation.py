"""kube-apiserver's checks of a pod status write that the node and the scheduler rely on: the claim of DRA-backed
extended resources (`status.extendedResourceClaimStatus`, KEP-5004).

kube-scheduler writes that status in PreBind and the kubelet reads it to find the claim it must prepare and which
of its requests each container gets; a mapping that names no container, a resource the container does not request,
or a malformed claim name would make the node prepare the wrong thing or nothing. kube-apiserver refuses such a
status (`ValidatePodStatusUpdate` -> `validatePodExtendedResourceClaimStatus`, `pkg/apis/core/validation/
validation.go`, 1.34+); so does `knuma apiserver`. Pure: works on the raw spec and status mappings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from knuma.api.dra.fields import dns_label_error, dns_subdomain_error
from knuma.api.podvalidation import FIELD_VALUE_DUPLICATE, FIELD_VALUE_INVALID, FIELD_VALUE_REQUIRED, FieldError

__all__ = ["extended_resource_claim_status_errors"]

PATH = "status.extendedResourceClaimStatus"


def _invalid(path: str, value: object, detail: str) -> FieldError:
    return FieldError(FIELD_VALUE_INVALID, path, f"Invalid value: {json.dumps(value)}: {detail}")


def _containers(spec: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Init and app containers by name (an app container wins a name both use, as in upstream's map)."""
    out: dict[str, Mapping[str, Any]] = {}
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            if isinstance(container, Mapping):
                out[str(container.get("name"))] = container
    return out


def extended_resource_claim_status_errors(spec: Mapping[str, Any], status: Mapping[str, Any]) -> list[FieldError]:
    """`validatePodExtendedResourceClaimStatus` (release 1.35), in its order and words: at least one request mapping;
    each names an init or app container that requests its `resourceName`, and a `requestName` that is a DNS label
    (reported under `status.extendedResourceClaimStatus.requestName`, without the index, as upstream does); no
    mapping twice; `resourceClaimName` required and a DNS subdomain. Nothing when the status has no such claim."""
    raw = status.get("extendedResourceClaimStatus")
    if not isinstance(raw, Mapping):
        return []
    containers = _containers(spec)
    errors: list[FieldError] = []
    mappings = raw.get("requestMappings") or []
    if not isinstance(mappings, list) or not mappings:
        errors.append(
            FieldError(
                FIELD_VALUE_REQUIRED,
                f"{PATH}.requestMappings",
                "Required value: at least one request mapping is required",
            )
        )
        mappings = []
    seen: set[tuple[str, str, str]] = set()
    for index, mapping in enumerate(m if isinstance(m, Mapping) else {} for m in mappings):
        path = f"{PATH}.requestMappings[{index}]"
        container_name = str(mapping.get("containerName") or "")
        resource_name = str(mapping.get("resourceName") or "")
        request_name = str(mapping.get("requestName") or "")
        container = containers.get(container_name)
        if container is None:
            errors.append(
                _invalid(
                    f"{path}.containerName",
                    container_name,
                    "must match the name of an entry in spec.initContainers.name or spec.containers.name",
                )
            )
        elif resource_name not in ((container.get("resources") or {}).get("requests") or {}):
            errors.append(
                _invalid(
                    f"{path}.resourceName",
                    resource_name,
                    "must match the extended resource name of an entry in spec.initContainers.resources.requests or "
                    "spec.containers.resources.requests",
                )
            )
        problem = dns_label_error(request_name)
        if problem:
            errors.append(_invalid(f"{PATH}.requestName", request_name, problem))
        key = (container_name, resource_name, request_name)
        if key in seen:
            for field, value in zip(("containerName", "resourceName", "requestName"), key, strict=True):
                errors.append(
                    FieldError(FIELD_VALUE_DUPLICATE, f"{path}.{field}", f"Duplicate value: {json.dumps(value)}")
                )
        seen.add(key)
    claim_name = str(raw.get("resourceClaimName") or "")
    if not claim_name:
        errors.append(FieldError(FIELD_VALUE_REQUIRED, f"{PATH}.resourceClaimName", "Required value"))
    else:
        problem = dns_subdomain_error(claim_name)
        if problem:
            errors.append(_invalid(f"{PATH}.resourceClaimName", claim_name, problem))
    return errors
