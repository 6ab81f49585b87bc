"""Run the Deployment, ReplicaSet, StatefulSet, DaemonSet, disruption, pod garbage collection, node lifecycle and
taint eviction controllers against an API server (what `knuma up` needs from kube-controller-manager so that
`kubectl apply -f deployment.yaml` produces pods, a StatefulSet its ordered pods, a DaemonSet one pod per node, a
PodDisruptionBudget the `status.disruptionsAllowed` the scheduler's preemption reads, pods of a deleted node go,
`knuma.local.controllers.podgc`, and a node whose kubelet went silent is tainted and its pods evicted,
`knuma.local.controllers.nodelifecycle_controller` and `.taint_eviction`, which this module starts).

Informers on Deployments, ReplicaSets, StatefulSets, DaemonSets, Pods and Nodes feed one work queue of objects to
reconcile; each reconcile reads the informers' stores, calls the pure planner (`knuma.local.controllers.deployment` /
`.replicaset` / `.statefulset` / `.daemonset`) and writes the difference. A change of a node's labels, taints or
schedulability requeues every DaemonSet.
Like client-go controllers, creations and deletions are *expected* until the pod informer has seen them, so a
ReplicaSet never creates twice for the same missing replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx2

from knuma.api.types import STRATEGIC_MERGE_PATCH, JsonObj, meta_of
from knuma.kube import rest
from knuma.kube.errors import Conflict, KubeApiError, NotFound
from knuma.kube.events import timestamp
from knuma.kube.informer import Callbacks, Informer, ignore, object_key
from knuma.kube.tasks import cancel_and_wait
from knuma.local.controllers import evictionzones, nodelifecycle, podgc
from knuma.local.controllers.daemonset import FailedPodBackoff, daemon_pod, daemonset_hash, plan_daemonset
from knuma.local.controllers.deployment import REVISION_ANNOTATION, plan_deployment
from knuma.local.controllers.disruption import budget_pods, budget_status
from knuma.local.controllers.history import plan_history
from knuma.local.controllers.nodelifecycle_controller import NodeLifecycleController
from knuma.local.controllers.refs import pod_path, utcnow
from knuma.local.controllers.replicaset import Backoff, owned_by, plan_replicaset, pod_from_template
from knuma.local.controllers.statefulset import REVISION_LABEL, plan_statefulset, revision_name
from knuma.local.controllers.taint_eviction import TaintEvictionController

__all__ = ["WorkloadControllers"]

log = logging.getLogger("knuma.local.controllers")

EXPECTATION_TIMEOUT = 30.0
DEPLOYMENTS = "/apis/apps/v1/deployments"
REPLICASETS = "/apis/apps/v1/replicasets"
DAEMONSETS = "/apis/apps/v1/daemonsets"
STATEFULSETS = "/apis/apps/v1/statefulsets"
REVISIONS = "/apis/apps/v1/controllerrevisions"
BUDGETS = "/apis/policy/v1/poddisruptionbudgets"
NODE_LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"


def _node_fields(node: JsonObj) -> JsonObj:
    """What the DaemonSet and node lifecycle controllers read of a Node: name, labels, creation, taints,
    schedulability and conditions (not the capacity, addresses and images)."""
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    return {
        "metadata": {
            k: meta[k] for k in ("name", "labels", "resourceVersion", "uid", "creationTimestamp") if k in meta
        },
        "spec": {k: spec[k] for k in ("taints", "unschedulable") if k in spec},
        "status": {"conditions": status.get("conditions") or []},
    }


def _lease_fields(lease: JsonObj) -> JsonObj:
    meta = lease.get("metadata") or {}
    return {
        "metadata": {k: meta[k] for k in ("name", "namespace", "resourceVersion") if k in meta},
        "spec": {"renewTime": (lease.get("spec") or {}).get("renewTime")},
    }


def _controller(obj: Mapping[str, Any], kind: str) -> str | None:
    for ref in meta_of(obj).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == kind:
            return f"{meta_of(obj).get('namespace')}/{ref.get('name')}"
    return None


@dataclass
class _Expectations:
    creates: set[str] = field(default_factory=set)
    deletes: set[str] = field(default_factory=set)
    since: float = 0.0

    def pending(self, now: float) -> bool:
        return bool(self.creates or self.deletes) and now - self.since < EXPECTATION_TIMEOUT


class _Events:
    def __init__(self, kind: str, manager: WorkloadControllers) -> None:
        self.kind, self.manager = kind, manager

    def on_add(self, obj: JsonObj) -> None:
        self.manager.changed(self.kind, obj, added=True)

    def on_update(self, old: JsonObj, new: JsonObj) -> None:
        status_only = self.kind == "Node" and (old.get("spec"), meta_of(old).get("labels")) == (
            new.get("spec"),
            meta_of(new).get("labels"),
        )
        self.manager.changed(self.kind, new, status_only=status_only)

    def on_delete(self, obj: JsonObj) -> None:
        self.manager.changed(self.kind, obj, deleted=True)


class WorkloadControllers:
    def __init__(
        self,
        http: httpx2.AsyncClient,
        *,
        podgc_period: float = podgc.CHECK_PERIOD,
        terminated_threshold: int = podgc.TERMINATED_THRESHOLD,
        node_monitor_period: float = nodelifecycle.MONITOR_PERIOD,
        node_monitor_grace_period: float = nodelifecycle.MONITOR_GRACE_PERIOD,
        node_startup_grace_period: float = nodelifecycle.STARTUP_GRACE_PERIOD,
        eviction_rates: evictionzones.EvictionRates | None = None,
    ) -> None:
        """`podgc_period`: how often pods of deleted nodes and finished pods beyond `terminated_threshold` are
        looked for (a node must be missing for twice that, as upstream's 40 s quarantine is twice its 20 s
        period). `node_monitor_period` / `node_monitor_grace_period` / `node_startup_grace_period`: how often node
        health is checked, and how long a kubelet may be silent before its node is `Unknown` and tainted (the
        startup one: a node that never reported Ready; kube-controller-manager's `--node-monitor-period`,
        `--node-monitor-grace-period` and `--node-startup-grace-period`); `eviction_rates`: how fast failed nodes are
        tainted NoExecute per zone (`--node-eviction-rate` and the flags around it)."""
        self.http = http
        self.podgc_period = podgc_period
        self.terminated_threshold = terminated_threshold
        """Pod key -> when the taint eviction controller deletes it (monotonic seconds)."""
        self._missing_nodes = podgc.MissingNodes(quarantine=2 * podgc_period)
        self.deployments = Informer(http, DEPLOYMENTS, _Events("Deployment", self))
        self.replicasets = Informer(http, REPLICASETS, _Events("ReplicaSet", self))
        self.daemonsets = Informer(http, DAEMONSETS, _Events("DaemonSet", self))
        self.statefulsets = Informer(http, STATEFULSETS, _Events("StatefulSet", self))
        self.revisions = Informer(http, REVISIONS, _Events("ControllerRevision", self))
        self.pods = Informer(http, "/api/v1/pods", _Events("Pod", self))
        self.nodes = Informer(http, "/api/v1/nodes", _Events("Node", self), transform=_node_fields)
        self.budgets = Informer(http, BUDGETS, _Events("PodDisruptionBudget", self))
        # the node lifecycle controller reads the Leases on its period: no event to react to
        self.leases = Informer(http, NODE_LEASES, Callbacks(ignore, ignore, ignore), transform=_lease_fields)
        self.taint_eviction = TaintEvictionController(http, self.nodes, self.pods)
        self.node_lifecycle = NodeLifecycleController(
            http,
            self.nodes,
            self.leases,
            self.pods,
            monitor_period=node_monitor_period,
            grace_period=node_monitor_grace_period,
            startup_grace_period=node_startup_grace_period,
            eviction_rates=eviction_rates,
        )
        self._informers = (
            self.deployments,
            self.replicasets,
            self.statefulsets,
            self.revisions,
            self.daemonsets,
            self.pods,
            self.nodes,
            self.budgets,
            self.leases,
        )
        self._queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self._queued: set[tuple[str, str]] = set()
        self._backoffs: dict[str, Backoff] = {}
        self._failed_daemon_pods = FailedPodBackoff()
        self._expect: dict[str, _Expectations] = {}
        self.created_pods = 0

    def changed(
        self,
        kind: str,
        obj: Mapping[str, Any],
        *,
        added: bool = False,
        deleted: bool = False,
        status_only: bool = False,
    ) -> None:
        """`status_only`: a Node update that changed neither its spec nor its labels (DaemonSets do not care)."""
        key = object_key(obj)
        if kind == "Deployment":
            self._enqueue("Deployment", key)
        elif kind == "ReplicaSet":
            self._enqueue("ReplicaSet", key)
            owner = _controller(obj, "Deployment")
            if owner:
                self._enqueue("Deployment", owner)
        elif kind in ("DaemonSet", "StatefulSet"):
            self._enqueue(kind, key)
            if kind == "StatefulSet" and deleted:
                self._backoffs.pop(str(meta_of(obj).get("uid")), None)
        elif kind == "ControllerRevision":
            return  # written by the controllers themselves; their owners' events drive the syncs
        elif kind == "PodDisruptionBudget":
            self._enqueue("PodDisruptionBudget", key)
        elif kind == "Node":
            if not deleted:
                self._enqueue("Node", key)  # its NoSchedule condition taints (`doNoScheduleTaintingPass`)
            if not status_only:
                for daemonset in list(self.daemonsets.store):
                    self._enqueue("DaemonSet", daemonset)
        else:
            namespace = meta_of(obj).get("namespace") or "default"
            for budget in list(self.budgets.store):  # a pod's readiness or labels change its budgets' status
                if budget.startswith(f"{namespace}/"):
                    self._enqueue("PodDisruptionBudget", budget)
            owner_kind = "ReplicaSet"
            owner = _controller(obj, "ReplicaSet")
            if owner is None:
                owner_kind, owner = "DaemonSet", _controller(obj, "DaemonSet")
            if owner is None:
                owner_kind, owner = "StatefulSet", _controller(obj, "StatefulSet")
            if owner is None:
                return
            name = str(meta_of(obj).get("name"))
            for ref in meta_of(obj).get("ownerReferences") or []:
                expectation = self._expect.get(str(ref.get("uid")))
                if expectation is not None:
                    if added:
                        expectation.creates.discard(name)
                    if deleted:
                        expectation.deletes.discard(name)
            self._enqueue(owner_kind, owner)

    def _enqueue(self, kind: str, key: str) -> None:
        item = (kind, key)
        if item not in self._queued:
            self._queued.add(item)
            self._queue.put_nowait(item)

    async def run(self) -> None:
        """Until cancelled."""
        informers = [asyncio.create_task(i.run()) for i in self._informers]
        try:
            await asyncio.gather(*(i.synced.wait() for i in self._informers))
            for loop in (self._collect_pods(), self.node_lifecycle.run(), self.taint_eviction.run()):
                task = asyncio.create_task(loop)
                task.add_done_callback(_report_stopped)
                informers.append(task)
            while True:
                kind, key = await self._queue.get()
                self._queued.discard((kind, key))
                try:
                    if kind == "Deployment":
                        await self._sync_deployment(key)
                    elif kind == "DaemonSet":
                        await self._sync_daemonset(key)
                    elif kind == "StatefulSet":
                        await self._sync_statefulset(key)
                    elif kind == "PodDisruptionBudget":
                        await self._sync_budget(key)
                    elif kind == "Node":
                        await self.node_lifecycle.sync_no_schedule_taints(key)
                    else:
                        await self._sync_replicaset(key)
                except KubeApiError as err:
                    log.warning("%s %s: %s; retrying", kind, key, err)
                    asyncio.get_running_loop().call_later(1.0, self._enqueue, kind, key)
        finally:
            await cancel_and_wait(informers)

    async def _collect_pods(self) -> None:
        """PodGC's `gcTerminated`, `gcTerminating` and `gcOrphaned` (`knuma.local.controllers.podgc`), every
        `podgc_period`."""
        while True:
            await asyncio.sleep(self.podgc_period)
            for pod in podgc.terminated_over(list(self.pods.store.values()), self.terminated_threshold):
                try:
                    await rest.delete(self.http, pod_path(pod))
                except NotFound:
                    continue
                except KubeApiError as err:
                    log.warning("PodGC: cannot delete finished pod %s: %s", object_key(pod), err)
            stuck = podgc.out_of_service_terminating(list(self.pods.store.values()), self.nodes.store)
            for pod in stuck:
                if await self._force_delete(pod, condition=False):
                    log.info(
                        "PodGC: deleted terminating pod %s on out-of-service node %s",
                        object_key(pod),
                        pod["spec"]["nodeName"],
                    )
            orphans = self._missing_nodes.orphans(self.pods.store.values(), self.nodes.store, time.monotonic())
            for pod in orphans:
                if await self._force_delete(pod, condition=True):
                    log.info(
                        "PodGC: deleted pod %s: node %s no longer exists", object_key(pod), pod["spec"]["nodeName"]
                    )

    async def _force_delete(self, pod: Mapping[str, Any], *, condition: bool) -> bool:
        """PodGC's `markFailedAndDeletePodWithCondition`: `Failed` (with the DisruptionTarget condition when
        `condition`), then deleted with a grace period of 0; False when it could not be (gone already: quietly)."""
        path = pod_path(pod)
        status = podgc.orphan_status(pod, timestamp(), condition=condition)
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
        try:
            if status is not None:
                await rest.patch(self.http, f"{path}/status", status, content_type=STRATEGIC_MERGE_PATCH)
            await rest.delete(self.http, path, body=body)
        except NotFound:
            return False
        except KubeApiError as err:
            log.warning("PodGC: cannot delete pod %s: %s", object_key(pod), err)
            return False
        return True

    async def _sync_deployment(self, key: str) -> None:
        deployment = self.deployments.store.get(key)
        if deployment is None or meta_of(deployment).get("deletionTimestamp"):
            return
        uid = str(meta_of(deployment).get("uid"))
        owned = [rs for rs in self.replicasets.store.values() if owned_by(rs, uid)]
        plan = plan_deployment(deployment, owned)
        namespace = meta_of(deployment).get("namespace")
        base = f"/apis/apps/v1/namespaces/{namespace}"
        if plan.create is not None:
            with contextlib.suppress(Conflict):  # created by an earlier pass; the informer brings it
                await rest.post(self.http, f"{base}/replicasets", plan.create)
        for name, replicas in plan.scale.items():
            with contextlib.suppress(NotFound):  # deleted meanwhile
                await rest.patch(self.http, f"{base}/replicasets/{name}", {"spec": {"replicas": replicas}})
        if plan.renumber is not None:
            with contextlib.suppress(NotFound):
                rs_name, revision = plan.renumber
                annotations = {REVISION_ANNOTATION: revision}
                await rest.patch(self.http, f"{base}/replicasets/{rs_name}", {"metadata": {"annotations": annotations}})
        if plan.revision is not None:
            with contextlib.suppress(NotFound):
                annotations = {REVISION_ANNOTATION: plan.revision}
                path = f"{base}/deployments/{meta_of(deployment).get('name')}"
                await rest.patch(self.http, path, {"metadata": {"annotations": annotations}})
        await self._write_status(
            f"{base}/deployments/{meta_of(deployment).get('name')}/status", deployment, plan.status
        )

    async def _sync_replicaset(self, key: str) -> None:
        rs = self.replicasets.store.get(key)
        if rs is None:
            return
        uid = str(meta_of(rs).get("uid"))
        if meta_of(rs).get("deletionTimestamp"):
            self._backoffs.pop(uid, None)
            self._expect.pop(uid, None)
            return
        pods = [p for p in self.pods.store.values() if owned_by(p, uid)]
        now = time.monotonic()
        backoff = self._backoffs.setdefault(uid, Backoff())
        plan = plan_replicaset(rs, pods, backoff, now)
        expectation = self._expect.setdefault(uid, _Expectations())
        namespace = meta_of(rs).get("namespace")
        if not expectation.pending(now):
            expectation.creates.clear()
            expectation.deletes.clear()
            expectation.since = now
            for _ in range(plan.create):
                created = await rest.post(self.http, f"/api/v1/namespaces/{namespace}/pods", pod_from_template(rs))
                expectation.creates.add(created["metadata"]["name"])
                self.created_pods += 1
            for name in plan.delete:
                with contextlib.suppress(NotFound):  # already gone
                    await rest.delete(self.http, f"/api/v1/namespaces/{namespace}/pods/{name}")
                expectation.deletes.add(name)
            if plan.retry_after is not None:
                asyncio.get_running_loop().call_later(plan.retry_after, self._enqueue, "ReplicaSet", key)
        path = f"/apis/apps/v1/namespaces/{namespace}/replicasets/{meta_of(rs).get('name')}/status"
        await self._write_status(path, rs, plan.status)

    async def _sync_statefulset(self, key: str) -> None:
        sts = self.statefulsets.store.get(key)
        if sts is None:
            return
        uid = str(meta_of(sts).get("uid"))
        pods = [p for p in self.pods.store.values() if owned_by(p, uid)]
        name = revision_name(sts)
        in_use = {str(r) for p in pods if (r := (meta_of(p).get("labels") or {}).get(REVISION_LABEL))}
        in_use.add(str((sts.get("status") or {}).get("currentRevision") or name))
        history = await self._keep_history(sts, "StatefulSet", name, name.rpartition("-")[2], in_use)
        backoff = self._backoffs.setdefault(uid, Backoff())
        plan = plan_statefulset(sts, pods, history, backoff, time.monotonic(), utcnow())
        namespace = meta_of(sts).get("namespace")
        for pod in plan.create:
            with contextlib.suppress(Conflict):  # still there (terminating) or created by an earlier pass
                await rest.post(self.http, f"/api/v1/namespaces/{namespace}/pods", pod)
                self.created_pods += 1
        for pod_name in plan.delete:
            with contextlib.suppress(NotFound):  # already gone
                await rest.delete(self.http, f"/api/v1/namespaces/{namespace}/pods/{pod_name}")
        if plan.retry_after is not None:
            asyncio.get_running_loop().call_later(plan.retry_after, self._enqueue, "StatefulSet", key)
        path = f"/apis/apps/v1/namespaces/{namespace}/statefulsets/{meta_of(sts).get('name')}/status"
        await self._write_status(path, sts, plan.status)

    async def _keep_history(
        self, owner: Mapping[str, Any], kind: str, name: str, digest: str, in_use: set[str]
    ) -> Mapping[str, JsonObj]:
        """Bring `owner`'s ControllerRevisions up to date (`knuma.local.controllers.history`); the templates of the
        revisions kept, by name."""
        uid = str(meta_of(owner).get("uid"))
        revisions = [r for r in self.revisions.store.values() if owned_by(r, uid)]
        plan = plan_history(owner, kind, name, digest, revisions, in_use)
        base = f"/apis/apps/v1/namespaces/{meta_of(owner).get('namespace')}/controllerrevisions"
        if plan.create is not None:
            with contextlib.suppress(Conflict):  # created by an earlier pass; the informer brings it
                await rest.post(self.http, base, plan.create)
        if plan.renumber is not None:
            with contextlib.suppress(NotFound):
                await rest.patch(self.http, f"{base}/{plan.renumber[0]}", {"revision": plan.renumber[1]})
        for old in plan.delete:
            with contextlib.suppress(NotFound):
                await rest.delete(self.http, f"{base}/{old}")
        return plan.templates

    async def _sync_daemonset(self, key: str) -> None:
        ds = self.daemonsets.store.get(key)
        if ds is None:
            return
        uid = str(meta_of(ds).get("uid"))
        if meta_of(ds).get("deletionTimestamp"):
            self._expect.pop(uid, None)
            return
        pods = [p for p in self.pods.store.values() if owned_by(p, uid)]
        digest = daemonset_hash(ds)
        name = meta_of(ds).get("name")
        in_use = {f"{name}-{h}" for p in pods if (h := (meta_of(p).get("labels") or {}).get(REVISION_LABEL))}
        await self._keep_history(ds, "DaemonSet", f"{name}-{digest}", digest, in_use)
        now = time.monotonic()
        plan = plan_daemonset(ds, list(self.nodes.store.values()), pods, self._failed_daemon_pods, now, utcnow())
        expectation = self._expect.setdefault(uid, _Expectations())
        namespace = meta_of(ds).get("namespace")
        status = dict(plan.status)
        if expectation.pending(now):
            # as syncDaemonSet: while earlier creations and deletions are unseen, only the counts are updated
            status["observedGeneration"] = (ds.get("status") or {}).get("observedGeneration", 0)
        else:
            expectation.creates.clear()
            expectation.deletes.clear()
            expectation.since = now
            for node in plan.create:
                pod = daemon_pod(ds, node, digest)
                created = await rest.post(self.http, f"/api/v1/namespaces/{namespace}/pods", pod)
                expectation.creates.add(created["metadata"]["name"])
                self.created_pods += 1
            for name in plan.delete:
                try:
                    await rest.delete(self.http, f"/api/v1/namespaces/{namespace}/pods/{name}")
                except NotFound:
                    continue  # already gone: nothing to wait for
                expectation.deletes.add(name)
        if plan.retry_after is not None:
            asyncio.get_running_loop().call_later(plan.retry_after, self._enqueue, "DaemonSet", key)
        if status["numberReady"] != status["numberAvailable"]:
            asyncio.get_running_loop().call_later(1.0, self._enqueue, "DaemonSet", key)  # minReadySeconds
        path = f"/apis/apps/v1/namespaces/{namespace}/daemonsets/{meta_of(ds).get('name')}/status"
        await self._write_status(path, ds, status)

    async def _sync_budget(self, key: str) -> None:
        budget = self.budgets.store.get(key)
        if budget is None or meta_of(budget).get("deletionTimestamp"):
            return
        pods = budget_pods(budget, list(self.pods.store.values()))
        status = budget_status(budget, pods, self._scale, utcnow())
        namespace, name = meta_of(budget).get("namespace"), meta_of(budget).get("name")
        path = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/{name}/status"
        recorded = (budget.get("status") or {}).get("disruptedPods") or {}
        kept = status["disruptedPods"] or {}
        dropped = {pod: None for pod in recorded if pod not in kept}  # a merge patch merges maps: drop by null
        patch = {**status, "disruptedPods": {**dropped, **kept} if kept else None}
        await self._write_status(path, budget, status, patch)

    def _scale(self, pod: Mapping[str, Any]) -> tuple[str, int] | None:
        """The pod's controller for the disruption controller's expected count (`getPodDeployment`, then
        `getPodReplicaSet`, then `getPodStatefulSet`): the Deployment that owns its ReplicaSet, else the ReplicaSet,
        else its StatefulSet; (uid, spec.replicas)."""
        owner = _controller(pod, "ReplicaSet")
        rs = self.replicasets.store.get(owner) if owner else None
        if rs is None:
            sts_key = _controller(pod, "StatefulSet")
            sts = self.statefulsets.store.get(sts_key) if sts_key else None
            if sts is None:
                return None
            replicas = (sts.get("spec") or {}).get("replicas")
            return str(meta_of(sts).get("uid")), replicas if isinstance(replicas, int) else 1
        deployment_key = _controller(rs, "Deployment")
        deployment = self.deployments.store.get(deployment_key) if deployment_key else None
        found = deployment if deployment is not None else rs
        replicas = (found.get("spec") or {}).get("replicas")
        return str(meta_of(found).get("uid")), replicas if isinstance(replicas, int) else 1

    async def _write_status(
        self, path: str, obj: Mapping[str, Any], status: JsonObj, patch: JsonObj | None = None
    ) -> None:
        """Write `status` unless the object has it already; `patch`: what to send instead, when a plain merge patch
        of `status` would not give it (keys of a map to remove)."""
        current = obj.get("status") or {}
        if all(current.get(k) == v for k, v in status.items()):
            return
        with contextlib.suppress(NotFound):  # deleted meanwhile
            await rest.patch(self.http, path, {"status": patch if patch is not None else status})


def _report_stopped(task: asyncio.Task[Any]) -> None:
    """A controller loop never ends by itself: if one raised, say so (it is not restarted; the other loops go on)."""
    if not task.cancelled() and task.exception() is not None:
        log.error("controller loop %s stopped: %r", task.get_coro(), task.exception(), exc_info=task.exception())
