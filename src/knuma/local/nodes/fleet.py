"""Many simulated nodes in one asyncio process: registration, heartbeats, pod lifecycle, PodResources and NRT.

What a kubelet does towards the API server, for every node at once, with shared machinery so that one process
sustains about a thousand nodes:

- **Registration and heartbeats** (`knuma.local.nodes.heartbeats`): Node and Lease objects, every Lease renewed every
  10 s in small evenly spread batches, Node status re-posted every 5 minutes.
- **Pods**: one watch on all pods bound to a node (`spec.nodeName!=`) feeds every node's kubelet, dispatched by
  `spec.nodeName`. A new pod is admitted by that node's kubelet model; its status (Running, or Failed with the
  admission error and a Warning event) and, when admitted, its placement annotations (`sim.knuma.io/numa`,
  `sim.knuma.io/cpus`) go through a bounded pool of writers. A pod with a lifetime annotation
  completes (Succeeded) when it runs out; a pod being deleted stops (`sim.knuma.io/shutdown`, within its grace
  period), releases its resources, and is then deleted for good by its kubelet.
- **Exporter inputs**: per node, a real PodResources gRPC server (optional), the sysfs tree, the KubeletConfiguration
  file and a notify file touched on every change, for `knuma exporter` processes; or NRT published in-process with
  the exporter's builder and publisher (`nrt="in-process"`), at most once per second per node.
- **Restart**: with a state directory, every node keeps a checkpoint of its pods' allocations; a new process restores
  running pods exactly before admitting anything new.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import zlib
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import yaml
from lightkube import AsyncClient

from knuma.api.pod import ContainerKind, Pod, PodError
from knuma.api.types import JsonObj
from knuma.exporter.dra import with_dra_devices, zone_devices
from knuma.exporter.objectwatch import watch_for_deletion
from knuma.exporter.publisher import Publisher, PublishError
from knuma.kube import rest
from knuma.kube.errors import Conflict, KubeApiError, NotFound
from knuma.kube.events import EventRecorder, ObjectReference, timestamp
from knuma.kube.informer import Backoff, Callbacks, Informer, ignore
from knuma.kube.tasks import cancel_and_wait
from knuma.local.nodes.claims import (
    container_claims,
    container_devices,
    uses_claims,
    waiting_reason,
    without_dra_backed,
)
from knuma.local.nodes.heartbeats import Heartbeats
from knuma.local.nodes.kubeletconfig import KUBELET_VERSION, kubelet_configuration
from knuma.local.nodes.layout import NodeFiles
from knuma.local.nodes.nrt import build_options, node_resource_topology
from knuma.local.nodes.podstatus import (
    lifetime_of,
    rejected_status,
    resize_status,
    running_status,
    shutdown_of,
    succeeded_status,
)
from knuma.local.nodes.settings import FleetSettings, FleetStats
from knuma.local.nodes.simulated_kubelet import SimulatedKubelet
from knuma.local.nodes.spec import NodeSpec
from knuma.local.nodes.sysfs import render
from knuma.podresources.server import PodResourcesServer
from knuma.testbed.dra import devices_of, resource_slices
from knuma.testbed.simkubelet import RESIZE_DEFERRED

__all__ = ["Fleet", "FleetSettings", "FleetStats"]

RESIZE_RETRY_FIRST = 30.0
"""`initialRetryDelay` of the kubelet's allocation manager: the first periodic retry of deferred resizes."""
RESIZE_RETRY_PERIOD = 180.0
"""`retryDelay`: the later periodic retries."""

log = logging.getLogger("knuma.local.nodes")

TERMINAL = ("Succeeded", "Failed")
CLAIMS = "/apis/resource.k8s.io/v1/resourceclaims"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"


class _PodEvents:
    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet

    def on_add(self, obj: JsonObj) -> None:
        self.fleet.observe(obj)

    def on_update(self, old: JsonObj, new: JsonObj) -> None:
        self.fleet.observe(new)

    def on_delete(self, obj: JsonObj) -> None:
        self.fleet.forget(obj)


