"""Container images: knuma's one image for all its components, and the upstream images of the upstream variants.

Each image is overridable by a flag and by an environment variable (the flag wins); the variables are upstream's
(`TAS_SCHEDULER_PLUGIN_IMAGE`, `TAS_RESOURCE_EXPORTER_IMAGE`, `TAS_NODE_FEATURE_DISCOVERY_IMAGE`) plus `KNUMA_IMAGE`,
so `knuma images` prints lines that can be pasted back as environment settings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

from knuma import __version__
from knuma.errors import InvalidInput

__all__ = ["DEFAULTS", "ENV", "Images", "resolve_images"]

DEFAULTS: dict[str, str] = {
    "knuma": f"ghcr.io/knuma/knuma:{__version__}",
    "scheduler_plugin": "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.27.8",
    "resource_topology_exporter": "quay.io/k8stopologyawareschedwg/resource-topology-exporter:v0.19.3",
    "node_feature_discovery": "registry.k8s.io/nfd/node-feature-discovery:v0.15.1",
    "pause": "registry.k8s.io/pause:3.9",
}

ENV: dict[str, str] = {
    "knuma": "KNUMA_IMAGE",
    "scheduler_plugin": "TAS_SCHEDULER_PLUGIN_IMAGE",
    "resource_topology_exporter": "TAS_RESOURCE_EXPORTER_IMAGE",
    "node_feature_discovery": "TAS_NODE_FEATURE_DISCOVERY_IMAGE",
    "pause": "TAS_PAUSE_IMAGE",
}


@dataclass(frozen=True, slots=True)
class Images:
    knuma: str = DEFAULTS["knuma"]
    scheduler_plugin: str = DEFAULTS["scheduler_plugin"]
    resource_topology_exporter: str = DEFAULTS["resource_topology_exporter"]
    node_feature_discovery: str = DEFAULTS["node_feature_discovery"]
    pause: str = DEFAULTS["pause"]
    """The RTE DaemonSet's `shared-pool-container`: a container that never gets exclusive CPUs."""

    def items(self) -> list[tuple[str, str]]:
        return [(f.name, getattr(self, f.name)) for f in fields(self)]


def resolve_images(flags: Mapping[str, str | None], env: Mapping[str, str] | None = None) -> Images:
    """Flag, else environment variable, else the default, per image; empty values count as unset."""
    env = os.environ if env is None else env
    chosen: dict[str, str] = {}
    for key, default in DEFAULTS.items():
        value = flags.get(key) or env.get(ENV[key]) or default
        if any(ch.isspace() for ch in value):
            source = "flag" if flags.get(key) else ENV[key]
            raise InvalidInput(f"invalid image {value!r} from {source}: an image reference has no spaces")
        chosen[key] = value
    return Images(**chosen)
