"""Mapping manifests (apiVersion + kind) to the API resources that serve them, through discovery, like kubectl's
RESTMapper.

The deployer applies plain dicts of any kind (built-ins, CRDs, OpenShift's SecurityContextConstraints), so it uses
lightkube's generic resources, built here from what the cluster actually serves. They are not put in lightkube's
global registry: other code in the same process keeps getting lightkube's typed models for built-in kinds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx2
from lightkube.generic_resource import GenericGlobalResource, GenericNamespacedResource, create_api_info

from knuma.errors import InvalidInput
from knuma.kube import rest
from knuma.kube.errors import NotFound

__all__ = ["ApiResource", "RestMapper", "UnknownKindError", "object_ref"]


class UnknownKindError(InvalidInput, LookupError):
    """The cluster does not serve a kind (a CRD not installed, an OpenShift kind on Kubernetes)."""


@dataclass(frozen=True, slots=True)
class ApiResource:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def lightkube_class(self) -> type[Any]:
        """A generic lightkube resource class for this resource (dict-shaped objects in and out)."""
        base = GenericNamespacedResource if self.namespaced else GenericGlobalResource
        info = create_api_info(self.group, self.version, self.kind, self.plural)
        return type(self.kind, (base,), {"_api_info": info})


def object_ref(obj: dict[str, Any]) -> str:
    """`Kind ns/name` or `Kind name`, how the deployer names an object in messages."""
    md = obj.get("metadata") or {}
    ns = md.get("namespace")
    return f"{obj.get('kind')} {ns}/{md.get('name')}" if ns else f"{obj.get('kind')} {md.get('name')}"


class RestMapper:
    """Discovery per group version, cached; `forget` after installing a CRD so its kinds are found."""

    def __init__(self, http: httpx2.Client) -> None:
        self._http = http
        self._cache: dict[str, dict[str, ApiResource]] = {}

    def forget(self, api_version: str | None = None) -> None:
        if api_version is None:
            self._cache.clear()
        else:
            self._cache.pop(api_version, None)

    def _group_version(self, api_version: str) -> dict[str, ApiResource]:
        if api_version not in self._cache:
            path = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
            kinds: dict[str, ApiResource] = {}
            try:
                listed = rest.request_sync(self._http, "GET", path)
            except NotFound:
                listed = {}  # the group version is not served: no kinds
            group, _, version = api_version.rpartition("/")
            for item in listed.get("resources") or []:
                if "/" in item.get("name", ""):
                    continue  # subresources
                kinds[item["kind"]] = ApiResource(group, version, item["kind"], item["name"], item["namespaced"])
            self._cache[api_version] = kinds
        return self._cache[api_version]

    def resource_for(self, api_version: str, kind: str) -> ApiResource:
        found = self._group_version(api_version).get(kind)
        if found is None:
            raise UnknownKindError(
                f"the cluster does not serve {kind} ({api_version}); install what provides it, "
                "or check --platform (OpenShift kinds need -P openshift)"
            )
        return found

    def is_served(self, api_version: str, kind: str) -> bool:
        return kind in self._group_version(api_version)
