"""Shared DRA devices (consumable capacity, KEP-5075) on a simulated node against a real `knuma apiserver`: a
`shared-nic` node publishes NICs with `allowMultipleAllocations` and a bandwidth request policy, which the API server
accepts; the test plays the scheduler, allocating one NIC to the claims of several pods, each with its own `shareID`
and `consumedCapacity`. The kubelet prepares every claim (no device is held by one claim alone), runs each pod with
its CPUs on the NIC's NUMA node, and PodResources reports the NIC for each; the NRT counts the NIC available while
bandwidth is left; one pod and its claim gone, the others keep the NIC."""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2

from knuma.api.crd import NRT_CRD
from knuma.kube.client import async_client, async_http
from knuma.local.nodes.fleet import Fleet, FleetSettings
from knuma.local.nodes.spec import NodeSpec
from knuma.podresources.client import PodResourcesClient
from knuma.podresources.model import ClaimResource, DynamicResource
from knuma.testbed.shapes import BUILTIN_SHAPES
from knuma.testing.apiserver import RunningApiServer
from knuma.testing.polling import eventually_async

from .builders import guaranteed_manifest
from .test_fleet import create_bound, get, phase
from .test_fleet_dra import CLAIMS, RES

NODE = "nic-000"
NIC = "nic.sim.knuma.io"
PODS = "/api/v1/namespaces/default/pods"
NRT = f"/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/{NODE}"


@contextlib.asynccontextmanager
async def shared_nic_fleet(api: RunningApiServer, state: Path, sockets: Path) -> AsyncIterator[httpx2.AsyncClient]:
    """One `shared-nic` node (single-numa-node), serving PodResources at `sockets/nic-000.sock`."""
    http = async_http(api.kubeconfig)
    client = async_client(api.kubeconfig, field_manager="knuma-exporter")
    assert (await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=NRT_CRD)).status_code == 201
    node = NodeSpec(NODE, 0, BUILTIN_SHAPES["shared-nic"], "nic")
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


async def share_of_nic0(http: httpx2.AsyncClient, name: str, bandwidth: str, share: int) -> str:
    """Pod `name` (2 CPUs) bound to the node with a claim asking `bandwidth` of a NIC, allocated to nic-0 with
    `bandwidth` consumed and its own shareID, and reserved for the pod; returns the claim's name."""
    manifest = guaranteed_manifest(name, 2)
    manifest["spec"]["resourceClaims"] = [{"name": "nic", "resourceClaimName": f"{name}-nic"}]
    manifest["spec"]["containers"][0]["resources"]["claims"] = [{"name": "nic"}]
    await create_bound(http, manifest, NODE)
    request = {"name": "nic", "exactly": {"deviceClassName": NIC, "capacity": {"requests": {"bandwidth": bandwidth}}}}
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"{name}-nic"},
        "spec": {"devices": {"requests": [request]}},
    }
    response = await http.post(CLAIMS, json=body)
    assert response.status_code == 201, response.text
    body = response.json()
    uid = (await get(http, f"{PODS}/{name}"))["metadata"]["uid"]
    result = {
        "request": "nic",
        "driver": NIC,
        "pool": NODE,
        "device": "nic-0",
        "consumedCapacity": {"bandwidth": bandwidth},
        "shareID": f"6f1c2e4a-0000-4000-8000-{share:012d}",
    }
    body["status"] = {
        "allocation": {"devices": {"results": [result]}},
        "reservedFor": [{"resource": "pods", "name": name, "uid": uid}],
    }
    response = await http.put(f"{CLAIMS}/{name}-nic/status", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["status"]["allocation"]["devices"]["results"][0]["shareID"] == result["shareID"]
    return f"{name}-nic"


async def test_pods_share_one_nic_and_keep_it_when_another_share_goes(api: RunningApiServer, tmp_path: Path) -> None:
    sockets = Path(tempfile.mkdtemp(prefix="kpr-"))
    async with shared_nic_fleet(api, tmp_path / "state", sockets) as http:
        (published,) = (await get(http, f"{RES}/resourceslices"))["items"]
        nic0 = next(d for d in published["spec"]["devices"] if d["name"] == "nic-0")
        assert nic0["allowMultipleAllocations"] is True
        assert nic0["capacity"]["bandwidth"]["requestPolicy"]["validRange"]["step"] == "10G"

        async def running(name: str) -> bool:
            return (await phase(http, name)).get("phase") == "Running"

        async def available() -> list[int]:
            zones = sorted((await get(http, NRT))["zones"], key=lambda z: z["name"])
            return [int(next(r["available"] for r in z["resources"] if r["name"] == f"{NIC}/devices")) for z in zones]

        async def equal(expected: list[int]) -> bool:
            return await available() == expected

        claims = {}
        for share, (name, bandwidth) in enumerate([("a", "40G"), ("b", "30G")], start=1):
            claims[name] = await share_of_nic0(http, name, bandwidth, share)
        for name in ("a", "b"):
            await eventually_async(lambda name=name: running(name))  # type: ignore[misc]
            annotations = (await get(http, f"{PODS}/{name}"))["metadata"]["annotations"]
            assert json.loads(annotations["sim.knuma.io/numa"]) == {"app": [0]}  # the CPUs follow the NIC
            assert json.loads(annotations["sim.knuma.io/devices"]) == {"app": {f"{NIC}/nic-0": 0}}
        await eventually_async(lambda: equal([1, 1]))  # 30G left on nic-0: still available

        def listed() -> dict[str, tuple[DynamicResource, ...]]:
            with PodResourcesClient(f"unix://{sockets / 'nic-000.sock'}") as client:
                return {p.name: p.containers[0].dynamic_resources for p in client.list()}

        async def reporting(*names: str) -> dict[str, tuple[DynamicResource, ...]] | None:
            """What PodResources lists once it lists exactly `names` (its server is updated after admission)."""
            found = await asyncio.to_thread(listed)
            return found if sorted(found) == sorted(names) else None

        nic = (ClaimResource(NIC, NODE, "nic-0"),)
        reported = await eventually_async(lambda: reporting("a", "b"))
        assert reported["a"] == (DynamicResource(claims["a"], "default", nic),)
        assert reported["b"] == (DynamicResource(claims["b"], "default", nic),)

        claims["c"] = await share_of_nic0(http, "c", "30G", 3)
        await eventually_async(lambda: running("c"))
        await eventually_async(lambda: equal([0, 1]))  # 40G + 30G + 30G: nic-0 used up

        # a goes, and its claim with it: b and c keep the NIC, which has 40G again
        assert (await http.delete(f"{PODS}/a?gracePeriodSeconds=0")).status_code == 200
        assert (await http.delete(f"{CLAIMS}/{claims['a']}")).status_code == 200
        await eventually_async(lambda: equal([1, 1]))
        reported = await eventually_async(lambda: reporting("b", "c"))
        assert reported["b"] == (DynamicResource(claims["b"], "default", nic),)
        assert reported["c"] == (DynamicResource(claims["c"], "default", nic),)
        assert await running("b") and await running("c")
