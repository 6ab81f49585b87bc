"""All components' manifests in deploy order, and their text forms (`knuma render`).

Order matters: the CRD first (nothing else needs it, but the updater writes its objects), then the updater, then
the scheduler; inside a component the Namespace first and the workload last, so that every object a workload
references exists when it starts. `remove` walks the same list backwards.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import yaml

from knuma.deploy.api import render_api
from knuma.deploy.exporter import render_knuma_exporter
from knuma.deploy.nfd import render_nfd
from knuma.deploy.objects import Manifest
from knuma.deploy.options import Component, DeployOptions, SchedulerVariant, UpdaterType
from knuma.deploy.rte import render_rte
from knuma.deploy.scheduler import render_knuma_scheduler
from knuma.deploy.upstream_scheduler import render_upstream_scheduler

__all__ = ["render", "render_component", "to_json", "to_yaml"]


def render_component(component: Component, options: DeployOptions) -> list[Manifest]:
    if component is Component.API:
        return render_api(options)
    if component is Component.UPDATER:
        if options.updater is UpdaterType.RTE:
            return render_rte(options)
        if options.updater is UpdaterType.NFD:
            return render_nfd(options)
        return render_knuma_exporter(options)
    if options.scheduler is SchedulerVariant.UPSTREAM:
        return render_upstream_scheduler(options)
    return render_knuma_scheduler(options)


def render(components: Iterable[Component], options: DeployOptions) -> list[Manifest]:
    """The objects of `components`, always in deploy order whatever order they are given in."""
    wanted = set(components)
    return [obj for c in Component if c in wanted for obj in render_component(c, options)]


class _Dumper(yaml.SafeDumper):
    """Block style, multi-line strings (the scheduler configuration) as literal blocks, readable in GitOps diffs;
    no anchors and aliases, which some tools mishandle."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def to_yaml(objects: Iterable[dict[str, Any]]) -> str:
    """A YAML stream, each object introduced by `---` (as upstream's `render`), keys in the order they were built."""
    return "".join(
        "---\n" + yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False) for obj in objects
    )


def to_json(objects: Iterable[dict[str, Any]]) -> str:
    """A `v1 List`, which `kubectl apply -f` reads as well."""
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}, indent=2) + "\n"
