"""Run the Deployment, ReplicaSet, StatefulSet, DaemonSet, disruption, pod garbage collection, node lifecycle and
taint eviction controllers against an API server (what `knuma up` needs from kube-controller-manager so that
`kubectl apply -f deployment.yaml` produces pods, a StatefulSet its ordered pods, a DaemonSet one pod per node, a
PodDisruptionBudget the `status.disruptionsAllowed` the scheduler's preemption reads, pods of a deleted node go,
`knuma.local.controllers.podgc`, and a node whose kubelet went silent is tainted and its pods evicted,
`knuma.local.controllers.nodelifecycle`).

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
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx2

from knuma.api.types import STRATEGIC_MERGE_PATCH, JsonObj, meta_of
from knuma.kube import rest
from knuma.kube.errors import Conflict, KubeApiError, NotFound
from knuma.kube.events import EventRecorder, ObjectReference
from knuma.kube.informer import Callbacks, Informer, ignore, object_key
from knuma.local.controllers import evictionzones, nodelifecycle, podgc
from knuma.local.controllers.daemonset import FailedPodBackoff, daemon_pod, daemonset_hash, plan_daemonset
from knuma.local.controllers.deployment import REVISION_ANNOTATION, plan_deployment
from knuma.local.controllers.disruption import budget_pods, budget_status
from knuma.local.controllers.history import plan_history
from knuma.local.controllers.replicaset import Backoff, owned_by, plan_replicaset, pod_from_template
from knuma.local.controllers.statefulset import REVISION_LABEL, plan_statefulset, revision_name

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
EVICTION_CHECK_PERIOD = 1.0
"""How often pods on nodes with NoExecute taints are looked at (upstream sets a timer per pod)."""


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
        eviction_rates: evictionzones.EvictionRates | None = None,
    ) -> None:
        """`podgc_period`: how often pods of deleted nodes and finished pods beyond `terminated_threshold` are
        looked for (a node must be missing for twice that, as upstream's 40 s quarantine is twice its 20 s
        period). `node_monitor_period` / `node_monitor_grace_period`: how often node health is checked, and how
        long a kubelet may be silent before its node is `Unknown` and tainted (kube-controller-manager's
        `--node-monitor-period` and `--node-monitor-grace-period`); `eviction_rates`: how fast failed nodes are
        tainted NoExecute per zone (`--node-eviction-rate` and the flags around it)."""
        self.http = http
        self.podgc_period = podgc_period
        self.terminated_threshold = terminated_threshold
        self.node_monitor_period = node_monitor_period
        self.node_monitor_grace_period = node_monitor_grace_period
        self._probes = nodelifecycle.HealthProbes()
        self._zones = evictionzones.ZoneEvictions(eviction_rates or evictionzones.EvictionRates())
        self._known_nodes: set[str] = set()
        self._evictions: dict[str, float] = {}
        """Pod key -> when the taint eviction controller deletes it (monotonic seconds)."""
        self._node_events = EventRecorder(http, "node-controller")
        self._eviction_events = EventRecorder(http, "taint-eviction-controller")
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
            informers.append(asyncio.create_task(self._collect_pods()))
            informers.append(asyncio.create_task(self._monitor_nodes()))
            informers.append(asyncio.create_task(self._taint_failed_nodes()))
            informers.append(asyncio.create_task(self._evict_from_tainted_nodes()))
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
                        await self._sync_node_taints(key)
                    else:
                        await self._sync_replicaset(key)
                except KubeApiError as err:
                    log.warning("%s %s: %s; retrying", kind, key, err)
                    asyncio.get_running_loop().call_later(1.0, self._enqueue, kind, key)
        finally:
            for task in informers:
                task.cancel()
            for task in informers:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _collect_pods(self) -> None:
        """PodGC's `gcTerminated`, `gcTerminating` and `gcOrphaned` (`knuma.local.controllers.podgc`), every
        `podgc_period`."""
        while True:
            await asyncio.sleep(self.podgc_period)
            for pod in podgc.terminated_over(list(self.pods.store.values()), self.terminated_threshold):
                try:
                    await rest.delete(self.http, _pod_path(pod))
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
        path = _pod_path(pod)
        status = podgc.orphan_status(pod, _utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"), condition=condition)
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

    async def _monitor_nodes(self) -> None:
        """The node lifecycle controller's `monitorNodeHealth`, every `node_monitor_period`: a node whose kubelet
        has been silent for `node_monitor_grace_period` gets its conditions `Unknown` and its pods' Ready condition
        `False`; a node seen not Ready is queued for its NoExecute taint, a Ready one loses it; then the zones'
        health sets the tainting rates (`handleDisruption`, `knuma.local.controllers.evictionzones`)."""
        while True:
            await asyncio.sleep(self.node_monitor_period)
            stamp = _utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
            now = time.monotonic()
            self._probes.forget(self.nodes.store)
            nodes = list(self.nodes.store.items())
            await self._observe_nodes(nodes)
            zones: dict[str, list[str]] = {}
            for name, node in nodes:
                lease = self.leases.store.get(f"{nodelifecycle.LEASE_NAMESPACE}/{name}")
                try:
                    current = await self._check_node(name, node, lease, stamp, now)
                except (NotFound, Conflict):
                    continue  # gone, or changed since the informer's copy: the next pass sees the new one
                except KubeApiError as err:
                    log.warning("node lifecycle: cannot update node %s: %s", name, err)
                    continue
                if not evictionzones.excluded(node):
                    zones.setdefault(evictionzones.zone_key(node), []).append(nodelifecycle.ready_status(current))
            transition = self._zones.handle(zones, now)
            if transition is evictionzones.Transition.ENTERED_MASTER_DISRUPTION:
                log.warning(
                    "node lifecycle: no node is Ready in any zone; entering master disruption mode: NoExecute "
                    "taints removed, no node tainted until one is Ready again"
                )
                for name, node in nodes:
                    await self._mark_reachable(name, node)
            elif transition is evictionzones.Transition.EXITED_MASTER_DISRUPTION:
                log.info("node lifecycle: some nodes are Ready; exiting master disruption mode")
                self._probes.restart(now)

    async def _observe_nodes(self, nodes: list[tuple[str, JsonObj]]) -> None:
        """`classifyNodes` and what follows: a node seen for the first time is registered (event) and loses any
        NoExecute taint a previous controller left (`markNodeAsReachable`): it is tainted again through the queue
        if it is still not Ready; a node gone is forgotten."""
        names = {name for name, _ in nodes}
        for name, node in nodes:
            if name in self._known_nodes:
                continue
            self._known_nodes.add(name)
            ref = ObjectReference("Node", "", name, str(meta_of(node).get("uid") or ""))
            self._node_events.record(
                ref, "Normal", "RegisteredNode", f"Node {name} event: Registered Node {name} in Controller"
            )
            await self._mark_reachable(name, node)
        for name in self._known_nodes - names:
            self._known_nodes.discard(name)
            self._node_events.record(
                ObjectReference("Node", "", name, ""),
                "Normal",
                "RemovingNode",
                f"Node {name} event: Removing Node {name} from Controller",
            )

    async def _mark_reachable(self, name: str, node: JsonObj) -> None:
        """`markNodeAsReachable`: the node's NoExecute unreachable / not-ready taints removed, out of its zone's
        queue."""
        self._zones.tainter(evictionzones.zone_key(node), time.monotonic()).remove(name)
        taints = nodelifecycle.reachable_taints(node)
        if taints is None:
            return
        patch = {"metadata": {"resourceVersion": meta_of(node).get("resourceVersion")}, "spec": {"taints": taints}}
        try:
            await rest.patch(self.http, f"/api/v1/nodes/{name}", patch)
        except (NotFound, Conflict):
            return  # gone, or changed: the next pass looks again
        except KubeApiError as err:
            log.warning("node lifecycle: cannot remove the NoExecute taints of node %s: %s", name, err)

    async def _check_node(self, name: str, node: JsonObj, lease: JsonObj | None, stamp: str, now: float) -> JsonObj:
        """One node of `monitorNodeHealth` (`tryUpdateNodeHealth`, then `processTaintBaseEviction` on the Ready
        condition as observed before this pass, as upstream: a node that just went `Unknown` is queued for its
        NoExecute taint on the next pass). Returns the node as it now is. Writes carry the informer copy's
        resourceVersion (409 when the node changed since, e.g. its kubelet just reported Ready: the next pass sees
        it)."""
        view = node
        version = meta_of(node).get("resourceVersion")
        if self._probes.silent(name, node, lease, now, self.node_monitor_grace_period):
            conditions = nodelifecycle.unknown_conditions(node, stamp)
            if conditions is not None:
                patch = {"metadata": {"resourceVersion": version}, "status": {"conditions": conditions}}
                written = await rest.patch(self.http, f"/api/v1/nodes/{name}/status", patch)
                version = meta_of(written).get("resourceVersion")
                log.info("node %s: kubelet stopped posting node status; conditions Unknown", name)
                self._node_events.record(
                    ObjectReference("Node", "", name, str(meta_of(node).get("uid") or "")),
                    "Normal",
                    "NodeNotReady",
                    f"Node {name} status is now: NodeNotReady",
                )
                view = {**node, "status": {**(node.get("status") or {}), "conditions": conditions}}
        if nodelifecycle.ready_status(view) == "Unknown":  # its pods, those bound since too (`MarkPodsNotReady`)
            for pod in [p for p in self.pods.store.values() if (p.get("spec") or {}).get("nodeName") == name]:
                not_ready = nodelifecycle.pod_not_ready_status(pod, stamp)
                if not_ready is not None:
                    with contextlib.suppress(NotFound):
                        path = f"{_pod_path(pod)}/status"
                        await rest.patch(self.http, path, not_ready, content_type=STRATEGIC_MERGE_PATCH)
        if nodelifecycle.ready_condition(view) is None:
            return view  # never reported, still within its startup grace: nothing to decide yet
        observed = nodelifecycle.ready_status(node)
        tainter = self._zones.tainter(evictionzones.zone_key(node), now)
        if observed == "True":
            await self._mark_reachable(name, {**view, "metadata": {**meta_of(view), "resourceVersion": version}})
        else:
            own, opposite = (
                (nodelifecycle.UNREACHABLE, nodelifecycle.NOT_READY)
                if observed == "Unknown"
                else (nodelifecycle.NOT_READY, nodelifecycle.UNREACHABLE)
            )
            if nodelifecycle.has_taint(node, opposite, "NoExecute"):  # swapped at once, not rate limited
                taints = nodelifecycle.no_execute_swap(node, stamp)
                if taints is not None:
                    patch = {"metadata": {"resourceVersion": version}, "spec": {"taints": taints}}
                    await rest.patch(self.http, f"/api/v1/nodes/{name}", patch)
            else:  # `markNodeForTainting`
                if not nodelifecycle.has_taint(node, own, "NoExecute"):
                    tainter.remove(name)
                tainter.add(name, now)
        return view

    async def _sync_node_taints(self, name: str) -> None:
        """`doNoScheduleTaintingPass` on a node update: its NoSchedule taints follow its conditions and
        `spec.unschedulable`."""
        node = self.nodes.store.get(name)
        if node is None:
            return
        taints = nodelifecycle.no_schedule_taints(node, _utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"))
        if taints is None:
            return
        patch = {"metadata": {"resourceVersion": meta_of(node).get("resourceVersion")}, "spec": {"taints": taints}}
        with contextlib.suppress(NotFound, Conflict):  # gone, or changed: its update event brings it back
            await rest.patch(self.http, f"/api/v1/nodes/{name}", patch)

    async def _taint_failed_nodes(self) -> None:
        """`doNoExecuteTaintingPass`, every `EVICTION_PERIOD`: each zone's queue hands out the nodes to taint as its
        rate allows; a node Ready by then is let go, a failed write is retried."""
        while True:
            await asyncio.sleep(evictionzones.EVICTION_PERIOD)
            now = time.monotonic()
            for _, queue in self._zones.zones():
                while (name := queue.due(now)) is not None:
                    node = self.nodes.store.get(name)
                    if node is None or nodelifecycle.ready_status(node) == "True":
                        queue.done(name)
                        continue
                    if nodelifecycle.ready_condition(node) is None:
                        queue.retry(name, now + 0.05)
                        continue
                    if await self._taint_no_execute(name, node):
                        queue.done(name)
                    else:
                        queue.retry(name, now)

    async def _taint_no_execute(self, name: str, node: JsonObj) -> bool:
        """`SwapNodeControllerTaint` for one node off the queue; False when the write failed."""
        taints = nodelifecycle.no_execute_swap(node, _utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"))
        if taints is None:
            return True
        patch = {"metadata": {"resourceVersion": meta_of(node).get("resourceVersion")}, "spec": {"taints": taints}}
        try:
            await rest.patch(self.http, f"/api/v1/nodes/{name}", patch)
        except NotFound:
            return True
        except KubeApiError as err:
            log.debug("node lifecycle: cannot taint node %s NoExecute: %s; retrying", name, err)
            return False
        log.info("node lifecycle: node %s tainted NoExecute (%s)", name, nodelifecycle.ready_status(node))
        return True

    async def _evict_from_tainted_nodes(self) -> None:
        """The taint eviction controller's `processPodOnNode`, every `EVICTION_CHECK_PERIOD`: each pod on a node
        with NoExecute taints is deleted at once when one is not tolerated, after its smallest `tolerationSeconds`
        otherwise (counted from when this first saw it there), never when its tolerations have none; the deletion
        is cancelled when the taints go. The pod gets the `DisruptionTarget` condition first and a
        `TaintManagerEviction` event."""
        while True:
            await asyncio.sleep(EVICTION_CHECK_PERIOD)
            tainted = {
                name: taints
                for name, node in self.nodes.store.items()
                if (taints := (node.get("spec") or {}).get("taints") or [])
                and any(t.get("effect") == "NoExecute" for t in taints)
            }
            if not tainted:
                self._evictions.clear()
                continue
            now = time.monotonic()
            seen: set[str] = set()
            for pod in list(self.pods.store.values()):
                node = (pod.get("spec") or {}).get("nodeName")
                if node not in tainted or meta_of(pod).get("deletionTimestamp"):
                    continue
                delay = nodelifecycle.eviction_delay(pod.get("spec") or {}, tainted[node])
                if delay is None:
                    continue
                key = object_key(pod)
                seen.add(key)
                deadline = self._evictions.setdefault(key, now + delay)
                if delay == 0 and deadline != math.inf:  # a taint it does not tolerate: at once, whatever was due
                    deadline = now
                if now >= deadline and await self._evict(pod):
                    self._evictions[key] = math.inf  # deleted: not again while the informer catches up
            for key in set(self._evictions) - seen:
                del self._evictions[key]
                spared = self.pods.store.get(key)
                if spared is not None and not meta_of(spared).get("deletionTimestamp"):
                    self._eviction_events.record(
                        _pod_reference(spared), "Normal", "TaintManagerEviction", f"Cancelling deletion of Pod {key}"
                    )

    async def _evict(self, pod: JsonObj) -> bool:
        """`addConditionAndDeletePod`, with the event `emitPodDeletionEvent` sends; False when the pod could not be
        deleted (retried on the next pass)."""
        key = object_key(pod)
        self._eviction_events.record(
            _pod_reference(pod), "Normal", "TaintManagerEviction", f"Marking for deletion Pod {key}"
        )
        path = _pod_path(pod)
        stamp = _utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            await rest.patch(
                self.http, f"{path}/status", nodelifecycle.eviction_status(stamp), content_type=STRATEGIC_MERGE_PATCH
            )
            await rest.delete(self.http, path)
        except NotFound:
            return True
        except KubeApiError as err:
            log.warning("taint eviction: cannot delete pod %s: %s", key, err)
            return False
        log.info("taint eviction: deleted pod %s from tainted node %s", key, pod["spec"]["nodeName"])
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
        plan = plan_statefulset(sts, pods, history, backoff, time.monotonic(), _utcnow())
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
        plan = plan_daemonset(ds, list(self.nodes.store.values()), pods, self._failed_daemon_pods, now, _utcnow())
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
        status = budget_status(budget, pods, self._scale, _utcnow())
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


def _pod_reference(pod: Mapping[str, Any]) -> ObjectReference:
    meta = meta_of(pod)
    return ObjectReference("Pod", str(meta.get("namespace") or ""), str(meta.get("name")), str(meta.get("uid") or ""))


def _pod_path(pod: Mapping[str, Any]) -> str:
    return f"/api/v1/namespaces/{meta_of(pod).get('namespace')}/pods/{meta_of(pod).get('name')}"


def _utcnow() -> datetime:
    return datetime.now(UTC)
