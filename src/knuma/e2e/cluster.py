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
from knuma.kube import rest
from knuma.kube.errors import KubeApiError, NotFound

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

    def _call(self, method: str, path: str, what: str, **kwargs: Any) -> JsonObj:
        try:
            return rest.request_sync(self.http, method, path, **kwargs)
        except KubeApiError as err:
            raise E2EFailure(f"{what}: {err}") from err

    def _delete(self, path: str, what: str, params: dict[str, str] | None = None) -> None:
        """Delete; an object already gone is fine."""
        try:
            rest.request_sync(self.http, "DELETE", path, params=params)
        except NotFound:
            return
        except KubeApiError as err:
            raise E2EFailure(f"{what}: {err}") from err

    # -- namespaces and pods -----------------------------------------------------------------------------------------

    def create_namespace(self, prefix: str) -> str:
        name = f"{prefix}-{self.run_id}-{uuid.uuid4().hex[:4]}"
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {E2E_LABEL: self.run_id}}}
        self._call("POST", "/api/v1/namespaces", f"create namespace {name}", body=body)
        return name

    def delete_namespace(self, name: str) -> None:
        self._delete(f"/api/v1/namespaces/{name}", f"delete namespace {name}")

    def create_pod(self, namespace: str, pod: JsonObj) -> JsonObj:
        path = f"/api/v1/namespaces/{namespace}/pods"
        return self._call("POST", path, f"create pod {pod['metadata']['name']}", body=pod)

    def pods(self, namespace: str, selector: str = "") -> list[JsonObj]:
        params = {"labelSelector": selector} if selector else None
        body = self._call("GET", f"/api/v1/namespaces/{namespace}/pods", "list pods", params=params)
        return list(body.get("items") or [])

    def all_pods(self, selector: str = "") -> list[JsonObj]:
        params = {"labelSelector": selector} if selector else None
        return list(self._call("GET", "/api/v1/pods", "list pods", params=params).get("items") or [])

    def pod(self, namespace: str, name: str) -> JsonObj:
        return self._call("GET", f"/api/v1/namespaces/{namespace}/pods/{name}", f"get pod {name}")

    def delete_pod(self, namespace: str, name: str) -> None:
        path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        self._delete(path, f"delete pod {namespace}/{name}", {"gracePeriodSeconds": "0"})

    def failed_scheduling(self, namespace: str, name: str) -> list[str]:
        """Messages of the pod's FailedScheduling events."""
        selector = f"involvedObject.name={name},reason=FailedScheduling"
        path = f"/api/v1/namespaces/{namespace}/events"
        items = self._call("GET", path, "list events", params={"fieldSelector": selector}).get("items") or []
        return [str(e.get("message") or "") for e in items if e.get("reason") == "FailedScheduling"]

    def deployment(self, namespace: str, name: str) -> JsonObj:
        return self._call("GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}", f"get deployment {name}")

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
