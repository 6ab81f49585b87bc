"""Validation of `resource.k8s.io/v1` objects (DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice).

kube-apiserver rejects malformed device objects with 422 before any scheduler sees them
(`pkg/apis/resource/validation/validation.go`); so does this server, so that a driver publishing two devices of the
same name, or a claim without a device class, is told at `kubectl apply` time rather than failing in the scheduler.

Two kinds of rules live here:

- the shape of one object (`object_causes`): required fields, DNS names, one-of unions, duplicate names, the
  request references of constraints and configs; the rules of `validateResourceSlice`, `validateResourceClaim`,
  `validateDeviceClass` and `validateResourceClaimTemplate` that a structural check can decide;
- the rules of an update (`update_causes`): a claim's and a template's spec are immutable
  (`ValidateResourceClaimUpdate`), and the status invariants of `validateResourceClaimStatusUpdate` (`reservedFor`
  needs an allocation, an allocation is never edited in place, consumers are unique).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

JsonObj = dict[str, Any]
Cause = tuple[str, str, str]

GROUP = "resource.k8s.io"

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: Limits of `pkg/apis/resource/types.go`.
REQUESTS_MAX = 32
SELECTORS_MAX = 32
FIRST_AVAILABLE_MAX = 8
SLICE_DEVICES_MAX = 128
DEVICE_ATTRIBUTES_AND_CAPACITIES_MAX = 32
RESERVED_FOR_MAX = 256
ALLOCATION_MODES = ("All", "ExactCount")

_LABEL_HELP = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_SUBDOMAIN_HELP = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def _show(value: object) -> str:
    return json.dumps(value, default=str, sort_keys=True)


class _Causes:
    """Collects every problem of one object, in kube-apiserver's wording, so a user sees them all at once."""

    def __init__(self) -> None:
        self.items: list[Cause] = []

    def required(self, path: str, detail: str = "") -> None:
        self.items.append(("FieldValueRequired", path, "Required value" + (f": {detail}" if detail else "")))

    def invalid(self, path: str, value: object, detail: str) -> None:
        self.items.append(("FieldValueInvalid", path, f"Invalid value: {_show(value)}: {detail}"))

    def duplicate(self, path: str, value: object) -> None:
        self.items.append(("FieldValueDuplicate", path, f"Duplicate value: {_show(value)}"))

    def too_many(self, path: str, actual: int, limit: int) -> None:
        self.items.append(("FieldValueTooMany", path, f"Too many: {actual}: must have at most {limit} items"))

    def unsupported(self, path: str, value: object, allowed: tuple[str, ...]) -> None:
        listed = ", ".join(_show(a) for a in allowed)
        message = f"Unsupported value: {_show(value)}: supported values: {listed}"
        self.items.append(("FieldValueNotSupported", path, message))

    def forbidden(self, path: str, detail: str) -> None:
        self.items.append(("FieldValueForbidden", path, f"Forbidden: {detail}"))

    def name(self, path: str, value: object, *, label: bool = False, max_length: int = 253) -> str:
        """A required DNS name (label or subdomain); returns it for further checks."""
        if value in (None, ""):
            self.required(path)
            return ""
        if not isinstance(value, str):
            self.invalid(path, value, "must be a string")
            return ""
        limit = 63 if label else max_length
        if len(value) > limit:
            self.invalid(path, value, f"must be no more than {limit} characters")
        elif not (_DNS_LABEL if label else _DNS_SUBDOMAIN).match(value):
            self.invalid(path, value, _LABEL_HELP if label else _SUBDOMAIN_HELP)
        return value

    def unique_names(self, items: list[Any], path: str, check: Callable[[Any, str], str], limit: int) -> set[str]:
        """A list keyed by name (`validateSet`): size limit, each item checked, duplicates reported."""
        if len(items) > limit:
            self.too_many(path, len(items), limit)
        seen: set[str] = set()
        for i, item in enumerate(items):
            name = check(item, f"{path}[{i}]")
            if name and name in seen:
                self.duplicate(f"{path}[{i}].name", name)
            seen.add(name)
        return seen


