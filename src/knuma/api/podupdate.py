"""`ValidatePodUpdate` (`pkg/apis/core/validation/validation.go`, 1.34): what an update of a pod (not of its
`status`, `binding`, `resize` or `ephemeralcontainers` subresource) may change in its spec.

A pod's spec is what the scheduler placed and the kubelet admitted: its node, containers, resources and scheduler are
fixed once it exists. kube-apiserver lets an update change only container images, `activeDeadlineSeconds` (set, or
lowered), tolerations (added; an existing one's `tolerationSeconds`), scheduling gates (removed) and a negative
`terminationGracePeriodSeconds` (to 1); anything else is `spec: Forbidden: pod updates may not change fields other
than ...`. Without this, `kubectl apply` of an edited pod would move it to another node or scheduler behind the
scheduler's and the kubelet's back.

Specs are compared as `apiequality.Semantic.DeepEqual` compares the Go structs (`knuma.api.goequality`): quantities
by value (`1` equals `1000m`), a plain field absent equal to its zero value (`hostNetwork: false`, `ports: []`), a
pointer field absent different from a zero value (`automountServiceAccountToken: false`).
A gated pod's `nodeSelector` may gain entries and its required node affinity terms gain requirements too (1.30's
`PodSchedulingReadiness`: a queue controller narrows where the pod may go before it removes the gate).

Pure: works on the raw spec mappings, after the API server's defaulting.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from knuma.api.goequality import POD_SPEC, semantic
from knuma.api.podresize import container_resources_update_errors
from knuma.api.podresource_validation import UPDATABLE_POD_SPEC_FIELDS, pod_resources_update_errors
from knuma.api.podvalidation import FIELD_VALUE_FORBIDDEN, FIELD_VALUE_INVALID, FIELD_VALUE_REQUIRED, FieldError
from knuma.api.types import INT32_MAX

__all__ = ["pod_update_errors"]


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
    if new_spec == old_spec:  # the usual: metadata only
        return errors
    old_semantic = semantic(old_spec, POD_SPEC)
    if semantic(new_spec, POD_SPEC) == old_semantic:
        return errors
    munged = semantic(_munged(old_spec, new_spec), POD_SPEC)
    if munged == old_semantic:
        return errors
    specific = pod_resources_update_errors(old_spec, new_spec) or container_resources_update_errors(old_spec, new_spec)
    if specific:
        return errors + specific
    changed = "\n".join(_differences(old_semantic, munged, "spec"))
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
            and semantic({k: v for k, v in after.items() if k != "tolerationSeconds"}, "Toleration")
            == semantic(kept, "Toleration")
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
        kept = semantic(new_list[: len(old_list)], "NodeSelectorRequirement")
        if old_list and (len(new_list) < len(old_list) or kept != semantic(old_list, "NodeSelectorRequirement")):
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
        _munge_node_affinity(old, munged)
    return munged


def _munge_node_affinity(old: Mapping[str, Any], munged: dict[str, Any]) -> None:
    """A gated pod's node affinity taken from the old spec (its changes are checked apart), the way
    `ValidatePodUpdate` does it so that an `affinity` left holding nothing is no change: none set if the old spec
    had none and nothing else is in the new one."""
    old_affinity, new_affinity = _pointer(old, "affinity"), _pointer(munged, "affinity")
    old_node, new_node = _pointer(old_affinity, "nodeAffinity"), _pointer(new_affinity, "nodeAffinity")
    if semantic(old_node, "NodeAffinity") == semantic(new_node, "NodeAffinity"):
        return
    if new_affinity is None:
        if old_node is not None:
            munged["affinity"] = {"nodeAffinity": old_node}
    elif (
        old_affinity is None
        and _pointer(new_affinity, "podAffinity") is None
        and _pointer(new_affinity, "podAntiAffinity") is None
    ):
        munged.pop("affinity", None)
    else:
        munged["affinity"] = {k: v for k, v in new_affinity.items() if k != "nodeAffinity"}
        if old_node is not None:
            munged["affinity"]["nodeAffinity"] = old_node


def _pointer(mapping: Any, key: str) -> Any:
    """A pointer field's value, None where Go's would be nil (absent or null, or no struct to hold it)."""
    return mapping.get(key) if isinstance(mapping, Mapping) else None


def _copy(source: Mapping[str, Any], target: dict[str, Any], key: str) -> None:
    if key in source:
        target[key] = source[key]
    else:
        target.pop(key, None)


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
