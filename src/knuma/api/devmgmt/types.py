"""The k8srm prototype's kinds as its `pkg/api` defines them at `1116416` (`capacity_types.go`, `claim_types.go`):
DeviceDriver, DeviceClass, DeviceClaim, DevicePrivilegedClaim and DevicePool, with the pool `Attribute`.

Read as Go's `encoding/json` reads them, which is what the prototype's files were written against:

- keys match case-insensitively (the prototype's malformed tags `json:deviceType,omitempty` make Go use the field
  name, so `deviceType` and `DeviceType` both decode);
- unknown fields are ignored; they are returned as warnings (the prototype's `classes.yaml` has typos such as
  `deviceMaxCount`, `contstraints` and `attributeMatches` that Go silently dropped, and a user should hear of them);
- a field of the wrong type is an error naming the field path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from knuma.errors import InvalidInput
from knuma.quantity import Quantity, QuantityError, parse_quantity

__all__ = [
    "API_VERSION",
    "GROUP",
    "KINDS",
    "Attribute",
    "DeviceClaim",
    "DeviceClass",
    "DeviceDriver",
    "DevicePool",
    "DevicePrivilegedClaim",
    "PrototypeError",
    "parse_prototype",
]

GROUP = "devmgmtproto.k8s.io"
API_VERSION = f"{GROUP}/v1alpha1"


class PrototypeError(InvalidInput):
    """A prototype object that Go's decoder would reject."""