def _dict(value: Any) -> JsonObj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _qualified_name(c: _Causes, path: str, value: object, *, fully: bool) -> None:
    """`validateQualifiedName` / `validateFullyQualifiedName`: `[domain/]identifier`, a C identifier."""
    if value in (None, ""):
        c.required(path)
        return
    if not isinstance(value, str):
        c.invalid(path, value, "must be a string")
        return
    domain, _, ident = value.rpartition("/")
    if fully and not domain:
        c.required(path, "a fully qualified name must be a domain and a name separated by a slash")
    if domain and (len(domain) > 63 or not _DNS_SUBDOMAIN.match(domain)):
        c.invalid(path, value, "the domain must be a DNS subdomain of at most 63 characters")
    if not ident or len(ident) > 32 or not _C_IDENTIFIER.match(ident):
        c.invalid(path, value, "the name must be a C identifier of at most 32 characters")


# -- DeviceClass ---------------------------------------------------------------------------------------------------


def _selectors(c: _Causes, raw: Any, path: str) -> None:
    selectors = _list(raw)
    if len(selectors) > SELECTORS_MAX:
        c.too_many(path, len(selectors), SELECTORS_MAX)
    for i, selector in enumerate(selectors):
        cel = _dict(selector).get("cel")
        if not isinstance(cel, dict):
            c.required(f"{path}[{i}].cel")
        elif not isinstance(cel.get("expression"), str) or not cel["expression"].strip():
            c.required(f"{path}[{i}].cel.expression")


def _opaque_config(c: _Causes, raw: Any, path: str) -> None:
    opaque = _dict(raw).get("opaque")
    if not isinstance(opaque, dict):
        c.required(f"{path}.opaque")
        return
    c.name(f"{path}.opaque.driver", opaque.get("driver"), max_length=63)
    if opaque.get("parameters") is None:
        c.required(f"{path}.opaque.parameters")


def _device_class(c: _Causes, obj: JsonObj) -> None:
    spec = _dict(obj.get("spec"))
    _selectors(c, spec.get("selectors"), "spec.selectors")
    for i, config in enumerate(_list(spec.get("config"))):
        _opaque_config(c, config, f"spec.config[{i}]")


# -- ResourceClaim and its template --------------------------------------------------------------------------------


def _allocation_mode(c: _Causes, request: JsonObj, path: str) -> None:
    mode = request.get("allocationMode") or "ExactCount"
    count = request.get("count")
    if mode == "All":
        if count not in (None, 0):
            c.invalid(f"{path}.count", count, "must not be specified when allocationMode is 'All'")
    elif mode == "ExactCount":
        if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count <= 0):
            c.invalid(f"{path}.count", count, "must be greater than zero")
    else:
        c.unsupported(f"{path}.allocationMode", mode, ALLOCATION_MODES)


def _exact_request(c: _Causes, request: JsonObj, path: str) -> None:
    c.name(f"{path}.deviceClassName", request.get("deviceClassName"))
    _selectors(c, request.get("selectors"), f"{path}.selectors")
    _allocation_mode(c, request, path)


