"""v1alpha1 <-> v1 conversion of the NUMAResources custom resources, as numaresources-operator's conversion webhook
does it (`api/v1alpha1/numaresourcesoperator_conversion.go`, `numaresourcesscheduler_conversion.go`,
`numaresourcesoperator_normalize.go`; v1 is the hub and the stored version).

Field by field as upstream's "rote" conversion, which copies only the fields both versions have, so it is lossy on
purpose (a v1 field v1alpha1 lacks, such as `poolName`, `tolerations` or `schedulerInformer`, is not served at
v1alpha1, and a v1alpha1 client that writes the object back drops it):

- NUMAResourcesOperator, v1alpha1 -> v1: each node group keeps `machineConfigPoolSelector`, and its `config` is
  v1alpha1's `NormalizeConfig`: v1alpha1's defaults (`podsFingerprinting: Enabled`, `infoRefreshMode:
  PeriodicAndEvents`, `infoRefreshPeriod: 10s`), then the deprecated `disablePodsFingerprinting` (true: Disabled,
  false: Enabled), then the group's own `config` fields; `imageSpec`, `logLevel`, `podExcludes`; the status'
  `daemonsets`, `machineconfigpools` (name, conditions, config) and `conditions`.
- NUMAResourcesOperator, v1 -> v1alpha1: the same fields back; `EnabledExclusiveResources` becomes `Enabled`.
- NUMAResourcesScheduler, both ways: `imageSpec`, `schedulerName`, `logLevel`, `cacheResyncPeriod`; the status'
  `deployment`, `schedulerName` and `conditions`.

`metadata` is copied as is. An object already at the desired version is returned unchanged (with that
`apiVersion`), as the API server never sends those but a client may.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from knuma.api.numaresources import GROUP, OPERATOR_KIND, SCHEDULER_KIND, VERSION
from knuma.errors import InvalidInput

__all__ = ["ALPHA_API_VERSION", "ALPHA_NODE_GROUP_DEFAULTS", "ConversionError", "convert"]

ALPHA_API_VERSION = f"{GROUP}/v1alpha1"
V1_API_VERSION = f"{GROUP}/{VERSION}"
ALPHA_NODE_GROUP_DEFAULTS = {
    "podsFingerprinting": "Enabled",
    "infoRefreshMode": "PeriodicAndEvents",
    "infoRefreshPeriod": "10s",
}
"""v1alpha1's `DefaultNodeGroupConfig`."""
_VERSIONS = (ALPHA_API_VERSION, V1_API_VERSION)
_CONFIG_ENUMS = {
    "podsFingerprinting": {"Enabled", "Disabled", "EnabledExclusiveResources"},
    "infoRefreshMode": {"Periodic", "Events", "PeriodicAndEvents"},
}


class ConversionError(InvalidInput):
    """An object that cannot be converted (unknown kind or version); the message says which."""


def convert(obj: Mapping[str, Any], desired_api_version: str) -> dict[str, Any]:
    """`obj` (a NUMAResourcesOperator or NUMAResourcesScheduler at either version) at `desired_api_version`."""
    kind, version = obj.get("kind"), obj.get("apiVersion")
    if kind not in (OPERATOR_KIND, SCHEDULER_KIND):
        raise ConversionError(f"cannot convert kind {kind!r}: expected {OPERATOR_KIND} or {SCHEDULER_KIND}")
    for what, value in (("apiVersion", version), ("desiredAPIVersion", desired_api_version)):
        if value not in _VERSIONS:
            raise ConversionError(f"cannot convert {kind}: {what} {value!r} is not one of {', '.join(_VERSIONS)}")
    if version == desired_api_version:
        return {**copy.deepcopy(dict(obj)), "apiVersion": desired_api_version}
    src_spec, src_status = _mapping(obj.get("spec")), _mapping(obj.get("status"))
    if kind == OPERATOR_KIND:
        up = desired_api_version == V1_API_VERSION
        spec = _operator_spec(src_spec, up)
        status = _operator_status(src_status, up)
    else:
        spec = _copy(src_spec, ("imageSpec", "schedulerName", "logLevel", "cacheResyncPeriod"))
        status = _copy(src_status, ("deployment", "schedulerName", "conditions"))
    out: dict[str, Any] = {"apiVersion": desired_api_version, "kind": kind}
    if "metadata" in obj:
        out["metadata"] = copy.deepcopy(obj["metadata"])
    if spec or "spec" in obj:
        out["spec"] = spec
    if status:
        out["status"] = status
    return out


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _copy(src: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: copy.deepcopy(src[k]) for k in keys if src.get(k) is not None}


def _operator_spec(src: Mapping[str, Any], up: bool) -> dict[str, Any]:
    spec = _copy(src, ("imageSpec", "logLevel", "podExcludes"))
    groups = src.get("nodeGroups")
    if isinstance(groups, list):
        spec["nodeGroups"] = [_node_group(_mapping(g), up) for g in groups]
    return spec


def _node_group(src: Mapping[str, Any], up: bool) -> dict[str, Any]:
    group = _copy(src, ("machineConfigPoolSelector",))
    if up:
        group["config"] = _normalize_alpha(src)
    elif isinstance(src.get("config"), Mapping):
        group["config"] = _config(src["config"], up=False)
    return group


def _normalize_alpha(group: Mapping[str, Any]) -> dict[str, Any]:
    """v1alpha1's `NodeGroup.NormalizeConfig`, converted to v1."""
    config: dict[str, Any] = dict(ALPHA_NODE_GROUP_DEFAULTS)
    disable = group.get("disablePodsFingerprinting")
    if isinstance(disable, bool):
        config["podsFingerprinting"] = "Disabled" if disable else "Enabled"
    own = _mapping(group.get("config"))
    config.update({k: v for k, v in own.items() if k in ALPHA_NODE_GROUP_DEFAULTS and v is not None})
    return _config(config, up=True)


def _config(src: Mapping[str, Any], *, up: bool) -> dict[str, Any]:
    """`convertNodeGroupConfigV1Alpha1ToV1` / `...V1ToV1Alpha1`: known enum values and the period; tolerations do
    not exist in v1alpha1."""
    out: dict[str, Any] = {}
    for key, allowed in _CONFIG_ENUMS.items():
        value = src.get(key)
        if value in allowed:
            out[key] = "Enabled" if (not up and value == "EnabledExclusiveResources") else value
    if src.get("infoRefreshPeriod") is not None:
        out["infoRefreshPeriod"] = src["infoRefreshPeriod"]
    return out


def _operator_status(src: Mapping[str, Any], up: bool) -> dict[str, Any]:
    status = _copy(src, ("daemonsets", "conditions"))
    pools = src.get("machineconfigpools")
    if isinstance(pools, list):
        converted = []
        for raw in pools:
            pool = _mapping(raw)
            item = _copy(pool, ("name", "conditions"))
            if isinstance(pool.get("config"), Mapping):
                item["config"] = _config(pool["config"], up=up)
            converted.append(item)
        status["machineconfigpools"] = converted
    return status
