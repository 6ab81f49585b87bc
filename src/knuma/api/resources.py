"""Resource names and resource lists in exact integer base units.

Everything below the API layer works on `ResourceList`: a mapping from resource name to an integer amount, in
milli-CPU for `cpu` and in whole units (bytes, devices, pods) for every other resource. Converting at the edge keeps
the core free of quantity parsing and floats.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from knuma.errors import InvalidInput
from knuma.quantity import Quantity, QuantityError, QuantityFormat, format_quantity, parse_quantity

__all__ = [
    "CPU",
    "DEVICE_CLASS_RESOURCE_PREFIX",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "PODS",
    "ResourceList",
    "add",
    "amount_of",
    "format_amount",
    "format_resource_list",
    "is_dra_extended_resource_name",
    "is_extended_resource_name",
    "is_hugepages",
    "is_native",
    "is_numa_affine",
    "parse_resource_list",
    "subtract",
]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"
STORAGE = "storage"
HUGEPAGES_PREFIX = "hugepages-"

ALWAYS_ON_NODE = frozenset({CPU, MEMORY, PODS, EPHEMERAL_STORAGE})
"""Keys kube-scheduler's NodeInfo allocatable always has, even at 0."""

ResourceList = Mapping[str, int]

DEVICE_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"
"""`resourceapi.ResourceDeviceClassPrefix`: every DeviceClass is also the extended resource
`deviceclass.resource.kubernetes.io/<class name>` (KEP-5004, DRA-backed extended resources)."""
_QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def is_native(name: str) -> bool:
    """Native resources have no domain, or a `kubernetes.io/` one (`cpu`, `memory`, `hugepages-2Mi`, ...)."""
    return "/" not in name or "kubernetes.io/" in name


def _is_qualified_name(value: str) -> bool:
    """apimachinery's `IsQualifiedName`: an optional DNS-subdomain prefix (at most 253 characters) and `/`, then a
    name of at most 63 alphanumeric characters, `-`, `_` or `.`, starting and ending alphanumeric."""
    parts = value.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2 and not (0 < len(parts[0]) <= 253 and _DNS1123_SUBDOMAIN.match(parts[0])):
        return False
    return 0 < len(parts[-1]) <= 63 and _QUALIFIED_NAME_PART.match(parts[-1]) is not None


def is_extended_resource_name(name: str) -> bool:
    """`v1helper.IsExtendedResourceName`: not native, not `requests.`-prefixed, and a qualified name once prefixed
    with `requests.` (so that a ResourceQuota can name it): `example.com/nic` yes, `cpu` and
    `deviceclass.resource.kubernetes.io/gpu` (a `kubernetes.io/` domain) no."""
    if is_native(name) or name.startswith("requests."):
        return False
    return _is_qualified_name("requests." + name)


def is_dra_extended_resource_name(name: str) -> bool:
    """`schedutil.IsDRAExtendedResourceName`: an extended resource name, or a DeviceClass's implicit one
    (`deviceclass.resource.kubernetes.io/<class>`): the names a container may request to get devices through DRA."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_RESOURCE_PREFIX)


def is_numa_affine(name: str) -> bool:
    """Resources the CPU and memory managers align (cpu, memory, hugepages)."""
    return name in (CPU, MEMORY) or is_hugepages(name)


def is_host_level(name: str) -> bool:
    """Resources that are never NUMA-local: storage and non-native resources no zone reports."""
    return name in (EPHEMERAL_STORAGE, STORAGE) or not is_native(name)


def amount_of(name: str, quantity: Quantity) -> int:
    """A quantity in the integer base unit used for `name`: milli-CPU for cpu, whole units (rounded up) otherwise."""
    return quantity.milli_value() if name == CPU else quantity.value()


def format_amount(name: str, amount: int) -> str:
    """The canonical quantity string for an integer amount of `name`."""
    if name == CPU:
        return format_quantity(amount * 10**6)
    if name == MEMORY or is_hugepages(name) or name in (EPHEMERAL_STORAGE, STORAGE):
        return format_quantity(amount * 10**9, QuantityFormat.BINARY_SI)
    return format_quantity(amount * 10**9)


def parse_resource_list(raw: Mapping[str, Any] | None, where: str = "resources") -> dict[str, int]:
    """Parse a `{name: quantity}` mapping; errors name the field and the value."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidInput(f"{where}: expected a mapping of resource name to quantity, got {type(raw).__name__}")
    result: dict[str, int] = {}
    for name, value in raw.items():
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"{where}: invalid resource name {name!r}")
        try:
            result[name] = amount_of(name, parse_quantity(value))
        except QuantityError as err:
            raise InvalidInput(f"{where}.{name}: {err}") from None
    return result


def format_resource_list(resources: ResourceList) -> dict[str, str]:
    return {name: format_amount(name, amount) for name, amount in sorted(resources.items())}


def add(*lists: ResourceList) -> dict[str, int]:
    total: dict[str, int] = {}
    for resources in lists:
        for name, amount in resources.items():
            total[name] = total.get(name, 0) + amount
    return total


def subtract(left: ResourceList, right: ResourceList) -> dict[str, int]:
    """`left - right` per resource, never below zero."""
    return {name: max(0, amount - right.get(name, 0)) for name, amount in left.items()}


def maximum(lists: Iterable[ResourceList]) -> dict[str, int]:
    result: dict[str, int] = {}
    for resources in lists:
        for name, amount in resources.items():
            if amount > result.get(name, 0):
                result[name] = amount
            else:
                result.setdefault(name, amount)
    return result
