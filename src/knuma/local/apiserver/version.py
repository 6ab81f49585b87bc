"""The Kubernetes version `knuma apiserver` reports (`/version`) and whose API surface it serves.

1.34 is the first release with `resource.k8s.io/v1` (DRA GA), the DRA API knuma implements; built-in kinds are
decoded with that release's OpenAPI field tree (`knuma.local.apiserver.fieldschema_gen`).
"""

from __future__ import annotations

__all__ = ["KUBERNETES_VERSION", "KUBE_MAJOR", "KUBE_MINOR"]

KUBERNETES_VERSION = "1.34.0"
KUBE_MAJOR, KUBE_MINOR = KUBERNETES_VERSION.split(".")[:2]
