"""A device as a ResourceSlice publishes it (`resource.k8s.io/v1` `Device`): attributes, capacity, taints and,
with per-device node selection, where it is reachable.

Validation follows `validateDevice` / `validateDeviceAttribute` / `validateDeviceTaint` of kube-apiserver
(`pkg/apis/resource/validation/validation.go`): a DNS-label name, qualified attribute and capacity names, exactly
one value per attribute, strings of at most 64 characters, strict semantic versions, at most 32 attributes and
capacities together, at most 16 taints with effect `NoSchedule`, `NoExecute` or `None`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from knuma.api.dra.capacity import CapacityRequestPolicy, parse_request_policy
from knuma.api.dra.counters import CounterSet, parse_counter_sets
from knuma.api.dra.fields import FieldErrors, items, mapping, optional_bool, optional_str
from knuma.api.dra.semver import SemVer, SemVerError
from knuma.api.nodeaffinity import NodeSelector, label_key_error, parse_node_selector
from knuma.api.taints import Taint
from knuma.quantity import Quantity, QuantityError, parse_quantity

__all__ = [
    "ATTRIBUTE_TYPES",
    "Device",
    "DeviceAttribute",
    "NodeSelection",
    "parse_device",
    "parse_node_selection",
]

ATTRIBUTES_AND_CAPACITY_MAX = 32
TAINTS_MAX = 16
ATTRIBUTE_STRING_MAX = 64
ATTRIBUTE_LIST_MAX = 64
TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")

AttributeValue = int | bool | str | SemVer | tuple[int, ...] | tuple[bool, ...] | tuple[str, ...] | tuple[SemVer, ...]

ATTRIBUTE_TYPES = ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")
LIST_TYPES = frozenset(ATTRIBUTE_TYPES[4:])
"""The wire names of the value fields; the plural ones are the list types of DRAListTypeAttributes."""


@dataclass(frozen=True, slots=True)
class DeviceAttribute:
    type: str
    value: AttributeValue

    @property
    def values(self) -> tuple[int | bool | str | SemVer, ...]:
        """The value as a set for list-aware matching: a scalar is a one-element list."""
        return self.value if isinstance(self.value, tuple) else (self.value,)

    def to_dict(self) -> dict[str, Any]:
        value = self.value
        if isinstance(value, tuple):
            return {self.type: [str(v) if isinstance(v, SemVer) else v for v in value]}
        return {self.type: str(value) if isinstance(value, SemVer) else value}


@dataclass(frozen=True, slots=True)
class NodeSelection:
    """Where devices are reachable: exactly one of the four ways of a slice (or, per device, of three)."""

    node_name: str = ""
    node_selector: NodeSelector | None = None
    node_selector_raw: Mapping[str, Any] | None = None
    all_nodes: bool = False
    per_device: bool = False

    def matches(self, node: str, labels: Mapping[str, str]) -> bool:
        """Whether the devices are reachable from `node` (per-device selection is decided per device)."""
        if self.node_name:
            return self.node_name == node
        if self.node_selector is not None:
            return self.node_selector.matches(labels, node)
        return self.all_nodes or self.per_device


@dataclass(frozen=True, slots=True)
class Device:
    name: str
    attributes: Mapping[str, DeviceAttribute] = field(default_factory=dict)
    capacity: Mapping[str, Quantity] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    node: NodeSelection | None = None
    """Per-device node selection (slices with `perDeviceNodeSelection: true`)."""
    allow_multiple_allocations: bool = False
    consumes: tuple[CounterSet, ...] = ()
    """What the device draws from its pool's shared counters (partitionable devices, `consumesCounters`)."""
    binding_conditions: tuple[str, ...] = ()
    """Conditions the device's driver sets True in the claim's `status.devices` once the device is ready for the
    pod (attached over a fabric, say); the scheduler waits for them before binding (KEP-5007)."""
    binding_failure_conditions: tuple[str, ...] = ()
    """Conditions that, set True, say the device cannot be made ready: the allocation is given up."""
    binds_to_node: bool = False
    """An allocation of the device is usable only on the node it was made for (its node selector names it)."""
    request_policies: Mapping[str, CapacityRequestPolicy] = field(default_factory=dict)
    """Capacity name -> what one allocation may take of it (consumable capacity, `knuma.api.dra.capacity`); only
    on devices with `allow_multiple_allocations`."""

    @property
    def consumes_counters(self) -> bool:
        return bool(self.consumes)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.attributes:
            out["attributes"] = {k: a.to_dict() for k, a in self.attributes.items()}
        if self.capacity:
            out["capacity"] = {k: self._capacity_dict(k, q) for k, q in self.capacity.items()}
        if self.taints:
            out["taints"] = [{"key": t.key, "value": t.value, "effect": t.effect} for t in self.taints]
        if self.allow_multiple_allocations:
            out["allowMultipleAllocations"] = True
        if self.binding_conditions:
            out["bindingConditions"] = list(self.binding_conditions)
        if self.binding_failure_conditions:
            out["bindingFailureConditions"] = list(self.binding_failure_conditions)
        if self.binds_to_node:
            out["bindsToNode"] = True
        if self.consumes:
            out["consumesCounters"] = [
                {"counterSet": c.name, "counters": {k: {"value": str(q)} for k, q in c.counters.items()}}
                for c in self.consumes
            ]
        return out

    def _capacity_dict(self, name: str, value: Quantity) -> dict[str, Any]:
        policy = self.request_policies.get(name)
        return {"value": str(value), "requestPolicy": policy.to_dict()} if policy else {"value": str(value)}


