"""Consumable capacity (KEP-5075, `DRAConsumableCapacity`: beta and on by default in Kubernetes 1.36): a device that
allows multiple allocations publishes, per capacity, a `requestPolicy` saying how much one allocation may take
(`default`, `validValues` or `validRange`), and a request asks for amounts (`capacity.requests`).

Parsing and validation follow kube-apiserver (`validateMultiAllocatableDeviceCapacity`,
`validateSingleAllocatableDeviceCapacity`, `validateRequestPolicy`, `validateRequestPolicyValidValues`,
`validateRequestPolicyRange`, `validateRequestPolicyRangeStep` in `pkg/apis/resource/validation/validation.go`): a
policy only on a device with `allowMultipleAllocations`, `validValues` or `validRange` (not both), each with a
`default` that obeys it; values sorted, unique, at most 10 and none above the capacity; a range's `min` and `max`
within the capacity, its `step` such that `min + step` fits and the default and `max` are whole steps from `min`.
What an allocation consumes under a policy is `knuma.devices.capacity`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knuma.api.dra.fields import FieldErrors, items, mapping
from knuma.quantity import Quantity, QuantityError, parse_quantity

__all__ = [
    "CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS",
    "CapacityRange",
    "CapacityRequestPolicy",
    "parse_capacity_requests",
    "parse_request_policy",
]

CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS = 10
"""`resource.CapacityRequestPolicyDiscreteMaxOptions`."""


@dataclass(frozen=True, slots=True)
class CapacityRange:
    """`CapacityRequestPolicyRange`."""

    min: Quantity
    max: Quantity | None = None
    step: Quantity | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"min": str(self.min)}
        if self.max is not None:
            out["max"] = str(self.max)
        if self.step is not None:
            out["step"] = str(self.step)
        return out


@dataclass(frozen=True, slots=True)
class CapacityRequestPolicy:
    """`CapacityRequestPolicy`: what one allocation of a shared device may take of one capacity."""

    default: Quantity | None = None
    """Consumed when the request names no amount of this capacity (without it: the whole capacity)."""
    valid_values: tuple[Quantity, ...] = ()
    valid_range: CapacityRange | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.default is not None:
            out["default"] = str(self.default)
        if self.valid_values:
            out["validValues"] = [str(v) for v in self.valid_values]
        if self.valid_range is not None:
            out["validRange"] = self.valid_range.to_dict()
        return out


def _quantity(raw: object, path: str, errors: FieldErrors) -> Quantity | None:
    if raw is None:
        return None
    try:
        return parse_quantity(raw)  # type: ignore[arg-type]
    except QuantityError as err:
        errors.invalid(path, raw, str(err))
        return None


def parse_request_policy(
    raw: object, path: str, errors: FieldErrors, capacity: Quantity | None, multiple: bool
) -> CapacityRequestPolicy | None:
    """A capacity's `requestPolicy` (`path` ends in `.requestPolicy`), validated against the capacity's `value`;
    None when absent. `multiple`: the device sets `allowMultipleAllocations` (a policy is forbidden otherwise)."""
    if raw is None:
        return None
    if not multiple:
        errors.forbidden(path, "allowMultipleAllocations must be true")
    body = mapping(raw, path, errors)
    default = _quantity(body.get("default"), f"{path}.default", errors)
    values: list[Quantity] = []
    raw_values = items(body.get("validValues"), f"{path}.validValues", errors)
    for i, item in enumerate(raw_values):
        value = _quantity(item, f"{path}.validValues[{i}]", errors)
        if value is not None:
            values.append(value)
    span = None
    if body.get("validRange") is not None:
        where = f"{path}.validRange"
        r = mapping(body.get("validRange"), where, errors)
        low = _quantity(r.get("min"), f"{where}.min", errors)
        high = _quantity(r.get("max"), f"{where}.max", errors)
        step = _quantity(r.get("step"), f"{where}.step", errors)
        if low is None:
            if r.get("min") is None:
                errors.required(f"{where}.min", "required when validRange is defined")
        else:
            span = CapacityRange(low, high, step)
    policy = CapacityRequestPolicy(default, tuple(values), span)
    if multiple and capacity is not None:
        _validate(policy, raw_values, body.get("validRange") is not None, capacity, path, errors)
    return policy


def _validate(
    policy: CapacityRequestPolicy,
    raw_values: list[Any],
    has_range: bool,
    capacity: Quantity,
    path: str,
    errors: FieldErrors,
) -> None:
    """`validateRequestPolicy`."""
    if raw_values and has_range:
        errors.forbidden(
            path, 'exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time'
        )
        return
    default = policy.default
    if raw_values:
        if default is None:
            errors.required(f"{path}.default", "required when validValues is defined")
            return
        where = f"{path}.validValues"
        values = policy.valid_values
        for i in range(len(values) - 1):
            if values[i].nanos > values[i + 1].nanos:
                errors.invalid(f"{where}[{i + 1}]", str(values[i + 1]), "values must be sorted in ascending order")
        if len(raw_values) > CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS:
            errors.too_many(where, len(raw_values), CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS)
            return
        seen: set[int] = set()
        for i, value in enumerate(values):
            if value.nanos > capacity.nanos:
                errors.invalid(f"{where}[{i}]", str(value), f"option is larger than capacity value: {capacity}")
            if value.value() in seen:  # `quantityKey`: the whole value
                errors.duplicate(f"{where}[{i}]", str(value.value()))
            seen.add(value.value())
        if all(value.nanos != default.nanos for value in values):
            errors.invalid(where, str(default), "default value is not valid according to the requestPolicy")
        return
    span = policy.valid_range
    if span is None:
        return
    where = f"{path}.validRange"
    if default is None:
        errors.required(f"{path}.default", "required when validRange is defined")
        return
    if span.min.nanos > capacity.nanos:
        errors.invalid(f"{where}.min", str(span.min), f"min is larger than capacity value: {capacity}")
    if default.nanos < span.min.nanos:
        errors.invalid(f"{where}.min", str(default), f"default is less than min: {span.min}")
    if span.max is not None:
        if span.min.nanos > span.max.nanos:
            errors.invalid(f"{where}.max", str(span.min), f"min is larger than max: {span.max}")
        if span.max.nanos > capacity.nanos:
            errors.invalid(f"{where}.max", str(span.max), f"max is larger than capacity value: {capacity}")
        if default.nanos > span.max.nanos:
            errors.invalid(f"{where}.max", str(default), f"default is more than max: {span.max}")
    if span.step is not None:
        one_step = Quantity(span.min.nanos + span.step.nanos, span.min.format)
        if one_step.nanos > capacity.nanos:
            errors.invalid(
                f"{where}.step", str(span.step), f"one step {one_step} is larger than capacity value: {capacity}"
            )
        for bound in (default, span.max):
            if bound is None:
                continue
            if span.step.value() == 0:
                errors.invalid(f"{where}.step", str(span.step), "must be at least 1")
                break
            if (bound.value() - span.min.value()) % span.step.value():
                errors.invalid(
                    f"{where}.step",
                    str(bound),
                    f"value is not a multiple of a given step ({span.step}) from ({span.min})",
                )


def parse_capacity_requests(raw: object, path: str, errors: FieldErrors) -> Mapping[str, Quantity]:
    """A request's `capacity` (`CapacityRequirements`): its `requests`, capacity name -> amount (`path` ends in
    `.capacity`). Names are qualified names, as a device's capacities are."""
    if raw is None:
        return {}
    body = mapping(raw, path, errors)
    out: dict[str, Quantity] = {}
    for key, value in mapping(body.get("requests"), f"{path}.requests", errors).items():
        where = f"{path}.requests[{key}]"
        errors.check_qualified_name(where, key)
        amount = _quantity(value, where, errors)
        if amount is None:
            if value is None:
                errors.required(where)
            continue
        if amount.nanos < 0:
            errors.invalid(where, str(amount), "must be greater than or equal to 0")
            continue
        out[str(key)] = amount
    return out
