"""The API calls the end-to-end suite makes, over one HTTP client built from the user's kubeconfig.

Plain JSON on purpose: the suite must run against any conformant cluster, and checks what a user sees (pod phases,
`FailedScheduling` events, NRT `available`), not knuma's internals. Every wait is generous (clusters differ, CI
machines are shared) and fails with what it was waiting for and what it saw last.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx2

from knuma.api.nrt import NodeResourceTopology
from knuma.api.resources import CPU
from knuma.api.types import JsonObj
from knuma.deploy.check.gather import read_nrts
from knuma.errors import OperationFailed

__all__ = ["E2ECluster", "E2EFailure", "Zone", "eventually", "guaranteed_pod"]

T = TypeVar("T")
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
E2E_LABEL = "e2e.knuma.io/run"


class E2EFailure(OperationFailed):
    """A wait of the end-to-end suite ran out; the message says what it waited for and what it saw."""


def eventually(check: Callable[[], T | None], what: str, timeout: float = 120.0, interval: float = 0.5) -> T:
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            result = check()
        except AssertionError as err:
            result, last = None, err
        if result:
            return result
        if time.monotonic() > deadline:
            raise E2EFailure(
                f"timed out after {timeout:.0f}s waiting for {what}" + (f" (last: {last})" if last else "")
            )
        time.sleep(interval)


def guaranteed_pod(name: str, cpus: int, scheduler: str, memory: str = "64Mi", **labels: str) -> JsonObj:
    """A Guaranteed pod with `cpus` exclusive CPUs (integral, limits = requests)."""
    limits = {"cpu": str(cpus), "memory": memory}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": {
            "schedulerName": scheduler,
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "app", "image": PAUSE_IMAGE, "resources": {"limits": limits, "requests": limits}}],
        },
    }


@dataclass(frozen=True, slots=True)
class Zone:
    node: str
    name: str
    allocatable_cpus: int
    available_cpus: int


class E2ECluster:
    def __init__(self, http: httpx2.Client) -> None:
        self.http = http
        self.run_id = uuid.uuid4().hex[:6]

    def _ok(self, reply: httpx2.Response, what: str) -> Any:
        if reply.status_code >= 400:
            raise E2EFailure(f"{what}: HTTP {reply.status_code}: {reply.text[:300]}")
        return reply.json() if reply.content else None

    # -- namespaces and pods -----------------------------------------------------------------------------------------

    def create_namespace(self, prefix: str) -> str:
        name = f"{prefix}-{self.run_id}-{uuid.uuid4().hex[:4]}"
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {E2E_LABEL: self.run_id}}}
        self._ok(self.http.post("/api/v1/namespaces", json=body), f"create namespace {name}")
        return name

    def delete_namespace(self, name: str) -> None:
        reply = self.http.delete(f"/api/v1/namespaces/{name}")
        if reply.status_code not in (200, 202, 404):
            raise E2EFailure(f"delete namespace {name}: HTTP {reply.status_code}: {reply.text[:300]}")

    def create_pod(self, namespace: str, pod: JsonObj) -> JsonObj:
        result: JsonObj = self._ok(
            self.http.post(f"/api/v1/namespaces/{namespace}/pods", json=pod), f"create pod {pod['metadata']['name']}"
        )
        return result

    def pods(self, namespace: str, selector: str = "") -> list[JsonObj]:
        params = {"labelSelector": selector} if selector else None
        body = self._ok(self.http.get(f"/api/v1/namespaces/{namespace}/pods", params=params), "list pods")
        return list(body.get("items") or [])

    def all_pods(self, selector: str = "") -> list[JsonObj]:
        params = {"labelSelector": selector} if selector else None
        return list(self._ok(self.http.get("/api/v1/pods", params=params), "list pods").get("items") or [])

    def pod(self, namespace: str, name: str) -> JsonObj:
        result: JsonObj = self._ok(self.http.get(f"/api/v1/namespaces/{namespace}/pods/{name}"), f"get pod {name}")
        return result

    def delete_pod(self, namespace: str, name: str) -> None:
        reply = self.http.delete(f"/api/v1/namespaces/{namespace}/pods/{name}", params={"gracePeriodSeconds": "0"})
        if reply.status_code not in (200, 202, 404):
            raise E2EFailure(f"delete pod {namespace}/{name}: HTTP {reply.status_code}: {reply.text[:300]}")

    def failed_scheduling(self, namespace: str, name: str) -> list[str]:
        """Messages of the pod's FailedScheduling events."""
        selector = f"involvedObject.name={name},reason=FailedScheduling"
        reply = self.http.get(f"/api/v1/namespaces/{namespace}/events", params={"fieldSelector": selector})
        items = self._ok(reply, "list events").get("items") or []
        return [str(e.get("message") or "") for e in items if e.get("reason") == "FailedScheduling"]

    def deployment(self, namespace: str, name: str) -> JsonObj:
        result: JsonObj = self._ok(
            self.http.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"), f"get deployment {name}"
        )
        return result

    # -- NRT -----------------------------------------------------------------------------------------------------------

    def nrts(self) -> dict[str, NodeResourceTopology]:
        return {name: NodeResourceTopology.from_dict(obj) for name, obj in (read_nrts(self.http) or {}).items()}

    def zones(self, nodes: list[str] | None = None) -> list[Zone]:
        """Every NUMA zone's CPUs (whole CPUs), of `nodes` or of every node with an NRT."""
        out = []
        for name, nrt in sorted(self.nrts().items()):
            if nodes is not None and name not in nodes:
                continue
            for _, zone in nrt.numa_zones():
                cpu = next((r for r in zone.resources if r.name == CPU), None)
                if cpu is not None:
                    out.append(Zone(name, zone.name, cpu.allocatable // 1000, cpu.available // 1000))
        return out

    def available_cpus(self, node: str) -> int:
        return sum(z.available_cpus for z in self.zones([node]))