def _attribute(raw: object, path: str, errors: FieldErrors) -> DeviceAttribute | None:
    body = mapping(raw, path, errors)
    present = [t for t in ATTRIBUTE_TYPES if body.get(t) is not None]
    if len(present) != 1:
        errors.invalid(path, dict(body), "exactly one value must be specified")
        return None
    kind = present[0]
    value = body[kind]
    where = f"{path}.{kind}"
    if kind in LIST_TYPES:
        if not isinstance(value, list) or not value:
            errors.invalid(where, value, "must be a non-empty list")
            return None
        if len(value) > ATTRIBUTE_LIST_MAX:
            errors.too_many(where, len(value), ATTRIBUTE_LIST_MAX)
        scalars = [_scalar(kind[:-1], v, f"{where}[{i}]", errors) for i, v in enumerate(value)]
        if any(s is None for s in scalars):
            return None
        if len(set(scalars)) != len(scalars):
            errors.invalid(where, value, "must not contain duplicates")
        return DeviceAttribute(kind, tuple(scalars))  # type: ignore[arg-type]
    scalar = _scalar(kind, value, where, errors)
    return None if scalar is None else DeviceAttribute(kind, scalar)


def _scalar(kind: str, value: object, path: str, errors: FieldErrors) -> int | bool | str | SemVer | None:
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            errors.invalid(path, value, "must be an integer")
            return None
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            errors.invalid(path, value, "must be a boolean")
            return None
        return value
    if not isinstance(value, str):
        errors.invalid(path, value, "must be a string")
        return None
    if kind == "string":
        if len(value) > ATTRIBUTE_STRING_MAX:
            errors.invalid(path, value, f"must be no more than {ATTRIBUTE_STRING_MAX} characters")
        return value
    try:
        return SemVer.parse(value)
    except SemVerError:
        errors.invalid(path, value, "must be a string compatible with semver.org spec 2.0.0")
        return None


def parse_node_selection(
    raw: Mapping[str, Any], path: str, errors: FieldErrors, *, allow_per_device: bool
) -> NodeSelection | None:
    """The `nodeName` / `nodeSelector` / `allNodes` (/ `perDeviceNodeSelection`) one-of; None when none is set."""
    node_name = optional_str(raw, "nodeName", path, errors)
    selector_raw = raw.get("nodeSelector")
    all_nodes = optional_bool(raw, "allNodes", path, errors) or False
    per_device = (optional_bool(raw, "perDeviceNodeSelection", path, errors) or False) if allow_per_device else False
    chosen = [
        name
        for name, on in (
            ("nodeName", node_name),
            ("nodeSelector", selector_raw is not None),
            ("allNodes", all_nodes),
            ("perDeviceNodeSelection", per_device),
        )
        if on
    ]
    if len(chosen) > 1:
        errors.invalid(path or "spec", chosen, f"exactly one of {_one_of(allow_per_device)} is required")
        return None
    if not chosen:
        return None
    if node_name:
        problem = errors.check_name(f"{path}.nodeName", node_name)
        return NodeSelection(node_name=problem)
    if selector_raw is not None:
        body = mapping(selector_raw, f"{path}.nodeSelector", errors)
        terms = body.get("nodeSelectorTerms")
        if not isinstance(terms, list) or len(terms) != 1:
            errors.invalid(f"{path}.nodeSelector.nodeSelectorTerms", terms, "must have exactly one node selector term")
        selector, problems = parse_node_selector(body, f"{path}.nodeSelector")
        for problem in problems:
            where, _, detail = problem.partition(": ")
            errors.invalid(where, None, detail)
        return NodeSelection(node_selector=selector, node_selector_raw=body)
    return NodeSelection(all_nodes=all_nodes, per_device=per_device)


def _one_of(per_device: bool) -> str:
    names = ["`nodeName`", "`nodeSelector`", "`allNodes`"] + (["`perDeviceNodeSelection`"] if per_device else [])
    return ", ".join(names[:-1]) + f" or {names[-1]}"


