"""`knuma detect`: which platform (Kubernetes, OpenShift, HyperShift) and version a cluster runs, as the upstream
deployer finds them: OpenShift serves `config.openshift.io` ClusterVersions, HyperShift's Infrastructure says its
control plane is `External`, OpenShift's version is the `openshift-apiserver` ClusterOperator's, Kubernetes' is the
server's `gitVersion`. A user-supplied `-P` wins over what is discovered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx2

from knuma.deploy.options import Platform, PlatformSpec
from knuma.errors import OperationFailed
from knuma.kube import rest
from knuma.kube.errors import KubeApiError, NotFound

__all__ = ["DetectError", "Detection", "control_plane_nodes", "detect", "discover", "server_version"]

_OPENSHIFT = "/apis/config.openshift.io/v1"


class DetectError(OperationFailed):
    """The cluster could not be asked (the message carries the API server's answer)."""


def _get(http: httpx2.Client, path: str, params: dict[str, str] | None = None) -> dict[str, Any] | None:
    """The object at `path`, None when the cluster does not serve it; a connection that fails raises
    `knuma.kube.errors.Unavailable` (the API server cannot be reached), any other refusal `DetectError`."""
    try:
        return rest.request_sync(http, "GET", path, params=params)
    except NotFound:
        return None
    except KubeApiError as err:
        if err.status is None:
            raise
        raise DetectError(f"GET {path}: HTTP {err.status}: {err.message[:200]}") from err


def server_version(http: httpx2.Client) -> str:
    body = _get(http, "/version") or {}
    return str(body.get("gitVersion") or "")


def control_plane_nodes(http: httpx2.Client) -> int:
    """How many nodes carry the control-plane role label (upstream's `detect --control-plane`)."""
    listed = _get(http, "/api/v1/nodes", {"labelSelector": "node-role.kubernetes.io/control-plane"}) or {}
    return len(listed.get("items") or [])


def discover(http: httpx2.Client) -> PlatformSpec:
    versions = _get(http, f"{_OPENSHIFT}/clusterversions")
    if not versions or not versions.get("items"):
        return PlatformSpec(Platform.KUBERNETES, server_version(http))
    infra = _get(http, f"{_OPENSHIFT}/infrastructures/cluster") or {}
    external = (infra.get("status") or {}).get("controlPlaneTopology") == "External"
    operator = _get(http, f"{_OPENSHIFT}/clusteroperators/openshift-apiserver") or {}
    op_versions = (operator.get("status") or {}).get("versions") or [{}]
    version = str(op_versions[0].get("version") or "")
    return PlatformSpec(Platform.HYPERSHIFT if external else Platform.OPENSHIFT, version)


@dataclass(frozen=True, slots=True)
class Detection:
    discovered: PlatformSpec
    user: PlatformSpec | None

    @property
    def effective(self) -> PlatformSpec:
        """The user's platform (and version, if they gave one) over the discovered one."""
        if self.user is None:
            return self.discovered
        if self.user.version:
            return self.user
        same = self.user.platform is self.discovered.platform
        return PlatformSpec(self.user.platform, self.discovered.version if same else "")

    def to_json(self) -> dict[str, Any]:
        """Upstream's shape: `{"platform": {autoDetected, userSupplied, discovered}, "version": {...}}`."""
        user = self.user
        return {
            "platform": {
                "autoDetected": self.discovered.platform.display,
                "userSupplied": user.platform.display if user else "",
                "discovered": self.effective.platform.display,
            },
            "version": {
                "autoDetected": self.discovered.version,
                "userSupplied": user.version if user else "",
                "discovered": self.effective.version,
            },
        }


def detect(http: httpx2.Client, user: PlatformSpec | None = None) -> Detection:
    return Detection(discover(http), user)
