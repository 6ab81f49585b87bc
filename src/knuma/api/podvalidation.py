"""The pod-spec checks kube-apiserver makes that change what the kubelet would do, and the field errors they report:
unique container names here, resource requirements in `knuma.api.podresource_validation`.

The kubelet keys every per-container decision by name (the CPU manager's `cpusToReuse` looks an init container up by
`container.Name`, the Topology Manager stores hints per name), so a pod whose init and app containers share a name
would be judged with the wrong container's verdict. kube-apiserver never lets such a pod in; knuma refuses it the same
way wherever a pod enters (`Pod.from_manifest`, `knuma apiserver`).

Pure: works on the raw spec mapping, before any other parsing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knuma.api.names import dns1123_label_errors, dns1123_subdomain_errors

__all__ = [
    "FIELD_VALUE_DUPLICATE",
    "FIELD_VALUE_FORBIDDEN",
    "FIELD_VALUE_INVALID",
    "FIELD_VALUE_NOT_SUPPORTED",
    "FIELD_VALUE_REQUIRED",
    "FieldError",
    "container_name_errors",
    "init_restart_policy_errors",
    "node_name_errors",
]

FIELD_VALUE_DUPLICATE = "FieldValueDuplicate"
"""The `reason` of a kube-apiserver status cause for `field.Duplicate`."""
FIELD_VALUE_FORBIDDEN = "FieldValueForbidden"
FIELD_VALUE_INVALID = "FieldValueInvalid"
FIELD_VALUE_NOT_SUPPORTED = "FieldValueNotSupported"
FIELD_VALUE_REQUIRED = "FieldValueRequired"


@dataclass(frozen=True, slots=True)
class FieldError:
    """One `field.Error` of kube-apiserver: its cause reason, the field path and the message after the path."""

    reason: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def container_name_errors(spec: Mapping[str, Any], path: str = "spec") -> list[FieldError]:
    """Container names that are not DNS labels, and duplicates, in kube-apiserver's order and words.

    `validateContainerCommon` checks each name with `ValidateDNS1123Label` (the kubelet and the runtime use it in
    paths and cgroup names): `spec.containers[0].name: Invalid value: "App_1": a lowercase RFC 1123 label must ...`.

    `pkg/apis/core/validation/validation.go`: `ValidatePodSpec` runs `validateContainers` on `spec.containers` first
    (a name already used by an earlier regular container is `field.Duplicate`), then `validateInitContainers`, whose
    `allNames` starts with every regular container's name and grows with each init container's (1.28+: a duplicate is
    not inserted again). The result reads `spec.initContainers[0].name: Duplicate value: "app"`. Names that are
    missing or not strings are left to the other checks (a container without a name is `Required value`).
    """
    errors: list[FieldError] = []
    seen: set[str] = set()
    for key in ("containers", "initContainers"):
        raw = spec.get(key) or []
        if not isinstance(raw, list):
            continue
        for index, container in enumerate(raw):
            name = container.get("name") if isinstance(container, Mapping) else None
            if not isinstance(name, str) or not name:
                continue
            errors += [
                FieldError(
                    FIELD_VALUE_INVALID,
                    f"{path}.{key}[{index}].name",
                    f"Invalid value: {json.dumps(name, ensure_ascii=False)}: {m}",
                )
                for m in dns1123_label_errors(name)
            ]
            if name in seen:
                errors.append(
                    FieldError(FIELD_VALUE_DUPLICATE, f"{path}.{key}[{index}].name", f'Duplicate value: "{name}"')
                )
            else:
                seen.add(name)
    return errors


def init_restart_policy_errors(spec: Mapping[str, Any], path: str = "spec") -> list[FieldError]:
    """An init container's `restartPolicy`, when set, must be `Always` (a sidecar), spelt so: `validateInitContainers`
    reports any other value as `field.NotSupported`. Knuma tells a sidecar by that exact value, so `always` would be
    judged as a plain init container (its CPUs reusable by the app containers) where kube-apiserver refuses the pod.
    """
    errors: list[FieldError] = []
    raw = spec.get("initContainers") or []
    for index, container in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(container, Mapping) or container.get("restartPolicy") in (None, "Always"):
            continue
        value = container["restartPolicy"]
        shown = f'"{value}"' if isinstance(value, str) else str(value)
        errors.append(
            FieldError(
                FIELD_VALUE_NOT_SUPPORTED,
                f"{path}.initContainers[{index}].restartPolicy",
                f'Unsupported value: {shown}: supported values: "Always"',
            )
        )
    return errors


def node_name_errors(spec: Mapping[str, Any], path: str = "spec") -> list[FieldError]:
    """`ValidatePodSpec`: a `nodeName`, when set, is a node's name (`ValidateNodeName`, a DNS subdomain); a pod bound
    to `Bad Node!` would never run and could never be scheduled elsewhere."""
    name = spec.get("nodeName")
    if not isinstance(name, str) or not name:
        return []
    return [
        FieldError(
            FIELD_VALUE_INVALID, f"{path}.nodeName", f"Invalid value: {json.dumps(name, ensure_ascii=False)}: {message}"
        )
        for message in dns1123_subdomain_errors(name)
    ]
