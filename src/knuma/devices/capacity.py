"""Consumable capacity (KEP-5075): what one allocation takes of a device's capacities, and whether it still fits.

Follows upstream's `consumable_capacity.go` of the structured allocator (`staging/src/k8s.io/dynamic-resource-
allocation/structured/internal/incubating/`): `cmpRequestOverCapacity`, `resolveDeviceCapacity`,
`resolveCapacityRequests`, `resolveCapacityName`, `calculateConsumedQuantity`, `roundUpRange`, `roundUpValidValues`,
`violatesPolicy`. For every capacity the device publishes, an allocation consumes the amount the request names
(rounded up to the policy's next step or valid value, at least the range's `min`), or the policy's `default`, or
the whole capacity when the request names none and there is no default. A device fits a request when it publishes
every capacity the request names (`bandwidth` and `<driver>/bandwidth` are one name), no consumed amount breaks the
policy (above `max`, off the step, not a valid value), and what earlier allocations consumed plus this one stays
within each capacity. On a device that allows multiple allocations that is how it is shared; on any other device
the same check makes the request a lower bound on the device's capacities (nothing is consumed).

Arithmetic is exact (nano units): upstream rounds with `Value()` (whole units) unless its fractional-range feature
applies, which gives the same amounts for whole-unit capacities, the only kind drivers publish today.
"""

from __future__ import annotations

from collections.abc import Mapping

from knuma.api.dra.capacity import CapacityRequestPolicy
from knuma.api.dra.device import Device
from knuma.errors import InvalidInput
from knuma.quantity import Quantity

__all__ = ["CapacityRequestError", "Consumption", "consumption", "fits_within", "has_room", "published_capacity"]

Consumption = tuple[tuple[str, int], ...]
"""(capacity name as the device publishes it, nano units), in name order: what one allocation takes."""


class CapacityRequestError(InvalidInput):
    """A request names one capacity twice (`bandwidth` and `<driver>/bandwidth`): upstream aborts the allocation."""


def published_capacity(driver: str, device: Device) -> dict[str, str]:
    """Fully qualified capacity name -> the name the device publishes it under (`resolveDeviceCapacity`): a name
    qualified with the driver's own domain takes precedence over the same name without a domain."""
    out: dict[str, str] = {}
    prefix = f"{driver}/"
    for name in device.capacity:
        if name.startswith(prefix):
            out[name] = name
    for name in device.capacity:
        if name.startswith(prefix):
            continue
        qualified = name if "/" in name else prefix + name
        out.setdefault(qualified, name)
    return out


def _resolve_name(requested: str, driver: str, device: Device) -> str | None:
    """`resolveCapacityName`, as the fully qualified name; None when the device does not publish it."""
    if requested in device.capacity:
        return requested if "/" in requested else f"{driver}/{requested}"
    domain, slash, identifier = requested.partition("/")
    if slash:
        if domain == driver and identifier in device.capacity:
            return requested
        return None
    qualified = f"{driver}/{requested}"
    return qualified if qualified in device.capacity else None


def _consumed(requested: Quantity | None, total: Quantity, policy: CapacityRequestPolicy | None) -> int:
    """`calculateConsumedQuantity`, in nano units."""
    if requested is None:
        return policy.default.nanos if policy is not None and policy.default is not None else total.nanos
    if policy is None:
        return requested.nanos
    span = policy.valid_range
    if span is not None:
        if requested.nanos < span.min.nanos:
            return span.min.nanos
        if span.step is None or span.step.nanos <= 0:
            return requested.nanos
        steps = -(-(requested.nanos - span.min.nanos) // span.step.nanos)
        return span.min.nanos + steps * span.step.nanos
    for value in policy.valid_values:
        if requested.nanos <= value.nanos:
            return value.nanos
    return requested.nanos


def _violates(consumed: int, policy: CapacityRequestPolicy | None) -> bool:
    """`violatesPolicy`."""
    if policy is None:
        return False
    if policy.default is not None and consumed == policy.default.nanos:
        return False
    span = policy.valid_range
    if span is not None:
        if span.max is not None and consumed > span.max.nanos:
            return True
        return span.step is not None and span.step.nanos > 0 and (consumed - span.min.nanos) % span.step.nanos != 0
    if policy.valid_values:
        return all(consumed != value.nanos for value in policy.valid_values)
    return False


def consumption(requests: Mapping[str, Quantity], driver: str, device: Device) -> Consumption | None:
    """What one allocation of `device` for a request naming `requests` takes of each of its capacities; None when
    the device does not publish a requested capacity or an amount breaks its policy (the device does not fit the
    request, whatever is free). Raises `CapacityRequestError` for a capacity named twice."""
    resolved: dict[str, Quantity] = {}
    for name, amount in requests.items():
        qualified = _resolve_name(name, driver, device)
        if qualified is None:
            return None
        if qualified in resolved:
            raise CapacityRequestError(
                f"capacity {qualified.partition('/')[2]!r} requested both as {name!r} and in its other spelling"
            )
        resolved[qualified] = amount
    out = []
    for qualified, published in published_capacity(driver, device).items():
        policy = device.request_policies.get(published)
        taken = _consumed(resolved.get(qualified), device.capacity[published], policy)
        if taken < 0 or _violates(taken, policy):
            return None
        out.append((published, taken))
    return tuple(sorted(out))


def fits_within(device: Device, taken: Mapping[str, int]) -> bool:
    """Whether amounts `taken` (already consumed plus this allocation's) stay within every capacity."""
    return all(amount <= device.capacity[name].nanos for name, amount in taken.items() if name in device.capacity)


def has_room(device: Device, consumed: Mapping[str, int]) -> bool:
    """Whether one more allocation of the shared `device` fits beside what its shares consume (`consumed`: capacity
    name -> nano units): every capacity has something left, and at least the least one allocation takes under its
    request policy (the smallest of `validValues`, the `validRange` minimum; `_consumed` rounds any request up to
    those). What the exporter publishes as a free device and the scheduler counts as one per NUMA zone; whether a
    given request fits is `consumption` and `fits_within`."""
    for name, capacity in device.capacity.items():
        left = capacity.nanos - consumed.get(name, 0)
        policy = device.request_policies.get(name)
        least = 0
        if policy is not None and policy.valid_values:
            least = policy.valid_values[0].nanos
        elif policy is not None and policy.valid_range is not None:
            least = policy.valid_range.min.nanos
        if left <= 0 or left < least:
            return False
    return True
