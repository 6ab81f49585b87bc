"""Validation of `resource.k8s.io/v1` objects (DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice).

kube-apiserver rejects malformed device objects with 422 before any scheduler sees them
(`pkg/apis/resource/validation/validation.go`); so does this server, so that a driver publishing two devices of the
same name, a claim without a device class or a selector that does not compile is told at `kubectl apply` time
rather than failing in the scheduler.

Two kinds of rules live here:

- the shape of one object (`object_causes`): `knuma.api.dra`'s parsers, which implement `validateResourceSlice`,
  `validateResourceClaim`, `validateDeviceClass` and `validateResourceClaimTemplate` (required fields, DNS names,
  one-of unions, duplicate names, request references), plus CEL selectors compiled as kube-apiserver does;
- the rules of an update (`update_causes`): a claim's and a template's spec are immutable
  (`ValidateResourceClaimUpdate`), and the status invariants of `validateResourceClaimStatusUpdate` (`reservedFor`
  needs an allocation, an allocation is never edited in place, consumers are unique); a DeviceTaintRule's status
  holds at most `DEVICE_TAINT_RULE_MAX_CONDITIONS` valid conditions (`ValidateDeviceTaintRuleStatusUpdate`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from knuma.api.dra.deviceclass import DeviceClass
from knuma.api.dra.devicetaintrule import DeviceTaintRule
from knuma.api.dra.fields import FieldError, ValidationError
from knuma.api.dra.resourceclaim import ResourceClaim, ResourceClaimTemplate
from knuma.api.dra.resourceslice import ResourceSlice
from knuma.api.types import JsonObj
from knuma.devices.cel import CELError, compile_selector
from knuma.local.apiserver.metadata import qualified_name_causes

Cause = tuple[str, str, str]

GROUP = "resource.k8s.io"

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

RESERVED_FOR_MAX = 256
DEVICE_TAINT_RULE_MAX_CONDITIONS = 8
"""`resource.DeviceTaintRuleStatusMaxConditions`."""
CONDITION_STATUSES = ("False", "True", "Unknown")
CONDITION_REASON_MAX = 1024
CONDITION_MESSAGE_MAX = 32 * 1024
_CONDITION_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")

#: `field.Error` type strings -> the `reason` of a `StatusCause` (`k8s.io/apimachinery/pkg/util/validation/field`).
_REASONS = {
    "Required value": "FieldValueRequired",
    "Invalid value": "FieldValueInvalid",
    "Duplicate value": "FieldValueDuplicate",
    "Too many": "FieldValueTooMany",
    "Unsupported value": "FieldValueNotSupported",
    "Forbidden": "FieldValueForbidden",
}

_PARSERS: dict[str, Callable[[JsonObj], object]] = {
    "DeviceClass": DeviceClass.from_dict,
    "DeviceTaintRule": DeviceTaintRule.from_dict,
    "ResourceClaim": ResourceClaim.from_dict,
    "ResourceClaimTemplate": ResourceClaimTemplate.from_dict,
    "ResourceSlice": ResourceSlice.from_dict,
}


def _show(value: object) -> str:
    return json.dumps(value, default=str, sort_keys=True)


class _Causes:
    """Collects every problem of one update, in kube-apiserver's wording, so a user sees them all at once."""

    def __init__(self) -> None:
        self.items: list[Cause] = []

    def required(self, path: str) -> None:
        self.items.append(("FieldValueRequired", path, "Required value"))

    def invalid(self, path: str, value: object, detail: str) -> None:
        self.items.append(("FieldValueInvalid", path, f"Invalid value: {_show(value)}: {detail}"))

    def duplicate(self, path: str, value: object) -> None:
        self.items.append(("FieldValueDuplicate", path, f"Duplicate value: {_show(value)}"))

    def too_many(self, path: str, actual: int, limit: int) -> None:
        self.items.append(("FieldValueTooMany", path, f"Too many: {actual}: must have at most {limit} items"))

    def too_long(self, path: str, limit: int) -> None:
        self.items.append(("FieldValueTooLong", path, f"Too long: may not be more than {limit} bytes"))

    def unsupported(self, path: str, value: object, allowed: tuple[str, ...]) -> None:
        listed = ", ".join(_show(a) for a in allowed)
        self.items.append(
            ("FieldValueNotSupported", path, f"Unsupported value: {_show(value)}: supported values: {listed}")
        )

    def forbidden(self, path: str, detail: str) -> None:
        self.items.append(("FieldValueForbidden", path, f"Forbidden: {detail}"))

    def name(self, path: str, value: object, *, label: bool = False, max_length: int = 253) -> None:
        limit = 63 if label else max_length
        if value in (None, ""):
            self.required(path)
        elif not isinstance(value, str) or len(value) > limit:
            self.invalid(path, value, f"must be a string of no more than {limit} characters")
        elif not (_DNS_LABEL if label else _DNS_SUBDOMAIN).match(value):
            self.invalid(path, value, "must be a lowercase RFC 1123 " + ("label" if label else "subdomain"))


