"""`ValidatePodUpdate` (`pkg/apis/core/validation/validation.go`, 1.34): what an update of a pod (not of its
`status`, `binding`, `resize` or `ephemeralcontainers` subresource) may change in its spec.

A pod's spec is what the scheduler placed and the kubelet admitted: its node, containers, resources and scheduler are
fixed once it exists. kube-apiserver lets an update change only container images, `activeDeadlineSeconds` (set, or
lowered), tolerations (added; an existing one's `tolerationSeconds`), scheduling gates (removed) and a negative
`terminationGracePeriodSeconds` (to 1); anything else is `spec: Forbidden: pod updates may not change fields other
than ...`. Without this, `kubectl apply` of an edited pod would move it to another node or scheduler behind the
scheduler's and the kubelet's back.

Specs are compared as `apiequality.Semantic.DeepEqual` compares the Go structs: quantities by value (`1` equals
`1000m`), and a field absent equal to its zero value (`hostNetwork: false`, `ports: []`), since a Go struct cannot
tell them apart. (That also equates `nil` and `0` for pointer fields, which Go tells apart: knuma is laxer there.)
A gated pod's `nodeSelector` may gain entries and its required node affinity terms gain requirements too (1.30's
`PodSchedulingReadiness`: a queue controller narrows where the pod may go before it removes the gate).

Pure: works on the raw spec mappings, after the API server's defaulting.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from knuma.api.podresize import container_resources_update_errors
from knuma.api.podresource_validation import UPDATABLE_POD_SPEC_FIELDS, pod_resources_update_errors
from knuma.api.podvalidation import FIELD_VALUE_FORBIDDEN, FIELD_VALUE_INVALID, FIELD_VALUE_REQUIRED, FieldError
from knuma.api.types import INT32_MAX
from knuma.quantity import QuantityError, parse_quantity

__all__ = ["pod_update_errors"]

_RESOURCE_LISTS = frozenset({"requests", "limits", "overhead", "capacity", "allocatable"})
"""Keys whose values are `ResourceList`s (quantities by name), compared by value."""


def pod_update_errors(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> list[FieldError]:
    """`ValidatePodUpdate`'s spec checks, in its order: container counts and images, `activeDeadlineSeconds`,
    tolerations, scheduling gates, then every other field unchanged."""
    errors: list[FieldError] = []
    for key in ("containers", "initContainers"):
        found, stop = _container_update_errors(_list(new_spec, key), _list(old_spec, key), f"spec.{key}")
        errors += found
        if stop:
            return errors
    deadline_errors, stop = _deadline_errors(
        old_spec.get("activeDeadlineSeconds"), new_spec.get("activeDeadlineSeconds")
    )
    errors += deadline_errors
    if stop:
        return errors
    errors += _toleration_errors(_list(new_spec, "tolerations"), _list(old_spec, "tolerations"))
    errors += _scheduling_gate_errors(_list(new_spec, "schedulingGates"), _list(old_spec, "schedulingGates"))
    if _list(old_spec, "schedulingGates"):
        errors += _node_selector_errors(old_spec.get("nodeSelector"), new_spec.get("nodeSelector"))
        errors += _node_affinity_errors(_node_affinity(old_spec), _node_affinity(new_spec))
    if new_spec == old_spec or _semantic(dict(new_spec)) == _semantic(dict(old_spec)):  # the usual: metadata only
        return errors
    munged = _munged(old_spec, new_spec)
    if _semantic(munged) == _semantic(dict(old_spec)):
        return errors
    specific = pod_resources_update_errors(old_spec, new_spec) or container_resources_update_errors(old_spec, new_spec)
    if specific:
        return errors + specific
    changed = "\n".join(_differences(_semantic(dict(old_spec)), _semantic(munged), "spec"))
    message = (
        f"Forbidden: pod updates may not change fields other than {','.join(UPDATABLE_POD_SPEC_FIELDS)}\n{changed}"
    )
    return [*errors, FieldError(FIELD_VALUE_FORBIDDEN, "spec", message)]


def _list(spec: Mapping[str, Any], key: str) -> list[Any]:
    raw = spec.get(key)
    return raw if isinstance(raw, list) else []


def _container_update_errors(new: list[Any], old: list[Any], path: str) -> tuple[list[FieldError], bool]:
    """`ValidateContainerUpdates`: as many containers as before (or stop), each with an image free of surrounding
    whitespace."""
    if len(new) != len(old):
        return [
            FieldError(FIELD_VALUE_FORBIDDEN, path, "Forbidden: pod updates may not add or remove containers")
        ], True
    errors = []
    for index, container in enumerate(new):
        image = container.get("image") if isinstance(container, Mapping) else None
        image = image if isinstance(image, str) else ""
        if not image:
            errors.append(FieldError(FIELD_VALUE_REQUIRED, f"{path}[{index}].image", "Required value"))
        if image.strip() != image:
            message = f"Invalid value: {json.dumps(image)}: must not have leading or trailing whitespace"
            errors.append(FieldError(FIELD_VALUE_INVALID, f"{path}[{index}].image", message))
    return errors, False


def _deadline_errors(old: Any, new: Any) -> tuple[list[FieldError], bool]:
    """`activeDeadlineSeconds` may be set or lowered, never raised or removed."""
    path = "spec.activeDeadlineSeconds"
    if isinstance(new, int):
        if new < 0 or new > INT32_MAX:
            message = f"Invalid value: {new}: must be between 0 and {INT32_MAX}, inclusive"
            return [FieldError(FIELD_VALUE_INVALID, path, message)], True
        if isinstance(old, int) and old < new:
            return [
                FieldError(
                    FIELD_VALUE_INVALID, path, f"Invalid value: {new}: must be less than or equal to previous value"
                )
            ], True
        return [], False
    if new is None and old is not None:
        return [
            FieldError(
                FIELD_VALUE_INVALID, path, "Invalid value: null: must not update from a positive integer to nil value"
            )
        ], False
    return [], False


def _toleration_errors(new: list[Any], old: list[Any]) -> list[FieldError]:
    """`validateOnlyAddedTolerations`: every existing toleration is still there, its `tolerationSeconds` aside."""
    for before in old:
        if not isinstance(before, Mapping):
            continue
        kept = {k: v for k, v in before.items() if k != "tolerationSeconds"}
        if not any(
            isinstance(after, Mapping)
            and _semantic({k: v for k, v in after.items() if k != "tolerationSeconds"}) == _semantic(kept)
            for after in new
        ):
            message = "Forbidden: existing toleration can not be modified except its tolerationSeconds"
            return [FieldError(FIELD_VALUE_FORBIDDEN, "spec.tolerations", message)]
    return []


def _scheduling_gate_errors(new: list[Any], old: list[Any]) -> list[FieldError]:
    """`validateOnlyDeletedSchedulingGates`: a gate may be removed (the pod becomes schedulable once none is left),
    never added."""
    existing = {gate.get("name") for gate in old if isinstance(gate, Mapping)}
    return [
        FieldError(
            FIELD_VALUE_FORBIDDEN,
            f"spec.schedulingGates[{index}].name",
            f"Forbidden: only deletion is allowed, but found new scheduling gate '{gate.get('name')}'",
        )
        for index, gate in enumerate(new)
        if isinstance(gate, Mapping) and gate.get("name") not in existing
    ]


def _node_selector_errors(old: Any, new: Any) -> list[FieldError]:
    """`validateNodeSelectorMutation`: a gated pod's `nodeSelector` may gain entries (a queue controller narrowing
    where the pod may go before it releases the gate), never lose or change one."""
    before = old if isinstance(old, Mapping) else {}
    after = new if isinstance(new, Mapping) else {}
    if all(key in after and after[key] == value for key, value in before.items()):
        return []
    shown = _compact(dict(after))
    message = f"Invalid value: {shown}: only additions to spec.nodeSelector are allowed (no mutations or deletions)"
    return [FieldError(FIELD_VALUE_INVALID, "spec.nodeSelector", message)]


def _node_affinity(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    affinity = spec.get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    return node if isinstance(node, Mapping) else {}


_TERMS = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"


def _node_affinity_errors(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldError]:
    """`validateNodeAffinityMutation`: a gated pod's required node affinity may be set when it had none; once it has
    terms, each may only gain requirements (`validateNodeSelectorTermHasOnlyAdditions`), and no term may be added or
    removed. Preferred terms may change freely."""
    old_required = old.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(old_required, Mapping):
        return []
    new_required = new.get("requiredDuringSchedulingIgnoredDuringExecution")
    old_terms = _list(old_required, "nodeSelectorTerms")
    new_terms = _list(new_required, "nodeSelectorTerms") if isinstance(new_required, Mapping) else []
    if old_terms and len(old_terms) != len(new_terms):
        message = "no additions/deletions to non-empty NodeSelectorTerms list are allowed"
        return [FieldError(FIELD_VALUE_INVALID, _TERMS, f"Invalid value: {_compact(new_terms)}: {message}")]
    return [
        FieldError(
            FIELD_VALUE_INVALID,
            f"{_TERMS}[{index}]",
            f"Invalid value: {_compact(after)}: only additions are allowed (no mutations or deletions)",
        )
        for index, (before, after) in enumerate(zip(old_terms, new_terms, strict=True))
        if not _only_additions(before, after)
    ]


def _only_additions(old_term: Any, new_term: Any) -> bool:
    """`validateNodeSelectorTermHasOnlyAdditions`: an empty term stays empty; otherwise the old `matchExpressions`
    and `matchFields` are the new lists' beginnings."""
    before = old_term if isinstance(old_term, Mapping) else {}
    after = new_term if isinstance(new_term, Mapping) else {}
    keys = ("matchExpressions", "matchFields")
    if not any(_list(before, key) for key in keys):
        return not any(_list(after, key) for key in keys)
    for key in keys:
        old_list, new_list = _list(before, key), _list(after, key)
        if old_list and (len(new_list) < len(old_list) or _semantic(new_list[: len(old_list)]) != _semantic(old_list)):
            return False
    return True


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _munged(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The new spec with what an update may change taken from the old one (`mungedPodSpec`)."""
    munged = dict(new)
    for key in ("containers", "initContainers"):
        old_images = [c.get("image") if isinstance(c, Mapping) else None for c in _list(old, key)]
        munged[key] = [
            {**c, "image": image} if isinstance(c, Mapping) else c
            for c, image in zip(_list(new, key), old_images, strict=False)
        ]
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        _copy(old, munged, key)
    grace_before, grace_after = old.get("terminationGracePeriodSeconds"), new.get("terminationGracePeriodSeconds")
    if isinstance(grace_before, int) and grace_before < 0 and grace_after == 1:
        munged["terminationGracePeriodSeconds"] = grace_before
    if _list(old, "schedulingGates"):
        _copy(old, munged, "nodeSelector")
        affinity = dict(munged.get("affinity") or {})
        old_affinity = old.get("affinity")
        affinity["nodeAffinity"] = old_affinity.get("nodeAffinity") if isinstance(old_affinity, Mapping) else None
        munged["affinity"] = affinity
    return munged


def _copy(source: Mapping[str, Any], target: dict[str, Any], key: str) -> None:
    if key in source:
        target[key] = source[key]
    else:
        target.pop(key, None)


def _semantic(value: Any, key: str = "") -> Any:
    """`value` as the Go struct holds it: zero values and absent fields alike (dropped), quantities by value."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if key in _RESOURCE_LISTS and isinstance(v, str | int | float) and not isinstance(v, bool):
                v = _nanos(v)
            normalized = _semantic(v, str(k))
            if normalized not in (None, False, 0, "", [], {}):
                out[str(k)] = normalized
        return out
    if isinstance(value, list):
        return [_semantic(item) for item in value]
    return value


def _nanos(value: str | int | float) -> Any:
    try:
        return ("quantity", parse_quantity(value).nanos)
    except (QuantityError, ValueError):
        return value


def _differences(old: Any, new: Any, path: str) -> list[str]:
    """The paths where two semantic specs differ, each with its old and new value (kube-apiserver prints a
    `cmp.Diff` of the Go structs; this names the same fields in the API's terms)."""
    if isinstance(old, dict) and isinstance(new, dict):
        lines = []
        for key in sorted(old.keys() | new.keys()):
            lines += _differences(old.get(key), new.get(key), f"{path}.{key}")
        return lines
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        lines = []
        for index, (before, after) in enumerate(zip(old, new, strict=True)):
            lines += _differences(before, after, f"{path}[{index}]")
        return lines
    if old == new:
        return []
    return [f"{path}: {_shown(old)} -> {_shown(new)}"]


def _shown(value: Any) -> str:
    if isinstance(value, tuple):  # a quantity compared by value
        return f"{value[1] / 1e9:g}"
    return json.dumps(value, sort_keys=True, default=str)
