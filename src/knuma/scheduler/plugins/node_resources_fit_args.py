"""`NodeResourcesFitArgs` (kube-scheduler `pkg/scheduler/apis/config/types_pluginargs.go`), defaulted as
`SetDefaults_NodeResourcesFitArgs` and validated as `ValidateNodeResourcesFitArgs`: the extended resources the filter
ignores, and the scoring strategy (`LeastAllocated`, `MostAllocated` or `RequestedToCapacityRatio` over weighted
resources). A profile that bin-packs with `MostAllocated`, or that leaves a resource to an extender, gets what it
configured, as on kube-scheduler."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from knuma.api.nodeaffinity import label_key_error
from knuma.api.resources import CPU, MEMORY, is_native
from knuma.scheduler.plugins.args_fields import Fail, field_int, field_mapping, quoted

__all__ = [
    "DEFAULT_FIT_RESOURCES",
    "FIT_STRATEGIES",
    "LEAST_ALLOCATED",
    "MAX_CUSTOM_PRIORITY_SCORE",
    "MOST_ALLOCATED",
    "NODE_RESOURCES_FIT",
    "REQUESTED_TO_CAPACITY_RATIO",
    "FitStrategy",
    "NodeResourcesFitArgs",
    "parse_node_resources_fit_args",
]

NODE_RESOURCES_FIT = "NodeResourcesFit"
LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
FIT_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
"""`supportedScoringStrategyTypes`, sorted as the `Unsupported value` message lists them."""
DEFAULT_FIT_RESOURCES: tuple[tuple[str, int], ...] = ((CPU, 1), (MEMORY, 1))
"""`defaultResourceSpec`: cpu and memory, weight 1 each."""
MAX_CUSTOM_PRIORITY_SCORE = 10
"""`config.MaxCustomPriorityScore`: the top of a `RequestedToCapacityRatio` shape's scores."""
_FIELDS = ("apiVersion", "kind", "ignoredResources", "ignoredResourceGroups", "scoringStrategy")
_STRATEGY_FIELDS = ("type", "resources", "requestedToCapacityRatio")


@dataclass(frozen=True)
class FitStrategy:
    type: str = LEAST_ALLOCATED
    resources: tuple[tuple[str, int], ...] = DEFAULT_FIT_RESOURCES
    """(resource, weight) pairs, weights 1-100."""
    shape: tuple[tuple[int, int], ...] = ()
    """`RequestedToCapacityRatio`'s (utilization, score) points: utilization 0-100 increasing, score 0-10."""


@dataclass(frozen=True)
class NodeResourcesFitArgs:
    ignored_resources: frozenset[str] = frozenset()
    """Extended resources the filter does not check (an extender or another component accounts for them)."""
    ignored_resource_groups: frozenset[str] = frozenset()
    """The same by domain: `example.com` ignores every `example.com/...` resource."""
    strategy: FitStrategy = field(default_factory=FitStrategy)

    @property
    def is_default(self) -> bool:
        """kube-scheduler's defaults: nothing ignored, LeastAllocated over cpu and memory with weight 1."""
        return not self.ignored_resources and not self.ignored_resource_groups and self.strategy == FitStrategy()

    def ignores(self, name: str) -> bool:
        """`fitsRequest`: only extended resources are ever ignored, by name or by their domain."""
        if is_native(name):
            return False
        return name in self.ignored_resources or name.split("/", 1)[0] in self.ignored_resource_groups


def parse_node_resources_fit_args(args: Mapping[str, Any], path: str, fail: Fail) -> NodeResourcesFitArgs:
    """Validate the args mapping (`ValidateNodeResourcesFitArgs`, upstream's messages); `fail(path, problem)` raises
    at the first problem."""
    raw = field_mapping(args, path, _FIELDS, fail)
    ignored = _names(raw.get("ignoredResources"), f"{path}.ignoredResources", fail, groups=False)
    groups = _names(raw.get("ignoredResourceGroups"), f"{path}.ignoredResourceGroups", fail, groups=True)
    strategy = FitStrategy()
    if raw.get("scoringStrategy") is not None:
        strategy = _strategy(raw["scoringStrategy"], f"{path}.scoringStrategy", fail)
    return NodeResourcesFitArgs(frozenset(ignored), frozenset(groups), strategy)