def _request(c: _Causes, raw: Any, path: str) -> str:
    request = _dict(raw)
    name = c.name(f"{path}.name", request.get("name"), label=True)
    exactly, first = request.get("exactly"), _list(request.get("firstAvailable"))
    if exactly is None and not first:
        c.required(path, "exactly one of `exactly` or `firstAvailable` is required")
    elif exactly is not None and first:
        c.invalid(path, None, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set")
    elif first:

        def sub(item: Any, sub_path: str) -> str:
            sub_request = _dict(item)
            sub_name = c.name(f"{sub_path}.name", sub_request.get("name"), label=True)
            _exact_request(c, sub_request, sub_path)
            return sub_name

        c.unique_names(first, f"{path}.firstAvailable", sub, FIRST_AVAILABLE_MAX)
    else:
        _exact_request(c, _dict(exactly), f"{path}.exactly")
    return name


def request_names(spec: JsonObj) -> set[str]:
    """Names a constraint or config may refer to: `request` and `request/subrequest` (`gatherRequestNames`)."""
    names: set[str] = set()
    for request in _list(_dict(spec.get("devices")).get("requests")):
        name = str(_dict(request).get("name") or "")
        names.add(name)
        for sub in _list(_dict(request).get("firstAvailable")):
            names.add(f"{name}/{_dict(sub).get('name')}")
    return names


def _request_refs(c: _Causes, raw: Any, path: str, names: set[str]) -> None:
    for i, ref in enumerate(_list(raw)):
        if ref not in names:
            c.invalid(
                f"{path}[{i}]",
                ref,
                "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'",
            )


def _claim_spec(c: _Causes, spec: JsonObj, path: str) -> None:
    devices = _dict(spec.get("devices"))
    requests = _list(devices.get("requests"))
    c.unique_names(requests, f"{path}.devices.requests", lambda r, p: _request(c, r, p), REQUESTS_MAX)
    names = request_names(spec)
    for i, raw in enumerate(_list(devices.get("constraints"))):
        constraint, cpath = _dict(raw), f"{path}.devices.constraints[{i}]"
        _request_refs(c, constraint.get("requests"), f"{cpath}.requests", names)
        if constraint.get("matchAttribute") is not None:
            _qualified_name(c, f"{cpath}.matchAttribute", constraint["matchAttribute"], fully=True)
        elif constraint.get("distinctAttribute") is not None:
            _qualified_name(c, f"{cpath}.distinctAttribute", constraint["distinctAttribute"], fully=True)
        else:
            c.required(f"{cpath}.matchAttribute")
    for i, raw in enumerate(_list(devices.get("config"))):
        _request_refs(c, _dict(raw).get("requests"), f"{path}.devices.config[{i}].requests", names)
        _opaque_config(c, raw, f"{path}.devices.config[{i}]")


# -- ResourceSlice -------------------------------------------------------------------------------------------------

_NODE_SELECTION = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")


def _set(spec: JsonObj, key: str) -> bool:
    value = spec.get(key)
    return value not in (None, "", False, {})


def _attribute(c: _Causes, raw: Any, path: str) -> None:
    value = _dict(raw)
    kinds = [k for k in ("int", "bool", "string", "version") if k in value and value[k] is not None]
    if len(kinds) != 1:
        c.invalid(path, value, "exactly one value must be specified")
        return
    kind = kinds[0]
    scalar = value[kind]
    ok = {
        "int": isinstance(scalar, int) and not isinstance(scalar, bool),
        "bool": isinstance(scalar, bool),
        "string": isinstance(scalar, str),
        "version": isinstance(scalar, str),
    }[kind]
    if not ok:
        c.invalid(f"{path}.{kind}", scalar, f"must be a {'integer' if kind == 'int' else kind}")
    elif kind in ("string", "version") and len(scalar) > 64:
        c.invalid(f"{path}.{kind}", scalar, "must be no more than 64 characters")


def _device(c: _Causes, raw: Any, path: str, per_device_selection: bool) -> str:
    device = _dict(raw)
    name = c.name(f"{path}.name", device.get("name"), label=True)
    attributes, capacity = _dict(device.get("attributes")), _dict(device.get("capacity"))
    for key, value in attributes.items():
        _qualified_name(c, f"{path}.attributes[{key}]", key, fully=False)
        _attribute(c, value, f"{path}.attributes[{key}]")
    for key, value in capacity.items():
        _qualified_name(c, f"{path}.capacity[{key}]", key, fully=False)
        if _dict(value).get("value") in (None, ""):
            c.required(f"{path}.capacity[{key}].value")
    total = len(attributes) + len(capacity)
    if total > DEVICE_ATTRIBUTES_AND_CAPACITIES_MAX:
        c.too_many(f"{path}", total, DEVICE_ATTRIBUTES_AND_CAPACITIES_MAX)
    chosen = [k for k in ("nodeName", "nodeSelector", "allNodes") if _set(device, k)]
    if per_device_selection and len(chosen) != 1:
        c.required(path, "exactly one of `nodeName`, `nodeSelector`, `allNodes` is required")
    elif not per_device_selection and chosen:
        c.forbidden(f"{path}.{chosen[0]}", "only allowed when `perDeviceNodeSelection` is set")
    return name


def _resource_slice(c: _Causes, obj: JsonObj) -> None:
    spec = _dict(obj.get("spec"))
    c.name("spec.driver", spec.get("driver"), max_length=63)
    pool = spec.get("pool")
    if not isinstance(pool, dict):
        c.required("spec.pool")
    else:
        name = pool.get("name")
        if name in (None, ""):
            c.required("spec.pool.name")
        elif (
            not isinstance(name, str)
            or len(name) > 253
            or not all(_DNS_SUBDOMAIN.match(part) for part in name.split("/"))
        ):
            c.invalid("spec.pool.name", name, "must be one or more DNS sub-domains separated by slashes")
        generation = pool.get("generation", 0)
        if not isinstance(generation, int) or generation < 0:
            c.invalid("spec.pool.generation", generation, "must be greater than or equal to 0")
        count = pool.get("resourceSliceCount")
        if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
            c.invalid("spec.pool.resourceSliceCount", count, "must be greater than zero")
    chosen = [k for k in _NODE_SELECTION if _set(spec, k)]
    if len(chosen) != 1:
        listed = ", ".join(f"`{k}`" for k in _NODE_SELECTION)
        if chosen:
            c.invalid("spec", chosen, f"exactly one of {listed} is required, but multiple fields are set")
        else:
            c.required("spec", f"exactly one of {listed} is required")
    if _set(spec, "nodeName"):
        c.name("spec.nodeName", spec["nodeName"])
    per_device = spec.get("perDeviceNodeSelection") is True
    c.unique_names(
        _list(spec.get("devices")), "spec.devices", lambda d, p: _device(c, d, p, per_device), SLICE_DEVICES_MAX
    )


# -- entry points --------------------------------------------------------------------------------------------------


def object_causes(kind: str, obj: JsonObj) -> list[Cause]:
    """Everything wrong with one `resource.k8s.io` object (empty when valid)."""
    c = _Causes()
    if kind == "DeviceClass":
        _device_class(c, obj)
    elif kind == "ResourceClaim":
        _claim_spec(c, _dict(obj.get("spec")), "spec")
    elif kind == "ResourceClaimTemplate":
        _claim_spec(c, _dict(_dict(obj.get("spec")).get("spec")), "spec.spec")
    elif kind == "ResourceSlice":
        _resource_slice(c, obj)
    return c.items


def _consumers(c: _Causes, reserved: list[Any]) -> None:
    if len(reserved) > RESERVED_FOR_MAX:
        c.too_many("status.reservedFor", len(reserved), RESERVED_FOR_MAX)
    seen: set[str] = set()
    for i, raw in enumerate(reserved):
        ref = _dict(raw)
        for key in ("resource", "name", "uid"):
            if not ref.get(key):
                c.required(f"status.reservedFor[{i}].{key}")
        uid = str(ref.get("uid") or "")
        if uid and uid in seen:
            c.duplicate(f"status.reservedFor[{i}]", uid)
        seen.add(uid)


def _allocation(c: _Causes, allocation: JsonObj, names: set[str]) -> None:
    for i, raw in enumerate(_list(_dict(allocation.get("devices")).get("results"))):
        result, path = _dict(raw), f"status.allocation.devices.results[{i}]"
        request = result.get("request")
        if not request:
            c.required(f"{path}.request")
        elif request not in names:
            c.invalid(f"{path}.request", request, "must be the name of a request in the claim")
        c.name(f"{path}.driver", result.get("driver"), max_length=63)
        if not result.get("pool"):
            c.required(f"{path}.pool")
        c.name(f"{path}.device", result.get("device"), label=True)


def update_causes(kind: str, old: JsonObj, new: JsonObj) -> list[Cause]:
    """What an update may not do to a `resource.k8s.io` object (empty when allowed)."""
    c = _Causes()
    if kind in ("ResourceClaim", "ResourceClaimTemplate") and new.get("spec") != old.get("spec"):
        c.invalid("spec", "", "field is immutable")
    if kind == "ResourceClaim":
        status, old_status = _dict(new.get("status")), _dict(old.get("status"))
        reserved = _list(status.get("reservedFor"))
        _consumers(c, reserved)
        allocation, old_allocation = status.get("allocation"), old_status.get("allocation")
        if reserved and not allocation:
            c.forbidden("status.reservedFor", "may not be specified when `allocated` is not set")
        if allocation and old_allocation and allocation != old_allocation:
            c.invalid("status.allocation", "", "field is immutable")
        if allocation and not old_allocation:
            _allocation(c, _dict(allocation), request_names(_dict(new.get("spec"))))
        if reserved and _dict(new.get("metadata")).get("deletionTimestamp"):
            old_uids = {str(_dict(r).get("uid")) for r in _list(old_status.get("reservedFor"))}
            if any(str(_dict(r).get("uid")) not in old_uids for r in reserved):
                c.forbidden(
                    "status.reservedFor",
                    "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set",
                )
    return c.items