def _dict(value: Any) -> JsonObj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _cause(error: FieldError) -> Cause:
    message = str(error)[len(error.path) + 2 :]
    return (_REASONS.get(error.kind, "FieldValueInvalid"), error.path, message)


def _selector_paths(kind: str, obj: JsonObj) -> list[tuple[str, str]]:
    """(field path, expression) of every CEL selector of the object."""
    found: list[tuple[str, str]] = []

    def selectors(raw: Any, path: str) -> None:
        for i, selector in enumerate(_list(raw)):
            cel = _dict(_dict(selector).get("cel"))
            if isinstance(cel.get("expression"), str) and cel["expression"]:
                found.append((f"{path}[{i}].cel.expression", cel["expression"]))

    spec = _dict(obj.get("spec"))
    if kind == "DeviceClass":
        selectors(spec.get("selectors"), "spec.selectors")
        return found
    prefix = "spec"
    if kind == "ResourceClaimTemplate":
        spec, prefix = _dict(spec.get("spec")), "spec.spec"
    for i, request in enumerate(_list(_dict(spec.get("devices")).get("requests"))):
        path = f"{prefix}.devices.requests[{i}]"
        selectors(_dict(_dict(request).get("exactly")).get("selectors"), f"{path}.exactly.selectors")
        for j, sub in enumerate(_list(_dict(request).get("firstAvailable"))):
            selectors(_dict(sub).get("selectors"), f"{path}.firstAvailable[{j}].selectors")
    return found


def object_causes(kind: str, obj: JsonObj) -> list[Cause]:
    """Everything wrong with one `resource.k8s.io` object (empty when valid): the rules of `knuma.api.dra` and,
    like kube-apiserver, CEL selectors that do not compile. Metadata is checked by the generic validation."""
    parse = _PARSERS.get(kind)
    if parse is None:
        return []
    causes: list[Cause] = []
    try:
        parse(obj)
    except ValidationError as err:
        causes = [_cause(e) for e in err.errors if not e.path.startswith("metadata")]
    for path, expression in _selector_paths(kind, obj):
        try:
            compile_selector(expression, path)
        except CELError as err:
            detail = str(err).removeprefix(f"{path}: ")
            causes.append(("FieldValueInvalid", path, f"Invalid value: {_show(expression)}: {detail}"))
    return causes


def request_names(spec: JsonObj) -> set[str]:
    """Names an allocation result may refer to: `request` and `request/subrequest` (`gatherRequestNames`)."""
    names: set[str] = set()
    for request in _list(_dict(spec.get("devices")).get("requests")):
        name = str(_dict(request).get("name") or "")
        names.add(name)
        for sub in _list(_dict(request).get("firstAvailable")):
            names.add(f"{name}/{_dict(sub).get('name')}")
    return names


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


