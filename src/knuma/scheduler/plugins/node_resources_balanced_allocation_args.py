"""`NodeResourcesBalancedAllocationArgs` (kube-scheduler `pkg/scheduler/apis/config/types_pluginargs.go`), defaulted
as `SetDefaults_NodeResourcesBalancedAllocationArgs` (no resources: cpu and memory; a missing or 0 weight: 1) and
validated as `ValidateNodeResourcesBalancedAllocationArgs` (no resource twice, every weight 1: the score is a
standard deviation, which weights would not change)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knuma.scheduler.plugins.args_fields import Fail, field_int, field_mapping, quoted
from knuma.scheduler.plugins.node_resources_fit_args import DEFAULT_FIT_RESOURCES

__all__ = [
    "NODE_RESOURCES_BALANCED_ALLOCATION",
    "NodeResourcesBalancedAllocationArgs",
    "parse_node_resources_balanced_allocation_args",
]

NODE_RESOURCES_BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
_FIELDS = ("apiVersion", "kind", "resources")


@dataclass(frozen=True)
class NodeResourcesBalancedAllocationArgs:
    resources: tuple[tuple[str, int], ...] = DEFAULT_FIT_RESOURCES
    """(resource, weight) pairs, every weight 1 (`defaultResourceSpec`: cpu and memory)."""

    @property
    def is_default(self) -> bool:
        return self.resources == DEFAULT_FIT_RESOURCES


def parse_node_resources_balanced_allocation_args(
    args: Mapping[str, Any], path: str, fail: Fail
) -> NodeResourcesBalancedAllocationArgs:
    """Validate the args mapping with upstream's messages; `fail(path, problem)` raises at the first problem."""
    raw = field_mapping(args, path, _FIELDS, fail)
    value = raw.get("resources")
    if not value:
        return NodeResourcesBalancedAllocationArgs()
    where = f"{path}.resources"
    if not isinstance(value, list):
        fail(where, f"must be a list of {{name, weight}}, got {quoted(value)}")
    seen: set[str] = set()
    out = []
    for index, item in enumerate(value):
        entry = field_mapping(item, f"{where}[{index}]", ("name", "weight"), fail)
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            fail(f"{where}[{index}].name", f"must be a resource name, got {quoted(name)}")
        if name in seen:
            fail(f"{where}[{index}].name", f"Duplicate value: {quoted(name)}")
        seen.add(name)
        weight = 1 if entry.get("weight") in (None, 0) else field_int(entry["weight"], f"{where}[{index}].weight", fail)
        if weight != 1:
            fail(f"{where}[{index}].weight", f"Invalid value: {weight}: must be 1")
        out.append((name, weight))
    return NodeResourcesBalancedAllocationArgs(tuple(out))