class _Reader:
    """Case-insensitive field access with unknown-field tracking, for one object."""

    def __init__(self, kind: str, name: str) -> None:
        self.kind, self.name = kind, name
        self.warnings: list[str] = []

    def fields(self, raw: object, path: str, known: tuple[str, ...]) -> dict[str, Any]:
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            raise PrototypeError(f"{self.kind} {self.name!r}: {path}: must be an object, got {raw!r}")
        by_lower = {k.lower(): k for k in known}
        out: dict[str, Any] = {}
        for key, value in raw.items():
            canonical = by_lower.get(str(key).lower())
            if canonical is None:
                self.warnings.append(f"{self.kind} {self.name!r}: unknown field {path}.{key}".replace("..", "."))
            elif canonical not in out:
                out[canonical] = value
        return out

    def string(self, body: Mapping[str, Any], key: str, path: str) -> str | None:
        value = body.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise PrototypeError(f"{self.kind} {self.name!r}: {path}.{key}: must be a string, got {value!r}")
        return value

    def integer(self, body: Mapping[str, Any], key: str, path: str) -> int | None:
        value = body.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise PrototypeError(f"{self.kind} {self.name!r}: {path}.{key}: must be an integer, got {value!r}")
        return value

    def strings(self, body: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
        value = body.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise PrototypeError(f"{self.kind} {self.name!r}: {path}.{key}: must be a list of strings, got {value!r}")
        return tuple(value)

    def items(self, body: Mapping[str, Any], key: str, path: str) -> list[Any]:
        value = body.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise PrototypeError(f"{self.kind} {self.name!r}: {path}.{key}: must be a list, got {value!r}")
        return value


@dataclass(frozen=True, slots=True)
class Attribute:
    """`name` plus one of `stringValue`, `intValue`, `quantityValue`, `semVerValue`."""

    name: str
    string_value: str | None = None
    int_value: int | None = None
    quantity_value: Quantity | None = None
    semver_value: str | None = None

    @property
    def value(self) -> str | int | Quantity | None:
        """The first non-nil value, in the prototype's order (what its CEL environment sees)."""
        for value in (self.string_value, self.int_value, self.quantity_value, self.semver_value):
            if value is not None:
                return value
        return None

    def equal_value(self, other: Attribute) -> bool:
        """`Attribute.EqualValue`: some same-typed non-nil pair is equal (different types are never equal)."""
        pairs = (
            (self.string_value, other.string_value),
            (self.int_value, other.int_value),
            (self.quantity_value, other.quantity_value),
            (self.semver_value, other.semver_value),
        )
        for a, b in pairs:
            if a is not None and b is not None and (a.nanos == b.nanos if isinstance(a, Quantity) else a == b):  # type: ignore[union-attr]
                return True
        return False

    def equal(self, other: Attribute) -> bool:
        return self.name == other.name and self.equal_value(other)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.string_value is not None:
            out["stringValue"] = self.string_value
        if self.int_value is not None:
            out["intValue"] = self.int_value
        if self.quantity_value is not None:
            out["quantityValue"] = str(self.quantity_value)
        if self.semver_value is not None:
            out["semVerValue"] = self.semver_value
        return out


@dataclass(frozen=True)
class DeviceDriver:
    name: str
    device_types: tuple[str, ...]


@dataclass(frozen=True)
class ConfigReference:
    api_version: str
    kind: str
    name: str
    namespace: str = ""


@dataclass(frozen=True)
class DeviceClass:
    name: str
    device_type: str
    driver: str | None = None
    constraints: str | None = None
    min_device_count: int | None = None
    max_device_count: int | None = None
    match_attributes: tuple[str, ...] = ()
    configs: tuple[ConfigReference, ...] = ()


@dataclass(frozen=True)
class DeviceClaim:
    namespace: str
    name: str
    device_class: str
    driver: str | None = None
    constraints: str | None = None
    min_device_count: int | None = None
    max_device_count: int | None = None
    match_attributes: tuple[str, ...] = ()
    configs: tuple[ConfigReference, ...] = ()
    allocations: tuple[tuple[str, int], ...] = ()
    pod_names: tuple[str, ...] = ()

    @property
    def device_count(self) -> int:
        """`minDeviceCount`, default 1: the count the prototype's scheduler allocates."""
        return 1 if self.min_device_count is None else self.min_device_count


@dataclass(frozen=True)
class DevicePrivilegedClaim:
    namespace: str
    name: str
    driver: str
    constraints: str | None = None
    configs: tuple[ConfigReference, ...] = ()


@dataclass(frozen=True)
class DevicePool:
    name: str
    driver: str
    node_name: str | None = None
    attributes: tuple[Attribute, ...] = ()
    count: int = 0
    available_devices: int | None = None
    warnings: tuple[str, ...] = field(default=(), compare=False)


PrototypeObject = DeviceDriver | DeviceClass | DeviceClaim | DevicePrivilegedClaim | DevicePool

_CLAIM_SPEC = ("deviceClass", "driver", "constraints", "minDeviceCount", "maxDeviceCount", "matchAttributes", "configs")
_CLASS_SPEC = ("deviceType", "driver", "constraints", "minDeviceCount", "maxDeviceCount", "matchAttributes", "configs")
_TOP = ("apiVersion", "kind", "metadata", "spec", "status")


def _configs(r: _Reader, body: Mapping[str, Any], path: str, with_namespace: bool) -> tuple[ConfigReference, ...]:
    out = []
    known = ("apiVersion", "kind", "name", "namespace") if with_namespace else ("apiVersion", "kind", "name")
    for i, raw in enumerate(r.items(body, "configs", path)):
        where = f"{path}.configs[{i}]"
        c = r.fields(raw, where, known)
        out.append(
            ConfigReference(
                r.string(c, "apiVersion", where) or "",
                r.string(c, "kind", where) or "",
                r.string(c, "name", where) or "",
                r.string(c, "namespace", where) or "",
            )
        )
    return tuple(out)


def _attribute(r: _Reader, raw: object, path: str) -> Attribute:
    a = r.fields(raw, path, ("name", "stringValue", "intValue", "quantityValue", "semVerValue"))
    quantity = None
    if a.get("quantityValue") is not None:
        try:
            quantity = parse_quantity(a["quantityValue"])
        except QuantityError as err:
            raise PrototypeError(f"{r.kind} {r.name!r}: {path}.quantityValue: {err}") from None
    semver = r.string(a, "semVerValue", path)
    return Attribute(
        r.string(a, "name", path) or "",
        r.string(a, "stringValue", path),
        r.integer(a, "intValue", path),
        quantity,
        semver,
    )


def parse_prototype(obj: Mapping[str, Any], default_namespace: str = "default") -> tuple[PrototypeObject, list[str]]:
    """One prototype object and the warnings (unknown fields) found; raise `PrototypeError` on bad types."""
    kind = str(obj.get("kind", ""))
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    name = str(meta.get("name") or "")  # type: ignore[union-attr]
    namespace = str(meta.get("namespace") or default_namespace)  # type: ignore[union-attr]
    if not name:
        raise PrototypeError(f"{kind or 'object'}: metadata.name: Required value")
    r = _Reader(kind, name)
    if kind == "DeviceDriver":
        top = r.fields(obj, "", (*_TOP, "deviceTypes"))
        types = r.strings(top, "deviceTypes", "")
        if not types:
            raise PrototypeError(f"DeviceDriver {name!r}: deviceTypes: Required value")
        return DeviceDriver(name, types), r.warnings
    top = r.fields(obj, "", _TOP)
    if kind == "DeviceClass":
        spec = r.fields(top.get("spec"), "spec", _CLASS_SPEC)
        return DeviceClass(
            name,
            r.string(spec, "deviceType", "spec") or "",
            r.string(spec, "driver", "spec"),
            r.string(spec, "constraints", "spec"),
            r.integer(spec, "minDeviceCount", "spec"),
            r.integer(spec, "maxDeviceCount", "spec"),
            r.strings(spec, "matchAttributes", "spec"),
            _configs(r, spec, "spec", True),
        ), r.warnings
    if kind == "DeviceClaim":
        spec = r.fields(top.get("spec"), "spec", _CLAIM_SPEC)
        status = r.fields(top.get("status"), "status", ("classConfigs", "claimConfigs", "allocations", "podNames"))
        allocations = []
        for i, raw in enumerate(r.items(status, "allocations", "status")):
            a = r.fields(raw, f"status.allocations[{i}]", ("devicePoolName", "deviceCount"))
            allocations.append(
                (r.string(a, "devicePoolName", "status") or "", r.integer(a, "deviceCount", "status") or 0)
            )
        if not spec.get("deviceClass"):
            r.warnings.append(f"DeviceClaim {name!r}: spec.deviceClass is required (the scheduler ignores it)")
        return DeviceClaim(
            namespace,
            name,
            r.string(spec, "deviceClass", "spec") or "",
            r.string(spec, "driver", "spec"),
            r.string(spec, "constraints", "spec"),
            r.integer(spec, "minDeviceCount", "spec"),
            r.integer(spec, "maxDeviceCount", "spec"),
            r.strings(spec, "matchAttributes", "spec"),
            _configs(r, spec, "spec", False),
            tuple(allocations),
            r.strings(status, "podNames", "status"),
        ), r.warnings
    if kind == "DevicePrivilegedClaim":
        spec = r.fields(top.get("spec"), "spec", ("driver", "constraints", "configs"))
        driver = r.string(spec, "driver", "spec")
        if not driver:
            raise PrototypeError(f"DevicePrivilegedClaim {name!r}: spec.driver: Required value")
        return DevicePrivilegedClaim(
            namespace, name, driver, r.string(spec, "constraints", "spec"), _configs(r, spec, "spec", False)
        ), r.warnings
    if kind == "DevicePool":
        spec = r.fields(top.get("spec"), "spec", ("nodeName", "driver", "attributes", "count", "deviceCount"))
        status = r.fields(top.get("status"), "status", ("availableDevices",))
        driver = r.string(spec, "driver", "spec")
        if not driver:
            raise PrototypeError(f"DevicePool {name!r}: spec.driver: Required value")
        count = r.integer(spec, "count", "spec")
        if count is None:
            count = r.integer(spec, "deviceCount", "spec")  # the Go field name, as a quirk-tolerant reader sees it
        attributes = tuple(
            _attribute(r, a, f"spec.attributes[{i}]") for i, a in enumerate(r.items(spec, "attributes", "spec"))
        )
        pool = DevicePool(
            name,
            driver,
            r.string(spec, "nodeName", "spec"),
            attributes,
            count or 0,
            r.integer(status, "availableDevices", "status"),
            tuple(r.warnings),
        )
        return pool, r.warnings
    raise PrototypeError(f"unsupported kind {kind!r} in {API_VERSION}; expected one of {', '.join(KINDS)}")


KINDS = ("DeviceDriver", "DeviceClass", "DeviceClaim", "DevicePrivilegedClaim", "DevicePool")