class _ClaimEvents:
    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet

    def on_add(self, obj: JsonObj) -> None:
        self.fleet.claim_changed(obj)

    def on_update(self, old: JsonObj, new: JsonObj) -> None:
        self.fleet.claim_changed(new)

    def on_delete(self, obj: JsonObj) -> None:
        self.fleet.claim_changed({"metadata": obj.get("metadata") or {}})


def _node_annotations(node: JsonObj) -> JsonObj:
    meta = node.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in ("name", "annotations", "resourceVersion") if k in meta}}


class Fleet:
    def __init__(
        self,
        http: httpx2.AsyncClient,
        client: AsyncClient | None,
        nodes: Sequence[NodeSpec],
        settings: FleetSettings = FleetSettings(),
        *,
        on_change: Callable[[str], None] | None = None,
    ) -> None:
        """`http` is a raw client (hot paths: heartbeats, pod status); `client` a lightkube client for the NRT
        publisher (required with `nrt="in-process"`)."""
        if settings.nrt not in ("in-process", "external"):
            raise ValueError(f"nrt must be in-process or external, got {settings.nrt!r}")
        if settings.nrt == "in-process" and client is None:
            raise ValueError("publishing NRT in-process needs a lightkube client")
        self.http = http
        self.client = client
        self.settings = settings
        self.specs = {node.name: node for node in nodes}
        self.kubelets = {node.name: SimulatedKubelet(node) for node in nodes}
        self.stats = FleetStats()
        self.on_change = on_change
        self.ready = asyncio.Event()
        """Set once every node is registered and its running pods restored."""
        self._decided: dict[str, str] = {}
        """pod uid -> node, for pods a kubelet has admitted or rejected (never decided twice)."""
        self._timers: dict[str, asyncio.TimerHandle] = {}
        """Pod uid -> when it completes (`sim.knuma.io/lifetime`)."""
        self._stopping: dict[str, asyncio.TimerHandle] = {}
        """Pod uid -> when the containers of a pod being deleted have stopped."""
        self._writes: list[asyncio.Queue[tuple[str, list[tuple[str, JsonObj]]]]] = [
            asyncio.Queue() for _ in range(max(1, settings.write_concurrency))
        ]
        """One queue per writer; a pod's writes always go to the same one (`_queue`), so they reach the API server in
        the order they were made: a pod that completes at once after it was admitted is Succeeded, not overwritten
        by its Running status written by another writer."""
        self._dirty: set[str] = set()
        self._publishers: dict[str, Publisher] = {}
        self._options = {name: build_options(spec) for name, spec in self.specs.items()}
        self._servers: dict[str, PodResourcesServer] = {}
        self._events = EventRecorder(http, "kubelet", qps=20, burst=50)
        self.heartbeats = Heartbeats(http, self.specs, settings, self.stats, self._events)
        self._files = {
            name: NodeFiles.of(settings.state_dir, settings.sockets_dir or settings.state_dir, name)
            for name in self.specs
            if settings.state_dir is not None
        }
        self._tasks: set[asyncio.Task[Any]] = set()
        self.informer = Informer(
            http, "/api/v1/pods", _PodEvents(self), field_selector="spec.nodeName!=", backoff=Backoff(0.2, 5.0)
        )
        self.claims = Informer(http, CLAIMS, _ClaimEvents(self), backoff=Backoff(0.2, 5.0))
        self.nodes = Informer(
            http,
            "/api/v1/nodes",
            Callbacks(self.node_changed, lambda old, new: self.node_changed(new), ignore),
            backoff=Backoff(0.2, 5.0),
            transform=_node_annotations,
        )
        self._numa_of = {
            name: {device.key: device.numa for device in devices_of(spec.shape)} for name, spec in self.specs.items()
        }
        self._slices = {name: resource_slices(name, spec.shape) for name, spec in self.specs.items() if spec.shape.dra}
        self._claim_pools: dict[str, set[str]] = {}
        """Claim key -> the pools (nodes) its allocation used, to republish their NRT when it is freed."""
        self._waiting: dict[str, str] = {}
        """Pod key -> why it waits for its ResourceClaims (allocated and reserved for it) before admission."""
        self._held_back: dict[str, list[tuple[str, str, list[tuple[str, JsonObj]]]]] = {}
        """Node -> pod writes (key, uid, [(subresource, patch)]) made while its heartbeats are stopped, sent on resume
        to the pod of that uid only."""
        self._held_deletes: dict[str, list[tuple[str, str]]] = {}
        """Node -> final deletes (pod key, uid) of pods whose containers stopped while it was silent."""
        self._deferred: dict[str, set[str]] = {}
        """Node -> keys of running pods whose resize is deferred until room frees up (`_resize`)."""

    # -- run -------------------------------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Register the nodes, restore their pods, then serve until `stop` is set."""
        try:
            self._prepare_files()
            self._start_podresources()
            await self.heartbeats.register()
            await self._publish_slices()
            await self._restore()
            self.ready.set()
            log.info("%d simulated nodes ready", len(self.specs))
            loops = [
                self.heartbeats.run(),
                self._write_statuses(),
                self._flush_changes(),
                self.informer.run(),
                self.claims.run(),
                self.nodes.run(),
                self._retry_resizes_periodically(),
            ]
            if self.settings.nrt == "in-process":
                assert self.client is not None
                loops.append(watch_for_deletion(self.client, self._nrt_gone, names=list(self.specs)))
            for coro in loops:
                self._spawn(coro)
            await stop.wait()
        finally:
            await self._shutdown()

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("simulated nodes: a loop failed", exc_info=task.exception())

    async def _shutdown(self) -> None:
        for handle in [*self._timers.values(), *self._stopping.values()]:
            handle.cancel()
        self._timers.clear()
        self._stopping.clear()
        with contextlib.suppress(asyncio.CancelledError, Exception):  # `_done` has logged a failed loop already
            await cancel_and_wait(list(self._tasks))
        self._flush_sync()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._events.flush(), 2.0)
        for server in self._servers.values():
            server.close()
        self._servers.clear()

    # -- files and PodResources --------------------------------------------------------------------------------------

    def _prepare_files(self) -> None:
        for name, files in self._files.items():
            spec = self.specs[name]
            files.root.mkdir(parents=True, exist_ok=True)
            if self.settings.nrt == "in-process":
                continue  # only `knuma exporter` processes read the sysfs tree and the kubelet configuration
            render(spec.machine.topology(), files.sysfs)
            files.kubelet_config.write_text(yaml.safe_dump(kubelet_configuration(spec), sort_keys=False))
            if not files.notify.exists():
                files.notify.touch()

    def _start_podresources(self) -> None:
        if self.settings.sockets_dir is None:
            return
        self.settings.sockets_dir.mkdir(parents=True, exist_ok=True)
        for name, spec in self.specs.items():
            files = NodeFiles.of(self.settings.state_dir or self.settings.sockets_dir, self.settings.sockets_dir, name)
            server = PodResourcesServer(files.socket, allocatable=spec.machine.allocatable(), max_workers=2)
            self._servers[name] = server.start()

    # -- pods --------------------------------------------------------------------------------------------------------

    async def _restore(self) -> None:
        """Give running pods back the resources their node's checkpoint says they hold, before any admission."""
        checkpoints = {name: self._read_checkpoint(name) for name in self.specs}
        if not any(checkpoints.values()):
            return
        items: list[JsonObj] = []
        params = {"fieldSelector": "spec.nodeName!=", "limit": "500"}
        while True:
            body = await rest.get(self.http, "/api/v1/pods", params=params)
            items += body.get("items") or []
            if not (body.get("metadata") or {}).get("continue"):
                break
            params["continue"] = body["metadata"]["continue"]
        restored = 0
        for obj in items:
            node = (obj.get("spec") or {}).get("nodeName")
            kubelet = self.kubelets.get(node or "")
            checkpoint = checkpoints.get(node or "")
            if kubelet is None or not checkpoint or (obj.get("status") or {}).get("phase") != "Running":
                continue
            if (obj.get("metadata") or {}).get("deletionTimestamp"):
                continue
            try:
                pod = Pod.from_manifest(without_dra_backed(obj)).as_allocated  # what it holds, not a resize pending
            except PodError:
                continue
            if kubelet.restore(pod, checkpoint):
                self._decided[pod.uid] = kubelet.name
                self._schedule_completion(obj, pod, kubelet.name)
                self._mark(kubelet.name)
                restored += 1
        if restored:
            log.info("restored %d running pods from node checkpoints", restored)

    def _read_checkpoint(self, name: str) -> Mapping[str, Any] | None:
        files = self._files.get(name)
        if files is None or not files.checkpoint.is_file():
            return None
        try:
            data = json.loads(files.checkpoint.read_text())
        except (OSError, ValueError) as err:
            log.warning("node %s: ignoring unreadable checkpoint %s: %s", name, files.checkpoint, err)
            return None
        return data if isinstance(data, Mapping) else None

    def node_changed(self, node: JsonObj) -> None:
        """A Node's annotations changed: its heartbeats stop or resume (`Heartbeats.node_changed`). A silent node's
        kubelet is cut off from the API server: it neither sees new pods or deletions nor writes (`_write`); its
        pods keep running. When it comes back, what it held back is written and its pods are looked at again (a
        pod deleted meanwhile stops now, as a kubelet that reconnects finds it being deleted)."""
        if not self.heartbeats.node_changed(node):
            return
        name = str((node.get("metadata") or {}).get("name"))
        for key, uid, writes in self._held_back.pop(name, []):
            current = self.informer.store.get(key)
            if current is not None and (current.get("metadata") or {}).get("uid") == uid:
                self._queue(key).put_nowait((key, writes))
        for key, uid in self._held_deletes.pop(name, []):
            self._spawn(self._delete_stopped(key, uid))
        for obj in list(self.informer.store.values()):
            if (obj.get("spec") or {}).get("nodeName") == name:
                self.observe(obj)
                self._report_ready(name, obj)
        self._mark(name)

    def _report_ready(self, node: str, obj: JsonObj) -> None:
        """A running pod of a node that comes back whose Ready condition the node lifecycle controller turned
        `False` meanwhile is reported Ready again, as the kubelet's status manager writes back the status it holds
        when the API server's differs."""
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        held = self.kubelets[node].held.get(key)
        if held is None or held.uid != meta.get("uid") or meta.get("deletionTimestamp"):
            return
        conditions = [dict(c) for c in (obj.get("status") or {}).get("conditions") or [] if isinstance(c, Mapping)]
        stale = [c for c in conditions if c.get("type") in ("Ready", "ContainersReady") and c.get("status") != "True"]
        if not stale:
            return
        now = timestamp()
        for condition in stale:
            condition.update(status="True", lastTransitionTime=now)
        self._write(node, key, str(meta.get("uid")), [("status", {"status": {"conditions": conditions}})])

    def _write(self, node: str, key: str, uid: str, writes: list[tuple[str, JsonObj]]) -> None:
        """Queue pod writes, or hold them back while the node is silent."""
        if node in self.heartbeats.stopped:
            self._held_back.setdefault(node, []).append((key, uid, writes))
        else:
            self._queue(key).put_nowait((key, writes))

    def _queue(self, key: str) -> asyncio.Queue[tuple[str, list[tuple[str, JsonObj]]]]:
        """The writer queue of the pod `key`: the same for every write of the pod."""
        return self._writes[zlib.crc32(key.encode()) % len(self._writes)]

    def observe(self, obj: JsonObj) -> None:
        """A pod bound to some node was added or changed."""
        meta = obj.get("metadata") or {}
        node = (obj.get("spec") or {}).get("nodeName") or ""
        kubelet = self.kubelets.get(node)
        if kubelet is None or node in self.heartbeats.stopped:
            return
        uid = str(meta.get("uid") or "")
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        phase = (obj.get("status") or {}).get("phase")
        if meta.get("deletionTimestamp"):
            self._terminate(obj, kubelet, key, uid)
            return
        if phase in TERMINAL:
            self._release(kubelet, key, uid)
            return
        if uid in self._decided:
            held = kubelet.held.get(key)
            if phase == "Running" and held is not None and held.uid == uid:
                self._resize(obj, kubelet, key)
            return
        try:
            pod = Pod.from_manifest(without_dra_backed(obj))  # DRA-backed extended resources are the claim's
        except PodError as err:
            log.warning("node %s: cannot run pod %s: %s", node, key, err)
            return
        devices = None
        dynamic = None
        if uses_claims(obj):  # spec.resourceClaims, or the claim of DRA-backed extended resources
            namespace = str(meta.get("namespace"))
            claims = {
                str((c.get("metadata") or {}).get("name")): c
                for c in self.claims.store.values()
                if (c.get("metadata") or {}).get("namespace") == namespace
            }
            waiting = waiting_reason(obj, claims)
            if waiting:
                if self._waiting.get(key) != waiting:
                    log.info("node %s: pod %s waits: %s", node, key, waiting)
                self._waiting[key] = waiting
                return
            self._waiting.pop(key, None)
            devices = container_devices(obj, claims, node, self._numa_of[node])
            dynamic = container_claims(obj, claims, node)
        self._decided[uid] = node
        result = kubelet.admit(pod, devices, dynamic)
        now = datetime.now(UTC)
        writes: list[tuple[str, JsonObj]] = []
        if result.admitted:
            held = kubelet.held[pod.key]
            writes.append(("", {"metadata": {"annotations": held.annotations()}}))
            status = running_status(obj, pod, kubelet.spec.internal_ip, held.pod_ip, now)
            self.stats.admitted += 1
            self._mark(node)
            self._schedule_completion(obj, pod, node, started=now)
            log.debug("node %s admitted %s on NUMA %s", node, key, held.numa_ids())
        else:
            status = rejected_status(obj, pod, result.reason, result.message, now, KUBELET_VERSION)
            self.stats.rejected += 1
            ref = ObjectReference("Pod", pod.namespace, pod.name, pod.uid)
            self._events.record(ref, "Warning", result.reason, result.message)
            log.info("node %s rejected %s: %s: %s", node, key, result.reason, result.message)
        self._write(node, key, uid, [*writes, ("status", {"status": status})])

    def _resize(self, obj: JsonObj, kubelet: SimulatedKubelet, key: str) -> None:
        """A running pod whose spec asks other resources than it was allocated (in-place resize, `kubectl patch pod
        --subresource resize`): the kubelet's `handlePodResourcesResize` allocates them, or marks the resize
        `PodResizePending` as infeasible or deferred (retried when a pod on the node leaves, `_retry_resizes`); a
        spec changed back clears the condition. Writes only what changes, so its own status write ends here."""
        try:
            desired = Pod.from_manifest(without_dra_backed(obj))
        except PodError:
            return
        desired = replace(desired, allocated={}, actuated={}, resize_infeasible=False)  # the spec alone
        node = kubelet.name
        conditions = (obj.get("status") or {}).get("conditions") or []
        pending = next((c for c in conditions if c.get("type") == "PodResizePending"), None)
        if _requests(desired) == _requests(kubelet.model.running[key].pod):
            self._deferred.get(node, set()).discard(key)
            if pending is not None:
                self._write(node, key, desired.uid, [("status", {"status": resize_status(obj, "", "", _now())})])
            return
        result = kubelet.model.resize(desired)
        if result.admitted:
            self._deferred.get(node, set()).discard(key)
            self._mark(node)
            log.info("node %s resized %s", node, key)
            self._write(node, key, desired.uid, [("status", {"status": resize_status(obj, "", "", _now())})])
            return
        if result.reason == RESIZE_DEFERRED:
            self._deferred.setdefault(node, set()).add(key)
        if pending is not None and (pending.get("reason"), pending.get("message")) == (result.reason, result.message):
            return
        ref = ObjectReference("Pod", desired.namespace, desired.name, desired.uid)
        self._events.record(ref, "Warning", f"Resize{result.reason}", f"Pod resize {result.reason}: {result.message}")
        log.info("node %s: resize of %s %s: %s", node, key, result.reason, result.message)
        status = resize_status(obj, result.reason, result.message, _now())
        self._write(node, key, desired.uid, [("status", {"status": status})])

    async def _retry_resizes_periodically(self) -> None:
        """The allocation manager's ticker (`Run`): deferred resizes are tried again 30 s after start, then every
        3 minutes, whatever happened meanwhile."""
        delay = RESIZE_RETRY_FIRST
        while True:
            await asyncio.sleep(delay)
            delay = RESIZE_RETRY_PERIOD
            for node in sorted(self._deferred):
                if node not in self.heartbeats.stopped:
                    self._retry_resizes(node)

    def _retry_resizes(self, node: str) -> None:
        """`node`'s deferred resizes tried again: a pod left it (the allocation manager's `RetryPendingResizes` on
        `pods_removed`), or the periodic retry is due."""
        kubelet = self.kubelets[node]
        for key in sorted(self._deferred.get(node, ())):
            obj = self.informer.store.get(key)
            held = kubelet.held.get(key)
            if obj is None or held is None or held.uid != (obj.get("metadata") or {}).get("uid"):
                self._deferred[node].discard(key)
                continue
            self._resize(obj, kubelet, key)

    def claim_changed(self, claim: JsonObj) -> None:
        """A ResourceClaim changed: pods of its namespace waiting for their claims are looked at again; the NRT of
        nodes whose devices it holds (or held) is published again (its DRA devices, see `knuma.exporter.dra`)."""
        results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        key = f"{(claim.get('metadata') or {}).get('namespace')}/{(claim.get('metadata') or {}).get('name')}"
        pools = {str(r.get("pool")) for r in results}
        for node in (pools | self._claim_pools.pop(key, set())) & set(self._slices):
            self._mark(node)
        if pools:
            self._claim_pools[key] = pools
        namespace = (claim.get("metadata") or {}).get("namespace")
        for key in [k for k in self._waiting if k.partition("/")[0] == namespace]:
            pod = self.informer.store.get(key)
            if pod is None:
                self._waiting.pop(key, None)
            else:
                self.observe(pod)

    async def _publish_slices(self) -> None:
        """The simulated DRA drivers publish their ResourceSlices (created, or replaced when they differ)."""
        for name, spec in self.specs.items():
            for body in resource_slices(name, spec.shape):
                path = f"{SLICES}/{body['metadata']['name']}"
                try:
                    try:
                        current: JsonObj | None = await rest.get(self.http, path)
                    except NotFound:
                        current = None
                    if current is None:
                        await rest.post(self.http, SLICES, body)
                    elif current.get("spec") != body["spec"]:
                        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                        await rest.put(self.http, path, body)
                except KubeApiError as err:
                    if err.status is None:
                        raise  # no answer: as any other write of the fleet
                    log.warning("node %s: cannot publish ResourceSlice: %s", name, err)

    def forget(self, obj: JsonObj) -> None:
        """A pod was deleted."""
        meta = obj.get("metadata") or {}
        self._waiting.pop(f"{meta.get('namespace')}/{meta.get('name')}", None)
        uid = str(meta.get("uid") or "")
        node = self._decided.pop(uid, None) or (obj.get("spec") or {}).get("nodeName") or ""
        kubelet = self.kubelets.get(node)
        if kubelet is not None:
            self._release(kubelet, f"{meta.get('namespace')}/{meta.get('name')}", uid)

    def _terminate(self, obj: JsonObj, kubelet: SimulatedKubelet, key: str, uid: str) -> None:
        """A pod being deleted: its containers stop (after `sim.knuma.io/shutdown`, at most when its grace period
        ends), its resources are released, then the kubelet deletes it with a grace period of 0, as the kubelet's
        status manager does once a deleted pod's containers are gone (`canBeDeleted`, then `Delete` with
        `GracePeriodSeconds: 0` and the pod's UID as precondition). A pod whose deletion has no grace period left
        (finished, or held only by finalizers) is just released."""
        meta = obj.get("metadata") or {}
        if not meta.get("deletionGracePeriodSeconds"):
            self._release(kubelet, key, uid)
            return
        held = kubelet.held.get(key)
        running = held is not None and held.uid == uid
        remaining = (_parse_time(str(meta["deletionTimestamp"])) - datetime.now(UTC)).total_seconds()
        try:
            shutdown = shutdown_of(obj) if running else 0.0
        except ValueError as err:
            log.warning("pod %s: %s; its containers stop at once", key, err)
            shutdown = 0.0
        loop = asyncio.get_running_loop()
        due = loop.time() + max(0.0, min(shutdown, remaining))
        current = self._stopping.get(uid)
        if current is not None:
            if current.when() <= due:
                return  # already stopping, no later than this (a shorter grace period moves the deadline earlier)
            current.cancel()
        timer = self._timers.pop(uid, None)  # a terminating pod no longer completes on its own
        if timer is not None:
            timer.cancel()
        self._stopping[uid] = loop.call_at(due, self._stopped, kubelet, key, uid)

    def _stopped(self, kubelet: SimulatedKubelet, key: str, uid: str) -> None:
        self._stopping.pop(uid, None)
        self._release(kubelet, key, uid)
        node = kubelet.spec.name
        if node in self.heartbeats.stopped:
            self._held_deletes.setdefault(node, []).append((key, uid))
        else:
            self._spawn(self._delete_stopped(key, uid))

    async def _delete_stopped(self, key: str, uid: str) -> None:
        """The final delete, retried (backing off to 10 s) for as long as the pod is there, as the kubelet's status
        manager retries on every sync: an API server that is away for a while does not leave the pod Terminating."""
        namespace, _, name = key.partition("/")
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
        delay = 0.2
        while True:
            try:
                await rest.delete(self.http, f"/api/v1/namespaces/{namespace}/pods/{name}", body=body)
                return
            except (NotFound, Conflict):
                return  # gone already, or another pod of that name now
            except KubeApiError as err:
                log.log(logging.DEBUG if err.status is None else logging.WARNING, "pod %s: %s; retrying", key, err)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10.0)
            current = self.informer.store.get(key)
            if current is not None and (current.get("metadata") or {}).get("uid") != uid:
                return  # another pod of that name now

    def _release(self, kubelet: SimulatedKubelet, key: str, uid: str) -> None:
        stopping = self._stopping.pop(uid, None)
        if stopping is not None:
            stopping.cancel()
        timer = self._timers.pop(uid, None)
        if timer is not None:
            timer.cancel()
        held = kubelet.held.get(key)
        if held is not None and held.uid == uid and kubelet.release(key):
            self.stats.released += 1
            self._mark(kubelet.name)
            self._retry_resizes(kubelet.name)

    def _schedule_completion(self, obj: JsonObj, pod: Pod, node: str, started: datetime | None = None) -> None:
        try:
            lifetime = lifetime_of(obj)
        except ValueError as err:
            log.warning("pod %s: %s; it runs until deleted", pod.key, err)
            return
        if lifetime is None:
            return
        if started is None:
            start_time = (obj.get("status") or {}).get("startTime")
            started = _parse_time(start_time) if start_time else datetime.now(UTC)
        remaining = max(0.0, lifetime - (datetime.now(UTC) - started).total_seconds())
        loop = asyncio.get_running_loop()
        self._timers[pod.uid] = loop.call_later(remaining, self._complete, obj, pod, node)

    def _complete(self, obj: JsonObj, pod: Pod, node: str) -> None:
        self._timers.pop(pod.uid, None)
        kubelet = self.kubelets[node]
        held = kubelet.held.get(pod.key)
        if held is None or held.uid != pod.uid:
            return
        kubelet.release(pod.key)
        self.stats.completed += 1
        self._mark(node)
        self._retry_resizes(node)
        current = self.informer.store.get(pod.key) or obj  # the latest copy carries the startTime we wrote
        self._write(node, pod.key, pod.uid, [("status", {"status": succeeded_status(current, pod, datetime.now(UTC))})])

    async def _write_statuses(self) -> None:
        async def worker(queue: asyncio.Queue[tuple[str, list[tuple[str, JsonObj]]]]) -> None:
            while True:
                key, writes = await queue.get()
                namespace, _, name = key.partition("/")
                for subresource, patch in writes:
                    path = f"/api/v1/namespaces/{namespace}/pods/{name}" + (f"/{subresource}" if subresource else "")
                    if not await self._patch(path, patch):
                        break

        await asyncio.gather(*(worker(queue) for queue in self._writes))

    async def _patch(self, path: str, patch: JsonObj) -> bool:
        """A merge patch with a few retries; False when the pod is gone or the write kept failing."""
        for attempt in range(3):
            try:
                await rest.patch(self.http, path, patch)
            except NotFound:
                return False
            except KubeApiError as err:
                log.log(logging.DEBUG if err.status is None else logging.WARNING, "%s", err)
                await asyncio.sleep(0.2 * 2**attempt)
                continue
            self.stats.status_writes += path.endswith("/status")
            return True
        self.stats.status_failures += 1
        return False

    # -- what changed: PodResources, notify files, checkpoints, NRT -------------------------------------------------

    def _mark(self, node: str) -> None:
        self._dirty.add(node)
        if self.on_change is not None:
            self.on_change(node)

    def _flush_sync(self) -> set[str]:
        """Update PodResources servers, notify files and checkpoints of the nodes that changed; return them."""
        dirty, self._dirty = self._dirty, set()
        for name in dirty:
            kubelet = self.kubelets[name]
            server = self._servers.get(name)
            if server is not None:
                server.set_pods(kubelet.podresources())
            files = self._files.get(name)
            if files is not None:
                _write_atomically(files.checkpoint, json.dumps(kubelet.checkpoint(), indent=1))
                files.notify.touch()
        return dirty

    async def _flush_changes(self) -> None:
        loop = asyncio.get_running_loop()
        last_resync = loop.time()
        limit = asyncio.Semaphore(self.settings.write_concurrency)
        if self.settings.nrt == "in-process":
            await self._publish_all(self.specs, limit)
        while True:
            await asyncio.sleep(self.settings.nrt_min_interval)
            dirty = self._flush_sync()
            if self.settings.nrt != "in-process":
                continue
            if loop.time() - last_resync >= self.settings.nrt_resync_interval:
                dirty = set(self.specs)
                last_resync = loop.time()
            elif self.settings.nrt_periodic_only:
                continue
            await self._publish_all(dirty, limit)

    def _nrt_gone(self, name: str | None) -> None:
        """A published NRT object was deleted (None: all of them, the CRD was re-created): publish again."""
        for node in self.specs if name is None else [name] if name in self.specs else []:
            publisher = self._publishers.get(node)
            if publisher is not None:
                publisher.forget()
            self._dirty.add(node)

    async def _publish_all(self, names: Iterable[str], limit: asyncio.Semaphore) -> None:
        """Publish the NRT of `names`; a silent node's waits until it comes back (`node_changed` marks it then)."""

        async def one(name: str) -> None:
            async with limit:
                await self._publish(name)

        await asyncio.gather(*(one(name) for name in sorted(set(names) - self.heartbeats.stopped)))

    async def _publish(self, name: str) -> None:
        assert self.client is not None
        publisher = self._publishers.get(name)
        if publisher is None:
            publisher = self._publishers[name] = Publisher(self.client, name)
        nrt = node_resource_topology(self.kubelets[name], self._options[name])
        if self._slices.get(name):  # knuma's NRT extension: DRA devices per zone, free or allocated
            nrt = with_dra_devices(nrt, zone_devices(self._slices[name], self.claims.store.values(), name))
        try:
            await publisher.publish(nrt)
            self.stats.nrt_publishes += 1
        except PublishError as err:
            self.stats.nrt_failures += 1
            self._dirty.add(name)  # try again next round
            log.warning("%s", err)


def _now() -> datetime:
    return datetime.now(UTC)


def _requests(pod: Pod) -> list[tuple[str, dict[str, int]]]:
    """The requests of a pod's resizable containers (app and sidecar) by name: what a resize changes."""
    return sorted((c.name, dict(c.requests)) for c in pod.all_containers if c.kind is not ContainerKind.INIT)


def _parse_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
