"""Discovery documents: what `kubectl api-resources`, kopf's scanner and lightkube's generic resources read.

Plain (non-aggregated) discovery is served even when clients ask for aggregated discovery first
(`application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`): they fall back to per-group documents when
the reply is plain `application/json`.
"""

from __future__ import annotations

import platform

from knuma import __version__
from knuma.api.types import JsonObj
from knuma.local.apiserver.resources import Registry
from knuma.local.apiserver.version import KUBE_MAJOR, KUBE_MINOR


def version() -> JsonObj:
    return {
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "gitVersion": f"v{KUBE_MAJOR}.{KUBE_MINOR}.0+knuma-{__version__}",
        "gitCommit": "knuma",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": f"python{platform.python_version()}",
        "compiler": "cpython",
        "platform": f"{platform.system().lower()}/{platform.machine()}",
    }


def core_versions(server_address: str) -> JsonObj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group(registry: Registry, group: str) -> JsonObj:
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in registry.versions(group)]
    return {"name": group, "versions": versions, "preferredVersion": versions[0] if versions else {}}


def group_list(registry: Registry) -> JsonObj:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(registry, g) for g in registry.groups()]}


def group(registry: Registry, name: str) -> JsonObj | None:
    if name not in registry.groups():
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(registry, name)}


def resource_list(registry: Registry, group: str, version: str) -> JsonObj | None:
    types = registry.in_group_version(group, version)
    if not types:
        return None
    resources: list[JsonObj] = []
    for rt in sorted(types, key=lambda t: t.plural):
        resources.extend(rt.discovery())
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }
