"""Node registration and heartbeats for many simulated nodes at once.

Each Node object is created (or, on a resumed cluster, its labels and status refreshed), then its Lease in
`kube-node-lease`. Every Lease is renewed every `lease_renew_interval` (10 s, the kubelet's), the renewals spread
evenly over the interval in small batches so a thousand nodes make a steady 100 writes/s rather than bursts; the Node
status heartbeat goes out every `node_status_interval` (5 minutes, `nodeStatusReportFrequency`). Renewals are merge
patches of `renewTime` (no read first); a deleted Lease is created again.

A node annotated `sim.knuma.io/heartbeat: stopped` is silent, as a kubelet cut off from the API server: no Lease
renewal, no status (the node lifecycle controller then marks it `Unknown` and taints it,
`knuma.local.controllers.nodelifecycle`; the fleet holds back the node's other writes, `knuma.local.nodes.fleet`);
when the annotation goes, its Lease is renewed and its status posted at once, as a kubelet that reconnects finds
its node's conditions changed and reports.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import httpx2

from knuma.api.types import JsonObj
from knuma.kube import rest
from knuma.kube.errors import Conflict, KubeApiError, NotFound
from knuma.kube.events import EventRecorder, ObjectReference
from knuma.local.nodes.objects import NODE_LEASE_NAMESPACE, lease_manifest, micro_time, node_conditions, node_manifest
from knuma.local.nodes.settings import FleetSettings, FleetStats
from knuma.local.nodes.spec import NodeSpec

__all__ = ["HEARTBEAT_ANNOTATION", "HEARTBEAT_STOPPED", "Heartbeats", "heartbeat_stopped"]

log = logging.getLogger("knuma.local.nodes")

HEARTBEAT_ANNOTATION = "sim.knuma.io/heartbeat"
HEARTBEAT_STOPPED = "stopped"


def heartbeat_stopped(node: Mapping[str, Any]) -> bool:
    """Whether `node` is annotated `sim.knuma.io/heartbeat: stopped` (its simulated kubelet is cut off)."""
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    return bool(annotations.get(HEARTBEAT_ANNOTATION) == HEARTBEAT_STOPPED)


class Heartbeats:
    def __init__(
        self,
        http: httpx2.AsyncClient,
        specs: Mapping[str, NodeSpec],
        settings: FleetSettings,
        stats: FleetStats,
        events: EventRecorder | None = None,
    ) -> None:
        """`events`: where a value of the annotation that is not understood is also reported, as a Warning Event on
        the Node (`kubectl describe node` shows it; the log line is in the nodes' log file)."""
        self.http = http
        self.events = events
        self.specs = specs
        self.settings = settings
        self.stats = stats
        self.node_uids: dict[str, str] = {}
        self.stopped: set[str] = set()
        """Nodes whose heartbeats are stopped (`HEARTBEAT_ANNOTATION`)."""
        self._resumed: set[asyncio.Task[None]] = set()
        self._refused: dict[str, object] = {}
        """Node -> the annotation value last seen (a value not understood is logged once, not at every update)."""

    def node_changed(self, node: JsonObj) -> bool:
        """Follow a Node's `HEARTBEAT_ANNOTATION`: stop its heartbeats, or resume them with a renewal and a status
        post at once; True when they resume."""
        name = str((node.get("metadata") or {}).get("name") or "")
        if name not in self.specs:
            return False
        annotations = (node.get("metadata") or {}).get("annotations") or {}
        value = annotations.get(HEARTBEAT_ANNOTATION)
        if value not in (None, HEARTBEAT_STOPPED) and self._refused.get(name) != value:
            message = (
                f"annotation {HEARTBEAT_ANNOTATION}={value!r} is not understood ({HEARTBEAT_STOPPED!r} or no "
                "annotation); its heartbeats go on"
            )
            log.warning("node %s: %s", name, message)
            if self.events is not None:  # the kubelet's node reference: its UID is the node's name (`kl.nodeRef`)
                self.events.record(ObjectReference("Node", "", name, name), "Warning", "UnknownHeartbeatValue", message)
        self._refused[name] = value
        if value == HEARTBEAT_STOPPED:
            if name not in self.stopped:
                log.info("node %s: heartbeats stopped (%s)", name, HEARTBEAT_ANNOTATION)
            self.stopped.add(name)
            return False
        if name in self.stopped:
            self.stopped.discard(name)
            log.info("node %s: heartbeats resumed", name)
            task = asyncio.get_running_loop().create_task(self._resume(name))
            self._resumed.add(task)
            task.add_done_callback(self._resumed.discard)
            return True
        return False

    async def _resume(self, name: str, attempts: int = 5) -> None:
        """The Lease renewed and the status posted at once, retried (1, 2, 4 ... s) while the API server refuses: a
        status not posted would leave the node `Unknown` until the next status heartbeat, minutes later."""
        for attempt in range(attempts):
            try:
                await self._renew_lease(name)
                await self._post_node_status(name)
                return
            except KubeApiError as err:
                log.warning("node %s: heartbeat after resuming failed (attempt %d): %s", name, attempt + 1, err)
                await asyncio.sleep(2**attempt)

    async def run(self) -> None:
        """Renew Leases and post Node status until cancelled."""
        await asyncio.gather(
            self._spread(self.settings.lease_renew_interval, self._renew_lease),
            self._spread(self.settings.node_status_interval, self._post_node_status, skip_first=True),
        )

    async def register(self) -> None:
        """Create every Node (or refresh a resumed one) and its Lease."""
        limit = asyncio.Semaphore(self.settings.write_concurrency)

        async def one(spec: NodeSpec) -> None:
            async with limit:
                await self._register_node(spec)

        await asyncio.gather(*(one(spec) for spec in self.specs.values()))

    async def _register_node(self, spec: NodeSpec) -> None:
        manifest = node_manifest(spec)
        try:
            node = await rest.post(self.http, "/api/v1/nodes", manifest)
        except Conflict:  # a resumed cluster: refresh labels and status, keep the object
            patch = {"metadata": {"labels": manifest["metadata"]["labels"]}}
            node = await rest.patch(self.http, f"/api/v1/nodes/{spec.name}", patch)
            self.node_changed(node)
            if spec.name in self.stopped:  # annotated stopped before the restart: silent from the start
                self.node_uids[spec.name] = node["metadata"]["uid"]
                self.stats.registered += 1
                return
            status = {"status": {**manifest["status"], "conditions": node_conditions()}}
            await rest.patch(self.http, f"/api/v1/nodes/{spec.name}/status", status)
        self.node_uids[spec.name] = node["metadata"]["uid"]
        lease = lease_manifest(spec.name, self.node_uids[spec.name])
        path = f"/apis/coordination.k8s.io/v1/namespaces/{NODE_LEASE_NAMESPACE}/leases"
        try:
            await rest.post(self.http, path, lease)
        except Conflict:
            await rest.put(self.http, f"{path}/{spec.name}", lease)
        self.stats.last_renewal[spec.name] = time.monotonic()
        self.stats.registered += 1

    async def _spread(
        self, interval: float, action: Callable[[str], Coroutine[Any, Any, None]], *, skip_first: bool = False
    ) -> None:
        """Run `action(node)` for every node once per `interval`, evenly spread, in batches of `batch_interval`."""
        names = sorted(self.specs)
        loop = asyncio.get_running_loop()
        limit = asyncio.Semaphore(self.settings.write_concurrency)

        async def guarded(name: str) -> None:
            async with limit:
                try:
                    await action(name)
                except KubeApiError as err:
                    log.debug("%s for %s failed: %s", action.__name__, name, err)

        if skip_first:
            await asyncio.sleep(interval)
        pending: list[asyncio.Task[None]] = []
        try:
            while True:
                start = loop.time()
                index = 0
                while index < len(names):
                    due = start + interval * index / len(names)
                    delay = due - loop.time()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    horizon = loop.time() + self.settings.batch_interval
                    while index < len(names) and start + interval * index / len(names) <= horizon:
                        pending.append(loop.create_task(guarded(names[index])))
                        index += 1
                    pending = [t for t in pending if not t.done()]
                if pending:
                    await asyncio.gather(*pending)
                    pending.clear()
                rest = start + interval - loop.time()
                if rest > 0:
                    await asyncio.sleep(rest)
        finally:
            for task in pending:
                task.cancel()

    async def _renew_lease(self, name: str) -> None:
        if name in self.stopped:
            return
        path = f"/apis/coordination.k8s.io/v1/namespaces/{NODE_LEASE_NAMESPACE}/leases/{name}"
        patch = {"spec": {"holderIdentity": name, "renewTime": micro_time()}}
        try:
            try:
                await rest.patch(self.http, path, patch)
            except NotFound:
                if name not in self.node_uids:
                    raise
                lease = lease_manifest(name, self.node_uids[name])
                await rest.post(
                    self.http, f"/apis/coordination.k8s.io/v1/namespaces/{NODE_LEASE_NAMESPACE}/leases", lease
                )
        except KubeApiError as err:
            if err.status is None:
                raise  # no answer at all: `_spread` logs it
            self.stats.lease_failures += 1
            return
        now = time.monotonic()
        previous = self.stats.last_renewal.get(name)
        if previous is not None:
            self.stats.worst_renewal_gap = max(self.stats.worst_renewal_gap, now - previous)
        self.stats.last_renewal[name] = now
        self.stats.lease_renewals += 1

    async def _post_node_status(self, name: str) -> None:
        if name in self.stopped:
            return
        patch = {"status": {"conditions": node_conditions(since=None)}}
        await rest.patch(self.http, f"/api/v1/nodes/{name}/status", patch)
