"""PodGC: `gcOrphaned` (pods bound to a node missing for the quarantine are marked Failed and deleted),
`gcTerminated` and `gcTerminating` (pods being deleted on an out-of-service node)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from knuma.kube.client import async_http
from knuma.local.controllers.manager import WorkloadControllers
from knuma.local.controllers.podgc import (
    OUT_OF_SERVICE,
    MissingNodes,
    orphan_status,
    out_of_service_terminating,
    terminated_over,
)
from knuma.testing.apiserver import RunningApiServer
from knuma.testing.polling import eventually_async


def _pod(name: str, node: str = "", phase: str = "Running") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec, "status": {"phase": phase}}


def test_a_node_must_stay_missing_for_the_quarantine() -> None:
    missing = MissingNodes(quarantine=40)
    pods = [_pod("a", "n1"), _pod("b", "gone"), _pod("c", "back"), _pod("pending")]
    assert missing.orphans(pods, ["n1"], now=0) == []
    assert missing.orphans(pods, ["n1"], now=39) == []
    assert [p["metadata"]["name"] for p in missing.orphans(pods, ["n1", "back"], now=41)] == ["b"]
    assert "back" not in missing.since  # it registered again: a later disappearance starts a new quarantine
    assert missing.orphans(pods, ["n1"], now=60) == [pods[1]]
    assert [p["metadata"]["name"] for p in missing.orphans(pods, ["n1"], now=100)] == ["b", "c"]


def test_the_status_written_before_the_delete() -> None:
    status = orphan_status(_pod("a", "gone"), "2026-11-28T00:00:00Z")
    assert status is not None and status["status"]["phase"] == "Failed"
    assert status["status"]["conditions"][0]["reason"] == "DeletionByPodGC"
    assert orphan_status(_pod("done", "gone", phase="Succeeded"), "2026-11-28T00:00:00Z") is None


async def test_pods_of_a_deleted_node_are_collected(api: RunningApiServer) -> None:
    """A pod on a deleted node is deleted at once even though it is Running (no kubelet would ever finish its
    graceful deletion); a pod on a node that exists stays."""
    http = async_http(api.kubeconfig)
    controllers = WorkloadControllers(http, podgc_period=0.3)
    pods = "/api/v1/namespaces/default/pods"
    assert (await http.post("/api/v1/nodes", json={"metadata": {"name": "n1"}})).status_code == 201
    for body in (_pod("kept", "n1"), _pod("orphan", "gone")):
        assert (await http.post(pods, json=body)).status_code == 201
    task = asyncio.create_task(controllers.run())
    try:
        seen: list[str] = []

        async def orphan_gone() -> bool:
            response = await http.get(f"{pods}/orphan")
            if response.status_code == 200 and response.json()["metadata"].get("deletionTimestamp"):
                seen.append("terminating")  # must not happen: PodGC deletes with grace period 0
            return response.status_code == 404

        assert await eventually_async(orphan_gone, timeout=30)
        assert "terminating" not in seen
        assert (await http.get(f"{pods}/kept")).status_code == 200
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await http.aclose()


def test_finished_pods_beyond_the_threshold_go_evicted_first_then_oldest_first() -> None:
    pods = [_pod(f"p{i}", "n1", phase=("Succeeded", "Failed", "Running")[i % 3]) for i in range(6)]
    for i, pod in enumerate(pods):
        pod["metadata"]["creationTimestamp"] = f"2026-11-28T00:00:0{9 - i}Z"  # p5 is the oldest
    assert [p["metadata"]["name"] for p in terminated_over(pods, 2)] == ["p4", "p3"]
    assert terminated_over(pods, 4) == []
    pods[0]["status"]["reason"] = "Evicted"  # Succeeded: not an eviction
    pods[1]["status"]["reason"] = "Evicted"  # Failed and Evicted: goes first, though the newest but one
    assert [p["metadata"]["name"] for p in terminated_over(pods, 2)] == ["p1", "p4"]


async def test_the_controller_deletes_finished_pods_beyond_the_threshold(api: RunningApiServer) -> None:
    http = async_http(api.kubeconfig)
    controllers = WorkloadControllers(http, podgc_period=0.3, terminated_threshold=1)
    pods = "/api/v1/namespaces/default/pods"
    merge = {"Content-Type": "application/merge-patch+json"}
    for name, phase in (("done-0", "Succeeded"), ("done-1", "Failed"), ("done-2", "Succeeded"), ("live", "Running")):
        assert (await http.post(pods, json=_pod(name))).status_code == 201
        status = {"status": {"phase": phase}}
        assert (await http.patch(f"{pods}/{name}/status", json=status, headers=merge)).status_code == 200
    task = asyncio.create_task(controllers.run())
    try:

        async def names() -> list[str]:
            return sorted(p["metadata"]["name"] for p in (await http.get(pods)).json()["items"])

        async def collected() -> bool:
            return len(await names()) == 2

        assert await eventually_async(collected, timeout=30)
        assert "live" in await names()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await http.aclose()


def _node(ready: str, taints: list[dict[str, str]]) -> dict[str, Any]:
    return {"spec": {"taints": taints}, "status": {"conditions": [{"type": "Ready", "status": ready}]}}


def _terminating(name: str, node: str, created: str, deleting: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "creationTimestamp": created}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-29T05:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node}, "status": {"phase": "Running"}}


def test_terminating_pods_on_a_not_ready_out_of_service_node_are_collected_oldest_first() -> None:
    """`gcTerminating`: being deleted, on a node that is not Ready *and* has the out-of-service taint."""
    out_of_service = {"key": OUT_OF_SERVICE, "value": "nodeshutdown", "effect": "NoExecute"}
    nodes = {
        "down": _node("Unknown", [out_of_service]),
        "down-no-taint": _node("Unknown", []),
        "ready-tainted": _node("True", [out_of_service]),
    }
    pods = [
        _terminating("late", "down", "2026-11-29T04:02:00Z"),
        _terminating("early", "down", "2026-11-29T04:01:00Z"),
        _terminating("running", "down", "2026-11-29T04:00:00Z", deleting=False),
        _terminating("no-taint", "down-no-taint", "2026-11-29T04:00:00Z"),
        _terminating("ready", "ready-tainted", "2026-11-29T04:00:00Z"),
        _terminating("gone-node", "missing", "2026-11-29T04:00:00Z"),
    ]
    assert [p["metadata"]["name"] for p in out_of_service_terminating(pods, nodes)] == ["early", "late"]
    assert orphan_status(pods[0], "2026-11-29T05:00:00Z", condition=False) == {"status": {"phase": "Failed"}}
