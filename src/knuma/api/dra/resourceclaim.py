"""ResourceClaim and ResourceClaimTemplate (`resource.k8s.io/v1`, namespaced), with the allocation result the
scheduler writes into `status.allocation`.

`AllocationResult` is what `knuma.devices` produces and what part 2's scheduler plugin writes: one entry per device
(`request`, `driver`, `pool`, `device`, `adminAccess`, `tolerations`; for a shared device `consumedCapacity` and
`shareID`), the class and claim configs, and the node
selector that pins the claim to where its devices are reachable. At most 32 results per claim
(`AllocationResultsMaxSize`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from knuma.api.dra.device import parse_binding_conditions
from knuma.api.dra.deviceclass import OpaqueConfig
from knuma.api.dra.fields import FieldErrors, document, items, mapping, optional_bool, optional_str
from knuma.api.dra.requests import DeviceClaimSpec, parse_device_claim
from knuma.api.taints import Toleration
from knuma.quantity import Quantity, QuantityError, parse_quantity

__all__ = [
    "ALLOCATION_RESULTS_MAX",
    "AllocationResult",
    "ConfigResult",
    "DeviceCondition",
    "DeviceResult",
    "DeviceStatus",
    "ResourceClaim",
    "ResourceClaimTemplate",
]

ALLOCATION_RESULTS_MAX = 32
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
"""What `validateUID` accepts for a result's `shareID`."""
RESERVED_FOR_MAX = 256


@dataclass(frozen=True, slots=True)
class DeviceResult:
    """`DeviceRequestAllocationResult`."""

    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool = False
    tolerations: tuple[Toleration, ...] = ()
    consumed_capacity: Mapping[str, Quantity] = field(default_factory=dict)
    """What this allocation takes of a shared device's capacities (`consumedCapacity`)."""
    share_id: str = ""
    """`shareID`: set on every allocation of a device that allows multiple allocations, one per allocation."""
    binding_conditions: tuple[str, ...] = ()
    """The device's binding conditions, copied by the allocator: the scheduler binds once all are True."""
    binding_failure_conditions: tuple[str, ...] = ()

    @property
    def device_id(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.device)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"request": self.request, "driver": self.driver, "pool": self.pool, "device": self.device}
        if self.admin_access:
            out["adminAccess"] = True
        if self.tolerations:
            out["tolerations"] = [
                {
                    k: v
                    for k, v in (("key", t.key), ("operator", t.operator), ("value", t.value), ("effect", t.effect))
                    if v
                }
                for t in self.tolerations
            ]
        if self.consumed_capacity:
            out["consumedCapacity"] = {k: str(v) for k, v in self.consumed_capacity.items()}
        if self.share_id:
            out["shareID"] = self.share_id
        if self.binding_conditions:
            out["bindingConditions"] = list(self.binding_conditions)
        if self.binding_failure_conditions:
            out["bindingFailureConditions"] = list(self.binding_failure_conditions)
        return out


@dataclass(frozen=True, slots=True)
class ConfigResult:
    """`DeviceAllocationConfiguration`: `source` is `FromClass` or `FromClaim`."""

    source: str
    config: OpaqueConfig

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, **self.config.to_dict()}


@dataclass(frozen=True)
class AllocationResult:
    results: tuple[DeviceResult, ...] = ()
    config: tuple[ConfigResult, ...] = ()
    node_selector: Mapping[str, Any] | None = None
    """A `v1.NodeSelector` on the wire; None when the devices are reachable from every node."""
    allocation_timestamp: str = ""
    """`allocationTimestamp`: when the scheduler wrote the allocation (RFC 3339), from which a device's binding
    conditions time out."""

    def to_dict(self) -> dict[str, Any]:
        devices: dict[str, Any] = {"results": [r.to_dict() for r in self.results]}
        if self.config:
            devices["config"] = [c.to_dict() for c in self.config]
        out: dict[str, Any] = {"devices": devices}
        if self.node_selector is not None:
            out["nodeSelector"] = self.node_selector
        if self.allocation_timestamp:
            out["allocationTimestamp"] = self.allocation_timestamp
        return out

    @property
    def binding_conditions(self) -> bool:
        """Whether some device must meet binding conditions before the pod is bound."""
        return any(r.binding_conditions for r in self.results)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], path: str, errors: FieldErrors) -> AllocationResult:
        devices = mapping(raw.get("devices"), f"{path}.devices", errors)
        results = []
        for i, item in enumerate(
            items(devices.get("results"), f"{path}.devices.results", errors, ALLOCATION_RESULTS_MAX)
        ):
            where = f"{path}.devices.results[{i}]"
            body = mapping(item, where, errors)
            values = {}
            for key in ("request", "driver", "pool", "device"):
                values[key] = optional_str(body, key, where, errors)
                if not values[key]:
                    errors.required(f"{where}.{key}")
            admin = bool(optional_bool(body, "adminAccess", where, errors))
            consumed = {}
            for name, amount in mapping(body.get("consumedCapacity"), f"{where}.consumedCapacity", errors).items():
                try:
                    consumed[str(name)] = parse_quantity(amount)
                except QuantityError as err:
                    errors.invalid(f"{where}.consumedCapacity[{name}]", amount, str(err))
            share = optional_str(body, "shareID", where, errors)
            if share and not UUID.fullmatch(share):
                errors.invalid(f"{where}.shareID", share, "must be a lowercase UUID in 8-4-4-4-12 format")
            conditions, failures = parse_binding_conditions(body, where, errors)
            results.append(
                DeviceResult(
                    values["request"],
                    values["driver"],
                    values["pool"],
                    values["device"],
                    admin,
                    consumed_capacity=consumed,
                    share_id=share,
                    binding_conditions=conditions,
                    binding_failure_conditions=failures,
                )
            )
        selector = raw.get("nodeSelector")
        stamp = optional_str(raw, "allocationTimestamp", path, errors)
        return cls(tuple(results), (), selector if isinstance(selector, Mapping) else None, stamp)


