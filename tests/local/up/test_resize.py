"""End-to-end: in-place resize (KEP-1287) on `knuma up` with kubectl, and what knuma's scheduler counts of it.

One `small` node (two 8-CPU zones). A Guaranteed pod of 6 CPUs resized to 2 and a Burstable pod of 2 resized to 20:
the kubelet refuses both (static CPU manager; more than the node has), so the node still holds 6 + 2 CPUs, and a pod
of 6 fits on the other zone. Counting the specs instead (2 + 20), a scheduler would keep it pending for ever; counting
the shrunk spec of the pinned pod, it would think the first zone free."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from knuma.testing.polling import eventually
from tests.local.up.test_up import Up, guaranteed_pod

pytestmark = pytest.mark.slow


def _resize(up: Up, name: str, requests: dict[str, str], limits: dict[str, str] | None = None) -> None:
    resources: dict[str, Any] = {"requests": requests}
    if limits is not None:
        resources["limits"] = limits
    patch = json.dumps({"spec": {"containers": [{"name": "app", "resources": resources}]}})
    up.kubectl("patch", "pod", name, "--subresource", "resize", "--patch", patch)


def _resize_pending(up: Up, name: str) -> dict[str, Any] | None:
    conditions = up.get("pod", name)["status"].get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodResizePending"), None)


def _running(up: Up, name: str) -> bool:
    return bool(up.get("pod", name)["status"].get("phase") == "Running")


def test_the_scheduler_counts_what_the_kubelet_holds_after_refused_resizes(start: Callable[..., Up]) -> None:
    up = start("--nodes", "1", "--shape", "small")
    eventually(lambda: len(up.get("noderesourcetopologies")["items"]) == 1, timeout=60)
    burstable: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "elastic"},
        "spec": {
            "schedulerName": "topology-aware-scheduler",
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "2", "memory": "1Gi"}},
                }
            ],
        },
    }
    up.kubectl("apply", "-f", "-", stdin=guaranteed_pod("pinned", 6, scheduler="topology-aware-scheduler"))
    up.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(burstable))
    eventually(lambda: _running(up, "pinned") and _running(up, "elastic"), timeout=90)

    _resize(up, "pinned", {"cpu": "2", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"})
    _resize(up, "elastic", {"cpu": "20", "memory": "1Gi"})
    pinned = eventually(lambda: _resize_pending(up, "pinned"), timeout=60)
    elastic = eventually(lambda: _resize_pending(up, "elastic"), timeout=60)
    assert pinned["reason"] == "Infeasible" and "CPU Manager policy" in pinned["message"]
    assert elastic["reason"] == "Infeasible" and "Node didn't have enough capacity: cpu" in elastic["message"]

    up.kubectl("apply", "-f", "-", stdin=guaranteed_pod("after", 6, scheduler="topology-aware-scheduler"))
    eventually(lambda: _running(up, "after"), timeout=90)
    numa = {
        name: json.loads(up.get("pod", name)["metadata"]["annotations"]["sim.knuma.io/numa"])["app"]
        for name in ("pinned", "after")
    }
    assert numa["pinned"] != numa["after"]  # the kubelet put it on the zone the 6 pinned CPUs leave free

    # the node is full at node level (6 + 6 + 2 of 16) for a Burstable pod of 3 CPUs; the elastic pod shrunk to 1
    # frees the room, and the scheduler retries at once (`UpdatePodScaleDown`), not after its 5-minute flush
    late = copy.deepcopy(burstable)
    late["metadata"]["name"] = "late"
    late["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"
    up.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(late))
    eventually(lambda: _unschedulable(up, "late"), timeout=60)
    _resize(up, "elastic", {"cpu": "1", "memory": "1Gi"})
    eventually(lambda: _running(up, "late"), timeout=60)
    elastic_status = up.get("pod", "elastic")["status"]
    assert elastic_status["containerStatuses"][0]["allocatedResources"]["cpu"] == "1"
    assert _resize_pending(up, "elastic") is None

    rejected = [p["metadata"]["name"] for p in up.get("pods")["items"] if p["status"].get("phase") == "Failed"]
    assert rejected == []
    assert up.stop() == 0


def _unschedulable(up: Up, name: str) -> bool:
    conditions = up.get("pod", name)["status"].get("conditions") or []
    return any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conditions)
