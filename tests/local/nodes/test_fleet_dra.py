"""Simulated DRA drivers and the kubelet's DRA admission against a real `knuma apiserver`: a DGX-like node publishes
its GPU and NIC ResourceSlices; a pod bound with allocated claims runs with its CPUs on the devices' NUMA node and
its devices in an annotation; devices on two NUMA nodes are a TopologyAffinityError; a pod whose claim is not
allocated yet waits and starts once it is."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2

from knuma.api.crd import NRT_CRD
from knuma.kube.client import async_client, async_http
from knuma.local.nodes.fleet import Fleet, FleetSettings
from knuma.local.nodes.spec import NodeSpec
from knuma.testbed.shapes import BUILTIN_SHAPES
from knuma.testing.apiserver import RunningApiServer
from knuma.testing.polling import eventually_async

from .builders import guaranteed_manifest
from .test_fleet import create_bound, get, phase

RES = "/apis/resource.k8s.io/v1"
CLAIMS = f"{RES}/namespaces/default/resourceclaims"


@contextlib.asynccontextmanager
async def dgx_fleet(
    api: RunningApiServer, state: Path, sockets: Path | None = None
) -> AsyncIterator[httpx2.AsyncClient]:
    """One DGX-like node (single-numa-node); `sockets`: where it serves PodResources (`dgx-000.sock`)."""
    http = async_http(api.kubeconfig)
    client = async_client(api.kubeconfig, field_manager="knuma-exporter")
    assert (await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=NRT_CRD)).status_code == 201
    node = NodeSpec("dgx-000", 0, BUILTIN_SHAPES["dgx"], "dgx")
    settings = FleetSettings(state_dir=state, sockets_dir=sockets, lease_renew_interval=0.3, nrt_min_interval=0.1)
    fleet = Fleet(http, client, [node], settings)
    stop = asyncio.Event()
    task = asyncio.create_task(fleet.run(stop))
    try:
        await asyncio.wait_for(fleet.ready.wait(), 10)
        yield http
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await http.aclose()
        await client.close()


def claimed_pod(name: str, cpu: int = 4) -> dict[str, Any]:
    manifest = guaranteed_manifest(name, cpu)
    manifest["spec"]["resourceClaims"] = [{"name": "devices", "resourceClaimName": f"{name}-devices"}]
    manifest["spec"]["containers"][0]["resources"]["claims"] = [{"name": "devices"}]
    return manifest


async def claim_with(http: httpx2.AsyncClient, name: str, devices: list[tuple[str, str]] | None) -> None:
    """A claim for a GPU and a NIC; with `devices`, allocated to those (driver, device) on dgx-000 and reserved for
    the pod `name` (what the scheduler writes before binding)."""
    requests = [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.sim.knuma.io"}},
        {"name": "nic", "exactly": {"deviceClassName": "nic.sim.knuma.io"}},
    ]
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"{name}-devices"},
        "spec": {"devices": {"requests": requests}},
    }
    response = await http.post(CLAIMS, json=body)
    if response.status_code == 409:
        body = (await http.get(f"{CLAIMS}/{name}-devices")).json()
    else:
        assert response.status_code == 201, response.text
        body = response.json()
    if devices is None:
        return
    uid = (await get(http, f"/api/v1/namespaces/default/pods/{name}"))["metadata"]["uid"]
    results = [
        {"request": request, "driver": driver, "pool": "dgx-000", "device": device}
        for request, (driver, device) in zip(("gpu", "nic"), devices, strict=True)
    ]
    body["status"] = {
        "allocation": {"devices": {"results": results}},
        "reservedFor": [{"resource": "pods", "name": name, "uid": uid}],
    }
    response = await http.put(f"{CLAIMS}/{name}-devices/status", json=body)
    assert response.status_code == 200, response.text


async def test_dgx_node_publishes_slices_and_admits_pods_by_their_devices(
    api: RunningApiServer, tmp_path: Path
) -> None:
    async with dgx_fleet(api, tmp_path / "state") as http:
        slices = {s["spec"]["driver"]: s for s in (await get(http, f"{RES}/resourceslices"))["items"]}
        assert sorted(slices) == ["gpu.sim.knuma.io", "nic.sim.knuma.io"]
        gpus = slices["gpu.sim.knuma.io"]["spec"]
        assert (gpus["nodeName"], gpus["pool"]["name"], len(gpus["devices"])) == ("dgx-000", "dgx-000", 8)
        gpu5 = next(d for d in gpus["devices"] if d["name"] == "gpu-5")
        assert gpu5["attributes"]["resource.kubernetes.io/numaNode"] == {"int": 1}
        assert gpu5["attributes"]["resource.kubernetes.io/pcieRoot"] == {"string": "pci0000:05"}
        assert gpu5["capacity"] == {"memory": {"value": "80Gi"}}
        nic5 = next(d for d in slices["nic.sim.knuma.io"]["spec"]["devices"] if d["name"] == "nic-5")
        assert (
            nic5["attributes"]["resource.kubernetes.io/pcieRoot"]
            == gpu5["attributes"]["resource.kubernetes.io/pcieRoot"]
        )

        # aligned: GPU 5 and NIC 5 on NUMA 1; the CPUs follow
        await create_bound(http, claimed_pod("aligned"), "dgx-000")
        await claim_with(http, "aligned", [("gpu.sim.knuma.io", "gpu-5"), ("nic.sim.knuma.io", "nic-5")])

        async def running(name: str) -> bool:
            return (await phase(http, name)).get("phase") == "Running"

        await eventually_async(lambda: running("aligned"))

        async def nrt_gpus_free() -> list[int]:
            nrt = await get(http, "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/dgx-000")
            zones = sorted(nrt["zones"], key=lambda z: z["name"])
            return [
                int(next(r["available"] for r in z["resources"] if r["name"] == "gpu.sim.knuma.io/devices"))
                for z in zones
            ]

        assert await eventually_async(lambda: _equal(nrt_gpus_free(), [4, 3]))
        annotations = (await get(http, "/api/v1/namespaces/default/pods/aligned"))["metadata"]["annotations"]
        assert json.loads(annotations["sim.knuma.io/numa"]) == {"app": [1]}
        assert json.loads(annotations["sim.knuma.io/devices"]) == {
            "app": {"gpu.sim.knuma.io/gpu-5": 1, "nic.sim.knuma.io/nic-5": 1}
        }

        # misaligned: the GPU on NUMA 0, the NIC on NUMA 1: single-numa-node rejects
        await create_bound(http, claimed_pod("misaligned"), "dgx-000")
        await claim_with(http, "misaligned", [("gpu.sim.knuma.io", "gpu-0"), ("nic.sim.knuma.io", "nic-4")])

        async def failed() -> dict[str, Any] | None:
            status = await phase(http, "misaligned")
            return status if status.get("phase") == "Failed" else None

        status = await eventually_async(failed)
        assert status["reason"] == "TopologyAffinityError"

        # not allocated yet: the pod waits, then starts once the claim is allocated and reserved
        await claim_with(http, "later", None)
        await create_bound(http, claimed_pod("later"), "dgx-000")
        await asyncio.sleep(0.5)
        assert (await phase(http, "later")).get("phase") == "Pending"
        await claim_with(http, "later", [("gpu.sim.knuma.io", "gpu-1"), ("nic.sim.knuma.io", "nic-1")])
        await eventually_async(lambda: running("later"))


async def _equal(value: Any, expected: Any) -> Any:
    got = await value
    return got if got == expected else None
