"""The device requests and constraints of a ResourceClaim spec (`resource.k8s.io/v1` `DeviceClaim`).

A request asks for devices either `exactly` (one class, selectors, `ExactCount` or `All`) or through
`firstAvailable`, a priority-ordered list of sub-requests of which the allocator takes the first that fits.
Constraints tie requests together (`matchAttribute`: one value shared by every device of the named requests;
`distinctAttribute`: a different value on each). A request may ask for amounts of the devices' capacities
(`capacity.requests`, consumable capacity).
Validation follows `validateDeviceClaim` / `validateDeviceRequest` / `validateDeviceConstraint` of kube-apiserver.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from knuma.api.dra.capacity import parse_capacity_requests
from knuma.api.dra.deviceclass import OpaqueConfig, parse_opaque_config, parse_selectors
from knuma.api.dra.fields import FieldErrors, items, mapping, optional_bool, optional_int, optional_str
from knuma.api.taints import Toleration
from knuma.quantity import Quantity

__all__ = [
    "ALL",
    "EXACT_COUNT",
    "Constraint",
    "DeviceClaimSpec",
    "DeviceRequest",
    "ExactRequest",
    "parse_device_claim",
]

EXACT_COUNT = "ExactCount"
ALL = "All"
REQUESTS_MAX = 32
SUBREQUESTS_MAX = 8
CONSTRAINTS_MAX = 32
CONFIGS_MAX = 32
TOLERATIONS_MAX = 16
TOLERATION_OPERATORS = ("Exists", "Equal")
TOLERATION_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True, slots=True)
class ExactRequest:
    """`ExactDeviceRequest` or one `DeviceSubRequest` (which has no `adminAccess`)."""

    name: str
    """The request name, or `request/subrequest` for a sub-request: what allocation results and constraints use."""
    device_class_name: str
    selectors: tuple[str, ...] = ()
    allocation_mode: str = EXACT_COUNT
    count: int = 1
    admin_access: bool = False
    tolerations: tuple[Toleration, ...] = ()
    capacity: Mapping[str, Quantity] = field(default_factory=dict)
    """`capacity.requests`: what each device must offer, and what a shared device gives this request
    (consumable capacity, `knuma.devices.capacity`)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"deviceClassName": self.device_class_name, "allocationMode": self.allocation_mode}
        if self.allocation_mode == EXACT_COUNT:
            out["count"] = self.count
        if self.selectors:
            out["selectors"] = [{"cel": {"expression": e}} for e in self.selectors]
        if self.admin_access:
            out["adminAccess"] = True
        if self.capacity:
            out["capacity"] = {"requests": {k: str(v) for k, v in self.capacity.items()}}
        return out


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    name: str
    exactly: ExactRequest | None = None
    first_available: tuple[ExactRequest, ...] = ()

    @property
    def alternatives(self) -> tuple[ExactRequest, ...]:
        """What the allocator tries, in order: the request itself or its sub-requests."""
        return (self.exactly,) if self.exactly is not None else self.first_available


@dataclass(frozen=True, slots=True)
class Constraint:
    requests: tuple[str, ...] = ()
    """Empty: every request of the claim."""
    match_attribute: str = ""
    distinct_attribute: str = ""


@dataclass(frozen=True, slots=True)
class DeviceClaimSpec:
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    config: tuple[OpaqueConfig, ...] = ()


def _tolerations(raw: object, path: str, errors: FieldErrors) -> tuple[Toleration, ...]:
    out = []
    for i, item in enumerate(items(raw, path, errors, TOLERATIONS_MAX)):
        where = f"{path}[{i}]"
        body = mapping(item, where, errors)
        key = optional_str(body, "key", where, errors)
        if key:
            errors.check_qualified_name(f"{where}.key", key)
        operator = optional_str(body, "operator", where, errors) or "Equal"
        if operator not in TOLERATION_OPERATORS:
            errors.unsupported(f"{where}.operator", operator, TOLERATION_OPERATORS)
        value = optional_str(body, "value", where, errors)
        if operator == "Exists" and value:
            errors.invalid(f"{where}.operator", operator, "value must be empty when `operator` is 'Exists'")
        if not key and operator != "Exists":
            errors.invalid(f"{where}.operator", operator, "operator must be Exists when `key` is empty")
        effect = optional_str(body, "effect", where, errors)
        if effect and effect not in TOLERATION_EFFECTS:
            errors.unsupported(f"{where}.effect", effect, TOLERATION_EFFECTS)
        out.append(Toleration(key, operator, value, effect))
    return tuple(out)


