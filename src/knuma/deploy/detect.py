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

__all__ = ["Detection", "detect", "discover", "server_version"]

_OPENSHIFT = "/apis/config.openshift.io/v1"


class DetectError(OperationFailed):
    """The cluster could not be asked (the message carries the API server's answer)."""


def _get(http: httpx2.Client, path: str) -> dict[str, Any] | None:
    reply = http.get(path, headers={"Accept": "application/json"})
    if reply.status_code == 404:
        return None
    if reply.status_code != 200:
        raise DetectError(f"GET {path}: HTTP {reply.status_code}: {reply.text.strip()[:200]}")
    body = reply.json()
    return body if isinstance(body, dict) else None


def server_version(http: httpx2.Client) -> str:
    body = _get(http, "/version") or {}
    return str(body.get("gitVersion") or "")


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
