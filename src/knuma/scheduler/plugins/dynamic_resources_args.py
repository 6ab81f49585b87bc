"""`DynamicResourcesArgs` (kube-scheduler `pkg/scheduler/apis/config/types_pluginargs.go`), defaulted as
`SetDefaults_DynamicResourcesArgs` and validated as `ValidateDynamicResourcesArgs`:

- `bindingTimeout` (default 10 minutes, at least 1 second): how long PreBind waits for the binding conditions of a
  pod's devices (KEP-5007) before it gives the allocation up;
- `filterTimeout` (default 10 seconds, zero or positive): upstream bounds each node's allocation by time; knuma
  bounds its search by attempts (`knuma.devices.search`, reported as "search budget exhausted"), so the value is
  validated and not applied, with a warning."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knuma.duration import DurationError, parse_duration
from knuma.scheduler.plugins.args_fields import Fail, field_mapping, quoted

__all__ = ["DYNAMIC_RESOURCES", "DynamicResourcesArgs", "parse_dynamic_resources_args"]

DYNAMIC_RESOURCES = "DynamicResources"

_FIELDS = ("apiVersion", "kind", "filterTimeout", "bindingTimeout")
BINDING_TIMEOUT = 600.0
"""Seconds: upstream's default `bindingTimeout`."""


@dataclass(frozen=True)
class DynamicResourcesArgs:
    binding_timeout: float = BINDING_TIMEOUT
    """Seconds PreBind waits for devices' binding conditions."""
    filter_timeout: float | None = None
    """As configured (not applied: see the module docstring); None when not set."""


def _seconds(value: Any, path: str, fail: Fail) -> float:
    try:
        return parse_duration(value)
    except DurationError as err:
        fail(path, f"{err} (got {quoted(value)})")


def parse_dynamic_resources_args(args: Mapping[str, Any], path: str, fail: Fail) -> DynamicResourcesArgs:
    raw = field_mapping(args, path, _FIELDS, fail)
    binding, filtering = BINDING_TIMEOUT, None
    if raw.get("bindingTimeout") is not None:
        binding = _seconds(raw["bindingTimeout"], f"{path}.bindingTimeout", fail)
        if binding < 1:
            fail(f"{path}.bindingTimeout", f"must be at least 1 second, got {quoted(raw['bindingTimeout'])}")
    if raw.get("filterTimeout") is not None:
        filtering = _seconds(raw["filterTimeout"], f"{path}.filterTimeout", fail)
        if filtering < 0:
            fail(f"{path}.filterTimeout", f"must be zero or positive, got {quoted(raw['filterTimeout'])}")
    return DynamicResourcesArgs(binding, filtering)
