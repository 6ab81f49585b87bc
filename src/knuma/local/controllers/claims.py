"""Run the resourceclaim controller against an API server (what `knuma up` needs from kube-controller-manager so that
a pod with `spec.resourceClaims[].resourceClaimTemplateName` gets its ResourceClaims).

Informers on Pods, ResourceClaims and ResourceClaimTemplates feed one work queue of pods and claims; each reconcile
reads the informers' stores, calls the pure planner (`knuma.local.controllers.resourceclaim`) and writes the
difference. Claims just created are remembered until the claim informer sees them (client-go's `claimCache.Mutation`),
so a pod synced twice in a row never gets two claims for one pod claim.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

import httpx2

from knuma.api.types import JsonObj, meta_of
from knuma.kube import rest
from knuma.kube.errors import Conflict, KubeApiError, NotFound
from knuma.kube.events import EventRecorder, ObjectReference
from knuma.kube.informer import Informer, object_key
from knuma.kube.tasks import cancel_and_wait
from knuma.local.controllers.resourceclaim import FINALIZER, owning_pod, plan_claim, plan_pod

__all__ = ["ResourceClaimController", "pod_claim_names"]

log = logging.getLogger("knuma.local.controllers")

CLAIMS = "/apis/resource.k8s.io/v1/resourceclaims"
TEMPLATES = "/apis/resource.k8s.io/v1/resourceclaimtemplates"
#: The event source kube-controller-manager's resourceclaim controller reports as.
COMPONENT = "resource_claim"


def _claims_path(namespace: str, name: str = "") -> str:
    base = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"
    return f"{base}/{name}" if name else base


def pod_claim_names(pod: Mapping[str, Any]) -> list[str]:
    """Claims a pod uses: generated ones from its status, direct ones from its spec, and the one kube-scheduler
    created for its DRA-backed extended resources (`status.extendedResourceClaimStatus`; upstream's `enqueuePod`
    looks at it too since kubernetes#134312, so that a finished pod's devices are freed and its claim deleted)."""
    status = pod.get("status") or {}
    names = [str(s.get("resourceClaimName")) for s in status.get("resourceClaimStatuses") or []]
    names += [
        str(c["resourceClaimName"])
        for c in (pod.get("spec") or {}).get("resourceClaims") or []
        if c.get("resourceClaimName")
    ]
    extended = status.get("extendedResourceClaimStatus")
    if isinstance(extended, Mapping):
        names.append(str(extended.get("resourceClaimName") or ""))
    return [n for n in names if n and n != "None"]


class _Events:
    def __init__(self, kind: str, controller: ResourceClaimController) -> None:
        self.kind, self.controller = kind, controller

    def on_add(self, obj: JsonObj) -> None:
        self.controller.changed(self.kind, obj)

    def on_update(self, old: JsonObj, new: JsonObj) -> None:
        self.controller.changed(self.kind, new)

    def on_delete(self, obj: JsonObj) -> None:
        self.controller.changed(self.kind, obj)


class ResourceClaimController:
    def __init__(self, http: httpx2.AsyncClient) -> None:
        self.http = http
        self.pods = Informer(http, "/api/v1/pods", _Events("Pod", self))
        self.claims = Informer(http, CLAIMS, _Events("ResourceClaim", self))
        self.templates = Informer(http, TEMPLATES, _Events("ResourceClaimTemplate", self))
        self.events = EventRecorder(http, COMPONENT)
        self._queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self._queued: set[tuple[str, str]] = set()
        self._recent: dict[str, JsonObj] = {}
        """Claims this controller created that the claim informer has not delivered yet, by namespace/name."""
        self.created_claims = 0

    # -- event routing -------------------------------------------------------------------------------------------

    def changed(self, kind: str, obj: Mapping[str, Any]) -> None:
        namespace = str(meta_of(obj).get("namespace") or "")
        if kind == "Pod":
            if (obj.get("spec") or {}).get("resourceClaims"):
                self._enqueue("pod", object_key(obj))
            for name in pod_claim_names(obj):
                self._enqueue("claim", f"{namespace}/{name}")
            for key, claim in self.claims.store.items():
                reserved = (claim.get("status") or {}).get("reservedFor") or []
                if any(r.get("uid") == meta_of(obj).get("uid") for r in reserved):
                    self._enqueue("claim", key)
        elif kind == "ResourceClaim":
            key = object_key(obj)
            self._recent.pop(key, None)
            self._enqueue("claim", key)
            pod_name, _ = owning_pod(obj)
            if pod_name:
                self._enqueue("pod", f"{namespace}/{pod_name}")
        else:  # a template appeared or changed: pods waiting for it can proceed
            for key, pod in self.pods.store.items():
                if meta_of(pod).get("namespace") == namespace and (pod.get("spec") or {}).get("resourceClaims"):
                    self._enqueue("pod", key)

    def _enqueue(self, kind: str, key: str) -> None:
        item = (kind, key)
        if item not in self._queued:
            self._queued.add(item)
            self._queue.put_nowait(item)

    # -- loop ----------------------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Until cancelled."""
        informers = [asyncio.create_task(i.run()) for i in (self.pods, self.claims, self.templates)]
        try:
            await asyncio.gather(*(i.synced.wait() for i in (self.pods, self.claims, self.templates)))
            while True:
                kind, key = await self._queue.get()
                self._queued.discard((kind, key))
                try:
                    if kind == "pod":
                        await self._sync_pod(key)
                    else:
                        await self._sync_claim(key)
                except KubeApiError as err:
                    log.warning("resourceclaim controller: %s %s: %s; retrying", kind, key, err)
                    asyncio.get_running_loop().call_later(1.0, self._enqueue, kind, key)
        finally:
            await cancel_and_wait(informers)
            await self.events.flush()

    async def _sync_pod(self, key: str) -> None:
        pod = self.pods.store.get(key)
        if pod is None:
            return
        namespace = str(meta_of(pod).get("namespace"))
        claims = [c for c in self.claims.store.values() if meta_of(c).get("namespace") == namespace]
        claims += [c for k, c in self._recent.items() if k not in self.claims.store]
        templates = {
            str(meta_of(t).get("name")): t
            for t in self.templates.store.values()
            if meta_of(t).get("namespace") == namespace
        }
        plan = plan_pod(pod, claims, templates)
        ref = ObjectReference("Pod", namespace, str(meta_of(pod).get("name")), str(meta_of(pod).get("uid") or ""))
        for _, message in plan.errors:
            self.events.record(ref, "Warning", "FailedResourceClaimCreation", message)
        created: dict[str, str] = {}
        for pod_claim, claim in plan.create:
            try:
                made = await rest.post(self.http, _claims_path(namespace), claim)
            except KubeApiError as err:
                if err.status is None:
                    raise  # no answer: the pod is synced again
                message = f"PodResourceClaim {pod_claim}: create ResourceClaim: {err.message}"
                self.events.record(ref, "Warning", "FailedResourceClaimCreation", message)
                log.warning("pod %s: %s", key, message)
                continue
            self._recent[object_key(made)] = made
            created[pod_claim] = str(made["metadata"]["name"])
            self.created_claims += 1
        statuses = plan.statuses(created)
        current = (pod.get("status") or {}).get("resourceClaimStatuses") or []
        if statuses and statuses != current:
            path = f"/api/v1/namespaces/{namespace}/pods/{meta_of(pod).get('name')}/status"
            with contextlib.suppress(NotFound):  # deleted meanwhile
                await rest.patch(self.http, path, {"status": {"resourceClaimStatuses": statuses}})

    async def _pods_by_name(self, claim: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
        """The pods `plan_claim` must know: from the informer, and checked with the API server when the informer has
        not seen a consumer (it may be new; removing a reservation the scheduler just made would be wrong)."""
        namespace = str(meta_of(claim).get("namespace"))
        wanted = {str(r.get("name")) for r in (claim.get("status") or {}).get("reservedFor") or []}
        owner, _ = owning_pod(claim)
        if owner:
            wanted.add(owner)
        pods: dict[str, Mapping[str, Any]] = {}
        for name in wanted:
            pod = self.pods.store.get(f"{namespace}/{name}")
            if pod is None:
                with contextlib.suppress(NotFound):
                    pod = await rest.get(self.http, f"/api/v1/namespaces/{namespace}/pods/{name}")
            if pod is not None:
                pods[name] = pod
        return pods

    async def _sync_claim(self, key: str) -> None:
        claim = self.claims.store.get(key)
        if claim is None:
            return
        plan = plan_claim(claim, await self._pods_by_name(claim))
        namespace, name = str(meta_of(claim).get("namespace")), str(meta_of(claim).get("name"))
        path = _claims_path(namespace, name)
        if plan.reserved_for is not None or plan.deallocate:
            status = dict(claim.get("status") or {})
            if plan.reserved_for is not None:
                status["reservedFor"] = plan.reserved_for
            if not status.get("reservedFor"):
                status.pop("reservedFor", None)
            if plan.deallocate:
                status.pop("allocation", None)
                status.pop("devices", None)  # drivers' reports name allocated devices only
            body = {**claim, "status": status}  # a full update: fails with 409 if the scheduler wrote meanwhile
            try:
                claim = await rest.put(self.http, f"{path}/status", body)
            except Conflict:
                return  # the informer delivers the newer claim, which is synced again
            except NotFound:
                pass  # deleted meanwhile
            log.info("claim %s: %s", key, "deallocated" if plan.deallocate else "dropped finished consumers")
        if plan.remove_finalizer:
            finalizers = [f for f in meta_of(claim).get("finalizers") or [] if f != FINALIZER]
            body = {
                "metadata": {"finalizers": finalizers or None, "resourceVersion": meta_of(claim).get("resourceVersion")}
            }
            with contextlib.suppress(NotFound, Conflict):  # gone, or changed: the informer brings it back
                await rest.patch(self.http, path, body)
        if plan.delete:
            with contextlib.suppress(NotFound):
                await rest.delete(self.http, path)
            log.info("claim %s: deleted, its pod is done", key)
