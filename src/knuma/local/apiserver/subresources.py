"""Subresources with their own shapes: `scale` (autoscaling/v1 Scale) and `pods/binding`.

`kubectl scale` reads and patches a Scale; a scheduler binds a pod by POSTing a Binding, which sets `spec.nodeName`
exactly once (a second binding is a 409 Conflict, as in kube-apiserver) and marks the pod `PodScheduled`.
"""

from __future__ import annotations

import copy
from typing import Any

from knuma.api.types import JSON_PATCH, JsonObj
from knuma.local.apiserver import errors, fieldmanager, patch
from knuma.local.apiserver.gc import POD_GR
from knuma.local.apiserver.resources import ResourceType
from knuma.local.apiserver.rest import MODIFIED, ObjectService, WriteOptions, now


def _dotted(obj: Any, path: str) -> Any:
    cur = obj
    for part in [p for p in path.split(".") if p]:
        cur = cur.get(part) if isinstance(cur, dict) else None
    return cur


def _set_dotted(obj: JsonObj, path: str, value: Any) -> None:
    parts = [p for p in path.split(".") if p]
    cur = obj
    for part in parts[:-1]:
        cur = cur.setdefault(part, {})
    cur[parts[-1]] = value


def _meta(obj: JsonObj) -> JsonObj:
    md = obj.get("metadata")
    return md if isinstance(md, dict) else {}


def get_scale(service: ObjectService, rt: ResourceType, namespace: str, name: str) -> JsonObj:
    """The `autoscaling/v1` Scale of a Deployment or of a custom resource with a scale subresource."""
    return scale_of(rt, service.existing(rt, namespace, name))


def scale_of(rt: ResourceType, obj: JsonObj) -> JsonObj:
    spec_path, status_path, selector_path = rt.scale_paths
    md = obj["metadata"]
    scale_md = {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in md}
    status: JsonObj = {"replicas": _dotted(obj, status_path) or 0}
    if rt.kind in ("Deployment", "ReplicaSet", "StatefulSet") and not rt.custom:
        selector = (obj.get("spec") or {}).get("selector") or {}
        labels = selector.get("matchLabels") or {}
        status["selector"] = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    elif selector_path and _dotted(obj, selector_path):
        status["selector"] = _dotted(obj, selector_path)
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_md,
        "spec": {"replicas": _dotted(obj, spec_path) or 0},
        "status": status,
    }


def update_scale(
    service: ObjectService,
    rt: ResourceType,
    namespace: str,
    name: str,
    content_type: str | None,
    body: Any,
    opts: WriteOptions,
) -> JsonObj:
    """Replace (content_type None) or patch the Scale; only `spec.replicas` is written back."""
    existing = service.existing(rt, namespace, name)
    current = scale_of(rt, existing)
    if content_type is None:
        new_scale = body
    elif content_type == JSON_PATCH:
        new_scale = patch.json_patch(current, body)
    else:
        new_scale = patch.merge_patch(current, body)
    if not isinstance(new_scale, dict):
        raise errors.bad_request("the Scale must be an object")
    rv = _meta(new_scale).get("resourceVersion")
    if rv and rv != existing["metadata"]["resourceVersion"]:
        raise errors.conflict(rt.group, rt.plural, name, MODIFIED)
    replicas = (new_scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or replicas < 0:
        raise errors.invalid(
            "Scale", "autoscaling", name, [("FieldValueInvalid", "spec.replicas", "Invalid value: must be >= 0")]
        )
    updated = copy.deepcopy(existing)
    _set_dotted(updated, rt.scale_paths[0], replicas)
    result = service.commit(rt, existing, updated, opts, "", operation="Update")
    return scale_of(rt, result)


def bind(service: ObjectService, namespace: str, name: str, body: Any, opts: WriteOptions) -> JsonObj:
    raw_metadata = body.get("metadata") if isinstance(body, dict) else None
    metadata: JsonObj = raw_metadata if isinstance(raw_metadata, dict) else {}
    if metadata.get("name") != name:  # `BindingREST.Create`, before `ValidatePodBinding`: not taken from the URL
        raise errors.bad_request("name in URL does not match name in Binding object")
    if not isinstance(body, dict) or not isinstance(body.get("target"), dict) or not body["target"].get("name"):
        raise errors.invalid("Binding", "", name, [("FieldValueRequired", "target.name", "Required value")])
    target = body["target"]
    if not isinstance(target["name"], str):
        raise errors.invalid(
            "Binding", "", name, [("FieldValueTypeInvalid", "target.name", "Invalid value: must be a string")]
        )
    if target.get("kind") not in (None, "", "Node"):
        raise errors.invalid(
            "Binding",
            "",
            name,
            [("FieldValueNotSupported", "target.kind", 'Unsupported value: supported values: "Node"')],
        )
    pods = service.rt_for(POD_GR)
    existing = service.existing(pods, namespace, name)
    uid = metadata.get("uid")
    if uid and uid != _meta(existing).get("uid"):  # `setPodNodeAndMetadata`'s precondition: not a namesake pod
        message = f"Precondition failed: UID in precondition: {uid}, UID in object meta: {_meta(existing).get('uid')}"
        raise errors.conflict("", "pods", name, message)
    node = body["target"]["name"]
    current = (existing.get("spec") or {}).get("nodeName")
    if current:
        raise errors.conflict("", "pods/binding", name, f'pod {name} is already assigned to node "{current}"')
    if _meta(existing).get("deletionTimestamp"):
        raise errors.conflict("", "pods/binding", name, f"pod {name} is being deleted, cannot be assigned to a host")
    # Copy only the maps this write changes; the rest is shared with the stored pod, which nobody mutates (the
    # store's rule), instead of deep-copying a pod per binding.
    status = dict(existing.get("status") or {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now()})
    status["conditions"] = conditions
    new = {
        **existing,
        "metadata": dict(existing["metadata"]),
        "spec": {**existing["spec"], "nodeName": node},
        "status": status,
    }
    fieldmanager.record_update(existing, new, opts.manager, "v1")
    if not opts.dry_run:
        service.put(POD_GR, new, created=False, old=existing)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