def _exact(raw: Mapping[str, Any], name: str, path: str, errors: FieldErrors, *, sub: bool) -> ExactRequest:
    class_name = errors.check_name(f"{path}.deviceClassName", raw.get("deviceClassName"))
    mode = optional_str(raw, "allocationMode", path, errors) or EXACT_COUNT
    count = optional_int(raw, "count", path, errors)
    if mode == EXACT_COUNT:
        if count is not None and count <= 0:
            errors.invalid(f"{path}.count", count, "must be greater than zero")
    elif mode == ALL:
        if count:
            errors.invalid(f"{path}.count", count, "must not be specified when allocationMode is 'All'")
    else:
        errors.unsupported(f"{path}.allocationMode", mode, (ALL, EXACT_COUNT))
    admin = optional_bool(raw, "adminAccess", path, errors) if not sub else None
    if sub and raw.get("adminAccess") is not None:
        errors.forbidden(f"{path}.adminAccess", "not supported in sub-requests")
    return ExactRequest(
        name=name,
        device_class_name=class_name,
        selectors=parse_selectors(raw.get("selectors"), f"{path}.selectors", errors),
        allocation_mode=mode,
        count=(count or 1) if mode == EXACT_COUNT else 0,
        admin_access=bool(admin),
        tolerations=_tolerations(raw.get("tolerations"), f"{path}.tolerations", errors),
        capacity=parse_capacity_requests(raw.get("capacity"), f"{path}.capacity", errors),
    )


def _request(raw: object, path: str, errors: FieldErrors) -> DeviceRequest | None:
    body = mapping(raw, path, errors)
    name = errors.check_name(f"{path}.name", body.get("name"), rule="label")
    exactly, first = body.get("exactly"), body.get("firstAvailable")
    if exactly is not None and first is not None:
        errors.invalid(
            path, None, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"
        )
        return None
    if exactly is None and first is None:
        errors.required(path, "exactly one of `exactly` or `firstAvailable` is required")
        return None
    if exactly is not None:
        return DeviceRequest(
            name,
            exactly=_exact(mapping(exactly, f"{path}.exactly", errors), name, f"{path}.exactly", errors, sub=False),
        )
    subs = items(first, f"{path}.firstAvailable", errors, SUBREQUESTS_MAX)
    if not subs:
        errors.required(f"{path}.firstAvailable")
    alternatives = []
    seen: set[str] = set()
    for i, sub in enumerate(subs):
        where = f"{path}.firstAvailable[{i}]"
        sub_body = mapping(sub, where, errors)
        sub_name = errors.check_name(f"{where}.name", sub_body.get("name"), rule="label")
        if sub_name in seen:
            errors.duplicate(f"{where}.name", sub_name)
        seen.add(sub_name)
        alternatives.append(_exact(sub_body, f"{name}/{sub_name}", where, errors, sub=True))
    return DeviceRequest(name, first_available=tuple(alternatives))


def _request_refs(raw: object, path: str, requests: tuple[DeviceRequest, ...], errors: FieldErrors) -> tuple[str, ...]:
    """Request names a constraint or config refers to: a request or `request/subrequest`."""
    known = {r.name for r in requests} | {a.name for r in requests for a in r.first_available}
    refs = []
    seen: set[str] = set()
    for i, ref in enumerate(items(raw, path, errors)):
        if not isinstance(ref, str) or ref not in known:
            errors.invalid(
                f"{path}[{i}]",
                ref,
                "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'",
            )
            continue
        if ref in seen:
            errors.duplicate(f"{path}[{i}]", ref)
        seen.add(ref)
        refs.append(ref)
    return tuple(refs)


def parse_device_claim(raw: object, path: str, errors: FieldErrors) -> DeviceClaimSpec:
    """`spec.devices` of a ResourceClaim (or of a template's claim spec)."""
    body = mapping(raw, path, errors)
    requests: list[DeviceRequest] = []
    seen: set[str] = set()
    for i, item in enumerate(items(body.get("requests"), f"{path}.requests", errors, REQUESTS_MAX)):
        request = _request(item, f"{path}.requests[{i}]", errors)
        if request is None:
            continue
        if request.name in seen:
            errors.duplicate(f"{path}.requests[{i}].name", request.name)
        seen.add(request.name)
        requests.append(request)
    frozen = tuple(requests)
    constraints = []
    for i, item in enumerate(items(body.get("constraints"), f"{path}.constraints", errors, CONSTRAINTS_MAX)):
        where = f"{path}.constraints[{i}]"
        c = mapping(item, where, errors)
        refs = _request_refs(c.get("requests"), f"{where}.requests", frozen, errors)
        match = optional_str(c, "matchAttribute", where, errors)
        distinct = optional_str(c, "distinctAttribute", where, errors)
        if match and distinct:
            errors.invalid(
                where,
                None,
                "exactly one of `matchAttribute` or `distinctAttribute` is required, but multiple fields are set",
            )
        elif not match and not distinct:
            errors.required(f"{where}.matchAttribute")
        for key, value in (("matchAttribute", match), ("distinctAttribute", distinct)):
            if value:
                errors.check_qualified_name(f"{where}.{key}", value, require_domain=True)
        constraints.append(Constraint(refs, match, distinct))
    configs = []
    for i, item in enumerate(items(body.get("config"), f"{path}.config", errors, CONFIGS_MAX)):
        config = parse_opaque_config(item, f"{path}.config[{i}]", errors, with_requests=True)
        if config is not None:
            _request_refs(list(config.requests), f"{path}.config[{i}].requests", frozen, errors)
            configs.append(config)
    return DeviceClaimSpec(frozen, tuple(constraints), tuple(configs))