def _device_statuses(c: _Causes, devices: list[Any], allocation: JsonObj) -> None:
    """`validateDeviceStatus`: each `status.devices` entry is one of the allocated devices (driver, pool, device and,
    for a share of a device that allows multiple allocations, its shareID), at most once."""
    allocated = {_shared_device_id(_dict(r)) for r in _list(_dict(allocation.get("devices")).get("results"))}
    seen: set[str] = set()
    for i, entry in enumerate(devices):
        device = _shared_device_id(_dict(entry))
        if device in seen:
            c.duplicate(f"status.devices[{i}]", device)
        seen.add(device)
        if device not in allocated:
            c.invalid(f"status.devices[{i}]", device, "must be an allocated device in the claim")


def _shared_device_id(entry: JsonObj) -> str:
    """upstream `SharedDeviceID.String()`: driver/pool/device, then /shareID when there is one."""
    parts = [str(entry.get(k) or "") for k in ("driver", "pool", "device")]
    share = str(entry.get("shareID") or "")
    return "/".join([*parts, share] if share else parts)


def _conditions(c: _Causes, conditions: list[Any], path: str) -> None:
    """`metav1validation.ValidateConditions`: unique types, each a qualified name; a status of True, False or
    Unknown; `observedGeneration` >= 0; a `lastTransitionTime`; a `reason` in CamelCase-like form of at most 1 KiB;
    a `message` of at most 32 KiB."""
    seen: set[str] = set()
    for i, raw in enumerate(conditions):
        condition, at = _dict(raw), f"{path}[{i}]"
        kind = str(condition.get("type") or "")
        if kind in seen:
            c.duplicate(f"{at}.type", kind)
        seen.add(kind)
        c.items += qualified_name_causes(kind, f"{at}.type")
        if condition.get("status") not in CONDITION_STATUSES:
            c.unsupported(f"{at}.status", condition.get("status"), CONDITION_STATUSES)
        generation = condition.get("observedGeneration")
        if isinstance(generation, int) and generation < 0:
            c.invalid(f"{at}.observedGeneration", generation, "must be greater than or equal to zero")
        if not condition.get("lastTransitionTime"):
            c.items.append(("FieldValueRequired", f"{at}.lastTransitionTime", "Required value: must be set"))
        reason = condition.get("reason")
        if not reason:
            c.items.append(("FieldValueRequired", f"{at}.reason", "Required value: must be set"))
        else:
            if not isinstance(reason, str) or not _CONDITION_REASON.match(reason):
                c.invalid(
                    f"{at}.reason",
                    reason,
                    "a condition reason must start with alphabetic character, optionally followed by a string of "
                    "alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. "
                    "'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex "
                    "used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')",
                )
            if len(str(reason)) > CONDITION_REASON_MAX:
                c.too_long(f"{at}.reason", CONDITION_REASON_MAX)
        if len(str(condition.get("message") or "")) > CONDITION_MESSAGE_MAX:
            c.too_long(f"{at}.message", CONDITION_MESSAGE_MAX)


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
        _device_statuses(c, _list(status.get("devices")), _dict(allocation))
        if reserved and _dict(new.get("metadata")).get("deletionTimestamp"):
            old_uids = {str(_dict(r).get("uid")) for r in _list(old_status.get("reservedFor"))}
            if any(str(_dict(r).get("uid")) not in old_uids for r in reserved):
                c.forbidden(
                    "status.reservedFor",
                    "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set",
                )
    if kind == "DeviceTaintRule":  # `ValidateDeviceTaintRuleStatusUpdate` (a spec write keeps the stored status)
        conditions = _list(_dict(new.get("status")).get("conditions"))
        _conditions(c, conditions, "status.conditions")
        if len(conditions) > DEVICE_TAINT_RULE_MAX_CONDITIONS:
            c.too_many("status.conditions", len(conditions), DEVICE_TAINT_RULE_MAX_CONDITIONS)
    return c.items
