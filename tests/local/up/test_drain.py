"""End-to-end: `kubectl drain` on `knuma up`. The eviction API spends the PodDisruptionBudget, each evicted pod
stops gracefully on its simulated kubelet (holding its CPUs until its containers stop) before the kubelet deletes
it, the ReplicaSet's replacements run on the other node, and drain waits for all of it, as on a cluster."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from knuma.testing.polling import eventually

from .test_up import Up

pytestmark = pytest.mark.slow


def _deployment() -> dict[str, Any]:
    limits = {"cpu": "2", "memory": "2Gi"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}, "annotations": {"sim.knuma.io/shutdown": "2s"}},
                "spec": {
                    "schedulerName": "topology-aware-scheduler",
                    "containers": [
                        {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": limits}}
                    ],
                },
            },
        },
    }


def _budget() -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    }


def _running_on(up: Up) -> list[str]:
    pods = up.get("pods", "-l", "app=web")["items"]
    return sorted(
        p["spec"].get("nodeName", "")
        for p in pods
        if (p.get("status") or {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    )


def test_kubectl_drain_evicts_through_the_budget_and_waits_for_graceful_deletion(start: Callable[..., Up]) -> None:
    up = start("--nodes", "2", "--shape", "small")
    eventually(lambda: len(up.get("noderesourcetopologies")["items"]) == 2, timeout=60)
    up.kubectl("cordon", "worker-001")  # both replicas on worker-000 first
    up.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([_deployment(), _budget()]))
    eventually(lambda: _running_on(up) == ["worker-000", "worker-000"], timeout=90)
    eventually(lambda: (up.get("pdb", "web").get("status") or {}).get("disruptionsAllowed") == 1, timeout=60)
    up.kubectl("uncordon", "worker-001")
    out = up.kubectl("drain", "worker-000", "--ignore-daemonsets", "--timeout=100s", timeout=120)
    assert "node/worker-000 drained" in out, out
    assert out.count("evicted") == 2, out
    eventually(lambda: _running_on(up) == ["worker-001", "worker-001"], timeout=60)  # the second replacement too
    assert up.stop() == 0