@dataclass(frozen=True, slots=True)
class DeviceCondition:
    """One condition of an allocated device (`status.devices[].conditions[]`, a `metav1.Condition`)."""

    type: str
    status: str
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class DeviceStatus:
    """`AllocatedDeviceStatus`: what the device's driver reports about one allocated device."""

    driver: str
    pool: str
    device: str
    share_id: str = ""
    conditions: tuple[DeviceCondition, ...] = ()

    def condition(self, kind: str) -> DeviceCondition | None:
        return next((c for c in self.conditions if c.type == kind), None)


def _device_statuses(raw: object, errors: FieldErrors) -> tuple[DeviceStatus, ...]:
    out = []
    for i, item in enumerate(items(raw, "status.devices", errors)):
        where = f"status.devices[{i}]"
        body = mapping(item, where, errors)
        conditions = []
        for j, c in enumerate(items(body.get("conditions"), f"{where}.conditions", errors)):
            cond = mapping(c, f"{where}.conditions[{j}]", errors)
            conditions.append(
                DeviceCondition(
                    str(cond.get("type") or ""),
                    str(cond.get("status") or ""),
                    str(cond.get("reason") or ""),
                    str(cond.get("message") or ""),
                )
            )
        out.append(
            DeviceStatus(
                optional_str(body, "driver", where, errors),
                optional_str(body, "pool", where, errors),
                optional_str(body, "device", where, errors),
                optional_str(body, "shareID", where, errors),
                tuple(conditions),
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class ResourceClaim:
    namespace: str
    name: str
    spec: DeviceClaimSpec
    uid: str = ""
    allocation: AllocationResult | None = None
    reserved_for: tuple[Mapping[str, Any], ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    devices: tuple[DeviceStatus, ...] = ()
    """`status.devices`: what drivers report about the allocated devices (binding conditions among it)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], default_namespace: str = "default") -> ResourceClaim:
        errors = FieldErrors()
        obj = document(obj, errors)
        meta = mapping(obj.get("metadata"), "metadata", errors)
        name = errors.check_name("metadata.name", meta.get("name"))
        namespace = optional_str(meta, "namespace", "metadata", errors) or default_namespace
        spec = parse_device_claim(mapping(obj.get("spec"), "spec", errors).get("devices"), "spec.devices", errors)
        status = mapping(obj.get("status"), "status", errors)
        allocation = None
        if status.get("allocation") is not None:
            allocation = AllocationResult.from_dict(
                mapping(status["allocation"], "status.allocation", errors), "status.allocation", errors
            )
        reserved = items(status.get("reservedFor"), "status.reservedFor", errors, RESERVED_FOR_MAX)
        devices = _device_statuses(status.get("devices"), errors)
        errors.raise_if_any("ResourceClaim.resource.k8s.io", name)
        return cls(
            namespace=namespace,
            name=name,
            spec=spec,
            uid=str(meta.get("uid") or ""),
            allocation=allocation,
            reserved_for=tuple(r for r in reserved if isinstance(r, Mapping)),
            labels=dict(meta.get("labels") or {}),
            annotations=dict(meta.get("annotations") or {}),
            devices=devices,
        )


@dataclass(frozen=True)
class ResourceClaimTemplate:
    namespace: str
    name: str
    spec: DeviceClaimSpec
    claim_labels: Mapping[str, str] = field(default_factory=dict)
    claim_annotations: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], default_namespace: str = "default") -> ResourceClaimTemplate:
        errors = FieldErrors()
        obj = document(obj, errors)
        meta = mapping(obj.get("metadata"), "metadata", errors)
        name = errors.check_name("metadata.name", meta.get("name"))
        namespace = optional_str(meta, "namespace", "metadata", errors) or default_namespace
        spec = mapping(obj.get("spec"), "spec", errors)
        claim_meta = mapping(spec.get("metadata"), "spec.metadata", errors)
        for key in claim_meta:
            if key not in ("labels", "annotations"):
                errors.forbidden(f"spec.metadata.{key}", "only labels and annotations may be set")
        inner = mapping(spec.get("spec"), "spec.spec", errors)
        devices = parse_device_claim(inner.get("devices"), "spec.spec.devices", errors)
        errors.raise_if_any("ResourceClaimTemplate.resource.k8s.io", name)
        return cls(
            namespace, name, devices, dict(claim_meta.get("labels") or {}), dict(claim_meta.get("annotations") or {})
        )

    def claim_for(self, pod_name: str, pod_claim_name: str) -> ResourceClaim:
        """The claim the resourceclaim controller creates for a pod (`<pod>-<podClaimName>-` plus a random suffix
        upstream; here the deterministic `<pod>-<podClaimName>` so that offline results are reproducible)."""
        return ResourceClaim(
            namespace=self.namespace,
            name=f"{pod_name}-{pod_claim_name}",
            spec=self.spec,
            labels=self.claim_labels,
            annotations={**self.claim_annotations, "resource.kubernetes.io/pod-claim-name": pod_claim_name},
        )
