"""In-place resize (KEP-1287) on simulated nodes against a real `knuma apiserver`: a running pod's kubelet reports
what it allocated, refuses what its static CPU and memory managers cannot do, defers what does not fit now and
retries it when a pod leaves, and accepts the rest (`handlePodResourcesResize`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest

from knuma.api.pod import Pod
from knuma.api.types import STRATEGIC_MERGE_PATCH
from knuma.kube.client import async_http
from knuma.local.nodes import fleet as fleet_module
from knuma.testing.apiserver import RunningApiServer
from knuma.testing.polling import eventually_async

from .builders import guaranteed_manifest
from .test_fleet import create_bound, phase, running_fleet

PODS = "/api/v1/namespaces/default/pods"


def _burstable(name: str, cpu: str) -> dict[str, Any]:
    manifest = guaranteed_manifest(name, 1)
    manifest["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu, "memory": "1Gi"}}
    return manifest


async def _resize(http: httpx2.AsyncClient, name: str, resources: dict[str, Any]) -> None:
    patch = {"spec": {"containers": [{"name": "app", "resources": resources}]}}
    response = await http.patch(f"{PODS}/{name}/resize", json=patch, headers={"Content-Type": STRATEGIC_MERGE_PATCH})
    assert response.status_code == 200, response.text


async def _running(http: httpx2.AsyncClient, name: str) -> None:
    async def started() -> bool:
        return (await phase(http, name)).get("phase") == "Running"

    await eventually_async(started)


async def _pending_resize(http: httpx2.AsyncClient, name: str) -> dict[str, Any] | None:
    conditions = (await phase(http, name)).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodResizePending"), None)


async def _deferred(http: httpx2.AsyncClient, name: str) -> bool:
    condition = await _pending_resize(http, name)
    return condition is not None and condition["reason"] == "Deferred"


async def _allocated_cpu(http: httpx2.AsyncClient, name: str) -> str:
    return str((await phase(http, name))["containerStatuses"][0]["allocatedResources"]["cpu"])


async def test_resizes_on_a_node_with_static_managers(api: RunningApiServer, tmp_path: Path) -> None:
    http = async_http(api.kubeconfig)
    try:
        async with running_fleet(api, tmp_path / "state"):
            # a Guaranteed pod with exclusive CPUs: its CPUs cannot change under the static CPU manager
            await create_bound(http, guaranteed_manifest("pinned", 4), "sim-0")
            await _running(http, "pinned")
            status = await phase(http, "pinned")
            assert status["containerStatuses"][0]["allocatedResources"] == {"cpu": "4", "memory": "1Gi"}
            assert status["containerStatuses"][0]["resources"]["limits"] == {"cpu": "4", "memory": "1Gi"}
            await _resize(http, "pinned", {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}})
            condition = await eventually_async(lambda: _pending_resize(http, "pinned"))
            assert condition["reason"] == "Infeasible"
            assert (
                condition["message"] == 'Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"'
            )
            pinned = Pod.from_manifest(await _get(http, "pinned"))
            assert pinned.resize_infeasible and pinned.effective_request["cpu"] == 4000  # what the scheduler counts
            events = (await _get_path(http, "/api/v1/namespaces/default/events"))["items"]
            assert any(e["reason"] == "ResizeInfeasible" and e["involvedObject"]["name"] == "pinned" for e in events)

            # the spec put back: the condition goes
            await _resize(http, "pinned", {"requests": {"cpu": "4"}, "limits": {"cpu": "4"}})

            async def cleared() -> bool:
                return await _pending_resize(http, "pinned") is None

            await eventually_async(cleared)

            # a Burstable pod: accepted, reported allocated; beyond the node's 16 CPUs infeasible
            await create_bound(http, _burstable("shared", "1"), "sim-0")
            await _running(http, "shared")
            await _resize(http, "shared", {"requests": {"cpu": "3"}})

            async def accepted() -> bool:
                return await _allocated_cpu(http, "shared") == "3"

            await eventually_async(accepted)
            assert await _pending_resize(http, "shared") is None
            await _resize(http, "shared", {"requests": {"cpu": "20"}})
            condition = await eventually_async(lambda: _pending_resize(http, "shared"))
            assert condition["reason"] == "Infeasible"
            assert condition["message"] == "Node didn't have enough capacity: cpu, requested: 20000, capacity: 16000"

            # more than is free now: deferred, then made once another pod leaves
            await create_bound(http, _burstable("filler", "8"), "sim-0")
            await _running(http, "filler")
            await _resize(http, "shared", {"requests": {"cpu": "6"}})
            await eventually_async(lambda: _deferred(http, "shared"))
            condition = await _pending_resize(http, "shared")
            assert condition is not None
            assert condition["message"] == (
                "Node didn't have enough resource: cpu, requested: 6000, used: 12000, capacity: 16000"
            )
            assert await _allocated_cpu(http, "shared") == "3"
            assert (await http.delete(f"{PODS}/filler")).status_code == 200

            async def made() -> bool:
                return await _allocated_cpu(http, "shared") == "6" and await _pending_resize(http, "shared") is None

            await eventually_async(made)
    finally:
        await http.aclose()


async def _get(http: httpx2.AsyncClient, name: str) -> dict[str, Any]:
    return await _get_path(http, f"{PODS}/{name}")


async def _get_path(http: httpx2.AsyncClient, path: str) -> dict[str, Any]:
    response = await http.get(path)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_a_deferred_resize_is_retried_periodically(
    api: RunningApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Room freed by another pod's resize (no pod leaves): the deferred resize is made by the periodic retry (the
    allocation manager's ticker; 30 s then every 3 minutes in the kubelet, both shortened here: with only the first
    shortened, a loaded machine that took longer than it to defer the resize waited 3 minutes for the next tick)."""
    monkeypatch.setattr(fleet_module, "RESIZE_RETRY_FIRST", 0.5)
    monkeypatch.setattr(fleet_module, "RESIZE_RETRY_PERIOD", 0.5)
    http = async_http(api.kubeconfig)
    try:
        async with running_fleet(api, tmp_path / "state"):
            await create_bound(http, _burstable("big", "8"), "sim-0")
            await create_bound(http, _burstable("small", "4"), "sim-0")
            await _running(http, "big")
            await _running(http, "small")
            await _resize(http, "small", {"requests": {"cpu": "10"}})
            await eventually_async(lambda: _deferred(http, "small"))
            await _resize(http, "big", {"requests": {"cpu": "2"}})

            async def made() -> bool:
                return await _allocated_cpu(http, "small") == "10" and await _allocated_cpu(http, "big") == "2"

            await eventually_async(made)
    finally:
        await http.aclose()
