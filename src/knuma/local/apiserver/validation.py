"""Validation of incoming objects: names, and the required fields of the built-in kinds the stack uses.

Messages follow kube-apiserver's wording (`Invalid value`, `Required value`, the RFC 1123 explanations), because
users paste them into search engines.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any

from knuma.api.names import config_map_key_errors, dns1123_label_errors, dns1123_subdomain_errors
from knuma.api.podresize import container_resources_update_errors, pod_resize_errors
from knuma.api.podresource_validation import (
    pod_resources_errors,
    pod_resources_update_errors,
    resource_requirement_errors,
)
from knuma.api.podstatus_validation import extended_resource_claim_status_errors
from knuma.api.podupdate import pod_update_errors
from knuma.api.podvalidation import FieldError, container_name_errors, init_restart_policy_errors, node_name_errors
from knuma.api.types import JsonObj
from knuma.local.apiserver import disruption_budgets, dra_validation, metadata, priority, statefulsets
from knuma.local.apiserver.defaults import default_pod_spec_resources, needs_resource_defaults
from knuma.local.apiserver.errors import invalid
from knuma.local.apiserver.resources import ResourceType

Cause = tuple[str, str, str]

_PATH_SEGMENT_BAD = ("/", "%")

LABEL_KINDS = frozenset({"Namespace", "Service"})
#: RBAC names are path segments, not DNS names (`system:controller:foo` is valid).
PATH_SEGMENT_KINDS = frozenset({"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"})


def name_causes(kind: str, name: str, field: str = "metadata.name") -> list[Cause]:
    if kind in PATH_SEGMENT_KINDS:
        if name in (".", "..") or any(c in name for c in _PATH_SEGMENT_BAD):
            return [("FieldValueInvalid", field, f"Invalid value: \"{name}\": may not contain '/' or '%'")]
        return []
    check = dns1123_label_errors if kind in LABEL_KINDS else dns1123_subdomain_errors
    return [("FieldValueInvalid", field, f'Invalid value: "{name}": {message}') for message in check(name)]


def _required(obj: JsonObj, path: str) -> list[Cause]:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict) or cur.get(part) in (None, "", [], {}):
            return [("FieldValueRequired", path, "Required value")]
        cur = cur[part]
    return []


def _causes(errors: Iterable[FieldError]) -> list[Cause]:
    return [(e.reason, e.field, e.message) for e in errors]


def _pod_spec_errors(spec: JsonObj, path: str, *, consistency: bool = True) -> list[FieldError]:
    """`ValidatePodSpec`'s checks knuma makes, in its order: the containers (names, resource requirements), then the
    pod-level resources. kube-apiserver validates a pod template with the same function, under
    `spec.template.spec`. `consistency` False: the pod-level defaults could not be computed (a container is
    refused for another reason), so the pod-level amounts are not compared with the containers' (that would report
    a missing default as a request of 0)."""
    containers = container_name_errors(spec, path) + init_restart_policy_errors(spec, path)
    containers += resource_requirement_errors(spec, path) + node_name_errors(spec, path)
    return containers + pod_resources_errors(spec, path, consistency=consistency)


def _defaulted_pod_spec(obj: JsonObj) -> tuple[JsonObj, bool]:
    """The Pod's spec as kube-apiserver validates it: after `SetDefaults_Pod`'s resource defaulting (container
    requests from limits, pod-level requests and hugepages limits). A pod template is validated as written: that
    defaulting is the Pod's alone. Every write of a pod comes here (the kubelet's status writes too), and a stored or
    updated pod is already defaulted: the spec is copied and parsed only when the defaulting would change it. Returns
    the spec and whether its defaults are in (False when the pod could not be read)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return {}, True
    if not needs_resource_defaults(spec):
        return spec, True
    copied: JsonObj = copy.deepcopy(spec)
    pod = default_pod_spec_resources({**obj, "spec": copied})  # the defaulting writes the spec only
    return copied, pod is not None


def _kind_causes(kind: str, obj: JsonObj) -> list[Cause]:
    causes: list[Cause] = []
    if kind == "Pod":
        causes += _required(obj, "spec.containers")
        for n, c in enumerate(((obj.get("spec") or {}).get("containers")) or []):
            if not isinstance(c, dict):
                continue
            if not c.get("name"):
                causes.append(("FieldValueRequired", f"spec.containers[{n}].name", "Required value"))
            if not c.get("image"):
                causes.append(("FieldValueRequired", f"spec.containers[{n}].image", "Required value"))
        spec, defaulted = _defaulted_pod_spec(obj)
        causes += _causes(_pod_spec_errors(spec, "spec", consistency=defaulted))
    elif kind in ("Deployment", "DaemonSet", "ReplicaSet", "StatefulSet"):
        causes += _required(obj, "spec.selector")
        causes += _required(obj, "spec.template.spec.containers")
        template = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
        causes += _causes(_pod_spec_errors(template, "spec.template.spec"))
        if kind == "StatefulSet":
            causes += statefulsets.statefulset_causes(obj)
    elif kind == "ControllerRevision":
        # ValidateControllerRevisionCreate (pkg/apis/apps/validation)
        if obj.get("data") is None:
            causes.append(("FieldValueRequired", "data", "Required value"))
        revision = obj.get("revision")
        if isinstance(revision, int) and revision < 0:
            causes.append(
                ("FieldValueInvalid", "revision", f"Invalid value: {revision}: must be greater than or equal to 0")
            )
    elif kind == "PriorityClass":
        if not isinstance(obj.get("value"), int):
            causes.append(("FieldValueRequired", "value", "Required value"))
        causes += priority.priority_class_causes(obj)
    elif kind == "PodDisruptionBudget":
        causes += disruption_budgets.budget_causes(obj)
    elif kind in ("RoleBinding", "ClusterRoleBinding"):
        causes += _required(obj, "roleRef.name")
    elif kind in ("Secret", "ConfigMap"):
        causes += _data_key_causes(obj)
    return causes


