"""The `pods/resize` subresource (in-place resize, KEP-1287): what a write through it may change, and what
kube-apiserver refuses of it (`ValidatePodResize`, `pkg/apis/core/validation/validation.go`, 1.34).

A pod's container resources change only through `resize` (`kubectl patch pod P --subresource resize ...`): the main
resource's update refuses them (`ValidatePodUpdate`, `container_resources_update_errors`), and a write to `resize`
keeps everything of the stored pod but the containers' `resources` and `resizePolicy` (`dropNonResizeUpdates`).
Pure: works on raw manifests.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from knuma.api.goequality import semantic
from knuma.api.pod import Pod, PodError
from knuma.api.podresource_validation import UPDATABLE_POD_SPEC_FIELDS
from knuma.api.podvalidation import FIELD_VALUE_FORBIDDEN, FIELD_VALUE_INVALID, FieldError
from knuma.api.resources import CPU, MEMORY
from knuma.quantity import QuantityError, parse_quantity

__all__ = ["MIRROR_POD_ANNOTATION", "container_resources_update_errors", "pod_resize_errors", "resize_update"]

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
"""`core.MirrorPodAnnotationKey`: the API server's copy of a static pod."""
RESIZED = (CPU, MEMORY)
"""The resources a resize may change (`dropCPUMemoryResourcesFromContainer`)."""


