"""Scheduling gates through a running `knuma apiserver` with the pinned kubectl: the condition kube-apiserver adds to
a pod created with gates, and the STATUS kubectl shows for it."""

from __future__ import annotations

import json

from .conftest import Http, Kubectl, pod

PODS = "/api/v1/namespaces/default/pods"


def test_a_pod_created_with_scheduling_gates_shows_schedulinggated(kubectl: Kubectl, http_client: Http) -> None:
    """`applySchedulingGatedCondition`: kubectl's STATUS column reads the condition kube-apiserver adds at creation;
    a pod without gates gets none."""
    gated = pod("gated", schedulingGates=[{"name": "example.com/quota"}])
    kubectl("apply", "-f", "-", stdin=json.dumps(gated))
    kubectl("apply", "-f", "-", stdin=json.dumps(pod("free")))
    rows = {line.split()[0]: line.split()[2] for line in kubectl("get", "pods", "--no-headers").stdout.splitlines()}
    assert rows == {"free": "Pending", "gated": "SchedulingGated"}
    conditions = http_client.get(f"{PODS}/gated").json["status"]["conditions"]
    assert conditions == [
        {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": None,
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
        }
    ]
    assert "conditions" not in http_client.get(f"{PODS}/free").json["status"]
