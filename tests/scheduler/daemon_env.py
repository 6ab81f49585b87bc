"""A cluster for scheduler daemon tests: a real `knuma apiserver`, the NRT CRD, and helpers that write Nodes, NRTs
and Pods over HTTP and run `knuma.scheduler.daemon.loop.Scheduler` on the test's event loop."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import httpx2

from knuma.api.crd import nrt_crd
from knuma.kube.client import api_session, async_http
from knuma.kube.session import ApiSession
from knuma.scheduler.cache.interface import NRTCache
from knuma.scheduler.daemon.loop import DaemonSettings, Scheduler
from knuma.scheduler.framework.interface import Profile
from knuma.scheduler.framework.profiles import DEFAULT_PROFILE_NAME, default_profile
from knuma.testing.apiserver import RunningApiServer

from .builders import nrt as nrt_manifest

NRTS = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
SCHEDULER_NAME = DEFAULT_PROFILE_NAME


class Cluster:
    def __init__(self, api: RunningApiServer, http: httpx2.AsyncClient) -> None:
        self.api = api
        self.http = http

    async def request(self, method: str, path: str, body: Any = None, *, ok: tuple[int, ...] = (200, 201)) -> Any:
        headers = {"Content-Type": "application/merge-patch+json"} if method == "PATCH" else None
        response = await self.http.request(method, path, json=body, headers=headers)
        assert response.status_code in ok, f"{method} {path}: {response.status_code} {response.text}"
        return response.json() if response.content else None

    async def install_crd(self) -> None:
        await self.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", nrt_crd())
        for _ in range(100):
            response = await self.http.get(NRTS)
            if response.status_code == 200:
                return
            await asyncio.sleep(0.05)
        raise AssertionError("NRT CRD never served")

    async def add_node(
        self,
        name: str,
        zones: Mapping[int, Mapping[str, str]],
        *,
        allocatable: Mapping[str, str] | None = None,
        policy: str = "single-numa-node",
        nrt: bool = True,
        **spec: Any,
    ) -> None:
        total = allocatable or _sum_zones(zones)
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": dict(spec),
            "status": {"allocatable": {**total, "pods": "110"}, "capacity": {**total, "pods": "110"}},
        }
        await self.request("POST", "/api/v1/nodes", node)
        if nrt:
            await self.publish_nrt(name, zones, policy=policy)

    async def publish_nrt(
        self,
        name: str,
        zones: Mapping[int, Mapping[str, tuple[str, str] | str]],
        *,
        policy: str = "single-numa-node",
        **attrs: str,
    ) -> None:
        body = nrt_manifest(name, zones, policy=policy, **attrs)
        response = await self.http.get(f"{NRTS}/{name}")
        if response.status_code == 404:
            await self.request("POST", NRTS, body)
        else:
            body["metadata"]["resourceVersion"] = response.json()["metadata"]["resourceVersion"]
            await self.request("PUT", f"{NRTS}/{name}", body)

    async def create_pod(
        self,
        name: str,
        cpu: str | None = None,
        memory: str = "1Gi",
        *,
        guaranteed: bool = True,
        scheduler: str = SCHEDULER_NAME,
        namespace: str = "default",
        node_name: str | None = None,
        **spec: Any,
    ) -> dict[str, Any]:
        resources: dict[str, Any] = {}
        if cpu is not None:
            resources = {"requests": {"cpu": cpu, "memory": memory}}
            if guaranteed:
                resources["limits"] = {"cpu": cpu, "memory": memory}
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "schedulerName": scheduler,
                "containers": [{"name": "c", "image": "busybox", "resources": resources}],
                **({"nodeName": node_name} if node_name else {}),
                **spec,
            },
        }
        result: dict[str, Any] = await self.request("POST", f"/api/v1/namespaces/{namespace}/pods", body)
        return result

    async def pod(self, name: str, namespace: str = "default") -> dict[str, Any]:
        result: dict[str, Any] = await self.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
        return result

    async def delete_pod(self, name: str, namespace: str = "default") -> None:
        await self.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}")

    async def node_of(self, name: str) -> str:
        return str((await self.pod(name))["spec"].get("nodeName") or "")

    async def events(self, name: str, namespace: str = "default") -> list[dict[str, Any]]:
        body = await self.request(
            "GET", f"/api/v1/namespaces/{namespace}/events", None
        )  # the knuma apiserver supports field selectors, but filtering here keeps the helper obvious
        return [e for e in body["items"] if e["involvedObject"]["name"] == name]

    async def wait_for(self, check: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = await check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            await asyncio.sleep(0.05)

    async def bound(self, name: str, timeout: float = 10.0) -> str:
        async def check() -> str:
            return await self.node_of(name)

        return str(await self.wait_for(check, timeout, f"pod {name} to be bound"))


def _sum_zones(zones: Mapping[int, Mapping[str, str]]) -> dict[str, str]:
    from knuma.quantity import Quantity

    total: dict[str, int] = {}
    for resources in zones.values():
        for name, value in resources.items():
            q = Quantity.parse(value)
            total[name] = total.get(name, 0) + (q.milli_value() if name == "cpu" else q.value())
    return {k: (f"{v}m" if k == "cpu" else str(v)) for k, v in total.items()}


async def _kubelets(http: httpx2.AsyncClient) -> None:
    """What the nodes' kubelets do for a deleted pod, with containers that stop at once: delete it for good with a
    grace period of 0 and its UID as precondition (finalizers may still hold it). Without this a pod deleted on a
    node stays `Terminating`, as on a cluster whose kubelets are down."""
    while True:
        response = await http.get("/api/v1/pods", params={"fieldSelector": "spec.nodeName!="})
        for pod in response.json().get("items") or [] if response.status_code == 200 else []:
            md = pod["metadata"]
            if md.get("deletionTimestamp") and md.get("deletionGracePeriodSeconds"):
                options = {"gracePeriodSeconds": 0, "preconditions": {"uid": md["uid"]}}
                await http.request("DELETE", f"/api/v1/namespaces/{md['namespace']}/pods/{md['name']}", json=options)
        await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def cluster(api: RunningApiServer, *, crd: bool = True) -> AsyncIterator[Cluster]:
    """The API server with the CRD, and kubelets that finish pods' graceful deletion (`_kubelets`)."""
    http = async_http(api.kubeconfig)
    kubelets = asyncio.create_task(_kubelets(http))
    try:
        c = Cluster(api, http)
        if crd:
            await c.install_crd()
        yield c
    finally:
        kubelets.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await kubelets
        await http.aclose()


@contextlib.asynccontextmanager
async def running_scheduler(
    api: RunningApiServer,
    profiles: Mapping[str, Profile] | None = None,
    settings: DaemonSettings | None = None,
    nrt: NRTCache | None = None,
    writer: ApiSession | None = None,
) -> AsyncIterator[Scheduler]:
    """The daemon as `knuma scheduler` runs it: informers on the `httpx2` client, bindings and events over an
    `ApiSession` (`writer`, closed here; one to the same API server when None)."""
    http = async_http(api.kubeconfig)
    writer = writer or api_session(api.kubeconfig)
    daemon = Scheduler(
        http,
        profiles or {SCHEDULER_NAME: default_profile()},
        settings or DaemonSettings(leader_elect=False, initial_backoff=0.1, max_backoff=0.5),
        nrt=nrt,
        writer=writer,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    try:
        yield daemon
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)
        await writer.aclose()
        await http.aclose()
