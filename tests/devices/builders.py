"""Small builders for resource.k8s.io/v1 objects in tests, in the shape of upstream's allocator test helpers."""

from __future__ import annotations

from typing import Any

from knuma.api.dra.deviceclass import DeviceClass
from knuma.api.dra.resourceclaim import ResourceClaim
from knuma.api.dra.resourceslice import ResourceSlice

NODE1, NODE2 = "node-1", "node-2"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
LABELS = {NODE1: {"region": "region-1", "planet": "earth"}, NODE2: {"region": "region-2", "planet": "earth"}}


def device_class(name: str, driver: str, *expressions: str) -> DeviceClass:
    selectors = [{"cel": {"expression": f'device.driver == "{driver}"'}}]
    selectors += [{"cel": {"expression": e}} for e in expressions]
    return DeviceClass.from_dict({"metadata": {"name": name}, "spec": {"selectors": selectors}})


def dev(
    name: str,
    capacity: dict[str, str] | None = None,
    attributes: dict[str, Any] | None = None,
    taints: list[dict[str, str]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, **extra}
    if capacity:
        out["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if attributes:
        out["attributes"] = attributes
    if taints:
        out["taints"] = taints
    return out


def label_selector(key: str, value: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}]}


def local_selector(node: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}


def slice_(
    name: str,
    where: str | dict[str, Any],
    pool: str,
    driver: str,
    *devices: dict[str, Any],
    count: int = 1,
    generation: int = 0,
) -> ResourceSlice:
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        "devices": list(devices),
    }
    if where == "all":
        spec["allNodes"] = True
    elif where == "per-device":
        spec["perDeviceNodeSelection"] = True
    elif isinstance(where, dict):
        spec["nodeSelector"] = where
    else:
        spec["nodeName"] = where
    return ResourceSlice.from_dict({"metadata": {"name": name}, "spec": spec})


def req(
    name: str,
    cls: str,
    count: int | None = 1,
    *selectors: str,
    mode: str | None = None,
    admin: bool | None = None,
    tolerations: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls}
    if mode == "All":
        exactly["allocationMode"] = "All"
    elif count is not None:
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if admin is not None:
        exactly["adminAccess"] = admin
    if tolerations:
        exactly["tolerations"] = tolerations
    return {"name": name, "exactly": exactly}


def sub(name: str, cls: str, count: int | None = 1, *selectors: str, mode: str | None = None) -> dict[str, Any]:
    body = req(name, cls, count, *selectors, mode=mode)["exactly"]
    return {"name": name, **body}


def first(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subs)}


def claim(
    name: str, *requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None, namespace: str = "default"
) -> ResourceClaim:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return ResourceClaim.from_dict({"metadata": {"name": name, "namespace": namespace}, "spec": {"devices": devices}})
