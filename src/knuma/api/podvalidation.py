"""The pod-spec checks kube-apiserver makes that change what the kubelet would do: unique container names.

The kubelet keys every per-container decision by name (the CPU manager's `cpusToReuse` looks an init container up by
`container.Name`, the Topology Manager stores hints per name), so a pod whose init and app containers share a name
would be judged with the wrong container's verdict. kube-apiserver never lets such a pod in; knuma refuses it the same
way wherever a pod enters (`Pod.from_manifest`, `knuma apiserver`).

Pure: works on the raw spec mapping, before any other parsing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knuma.quantity import Quantity, QuantityError, parse_quantity

__all__ = [
    "FIELD_VALUE_DUPLICATE",
    "FIELD_VALUE_INVALID",
    "FIELD_VALUE_REQUIRED",
    "FieldError",
    "container_name_errors",
    "resource_requirement_errors",
]

FIELD_VALUE_DUPLICATE = "FieldValueDuplicate"
"""The `reason` of a kube-apiserver status cause for `field.Duplicate`."""
FIELD_VALUE_INVALID = "FieldValueInvalid"
FIELD_VALUE_REQUIRED = "FieldValueRequired"
OVERCOMMITTABLE = frozenset({"cpu", "memory", "ephemeral-storage"})
"""`helper.IsOvercommitAllowed`: native resources other than hugepages; extended resources are not."""


@dataclass(frozen=True, slots=True)
class FieldError:
    """One `field.Error` of kube-apiserver: its cause reason, the field path and the message after the path."""

    reason: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def container_name_errors(spec: Mapping[str, Any], path: str = "spec") -> list[FieldError]:
    """Duplicate container names, in kube-apiserver's order and words.

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
            if name in seen:
                errors.append(
                    FieldError(FIELD_VALUE_DUPLICATE, f"{path}.{key}[{index}].name", f'Duplicate value: "{name}"')
                )
            else:
                seen.add(name)
    return errors


def _quantities(raw: Any) -> dict[str, Quantity]:
    """Parsable quantities of a ResourceList (malformed ones are the decoder's business, a 400 before this)."""
    found: dict[str, Quantity] = {}
    if isinstance(raw, Mapping):
        for name, value in raw.items():
            try:
                found[str(name)] = parse_quantity(value)
            except (QuantityError, ValueError):
                continue
    return found


def resource_requirement_errors(spec: Mapping[str, Any], path: str = "spec") -> list[FieldError]:
    """`ValidateResourceRequirements` (`pkg/apis/core/validation/validation.go`) for every container: no negative
    quantity; a request at most its limit, and equal to it for resources that cannot be overcommitted (hugepages,
    extended resources such as GPUs), which also need a limit. Messages as kube-apiserver's:
    `spec.containers[0].resources.requests: Invalid value: "3": must be less than or equal to cpu limit of 2`."""
    errors: list[FieldError] = []
    for key in ("initContainers", "containers"):
        raw = spec.get(key) or []
        if not isinstance(raw, list):
            continue
        for index, container in enumerate(raw):
            resources = container.get("resources") if isinstance(container, Mapping) else None
            if not isinstance(resources, Mapping):
                continue
            base = f"{path}.{key}[{index}].resources"
            limits = _quantities(resources.get("limits"))
            requests = _quantities(resources.get("requests"))
            for name, quantity in limits.items():
                if quantity.nanos < 0:
                    errors.append(
                        FieldError(
                            FIELD_VALUE_INVALID,
                            f"{base}.limits[{name}]",
                            f'Invalid value: "{quantity}": must be greater than or equal to 0',
                        )
                    )
            for name, quantity in requests.items():
                if quantity.nanos < 0:
                    errors.append(
                        FieldError(
                            FIELD_VALUE_INVALID,
                            f"{base}.requests[{name}]",
                            f'Invalid value: "{quantity}": must be greater than or equal to 0',
                        )
                    )
                limit = limits.get(name)
                overcommit = name in OVERCOMMITTABLE
                if limit is not None and not overcommit and quantity.nanos != limit.nanos:
                    errors.append(
                        FieldError(
                            FIELD_VALUE_INVALID,
                            f"{base}.requests",
                            f'Invalid value: "{quantity}": must be equal to {name} limit of {limit}',
                        )
                    )
                elif limit is not None and quantity.nanos > limit.nanos:
                    errors.append(
                        FieldError(
                            FIELD_VALUE_INVALID,
                            f"{base}.requests",
                            f'Invalid value: "{quantity}": must be less than or equal to {name} limit of {limit}',
                        )
                    )
                elif limit is None and not overcommit:
                    errors.append(
                        FieldError(
                            FIELD_VALUE_REQUIRED,
                            f"{base}.limits",
                            "Required value: Limit must be set for non overcommitable resources",
                        )
                    )
    return errors
