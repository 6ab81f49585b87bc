"""Conversion between a resource's served shape and its stored shape.

kube-apiserver stores `events.k8s.io/v1` Events and core `v1` Events as the same objects: an event the scheduler
records through `events.k8s.io` shows up in `kubectl get events` and `kubectl describe pod`. The field mapping is
upstream's (`regarding` <-> `involvedObject`, `note` <-> `message`, `deprecated*` <-> the core fields). Custom
resources convert with strategy `None` (only `apiVersion` changes); every other kind is stored as served.
"""

from __future__ import annotations

from knuma.api.types import JsonObj
from knuma.local.apiserver.resources import ResourceType

#: events.k8s.io/v1 field -> core/v1 field.
_EVENT_FIELDS = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_CORE_FIELDS = {v: k for k, v in _EVENT_FIELDS.items()}


def _rename(obj: JsonObj, mapping: dict[str, str], api_version: str) -> JsonObj:
    out = {mapping.get(k, k): v for k, v in obj.items()}
    out["apiVersion"] = api_version
    return out


def to_storage(rt: ResourceType, obj: JsonObj) -> JsonObj:
    if rt.group == "events.k8s.io" and rt.kind == "Event":
        return _rename(obj, _EVENT_FIELDS, rt.storage_api_version)
    return obj


def from_storage(rt: ResourceType, obj: JsonObj) -> JsonObj:
    """`obj` as served at `rt`'s group and version (a shallow copy when anything changes)."""
    if rt.group == "events.k8s.io" and rt.kind == "Event":
        return _rename(obj, _CORE_FIELDS, rt.api_version)
    if obj.get("apiVersion") == rt.api_version:
        return obj
    return {**obj, "apiVersion": rt.api_version}
