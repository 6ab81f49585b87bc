"""Pod manifests for the simulated-node tests."""

from __future__ import annotations

from typing import Any

from knuma.api.pod import Pod


def guaranteed_manifest(
    name: str, cpu: int, memory: str = "1Gi", *, namespace: str = "default", extra: dict[str, str] | None = None
) -> dict[str, Any]:
    limits = {"cpu": str(cpu), "memory": memory, **(extra or {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": limits}}]
        },
    }


def guaranteed(name: str, cpu: int, memory: str = "1Gi", **kwargs: Any) -> Pod:
    return Pod.from_manifest(guaranteed_manifest(name, cpu, memory, **kwargs))