def resize_update(existing: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """`dropNonResizeUpdates`: the stored pod with each container's `resources` and `resizePolicy` taken from `new`
    (matched by name; app containers and init containers alike, validation then refuses what may not change), and
    `new`'s resourceVersion for the optimistic-concurrency check. Everything else `new` changes is dropped."""
    pod = copy.deepcopy(dict(existing))
    new_metadata = new.get("metadata") if isinstance(new.get("metadata"), Mapping) else {}
    if isinstance(new_metadata, Mapping) and "resourceVersion" in new_metadata:
        pod.setdefault("metadata", {})["resourceVersion"] = new_metadata["resourceVersion"]
    new_spec = new.get("spec") if isinstance(new.get("spec"), Mapping) else {}
    spec = pod.setdefault("spec", {})
    for key in ("containers", "initContainers"):
        stored = {c.get("name"): c for c in spec.get(key) or [] if isinstance(c, dict)}
        for container in (new_spec or {}).get(key) or []:
            if not isinstance(container, Mapping) or container.get("name") not in stored:
                continue
            target = stored[container["name"]]
            for field in ("resources", "resizePolicy"):
                if container.get(field) is None:
                    target.pop(field, None)
                else:
                    target[field] = copy.deepcopy(container[field])
    return pod


def pod_resize_errors(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldError]:
    """`ValidatePodResize` (1.34) of `new` (`resize_update`'s result) against the stored `old`, in its order and
    words: pods with pod-level resources, static pods and Windows pods cannot be resized; the QoS class may not
    change; a pod whose running containers report no `resources` runs on a node without resize support; requests and
    limits cannot be removed, a memory limit neither lowered nor added unless its resize policy restarts the
    container; only cpu and memory change, and only for app and sidecar containers."""
    old_spec, new_spec = _spec(old), _spec(new)
    if _pod_level_set(old_spec) or _pod_level_set(new_spec):
        return [FieldError(FIELD_VALUE_FORBIDDEN, "", "Forbidden: pods with pod-level resources cannot be resized")]
    annotations = (old.get("metadata") or {}).get("annotations") or {}
    if isinstance(annotations, Mapping) and MIRROR_POD_ANNOTATION in annotations:
        return [FieldError(FIELD_VALUE_FORBIDDEN, "", "Forbidden: static pods cannot be resized")]
    if ((old_spec.get("os") or {}).get("name")) == "windows":
        return [FieldError(FIELD_VALUE_FORBIDDEN, "", "Forbidden: windows pods cannot be resized")]
    errors: list[FieldError] = []
    old_qos, new_qos = _qos(old), _qos(new)
    if old_qos is not None and new_qos is not None and old_qos != new_qos:
        shown = ((new.get("status") or {}).get("qosClass")) or ""
        errors.append(
            FieldError(
                FIELD_VALUE_INVALID,
                "spec",
                f'Invalid value: "{shown}": Pod QOS Class may not change as a result of resizing',
            )
        )
    if not _resize_supported(old):
        errors.append(
            FieldError(FIELD_VALUE_FORBIDDEN, "spec", "Forbidden: Pod running on node without support for resize")
        )
    old_init, new_init = _containers(old_spec, "initContainers"), _containers(new_spec, "initContainers")
    old_apps, new_apps = _containers(old_spec, "containers"), _containers(new_spec, "containers")
    for index, container in enumerate(old_init):
        if container.get("restartPolicy") == "Always" and index < len(new_init):
            errors += _container_resize_errors(new_init[index], container, f"spec.initContainers[{index}].resources")
    for index, container in enumerate(old_apps):
        if index < len(new_apps):
            errors += _container_resize_errors(new_apps[index], container, f"spec.containers[{index}].resources")
    for index, container in enumerate(old_apps):
        if index < len(new_apps) and not _same_but_cpu_memory(new_apps[index], container):
            errors.append(
                FieldError(FIELD_VALUE_FORBIDDEN, "spec", "Forbidden: only cpu and memory resources are mutable")
            )
    for index, container in enumerate(old_init):
        if index >= len(new_init):
            continue
        if container.get("restartPolicy") == "Always":
            if not _same_but_cpu_memory(new_init[index], container):
                message = "Forbidden: only cpu and memory resources for sidecar containers are mutable"
                errors.append(FieldError(FIELD_VALUE_FORBIDDEN, "spec", message))
        elif _semantic_container(new_init[index]) != _semantic_container(container):
            message = "Forbidden: resources for non-sidecar init containers are immutable"
            errors.append(FieldError(FIELD_VALUE_FORBIDDEN, "spec", message))
    return errors


def container_resources_update_errors(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> list[FieldError]:
    """`ValidatePodUpdate`: an update of the pod itself may not change a container's resources or resize policy
    (only the `resize` subresource may). kube-apiserver's message ends with a `cmp.Diff` of the two Go specs;
    knuma's names the container's old and new `resources`."""
    for key in ("containers", "initContainers"):
        old, new = _containers(old_spec, key), _containers(new_spec, key)
        for index, (before, after) in enumerate(zip(old, new, strict=False)):
            if _resize_fields(before) == _resize_fields(after):
                continue
            message = (
                f"Forbidden: pod updates may not change fields other than {','.join(UPDATABLE_POD_SPEC_FIELDS)}\n"
                f"spec.{key}[{index}].resources: {json.dumps(before.get('resources'), sort_keys=True)} -> "
                f"{json.dumps(after.get('resources'), sort_keys=True)} (change a running pod's resources through the "
                f"resize subresource: kubectl patch pod --subresource resize)"
            )
            return [FieldError(FIELD_VALUE_FORBIDDEN, "spec", message)]
    return []


def _spec(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = pod.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _containers(spec: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    raw = spec.get(key)
    return [c for c in raw if isinstance(c, Mapping)] if isinstance(raw, list) else []


def _pod_level_set(spec: Mapping[str, Any]) -> bool:
    resources = spec.get("resources")
    return isinstance(resources, Mapping) and bool(
        len(resources.get("requests") or {}) + len(resources.get("limits") or {})
    )


def _qos(pod: Mapping[str, Any]) -> str | None:
    try:
        return str(Pod.from_manifest(pod).qos)
    except PodError:
        return None  # the pod's own validation says what is wrong with it


def _resize_supported(pod: Mapping[str, Any]) -> bool:
    """`isPodResizeRequestSupported`: the first running container's status reports `resources` (its kubelet
    supports resize); no running container: assumed to."""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if isinstance(status, Mapping) and ((status.get("state") or {}).get("running")) is not None:
            return status.get("resources") is not None
    return True


def _quantities(raw: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, value in (raw or {}).items() if isinstance(raw, Mapping) else ():
        try:
            out[str(name)] = parse_quantity(value).nanos
        except (QuantityError, TypeError, ValueError):
            out[str(name)] = -1  # left to the spec's own validation
    return out


def _requirements(container: Mapping[str, Any], key: str) -> dict[str, int]:
    resources = container.get("resources")
    return _quantities(resources.get(key) if isinstance(resources, Mapping) else None)


def _memory_restart_policy(container: Mapping[str, Any]) -> str:
    for policy in container.get("resizePolicy") or []:
        if isinstance(policy, Mapping) and policy.get("resourceName") == MEMORY:
            return str(policy.get("restartPolicy") or "")
    return ""


def _container_resize_errors(new: Mapping[str, Any], old: Mapping[str, Any], path: str) -> list[FieldError]:
    """`validateContainerResize`."""
    errors: list[FieldError] = []
    new_requests, old_requests = _requirements(new, "requests"), _requirements(old, "requests")
    new_limits, old_limits = _requirements(new, "limits"), _requirements(old, "limits")
    if any(name not in new_requests for name in old_requests):
        errors.append(
            FieldError(FIELD_VALUE_FORBIDDEN, f"{path}.requests", "Forbidden: resource requests cannot be removed")
        )
    if any(name not in new_limits for name in old_limits):
        errors.append(
            FieldError(FIELD_VALUE_FORBIDDEN, f"{path}.limits", "Forbidden: resource limits cannot be removed")
        )
    if _memory_restart_policy(new) in ("", "NotRequired"):
        where = f"{path}.limits[memory]"
        if MEMORY in new_limits and MEMORY in old_limits and new_limits[MEMORY] < old_limits[MEMORY]:
            message = "Forbidden: memory limits cannot be decreased unless resizePolicy is RestartContainer"
            errors.append(FieldError(FIELD_VALUE_FORBIDDEN, where, message))
        elif MEMORY in new_limits and MEMORY not in old_limits:
            message = "Forbidden: memory limits cannot be added unless resizePolicy is RestartContainer"
            errors.append(FieldError(FIELD_VALUE_FORBIDDEN, where, message))
    return errors


def _semantic_container(container: Mapping[str, Any]) -> Any:
    """A container as `apiequality.Semantic.DeepEqual` compares it (`knuma.api.goequality`)."""
    return semantic(container, "Container")


def _resize_fields(container: Mapping[str, Any]) -> Any:
    """What only a resize may change of a container: its resources (quantities by value) and resize policy."""
    return semantic({key: container.get(key) for key in ("resources", "resizePolicy")}, "Container")


def _same_but_cpu_memory(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """`dropCPUMemoryResourcesFromContainer` then `Semantic.DeepEqual`: the new container with the old one's cpu and
    memory (and none where the old one states no list) equals the old one."""
    munged = dict(new)
    resources: dict[str, Any] = {}
    old_resources = old.get("resources") if isinstance(old.get("resources"), Mapping) else {}
    new_resources = new.get("resources") if isinstance(new.get("resources"), Mapping) else {}
    for key in ("limits", "requests"):
        old_list = (old_resources or {}).get(key)
        if old_list is None:
            continue
        kept = {k: v for k, v in ((new_resources or {}).get(key) or {}).items() if k not in RESIZED}
        kept.update({k: v for k, v in old_list.items() if k in RESIZED})
        resources[key] = kept
    munged["resources"] = resources
    return bool(_semantic_container(munged) == _semantic_container(old))
