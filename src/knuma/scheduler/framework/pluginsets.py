"""Which plugins a profile runs at each extension point: kube-scheduler's merge of a profile's `plugins` into the
default plugins, then the `multiPoint` expansion, and the score weights.

- `mergePluginSet` (per extension point, `multiPoint` included): the defaults minus the disabled ones (all of them
  with `*`); a default the profile enables again is replaced in place, keeping its position and taking the new
  weight; then the profile's other enabled plugins, in order.
- `expandMultiPointPlugins`: each extension point gets its own enabled plugins plus the `multiPoint` plugins that
  have that extension point and are not disabled there (`*` there: none). Order: plugins enabled both ways (an
  override), then `multiPoint`'s, then the point's own.
- Weights (`getScoreWeights`): a weight set at `score` wins over `multiPoint`'s; unset or 0 is 1.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from knuma.errors import InvalidInput
from knuma.scheduler.framework.registry import DEFAULT_MULTI_POINT, EXTENSION_POINTS, PLUGINS

__all__ = ["PluginRef", "PluginSet", "PluginSetError", "effective_plugins", "merge_plugin_set"]


@dataclass(frozen=True)
class PluginRef:
    name: str
    weight: int = 0
    """0: unset."""
    path: str = ""
    """Where the configuration names it ("" for kube-scheduler's defaults)."""


@dataclass(frozen=True)
class PluginSet:
    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[PluginRef, ...] = ()


class PluginSetError(InvalidInput):
    def __init__(self, path: str, problem: str) -> None:
        self.path, self.problem = path, problem
        super().__init__(f"{path}: {problem}")


DEFAULTS = PluginSet(tuple(PluginRef(name, weight) for name, weight in DEFAULT_MULTI_POINT))


def merge_plugin_set(defaults: PluginSet, custom: PluginSet) -> PluginSet:
    disabled_names = {p.name for p in custom.disabled}
    disabled = list(custom.disabled) + [p for p in defaults.disabled if p.name not in disabled_names]
    disabled_names |= {p.name for p in defaults.disabled}
    custom_by_name = {p.name: (i, p) for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled_names:
        for plugin in defaults.enabled:
            if plugin.name in disabled_names:
                continue
            if plugin.name in custom_by_name:
                index, plugin = custom_by_name[plugin.name]
                replaced.add(index)
            enabled.append(plugin)
    enabled += [p for i, p in enumerate(custom.enabled) if i not in replaced]
    return PluginSet(tuple(enabled), tuple(disabled))


def _q(name: str) -> str:
    return json.dumps(name)


def _expand(point: str, own: PluginSet, multi: PluginSet, path: str) -> tuple[str, ...]:
    """`updatePluginList`, then `expandMultiPointPlugins`, for one extension point."""
    enabled: list[str] = []
    for plugin in own.enabled:
        where = f"{plugin.path}.name" if plugin.path else path
        if point not in PLUGINS[plugin.name].points:
            has = ", ".join(p for p in EXTENSION_POINTS if p in PLUGINS[plugin.name].points)
            raise PluginSetError(where, f"plugin {_q(plugin.name)} does not extend {point} (it has: {has})")
        if plugin.name in enabled:
            raise PluginSetError(where, f"plugin {_q(plugin.name)} is enabled twice at {point}")
        enabled.append(plugin.name)
    disabled = {p.name for p in own.disabled}
    if "*" in disabled:
        return tuple(enabled)
    from_multi: list[str] = []
    overridden: set[str] = set()
    for plugin in multi.enabled:
        if point not in PLUGINS[plugin.name].points or plugin.name in disabled:
            continue
        if plugin.name in enabled:
            overridden.add(plugin.name)
            continue
        if plugin.name in from_multi:
            where = f"{plugin.path}.name" if plugin.path else path
            raise PluginSetError(where, f"plugin {_q(plugin.name)} is enabled twice in multiPoint")
        from_multi.append(plugin.name)
    first = [n for n in enabled if n in overridden]
    rest = [n for n in enabled if n not in overridden]
    return tuple(first + from_multi + rest)


def effective_plugins(
    custom: Mapping[str, PluginSet], path: str = "plugins"
) -> tuple[dict[str, tuple[str, ...]], dict[str, int]]:
    """(extension point → plugin names in order, score weights) for a profile whose `plugins` are `custom` (keyed by
    extension point and `multiPoint`; missing keys are empty). Every name must be in the registry."""
    merged = {
        point: merge_plugin_set(DEFAULTS if point == "multiPoint" else PluginSet(), custom.get(point, PluginSet()))
        for point in ("multiPoint", *EXTENSION_POINTS)
    }
    plugins = {point: _expand(point, merged[point], merged["multiPoint"], path) for point in EXTENSION_POINTS}
    weights: dict[str, int] = {}
    for plugin in (*merged["score"].enabled, *merged["multiPoint"].enabled):
        if "score" in PLUGINS[plugin.name].points and plugin.name not in weights:
            weights[plugin.name] = plugin.weight or 1
    return plugins, weights
