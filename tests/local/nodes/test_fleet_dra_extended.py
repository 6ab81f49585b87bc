"""DRA-backed extended resources (KEP-5004) on a simulated node against a real `knuma apiserver`: the test plays
kube-scheduler's PreBind (a ResourceClaim owned by the pod, allocated and reserved for it, then the pod's
`status.extendedResourceClaimStatus`, then the binding); the node prepares that claim like one the spec names, runs
the pod with its CPUs on the GPUs' NUMA node, reports the claim through PodResources, and rejects a pod whose GPUs
sit on two NUMA nodes (single-numa-node); a pod whose claim is not reserved for it yet waits, then starts."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import httpx2

from knuma.podresources.client import PodResourcesClient
from knuma.podresources.model import ClaimResource, DynamicResource
from knuma.podresources.model import Pod as PodResources
from knuma.testing.apiserver import RunningApiServer
from knuma.testing.polling import eventually_async

from .builders import guaranteed_manifest
from .test_fleet import get, phase
from .test_fleet_dra import CLAIMS, dgx_fleet

GPU = "deviceclass.resource.kubernetes.io/gpu.sim.knuma.io"
PODS = "/api/v1/namespaces/default/pods"
SMP = "application/strategic-merge-patch+json"


async def schedule_with_extended_claim(
    http: httpx2.AsyncClient, name: str, gpus: list[str], *, reserve: bool = True
) -> str:
    """Create the pod (2 GPUs through the class's implicit extended resource), then do what kube-scheduler's
    DynamicResources PreBind and the binder do for a node that does not list that resource (`reserve` False: the
    claim is allocated but not reserved for the pod yet); returns the claim's name."""
    manifest = guaranteed_manifest(name, 4, extra={GPU: str(len(gpus))})
    del manifest["metadata"]["uid"]
    response = await http.post(PODS, json=manifest)
    assert response.status_code == 201, response.text
    pod = response.json()
    assert pod["spec"]["containers"][0]["resources"]["requests"][GPU] == "2"  # defaulted from the limits
    uid = pod["metadata"]["uid"]
    requests = [
        {"name": f"container-0-request-{i}", "exactly": {"deviceClassName": "gpu.sim.knuma.io", "count": 1}}
        for i in range(len(gpus))
    ]
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "generateName": f"{name}-extended-resources-",
            "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": name,
                    "uid": uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"devices": {"requests": requests}},
    }
    response = await http.post(CLAIMS, json=claim)
    assert response.status_code == 201, response.text
    claim = response.json()
    claim_name = str(claim["metadata"]["name"])
    results = [
        {"request": request["name"], "driver": "gpu.sim.knuma.io", "pool": "dgx-000", "device": gpu}
        for request, gpu in zip(requests, gpus, strict=True)
    ]
    claim["status"] = {"allocation": {"devices": {"results": results}}}
    if reserve:
        claim["status"]["reservedFor"] = [{"resource": "pods", "name": name, "uid": uid}]
    response = await http.put(f"{CLAIMS}/{claim_name}/status", json=claim)
    assert response.status_code == 200, response.text
    mappings = [{"containerName": "app", "resourceName": GPU, "requestName": request["name"]} for request in requests]
    patch = {"status": {"extendedResourceClaimStatus": {"resourceClaimName": claim_name, "requestMappings": mappings}}}
    response = await http.patch(f"{PODS}/{name}/status", content=json.dumps(patch), headers={"Content-Type": SMP})
    assert response.status_code == 200, response.text
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"name": "dgx-000"}}
    response = await http.post(f"{PODS}/{name}/binding", json=binding)
    assert response.status_code == 201, response.text
    return claim_name


async def test_an_extended_resource_claim_aligns_its_gpus_with_the_cpus(api: RunningApiServer, tmp_path: Path) -> None:
    sockets = Path(tempfile.mkdtemp(prefix="kpr-"))
    async with dgx_fleet(api, tmp_path / "state", sockets) as http:
        aligned = await schedule_with_extended_claim(http, "aligned", ["gpu-4", "gpu-5"])

        async def running() -> bool:
            return (await phase(http, "aligned")).get("phase") == "Running"

        await eventually_async(running)
        annotations = (await get(http, f"{PODS}/aligned"))["metadata"]["annotations"]
        assert json.loads(annotations["sim.knuma.io/numa"]) == {"app": [1]}
        assert json.loads(annotations["sim.knuma.io/devices"]) == {
            "app": {"gpu.sim.knuma.io/gpu-4": 1, "gpu.sim.knuma.io/gpu-5": 1}
        }

        def listed() -> list[PodResources]:
            with PodResourcesClient(f"unix://{sockets / 'dgx-000.sock'}") as client:
                return client.list()

        async def reported() -> PodResources | None:
            return next((p for p in await asyncio.to_thread(listed) if p.name == "aligned"), None)

        pod = await eventually_async(reported)
        (container,) = pod.containers
        assert container.devices == ()  # no device-plugin devices: the GPUs are the claim's
        gpus = (
            ClaimResource("gpu.sim.knuma.io", "dgx-000", "gpu-4"),
            ClaimResource("gpu.sim.knuma.io", "dgx-000", "gpu-5"),
        )
        assert container.dynamic_resources == (DynamicResource(aligned, "default", gpus),)
        assert len(container.cpu_ids) == 4

        # GPU 0 on NUMA 0, GPU 5 on NUMA 1: single-numa-node cannot align them
        await schedule_with_extended_claim(http, "split", ["gpu-0", "gpu-6"])

        async def failed() -> dict[str, Any] | None:
            status = await phase(http, "split")
            return status if status.get("phase") == "Failed" else None

        status = await eventually_async(failed)
        assert status["reason"] == "TopologyAffinityError"
        assert status["extendedResourceClaimStatus"]["requestMappings"][0]["containerName"] == "app"

        # not reserved for the pod yet: it waits, then starts once it is
        later = await schedule_with_extended_claim(http, "later", ["gpu-1", "gpu-2"], reserve=False)
        await asyncio.sleep(0.5)
        assert (await phase(http, "later")).get("phase") == "Pending"
        claim = await get(http, f"{CLAIMS}/{later}")
        uid = (await get(http, f"{PODS}/later"))["metadata"]["uid"]
        claim["status"]["reservedFor"] = [{"resource": "pods", "name": "later", "uid": uid}]
        response = await http.put(f"{CLAIMS}/{later}/status", json=claim)
        assert response.status_code == 200, response.text

        async def later_running() -> bool:
            return (await phase(http, "later")).get("phase") == "Running"

        await eventually_async(later_running)
        annotations = (await get(http, f"{PODS}/later"))["metadata"]["annotations"]
        assert json.loads(annotations["sim.knuma.io/numa"]) == {"app": [0]}