def _names(value: Any, path: str, fail: Fail, *, groups: bool) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        fail(path, f"must be a list of strings, got {quoted(value)}")
    out = []
    for index, name in enumerate(value):
        where = f"{path}[{index}]"
        if not isinstance(name, str):
            fail(where, f"must be a string, got {quoted(name)}")
        if groups and "/" in name:
            fail(where, f"invalid value {quoted(name)}: resource group name can't contain '/'")
        problem = label_key_error(name)
        if problem is not None:
            fail(where, problem)
        out.append(name)
    return out


def _strategy(value: Any, path: str, fail: Fail) -> FitStrategy:
    raw = field_mapping(value, path, _STRATEGY_FIELDS, fail)
    kind = raw.get("type") or ""
    if kind not in FIT_STRATEGIES:  # `field.NotSupported`, an empty type included
        listed = ", ".join(f'"{name}"' for name in FIT_STRATEGIES)
        fail(f"{path}.type", f"Unsupported value: {quoted(kind)}: supported values: {listed}")
    resources = _resources(raw.get("resources"), f"{path}.resources", fail) or DEFAULT_FIT_RESOURCES
    shape: tuple[tuple[int, int], ...] = ()
    ratio_path = f"{path}.requestedToCapacityRatio"
    ratio = field_mapping(raw.get("requestedToCapacityRatio"), ratio_path, ("shape",), fail)
    if raw.get("requestedToCapacityRatio") is not None:
        shape = _shape(ratio.get("shape"), f"{path}.shape", fail)
    if kind == REQUESTED_TO_CAPACITY_RATIO and not shape:
        fail(f"{path}.shape", "Required value: at least one point must be specified")
    return FitStrategy(kind, resources, shape)


def _resources(value: Any, path: str, fail: Fail) -> tuple[tuple[str, int], ...]:
    """`validateResources` after `SetDefaults_NodeResourcesFitArgs` (a missing or 0 weight is 1)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        fail(path, f"must be a list of {{name, weight}}, got {quoted(value)}")
    out = []
    for index, item in enumerate(value):
        where = f"{path}[{index}]"
        entry = field_mapping(item, where, ("name", "weight"), fail)
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            fail(f"{where}.name", f"must be a resource name, got {quoted(name)}")
        weight = 1 if entry.get("weight") in (None, 0) else field_int(entry["weight"], f"{where}.weight", fail)
        if not 0 < weight <= 100:
            fail(f"{where}.weight", f"invalid value {weight}: resource weight of {name} not in valid range (0, 100]")
        out.append((name, weight))
    return tuple(out)


def _shape(value: Any, path: str, fail: Fail) -> tuple[tuple[int, int], ...]:
    """`validateFunctionShape`: at least one point, utilizations strictly increasing within [0, 100], scores within
    [0, `MAX_CUSTOM_PRIORITY_SCORE`]."""
    if not value:
        fail(path, "Required value: at least one point must be specified")
    if not isinstance(value, list):
        fail(path, f"must be a list of {{utilization, score}}, got {quoted(value)}")
    points: list[tuple[int, int]] = []
    for index, item in enumerate(value):
        where = f"{path}[{index}]"
        entry = field_mapping(item, where, ("utilization", "score"), fail)
        utilization = field_int(entry.get("utilization", 0), f"{where}.utilization", fail)
        score = field_int(entry.get("score", 0), f"{where}.score", fail)
        if points and points[-1][0] >= utilization:
            fail(f"{where}.utilization", f"invalid value {utilization}: values must be sorted in increasing order")
        if not 0 <= utilization <= 100:
            fail(f"{where}.utilization", f"invalid value {utilization}: not in valid range [0, 100]")
        if not 0 <= score <= MAX_CUSTOM_PRIORITY_SCORE:
            fail(f"{where}.score", f"invalid value {score}: not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
        points.append((utilization, score))
    return tuple(points)
