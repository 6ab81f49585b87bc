"""Pod priority as kube-apiserver resolves it: the `Priority` admission plugin (on by default) and the rules of
PriorityClass objects, so that pods created on `knuma apiserver` carry the `spec.priority` and
`spec.preemptionPolicy` the scheduler's queue (PrioritySort) reads, and bad input is refused as upstream refuses it.

Upstream, followed here:
- `plugin/pkg/admission/priority/admission.go`, `Plugin.admitPod`: on create, a pod without `priorityClassName` gets
  the global default class (the one with `globalDefault: true`, the lowest value if several) or priority 0 and
  `PreemptLowerPriority`, and the default class's name; a named class must exist (403 `no PriorityClass with name X
  was found`); a `spec.priority` or `spec.preemptionPolicy` the pod brings must equal what the class gives (403);
  on update, a pod that omits them keeps the stored values. `Plugin.validatePriorityClass`: a second class with
  `globalDefault: true` is 403 `PriorityClass X is already marked as default. Only one default can exist`.
- `pkg/apis/scheduling/validation`, `ValidatePriorityClass` / `ValidatePriorityClassUpdate` (422): names starting
  with `system-` are reserved for the two system classes (`v1.IsKnownSystemPriorityClass`), other classes may not
  exceed 1000000000 (`HighestUserDefinablePriority`), `preemptionPolicy` is `PreemptLowerPriority` or `Never`, and
  `value` and `preemptionPolicy` never change.
- `pkg/registry/scheduling/rest/storage_scheduling.go`, `AddSystemPriorityClasses`: the API server creates
  `system-node-critical` (2000001000) and `system-cluster-critical` (2000000000) at start.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from knuma.api.types import JsonObj
from knuma.local.apiserver.errors import admission_forbidden

__all__ = [
    "HIGHEST_USER_DEFINABLE_PRIORITY",
    "SYSTEM_PRIORITY_CLASSES",
    "admit_pod_create",
    "check_single_default",
    "keep_priority_on_update",
    "priority_class_causes",
    "priority_class_update_causes",
]

Cause = tuple[str, str, str]

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
SYSTEM_PREFIX = "system-"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPTION_POLICIES = (PREEMPT_LOWER_PRIORITY, "Never")
GROUP = "scheduling.k8s.io"

SYSTEM_PRIORITY_CLASSES: tuple[JsonObj, ...] = (
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "system-node-critical"},
        "value": SYSTEM_CRITICAL_PRIORITY + 1000,
        "description": "Used for system critical pods that must not be moved from their current node.",
        "preemptionPolicy": PREEMPT_LOWER_PRIORITY,
    },
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "system-cluster-critical"},
        "value": SYSTEM_CRITICAL_PRIORITY,
        "description": "Used for system critical pods that must run in the cluster, but can be moved to another node "
        "if necessary.",
        "preemptionPolicy": PREEMPT_LOWER_PRIORITY,
    },
)


def _name(obj: JsonObj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _default_class(classes: Iterable[JsonObj]) -> JsonObj | None:
    """`getDefaultPriorityClass`: the global default, the lowest value when a race left several."""
    defaults = [pc for pc in classes if pc.get("globalDefault") is True]
    return min(defaults, key=lambda pc: int(pc.get("value") or 0), default=None)


def admit_pod_create(pod: JsonObj, classes: Iterable[JsonObj]) -> None:
    """Resolve a new pod's priority and preemption policy from its PriorityClass, in place; raise the 403 upstream
    raises."""
    spec = pod.setdefault("spec", {})
    name = _name(pod)
    class_name = spec.get("priorityClassName") or ""
    policy: Any
    if not class_name:
        default = _default_class(classes)
        if default is not None:
            spec["priorityClassName"] = _name(default)
            priority, policy = int(default.get("value") or 0), default.get("preemptionPolicy")
        else:
            priority, policy = 0, PREEMPT_LOWER_PRIORITY
    else:
        found = next((pc for pc in classes if _name(pc) == class_name), None)
        if found is None:
            raise admission_forbidden("", "pods", name, f"no PriorityClass with name {class_name} was found")
        priority, policy = int(found.get("value") or 0), found.get("preemptionPolicy")
    _settle(spec, name, "priority", "the integer value of priority", priority)
    if policy:
        _settle(spec, name, "preemptionPolicy", "the string value of PreemptionPolicy", policy)


def _settle(spec: JsonObj, pod_name: str, key: str, what: str, computed: Any) -> None:
    """Set `spec[key]` to what the class gives; a different value the pod brought is `admitPod`'s 403."""
    given = spec.get(key)
    if given is not None and given != computed:
        raise admission_forbidden(
            "",
            "pods",
            pod_name,
            f"{what} ({given}) must not be provided in pod spec; priority admission controller computed {computed} "
            "from the given PriorityClass name",
        )
    spec[key] = computed


