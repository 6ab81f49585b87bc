"""DeviceClass (`resource.k8s.io/v1`, cluster-scoped): CEL selectors every device of the class must satisfy, and
configuration for the driver.

Validation follows `ValidateDeviceClass`: at most 32 selectors, each a CEL expression of at most 10 KiB (whether it
compiles is checked by `knuma.devices.cel`, which owns the CEL environment), at most 32 configs, each naming a driver,
and an `extendedResourceName` (KEP-5004: pods get the class's devices by requesting that extended resource) that is
a valid extended resource name (`validateDeviceClassSpec`: `IsExtendedResourceName`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from knuma.api.dra.fields import FieldError, FieldErrors, document, items, mapping, optional_str
from knuma.api.resources import is_extended_resource_name

__all__ = ["CEL_EXPRESSION_MAX", "DeviceClass", "OpaqueConfig", "parse_opaque_config", "parse_selectors"]

KIND = "DeviceClass"
SELECTORS_MAX = 32
CONFIGS_MAX = 32
CEL_EXPRESSION_MAX = 10 * 1024
OPAQUE_PARAMETERS_MAX = 10 * 1024


@dataclass(frozen=True, slots=True)
class OpaqueConfig:
    driver: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    requests: tuple[str, ...] = ()
    """Claim configs only: the requests it applies to (empty: all)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.requests:
            out["requests"] = list(self.requests)
        out["opaque"] = {"driver": self.driver, "parameters": dict(self.parameters)}
        return out


def parse_selectors(raw: object, path: str, errors: FieldErrors) -> tuple[str, ...]:
    """`selectors[].cel.expression`: required, at most 10 KiB."""
    expressions = []
    for i, selector in enumerate(items(raw, path, errors, SELECTORS_MAX)):
        cel = mapping(mapping(selector, f"{path}[{i}]", errors).get("cel"), f"{path}[{i}].cel", errors)
        expression = optional_str(cel, "expression", f"{path}[{i}].cel", errors)
        if not expression:
            errors.required(f"{path}[{i}].cel.expression")
            continue
        if len(expression) > CEL_EXPRESSION_MAX:
            errors.errors.append(
                FieldError(
                    f"{path}[{i}].cel.expression", "Too long", f"may not be more than {CEL_EXPRESSION_MAX} bytes"
                )
            )
        expressions.append(expression)
    return tuple(expressions)


def parse_opaque_config(raw: object, path: str, errors: FieldErrors, *, with_requests: bool) -> OpaqueConfig | None:
    body = mapping(raw, path, errors)
    opaque = body.get("opaque")
    if opaque is None:
        errors.required(f"{path}.opaque")
        return None
    opaque_body = mapping(opaque, f"{path}.opaque", errors)
    driver = errors.check_name(f"{path}.opaque.driver", opaque_body.get("driver"))
    parameters = opaque_body.get("parameters")
    if parameters is None:
        errors.required(f"{path}.opaque.parameters")
    elif not isinstance(parameters, Mapping):
        errors.invalid(f"{path}.opaque.parameters", parameters, "must be a JSON object")
        parameters = None
    elif len(str(parameters)) > OPAQUE_PARAMETERS_MAX:
        errors.invalid(f"{path}.opaque.parameters", "<value omitted>", f"must be at most {OPAQUE_PARAMETERS_MAX} bytes")
    requests: tuple[str, ...] = ()
    if with_requests:
        requests = tuple(str(r) for r in items(body.get("requests"), f"{path}.requests", errors))
    return OpaqueConfig(driver, dict(parameters or {}), requests)


@dataclass(frozen=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...] = ()
    config: tuple[OpaqueConfig, ...] = ()
    extended_resource_name: str = ""

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> DeviceClass:
        errors = FieldErrors()
        obj = document(obj, errors)
        meta = mapping(obj.get("metadata"), "metadata", errors)
        name = errors.check_name("metadata.name", meta.get("name"))
        spec = mapping(obj.get("spec"), "spec", errors)
        selectors = parse_selectors(spec.get("selectors"), "spec.selectors", errors)
        configs = [
            parse_opaque_config(c, f"spec.config[{i}]", errors, with_requests=False)
            for i, c in enumerate(items(spec.get("config"), "spec.config", errors, CONFIGS_MAX))
        ]
        extended = optional_str(spec, "extendedResourceName", "spec", errors)
        if isinstance(spec.get("extendedResourceName"), str) and not is_extended_resource_name(extended):
            errors.invalid("spec.extendedResourceName", extended, "must be a valid extended resource name")
        errors.raise_if_any(f"{KIND}.resource.k8s.io", name)
        return cls(name, selectors, tuple(c for c in configs if c is not None), extended)
