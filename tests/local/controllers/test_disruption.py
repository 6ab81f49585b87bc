"""The disruption controller on `knuma up` (`knuma.local.controllers.disruption`, run by `WorkloadControllers`):
kube-controller-manager's status of a PodDisruptionBudget from its pods and their controllers' scale."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from knuma.kube.client import async_http
from knuma.local.controllers.disruption import budget_pods, budget_status
from knuma.local.controllers.manager import WorkloadControllers
from knuma.testing.apiserver import RunningApiServer

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def _pod(name: str, app: str = "db", ready: bool = True, namespace: str = "default", **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": app}, **meta},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def _budget(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "b", "namespace": "default", "generation": 3},
            "spec": {"selector": {"matchLabels": {"app": "db"}}, **spec}}  # fmt: skip


def _no_controller(pod: Mapping[str, Any]) -> None:
    del pod


def test_an_integer_min_available_expects_the_pods_there_are() -> None:
    pods = [_pod("a"), _pod("b"), _pod("c", ready=False), _pod("d", deletionTimestamp="2026-01-01T00:00:00Z")]
    pods += [_pod("web", app="web"), _pod("other-ns", namespace="other")]
    mine = budget_pods(_budget(minAvailable=1), pods)
    assert [p["metadata"]["name"] for p in mine] == ["a", "b", "c", "d"]
    allowed = {"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods", "message": "",
               "observedGeneration": 3, "lastTransitionTime": "2026-11-28T12:00:00Z"}  # fmt: skip
    assert budget_status(_budget(minAvailable=1), mine, _no_controller, NOW) == {
        "observedGeneration": 3,
        "disruptionsAllowed": 1,
        "currentHealthy": 2,
        "desiredHealthy": 1,
        "expectedPods": 4,
        "disruptedPods": None,
        "conditions": [allowed],
    }
    blocked = budget_status(_budget(minAvailable=3), mine, _no_controller, NOW)
    assert blocked["disruptionsAllowed"] == 0
    assert [(c["status"], c["reason"]) for c in blocked["conditions"]] == [("False", "InsufficientPods")]
    later = {**_budget(minAvailable=1), "status": {"conditions": [allowed]}}
    kept = budget_status(later, mine, _no_controller, NOW + timedelta(minutes=5))["conditions"]
    assert kept == [allowed]  # same status: the transition time stays


def test_a_granted_eviction_stops_counting_its_pod_for_two_minutes() -> None:
    pods = [_pod("a"), _pod("b"), _pod("c")]
    recent = {
        "disruptedPods": {"a": "2026-11-28T11:59:00Z", "gone": "2026-11-28T11:59:00Z", "b": "2026-11-28T11:00:00Z"}
    }
    budget = {**_budget(minAvailable=1), "status": recent}
    status = budget_status(budget, pods, _no_controller, NOW)
    assert status["disruptedPods"] == {"a": "2026-11-28T11:59:00Z"}  # b's is too old, "gone" no longer exists
    assert (status["currentHealthy"], status["disruptionsAllowed"]) == (2, 1)


def test_percentages_and_max_unavailable_scale_to_the_controllers_replicas() -> None:
    """Five replicas wanted, three pods exist and are ready: 40% maxUnavailable rounds up to 2, so 3 must stay
    healthy and no disruption is allowed; minAvailable 50% rounds up to 3 as well."""
    pods = [_pod(f"p{i}") for i in range(3)]

    def scale(pod: Mapping[str, Any]) -> tuple[str, int]:
        del pod
        return "rs-uid", 5

    status = budget_status(_budget(maxUnavailable="40%"), pods, scale, NOW)
    assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (5, 3, 0)
    status = budget_status(_budget(minAvailable="50%"), pods, scale, NOW)
    assert (status["desiredHealthy"], status["disruptionsAllowed"]) == (3, 0)
    assert (
        budget_status(_budget(maxUnavailable=1), pods, _no_controller, NOW)["disruptionsAllowed"] == 0
    )  # none expected
    assert budget_pods({"metadata": {"name": "x"}, "spec": {"selector": {}}}, pods) == []


async def test_the_controller_writes_the_status_and_follows_readiness(api: RunningApiServer) -> None:
    http = async_http(api.kubeconfig)
    controllers = WorkloadControllers(http)
    task = asyncio.create_task(controllers.run())
    base = "/api/v1/namespaces/default/pods"
    pdb = "/apis/policy/v1/namespaces/default/poddisruptionbudgets/db"
    try:
        for name in ("db-0", "db-1", "db-2"):
            body = {"metadata": {"name": name, "labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "c", "image": "x"}]}}  # fmt: skip
            assert (await http.post(base, json=body)).status_code == 201
            ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
            patched = await http.patch(
                f"{base}/{name}/status", json=ready, headers={"Content-Type": "application/merge-patch+json"}
            )
            assert patched.status_code == 200
        budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db"},
                  "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}}}  # fmt: skip
        assert (
            await http.post("/apis/policy/v1/namespaces/default/poddisruptionbudgets", json=budget)
        ).status_code == 201

        async def allowed(expected: int) -> None:
            for _ in range(200):
                status = (await http.get(pdb)).json().get("status") or {}
                if status.get("disruptionsAllowed") == expected and status.get("currentHealthy") == 2 + expected:
                    return
                await asyncio.sleep(0.05)
            raise AssertionError(f"disruptionsAllowed never became {expected}: {status}")

        await allowed(1)
        assert (await http.delete(f"{base}/db-2")).status_code == 200
        await allowed(0)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await http.aclose()