def keep_priority_on_update(old: JsonObj, new: JsonObj) -> None:
    """`admitPod` on update: a pod written back without `spec.priority` / `spec.preemptionPolicy` keeps the stored
    ones (clients that rebuild a pod from a manifest omit them)."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec")
    if not isinstance(new_spec, dict):
        return
    for key in ("priority", "preemptionPolicy"):
        if new_spec.get(key) is None and old_spec.get(key) is not None:
            new_spec[key] = old_spec[key]


def _known_system_class_error(name: str, value: Any, global_default: Any) -> str:
    """`v1.IsKnownSystemPriorityClass`'s error, or "" when the class is one of the system classes as defined."""
    for system in SYSTEM_PRIORITY_CLASSES:
        if _name(system) == name:
            if value != system["value"]:
                return f"value of {name} PriorityClass must be {system['value']}"
            if bool(global_default):
                return f"globalDefault of {name} PriorityClass must be false"
            return ""
    return f"{name} is not a known system priority class"


def priority_class_causes(pc: JsonObj) -> list[Cause]:
    """`ValidatePriorityClass` (the name's own format is checked with every object's metadata)."""
    causes: list[Cause] = []
    name, value = _name(pc), pc.get("value")
    if name.startswith(SYSTEM_PREFIX):
        error = _known_system_class_error(name, value, pc.get("globalDefault"))
        if error:
            causes.append(
                (
                    "FieldValueForbidden",
                    "metadata.name",
                    f"Forbidden: priority class names with '{SYSTEM_PREFIX}' prefix are reserved for system use only. "
                    f"error: {error}",
                )
            )
    elif isinstance(value, int) and value > HIGHEST_USER_DEFINABLE_PRIORITY:
        causes.append(
            (
                "FieldValueForbidden",
                "value",
                f"Forbidden: maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        )
    policy = pc.get("preemptionPolicy")
    if policy is not None and policy not in PREEMPTION_POLICIES:
        causes.append(
            (
                "FieldValueNotSupported",
                "preemptionPolicy",
                f'Unsupported value: "{policy}": supported values: "{PREEMPTION_POLICIES[1]}", '
                f'"{PREEMPTION_POLICIES[0]}"',
            )
        )
    return causes


def priority_class_update_causes(old: JsonObj, new: JsonObj) -> list[Cause]:
    """`ValidatePriorityClassUpdate`: `value` and `preemptionPolicy` are immutable."""
    causes: list[Cause] = []
    if new.get("value") != old.get("value"):
        causes.append(("FieldValueForbidden", "value", "Forbidden: may not be changed in an update."))
    if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
        shown = new.get("preemptionPolicy")
        causes.append(("FieldValueInvalid", "preemptionPolicy", f'Invalid value: "{shown}": field is immutable'))
    return causes


def check_single_default(pc: JsonObj, classes: Iterable[JsonObj], *, updating: bool) -> None:
    """`validatePriorityClass`: only one class may be the global default; raise 403 otherwise."""
    if pc.get("globalDefault") is not True:
        return
    current = _default_class(classes)
    if current is None or (updating and _name(current) == _name(pc)):
        return
    raise admission_forbidden(
        GROUP,
        "priorityclasses",
        _name(pc),
        f"PriorityClass {_name(current)} is already marked as default. Only one default can exist",
    )
