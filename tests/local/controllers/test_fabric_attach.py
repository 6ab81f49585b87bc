"""The simulated fabric manager against a real API server: it publishes the fabric driver's slice and class (which
the API server accepts), reports a claim's fabric device attached once the attach delay has passed and not before,
fails the attach of a claim that asks for it, writes nothing for an allocation given up before its delay ran out, and
attaches a new allocation of the same claim afresh. Without `--fabric-gpus`, what an earlier run left goes."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2

from knuma.kube.client import async_http
from knuma.local.controllers.fabric_attach import FabricAttachController, withdraw
from knuma.testbed.fabric import ATTACH_ANNOTATION, ATTACH_FAILED, ATTACHED, DRIVER, POOL, SLICE_NAME
from knuma.testing.apiserver import apiserver_in_thread

from .test_resourceclaim import RES, _wait

API = "/apis/resource.k8s.io/v1"
DELAY = 1.0


@contextlib.asynccontextmanager
async def fabric(tmp_path: Path, devices: int = 2) -> AsyncIterator[tuple[httpx2.AsyncClient, FabricAttachController]]:
    with apiserver_in_thread(tmp_path, bookmark_interval=0.2) as api:
        http = async_http(api.kubeconfig)
        controller = FabricAttachController(http, devices, attach_delay=DELAY)
        await controller.publish()
        task = asyncio.create_task(controller.run())
        try:
            yield http, controller
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await http.aclose()


async def allocate(http: httpx2.AsyncClient, name: str, device: str, node: str, **annotations: str) -> float:
    """Create the claim if needed and write an allocation of `device` pinned to `node`, as the scheduler's PreBind
    does; returns when (monotonic) it was written."""
    got = await http.get(f"{RES}/resourceclaims/{name}")
    if got.status_code == 404:
        claim = {
            "metadata": {"name": name, "namespace": "default", "annotations": annotations},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}},
        }
        got = await http.post(f"{RES}/resourceclaims", json=claim)
        assert got.status_code == 201, got.text
    body = got.json()
    result = {
        "request": "gpu",
        "driver": DRIVER,
        "pool": POOL,
        "device": device,
        "bindingConditions": [ATTACHED],
        "bindingFailureConditions": [ATTACH_FAILED],
    }
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    body["status"] = {
        "allocation": {
            "devices": {"results": [result]},
            "nodeSelector": {"nodeSelectorTerms": [term]},
            "allocationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
    }
    written = await http.put(f"{RES}/resourceclaims/{name}/status", json=body)
    assert written.status_code == 200, written.text
    return time.monotonic()


async def reported(http: httpx2.AsyncClient, name: str) -> list[dict[str, Any]]:
    return list(((await http.get(f"{RES}/resourceclaims/{name}")).json().get("status") or {}).get("devices") or [])


async def test_the_driver_publishes_a_slice_and_class_the_api_server_accepts(tmp_path: Path) -> None:
    async with fabric(tmp_path, devices=3) as (http, controller):
        body = (await http.get(f"{API}/resourceslices/{SLICE_NAME}")).json()
        assert [d["name"] for d in body["spec"]["devices"]] == ["fgpu-0", "fgpu-1", "fgpu-2"]
        assert (await http.get(f"{API}/deviceclasses/{DRIVER}")).status_code == 200
        controller.devices = 1
        await controller.publish()  # a resumed cluster with another count: replaced
        body = (await http.get(f"{API}/resourceslices/{SLICE_NAME}")).json()
        assert [d["name"] for d in body["spec"]["devices"]] == ["fgpu-0"]
        await withdraw(http)
        assert (await http.get(f"{API}/resourceslices/{SLICE_NAME}")).status_code == 404
        assert (await http.get(f"{API}/deviceclasses/{DRIVER}")).status_code == 404
        await withdraw(http)  # nothing left: nothing to do


async def test_an_allocated_device_is_reported_attached_after_the_delay(tmp_path: Path) -> None:
    async with fabric(tmp_path) as (http, controller):
        allocated = await allocate(http, "fgpu", "fgpu-1", "n2")
        await asyncio.sleep(DELAY / 2)
        assert await reported(http, "fgpu") == []  # attaching takes a while
        (entry,) = await _wait(lambda: reported(http, "fgpu"), timeout=10)
        assert time.monotonic() - allocated >= DELAY
        assert (entry["driver"], entry["pool"], entry["device"]) == (DRIVER, POOL, "fgpu-1")
        (condition,) = entry["conditions"]
        assert (condition["type"], condition["status"], condition["reason"]) == (ATTACHED, "True", "Attached")
        assert condition["message"] == "attached to n2" and condition["lastTransitionTime"]
        assert controller.attached == 1 and controller.failed == 0


async def test_a_claim_asking_for_a_failed_attach_gets_the_failure_condition(tmp_path: Path) -> None:
    async with fabric(tmp_path) as (http, controller):
        await allocate(http, "broken", "fgpu-0", "n1", **{ATTACH_ANNOTATION: "fail"})
        (entry,) = await _wait(lambda: reported(http, "broken"), timeout=10)
        (condition,) = entry["conditions"]
        assert (condition["type"], condition["status"], condition["reason"]) == (ATTACH_FAILED, "True", "AttachFailed")
        assert controller.failed == 1 and controller.attached == 0


async def test_an_allocation_given_up_before_its_attach_leaves_nothing_and_a_new_one_is_attached(
    tmp_path: Path,
) -> None:
    async with fabric(tmp_path) as (http, controller):
        await allocate(http, "fgpu", "fgpu-0", "n1")
        await asyncio.sleep(DELAY / 3)
        claim = (await http.get(f"{RES}/resourceclaims/fgpu")).json()
        claim["status"] = {}  # deallocated (the scheduler's unreserve)
        (await http.put(f"{RES}/resourceclaims/fgpu/status", json=claim)).raise_for_status()
        await asyncio.sleep(DELAY * 2)
        assert await reported(http, "fgpu") == []
        assert controller._first_seen == {} and controller.attached == 0
        # allocated again, on another node: attached there, a full delay after this allocation
        allocated = await allocate(http, "fgpu", "fgpu-1", "n2")
        (entry,) = await _wait(lambda: reported(http, "fgpu"), timeout=10)
        assert time.monotonic() - allocated >= DELAY
        assert entry["device"] == "fgpu-1" and entry["conditions"][0]["message"] == "attached to n2"