def parse_device(raw: object, path: str, errors: FieldErrors, *, per_device_selection: bool) -> Device | None:
    body = mapping(raw, path, errors)
    name = errors.check_name(f"{path}.name", body.get("name"), rule="label")
    attributes: dict[str, DeviceAttribute] = {}
    for key, value in mapping(body.get("attributes"), f"{path}.attributes", errors).items():
        where = f"{path}.attributes[{key}]"
        errors.check_qualified_name(where, key)
        attribute = _attribute(value, where, errors)
        if attribute is not None:
            attributes[str(key)] = attribute
    capacity: dict[str, Quantity] = {}
    policies: dict[str, CapacityRequestPolicy] = {}
    multiple = bool(optional_bool(body, "allowMultipleAllocations", path, errors))
    for key, value in mapping(body.get("capacity"), f"{path}.capacity", errors).items():
        where = f"{path}.capacity[{key}]"
        errors.check_qualified_name(where, key)
        raw_value = value.get("value") if isinstance(value, Mapping) else None
        try:
            capacity[str(key)] = parse_quantity(raw_value)  # type: ignore[arg-type]
        except QuantityError as err:
            errors.invalid(f"{where}.value", raw_value, str(err)) if raw_value is not None else errors.required(
                f"{where}.value"
            )
        if isinstance(value, Mapping):
            policy = parse_request_policy(
                value.get("requestPolicy"), f"{where}.requestPolicy", errors, capacity.get(str(key)), multiple
            )
            if policy is not None:
                policies[str(key)] = policy
    if len(attributes) + len(capacity) > ATTRIBUTES_AND_CAPACITY_MAX:
        errors.too_many(path, len(attributes) + len(capacity), ATTRIBUTES_AND_CAPACITY_MAX)
    taints = []
    for i, taint in enumerate(items(body.get("taints"), f"{path}.taints", errors, TAINTS_MAX)):
        where = f"{path}.taints[{i}]"
        t = mapping(taint, where, errors)
        key = errors.check_qualified_name(f"{where}.key", t.get("key"))
        effect = optional_str(t, "effect", where, errors)
        if not effect:
            errors.required(f"{where}.effect")
        elif effect not in TAINT_EFFECTS:
            errors.unsupported(f"{where}.effect", effect, TAINT_EFFECTS)
        taints.append(Taint(key, optional_str(t, "value", where, errors), effect))
    node = None
    if per_device_selection:
        node = parse_node_selection(body, path, errors, allow_per_device=False)
        if node is None:
            errors.required(
                path,
                "exactly one of `nodeName`, `nodeSelector` or `allNodes` is required when "
                "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            )
    elif any(body.get(k) is not None for k in ("nodeName", "nodeSelector", "allNodes")):
        errors.invalid(
            path,
            None,
            "`nodeName`, `nodeSelector` and `allNodes` can only be set on a device when "
            "`perDeviceNodeSelection` is true in the ResourceSlice spec",
        )
    consumes = parse_counter_sets(body.get("consumesCounters"), f"{path}.consumesCounters", errors, "counterSet", 2)
    conditions, failures = parse_binding_conditions(body, path, errors)
    if not name:
        return None
    return Device(
        name=name,
        attributes=attributes,
        capacity=capacity,
        taints=tuple(taints),
        node=node,
        allow_multiple_allocations=multiple,
        consumes=consumes,
        binding_conditions=conditions,
        binding_failure_conditions=failures,
        binds_to_node=bool(optional_bool(body, "bindsToNode", path, errors)),
        request_policies=policies,
    )


BINDING_CONDITIONS_MAX = 4
"""`resource.BindingConditionsMaxSize` and `BindingFailureConditionsMaxSize`."""


def parse_binding_conditions(
    body: Mapping[str, Any], path: str, errors: FieldErrors
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A device's (or an allocation result's) `bindingConditions` and `bindingFailureConditions`, validated as
    `validateDeviceBindingParameters`: at most 4 of each, condition types (label names, `ValidateLabelName`), no
    duplicates, no type
    in both lists, and either both lists or neither."""
    found: list[tuple[str, ...]] = []
    for key in ("bindingConditions", "bindingFailureConditions"):
        where = f"{path}.{key}"
        raw = items(body.get(key), where, errors)
        if len(raw) > BINDING_CONDITIONS_MAX:
            errors.too_many(where, len(raw), BINDING_CONDITIONS_MAX)
            raw = []
        names: list[str] = []
        for i, condition in enumerate(raw):
            if not isinstance(condition, str) or (problem := label_key_error(condition)) is not None:
                errors.invalid(
                    f"{where}[{i}]",
                    condition,
                    "must be a condition type (a label name): "
                    + (problem if isinstance(condition, str) and problem else "expected a string"),
                )
                continue
            name = condition
            if name in names:
                errors.duplicate(f"{where}[{i}]", name)
            elif name:
                names.append(name)
        found.append(tuple(names))
    conditions, failures = found
    for i, condition in enumerate(failures):
        if condition in conditions:
            errors.invalid(
                f"{path}.bindingFailureConditions[{i}]",
                condition,
                "bindingFailureConditions must not overlap with bindingConditions",
            )
    if failures and not conditions:
        errors.invalid(
            f"{path}.bindingConditions", [], "bindingConditions are required to use bindingFailureConditions"
        )
    if conditions and not failures:
        errors.invalid(
            f"{path}.bindingFailureConditions", [], "bindingFailureConditions are required to use bindingConditions"
        )
    return conditions, failures
