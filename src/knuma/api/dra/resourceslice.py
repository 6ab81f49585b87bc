"""ResourceSlice (`resource.k8s.io/v1`, cluster-scoped): the devices of one pool (or part of it) as a driver publishes
them, and where they are reachable.

Validation follows `ValidateResourceSlice` (kube-apiserver): driver a DNS subdomain of at most 63 characters, the pool
name a `/`-separated path of DNS subdomains of at most 253 characters, generation >= 0, resourceSliceCount > 0,
exactly one of `nodeName`, `nodeSelector` (one term), `allNodes` or `perDeviceNodeSelection`, at most 128 devices
(64 when a device uses taints, counters or list attributes) with unique names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knuma.api.dra.counters import CounterSet, parse_counter_sets
from knuma.api.dra.device import LIST_TYPES, Device, NodeSelection, parse_device, parse_node_selection
from knuma.api.dra.fields import FieldErrors, dns_subdomain_error, document, items, mapping, optional_int

__all__ = ["Pool", "ResourceSlice", "check_pool_name"]

KIND = "ResourceSlice"
DEVICES_MAX = 128
DEVICES_MAX_WITH_TAINTS_OR_COUNTERS = 64
SHARED_COUNTERS_MAX = 8
DRIVER_NAME_MAX = 63
POOL_NAME_MAX = 253


@dataclass(frozen=True, slots=True)
class Pool:
    name: str
    generation: int = 0
    resource_slice_count: int = 1


@dataclass(frozen=True)
class ResourceSlice:
    name: str
    driver: str
    pool: Pool
    node: NodeSelection
    devices: tuple[Device, ...] = ()
    shared_counters: tuple[CounterSet, ...] = ()
    """The counter sets the pool's partitionable devices draw from (a slice has these or devices, not both)."""

    @property
    def has_shared_counters(self) -> bool:
        return bool(self.shared_counters)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> ResourceSlice:
        """Parse and validate; raise `ValidationError` listing every invalid field."""
        errors = FieldErrors()
        obj = document(obj, errors)
        meta = mapping(obj.get("metadata"), "metadata", errors)
        name = errors.check_name("metadata.name", meta.get("name"))
        spec = mapping(obj.get("spec"), "spec", errors)
        driver = errors.check_name("spec.driver", spec.get("driver"))
        if driver and len(driver) > DRIVER_NAME_MAX:
            errors.invalid("spec.driver", driver, f"must be no more than {DRIVER_NAME_MAX} characters")
        pool_raw = mapping(spec.get("pool"), "spec.pool", errors)
        pool_name = pool_raw.get("name")
        if not pool_name:
            errors.required("spec.pool.name")
        elif not isinstance(pool_name, str):
            errors.invalid("spec.pool.name", pool_name, "must be a string")
        else:
            check_pool_name(pool_name, "spec.pool.name", errors)
        generation = optional_int(pool_raw, "generation", "spec.pool", errors) or 0
        if generation < 0:
            errors.invalid("spec.pool.generation", generation, "must be greater than or equal to 0")
        count = optional_int(pool_raw, "resourceSliceCount", "spec.pool", errors)
        if count is None or count <= 0:
            errors.invalid("spec.pool.resourceSliceCount", count or 0, "must be greater than zero")
        node = parse_node_selection(spec, "spec", errors, allow_per_device=True)
        if node is None:
            errors.required(
                "spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes` or `perDeviceNodeSelection` is required"
            )
            node = NodeSelection()
        raw_devices = items(spec.get("devices"), "spec.devices", errors)
        counters = parse_counter_sets(
            spec.get("sharedCounters"), "spec.sharedCounters", errors, "name", SHARED_COUNTERS_MAX
        )
        devices: list[Device] = []
        seen: set[str] = set()
        for i, raw in enumerate(raw_devices):
            device = parse_device(raw, f"spec.devices[{i}]", errors, per_device_selection=node.per_device)
            if device is None:
                continue
            if device.name in seen:
                errors.duplicate(f"spec.devices[{i}].name", device.name)
            seen.add(device.name)
            devices.append(device)
        heavy = any(
            d.taints or d.consumes_counters or any(a.type in LIST_TYPES for a in d.attributes.values()) for d in devices
        )
        limit = DEVICES_MAX_WITH_TAINTS_OR_COUNTERS if heavy else DEVICES_MAX
        if len(raw_devices) > limit:
            errors.too_many("spec.devices", len(raw_devices), limit)
        if spec.get("sharedCounters") and raw_devices:
            errors.invalid("spec", None, "only one of `sharedCounters` or `devices` is allowed")
        errors.raise_if_any(f"{KIND}.resource.k8s.io", str(name))
        return cls(
            name=name,
            driver=driver,
            pool=Pool(str(pool_name), generation, count or 1),
            node=node,
            devices=tuple(devices),
            shared_counters=counters,
        )


def check_pool_name(name: str, path: str, errors: FieldErrors) -> None:
    """`validatePoolName`: a path of DNS subdomains separated by `/`."""
    if len(name) > POOL_NAME_MAX:
        errors.invalid(path, name, f"must be no more than {POOL_NAME_MAX} characters")
        return
    for part in name.split("/"):
        problem = dns_subdomain_error(part) if part else "each part of the pool name must not be empty"
        if problem:
            errors.invalid(path, name, problem)
            return