def _data_key_causes(obj: JsonObj) -> list[Cause]:
    """`ValidateSecret` / `ValidateConfigMap`: every key of `data` (a Secret's `stringData` is merged into it on
    decoding, a ConfigMap's `binaryData` is checked alike) is a file name in a volume (`IsConfigMapKey`)."""
    causes: list[Cause] = []
    for field in ("data", "stringData", "binaryData"):
        values = obj.get(field)
        for key in values if isinstance(values, dict) else ():
            path = f"{'binaryData' if field == 'binaryData' else 'data'}[{key}]"
            shown = json.dumps(key, ensure_ascii=False)
            causes += [("FieldValueInvalid", path, f"Invalid value: {shown}: {m}") for m in config_map_key_errors(key)]
    return causes


def _shape_causes(rt: ResourceType, obj: JsonObj) -> list[Cause]:
    """The top-level shape the kind-specific checks (and every reader of the object) rely on: a built-in kind's
    `spec` and `status` are objects, a Pod's container lists are lists of objects."""
    if rt.custom:
        return []
    causes: list[Cause] = []
    for key in ("spec", "status"):
        value = obj.get(key)
        if value is not None and not isinstance(value, dict):
            causes.append(("FieldValueTypeInvalid", key, f"Invalid value: {value!r}: must be an object"))
    spec = obj.get("spec")
    if rt.kind == "Pod" and isinstance(spec, dict):
        for key in ("containers", "initContainers", "ephemeralContainers"):
            value = spec.get(key)
            if value is None:
                continue
            if not isinstance(value, list):
                causes.append(("FieldValueTypeInvalid", f"spec.{key}", f"Invalid value: {value!r}: must be a list"))
                continue
            causes += [
                ("FieldValueTypeInvalid", f"spec.{key}[{n}]", f"Invalid value: {item!r}: must be an object")
                for n, item in enumerate(value)
                if not isinstance(item, dict)
            ]
    return causes


def validate_object(rt: ResourceType, obj: JsonObj, *, spec: bool = True) -> None:
    """Raise a 422 Invalid error listing every problem found. `spec` False: a status write, whose spec is the stored
    one: a Pod's spec rules are skipped, as `ValidatePodStatusUpdate` does (the kubelet's status writes are the most
    frequent writes of a cluster; other kinds keep their checks, some of which are about the status), and its
    `status.extendedResourceClaimStatus` is checked against that spec (`knuma.api.podstatus_validation`)."""
    name = str((obj.get("metadata") or {}).get("name") or "")
    shape = _shape_causes(rt, obj)
    if shape:
        raise invalid(rt.kind, rt.group, name, shape)
    causes = (
        name_causes(rt.kind, name)
        if name
        else [("FieldValueRequired", "metadata.name", "Required value: name or generateName is required")]
    )
    causes += metadata.causes(obj.get("metadata"))
    if spec or rt.kind != "Pod":
        causes += _kind_causes(rt.kind, obj)
    elif not rt.custom:  # a Pod status write: what the scheduler and the kubelet read from the status
        causes += _causes(extended_resource_claim_status_errors(obj.get("spec") or {}, obj.get("status") or {}))
    if rt.group == dra_validation.GROUP and not rt.custom:
        causes += dra_validation.object_causes(rt.kind, obj)
    if causes:
        raise invalid(rt.kind, rt.group, name, causes)


def validate_update(rt: ResourceType, old: JsonObj, new: JsonObj, subresource: str = "") -> None:
    """Raise a 422 Invalid error when an update breaks a rule that depends on the stored object (immutability; a
    pod's resources change through `resize` only, and only as `ValidatePodResize` allows)."""
    causes: list[Cause] = []
    if rt.group == dra_validation.GROUP and not rt.custom:
        causes = dra_validation.update_causes(rt.kind, old, new)
    elif rt.kind == "PriorityClass" and not rt.custom:
        causes = priority.priority_class_update_causes(old, new)
    elif rt.kind == "StatefulSet" and not rt.custom:
        causes = statefulsets.statefulset_update_causes(old, new)
    elif rt.kind == "Pod" and not rt.custom and subresource == "resize":
        causes = _causes(pod_resize_errors(old, new))
    elif rt.kind == "Pod" and not rt.custom and not subresource:
        causes = _causes(pod_update_errors(old.get("spec") or {}, new.get("spec") or {}))
    elif rt.kind == "Pod" and not rt.custom:
        old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
        causes = _causes(
            pod_resources_update_errors(old_spec, new_spec) or container_resources_update_errors(old_spec, new_spec)
        )
    elif rt.kind == "ControllerRevision" and not rt.custom and old.get("data") != new.get("data"):
        causes = [("FieldValueInvalid", "data", "Invalid value: the revision's data: field is immutable")]
    if causes:
        raise invalid(rt.kind, rt.group, str((new.get("metadata") or {}).get("name") or ""), causes)
