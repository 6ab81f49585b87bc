"""The node lifecycle controller's loops, as kube-controller-manager runs them (`node_lifecycle_controller.go`).

Three loops over the manager's Node, Lease and Pod informers; what they decide is pure
(`knuma.local.controllers.nodelifecycle`, `knuma.local.controllers.evictionzones`), this module does the I/O:

- `monitorNodeHealth` every `--node-monitor-period`: a silent kubelet's node gets `Unknown` conditions and its pods
  `Ready=False`; a node seen not Ready is queued for its NoExecute taint (or swapped at once between unreachable and
  not-ready), a Ready one loses it; then the zones' health sets the tainting rates (`handleDisruption`), and when no
  node of any zone is Ready every NoExecute taint is removed (master disruption mode).
- `doNoExecuteTaintingPass` every `NodeEvictionPeriod`: the zones' rate-limited queues hand out the nodes to taint.
- `doNoScheduleTaintingPass` on every node update (`sync_no_schedule_taints`, run from the manager's queue).

The tainting pass and the disruption decision hold one lock, so a taint written from a queue never lands after master
disruption mode removed the taints. Taint removals re-read the node and retry on a conflict, as
`controller.RemoveTaintOffNode` does (`RetryOnConflict`); a node whose health cannot be written after
`HEALTH_UPDATE_RETRIES` fresh reads is left out of the pass, as `monitorNodeHealth` skips it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Any

import httpx2

from knuma.api.taints import NO_EXECUTE
from knuma.api.types import STRATEGIC_MERGE_PATCH, JsonObj, meta_of
from knuma.kube import rest
from knuma.kube.errors import Conflict, KubeApiError, NotFound
from knuma.kube.events import EventRecorder, ObjectReference, timestamp
from knuma.kube.informer import Informer
from knuma.local.controllers import evictionzones, nodelifecycle
from knuma.local.controllers.refs import pod_path

__all__ = ["HEALTH_UPDATE_RETRIES", "NodeLifecycleController"]

log = logging.getLogger("knuma.local.controllers")

HEALTH_UPDATE_RETRIES = 5
"""`NodeHealthUpdateRetry`: fresh reads of a node whose health write met a conflict before the pass skips it (and
`RetryOnConflict`'s attempts for a taint removal)."""


class NodeLifecycleController:
    def __init__(
        self,
        http: httpx2.AsyncClient,
        nodes: Informer,
        leases: Informer,
        pods: Informer,
        *,
        monitor_period: float = nodelifecycle.MONITOR_PERIOD,
        grace_period: float = nodelifecycle.MONITOR_GRACE_PERIOD,
        startup_grace_period: float = nodelifecycle.STARTUP_GRACE_PERIOD,
        eviction_rates: evictionzones.EvictionRates | None = None,
    ) -> None:
        self.http = http
        self.nodes, self.leases, self.pods = nodes, leases, pods
        self.monitor_period = monitor_period
        self.grace_period = grace_period
        self.startup_grace_period = startup_grace_period
        self.probes = nodelifecycle.HealthProbes()
        self.zones = evictionzones.ZoneEvictions(eviction_rates or evictionzones.EvictionRates())
        self._known: dict[str, str] = {}
        """Nodes seen so far -> their UID (`knownNodeSet`)."""
        self._tainting = asyncio.Lock()
        """Held by the tainting pass and by the disruption decision with its taint removals."""
        self.events = EventRecorder(http, "node-controller")

    async def run(self) -> None:
        """The monitor and tainting loops, until cancelled (the informers are the manager's, synced before)."""
        await asyncio.gather(self._monitor_nodes(), self._taint_failed_nodes())

    # -- monitorNodeHealth -------------------------------------------------------------------------------------------

    async def _monitor_nodes(self) -> None:
        while True:
            await asyncio.sleep(self.monitor_period)
            await self.monitor_once()

    async def monitor_once(self) -> None:
        """One `monitorNodeHealth` pass."""
        stamp = timestamp()
        now = time.monotonic()
        self.probes.forget(self.nodes.store)
        nodes = list(self.nodes.store.items())
        await self._observe_nodes(nodes)
        zones: dict[str, list[str]] = {}
        for name, node in nodes:
            current = await self._update_health(name, node, stamp, now)
            if current is not None and not evictionzones.excluded(current):
                zones.setdefault(evictionzones.zone_key(current), []).append(nodelifecycle.ready_status(current))
        async with self._tainting:
            transition = self.zones.handle(zones, now)
            if transition is evictionzones.Transition.ENTERED_MASTER_DISRUPTION:
                log.warning(
                    "node lifecycle: no node is Ready in any zone; entering master disruption mode: NoExecute "
                    "taints removed, no node tainted until one is Ready again"
                )
                for name in list(self.nodes.store):
                    await self._mark_reachable(name, None)
            elif transition is evictionzones.Transition.EXITED_MASTER_DISRUPTION:
                log.info("node lifecycle: some nodes are Ready; exiting master disruption mode")
                self.probes.restart(now)

    async def _observe_nodes(self, nodes: list[tuple[str, JsonObj]]) -> None:
        """`classifyNodes` and what follows: a node seen for the first time is registered (event) and loses any
        NoExecute taint a previous controller left (`markNodeAsReachable`): it is tainted again through the queue if
        it is still not Ready; a node gone is forgotten (event)."""
        names = {name for name, _ in nodes}
        for name, node in nodes:
            if name in self._known:
                continue
            uid = str(meta_of(node).get("uid") or "")
            self._known[name] = uid
            message = f"Node {name} event: Registered Node {name} in Controller"
            self.events.record(ObjectReference("Node", "", name, uid), "Normal", "RegisteredNode", message)
            await self._mark_reachable(name, node)
        for name in set(self._known) - names:
            uid = self._known.pop(name)
            message = f"Node {name} event: Removing Node {name} from Controller"
            self.events.record(ObjectReference("Node", "", name, uid), "Normal", "RemovingNode", message)

    async def _update_health(self, name: str, node: JsonObj, stamp: str, now: float) -> JsonObj | None:
        """`tryUpdateNodeHealth` with `monitorNodeHealth`'s retries: a conflict (the node changed since the informer's
        copy) reads it again, up to `HEALTH_UPDATE_RETRIES` times; None when it is gone or cannot be written (left
        out of this pass's zone health, as upstream)."""
        lease = self.leases.store.get(f"{nodelifecycle.LEASE_NAMESPACE}/{name}")
        for _ in range(HEALTH_UPDATE_RETRIES):
            try:
                return await self._check_node(name, node, lease, stamp, now)
            except NotFound:
                return None
            except Conflict:
                try:
                    node = await rest.get(self.http, f"/api/v1/nodes/{name}")
                except KubeApiError:
                    return None
            except KubeApiError as err:
                log.warning("node lifecycle: cannot update node %s: %s", name, err)
                return None
        log.warning("node lifecycle: node %s kept changing; skipped this pass", name)
        return None

    async def _check_node(self, name: str, node: JsonObj, lease: JsonObj | None, stamp: str, now: float) -> JsonObj:
        """One node of `monitorNodeHealth`: its health written (`Conflict` when the node changed since `node` was
        read: the caller reads it again), its pods marked not Ready, then `processTaintBaseEviction` on the Ready
        condition as observed before this pass, as upstream (a node that just went `Unknown` is queued for its
        NoExecute taint on the next pass). Returns the node as it now is."""
        view = node
        version = meta_of(node).get("resourceVersion")
        if self.probes.silent(name, node, lease, now, self.grace_period, self.startup_grace_period):
            conditions = nodelifecycle.unknown_conditions(node, stamp)
            if conditions is not None:
                patch = {"metadata": {"resourceVersion": version}, "status": {"conditions": conditions}}
                written = await rest.patch(self.http, f"/api/v1/nodes/{name}/status", patch)
                version = meta_of(written).get("resourceVersion")
                log.info("node %s: kubelet stopped posting node status; conditions Unknown", name)
                self.events.record(
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
                        await rest.patch(
                            self.http, f"{pod_path(pod)}/status", not_ready, content_type=STRATEGIC_MERGE_PATCH
                        )
        if nodelifecycle.ready_condition(view) is None:
            return view  # never reported, still within its startup grace: nothing to decide yet
        current = {**view, "metadata": {**meta_of(view), "resourceVersion": version}}
        await self._taint_base_eviction(name, node, current, now)
        return current

    async def _taint_base_eviction(self, name: str, observed: JsonObj, current: JsonObj, now: float) -> None:
        """`processTaintBaseEviction` on the Ready condition of `observed` (the node as this pass found it): not
        Ready -> the opposite NoExecute taint swapped at once, else queued (`markNodeForTainting`); Ready -> its
        NoExecute taints removed (`markNodeAsReachable`). A failed write is logged and left to the next pass; the
        node still counts in its zone's health."""
        status = nodelifecycle.ready_status(observed)
        if status == "True":
            await self._mark_reachable(name, current)
            return
        own, opposite = (
            (nodelifecycle.UNREACHABLE, nodelifecycle.NOT_READY)
            if status == "Unknown"
            else (nodelifecycle.NOT_READY, nodelifecycle.UNREACHABLE)
        )
        async with self._tainting:
            if nodelifecycle.has_taint(observed, opposite, NO_EXECUTE):  # swapped at once, not rate limited
                taints = nodelifecycle.no_execute_swap(observed, timestamp())
                if taints is not None:
                    patch = {"metadata": {"resourceVersion": meta_of(current).get("resourceVersion")}}
                    try:
                        await rest.patch(self.http, f"/api/v1/nodes/{name}", {**patch, "spec": {"taints": taints}})
                    except KubeApiError as err:
                        log.warning("node lifecycle: cannot swap the NoExecute taint of node %s: %s", name, err)
                return
            tainter = self.zones.tainter(evictionzones.zone_key(observed), now)
            if not nodelifecycle.has_taint(observed, own, NO_EXECUTE):  # `markNodeForTainting`
                tainter.remove(name)
            tainter.add(name, now)

    async def _mark_reachable(self, name: str, node: JsonObj | None) -> None:
        """`markNodeAsReachable`: the node's NoExecute unreachable / not-ready taints removed as
        `controller.RemoveTaintOffNode` does (`node` only to skip a node without them; the write re-reads the node
        on a conflict, `RetryOnConflict`), then out of its zone's queue."""
        for attempt in range(HEALTH_UPDATE_RETRIES):
            if node is None or attempt:
                try:
                    node = await rest.get(self.http, f"/api/v1/nodes/{name}")
                except NotFound:
                    return
                except KubeApiError as err:
                    log.warning("node lifecycle: cannot read node %s: %s", name, err)
                    return
            taints = nodelifecycle.reachable_taints(node)
            if taints is None:
                break
            patch = {"metadata": {"resourceVersion": meta_of(node).get("resourceVersion")}, "spec": {"taints": taints}}
            try:
                await rest.patch(self.http, f"/api/v1/nodes/{name}", patch)
                break
            except NotFound:
                return
            except Conflict:
                continue
            except KubeApiError as err:
                log.warning("node lifecycle: cannot remove the NoExecute taints of node %s: %s", name, err)
                return
        if node is not None:
            self.zones.tainter(evictionzones.zone_key(node), time.monotonic()).remove(name)

    # -- doNoScheduleTaintingPass ------------------------------------------------------------------------------------

    async def sync_no_schedule_taints(self, name: str) -> None:
        """`doNoScheduleTaintingPass` on a node update: its NoSchedule taints follow its conditions and
        `spec.unschedulable`."""
        node = self.nodes.store.get(name)
        if node is None:
            return
        taints = nodelifecycle.no_schedule_taints(node, timestamp())
        if taints is None:
            return
        patch = {"metadata": {"resourceVersion": meta_of(node).get("resourceVersion")}, "spec": {"taints": taints}}
        with contextlib.suppress(NotFound, Conflict):  # gone, or changed: its update event brings it back
            await rest.patch(self.http, f"/api/v1/nodes/{name}", patch)

    # -- doNoExecuteTaintingPass -------------------------------------------------------------------------------------

    async def _taint_failed_nodes(self) -> None:
        while True:
            await asyncio.sleep(evictionzones.EVICTION_PERIOD)
            async with self._tainting:
                await self.taint_once(time.monotonic())

    async def taint_once(self, now: float) -> None:
        """One `doNoExecuteTaintingPass` (the caller holds the lock): each zone's queue hands out the nodes to taint
        as its rate allows; a node Ready by then is let go, one without a Ready condition waits
        `evictionzones.RETRY_WITHOUT_CONDITION`, a failed write is retried."""
        for _, queue in self.zones.zones():
            while (name := queue.due(now)) is not None:
                node = self.nodes.store.get(name)
                if node is None or nodelifecycle.ready_status(node) == "True":
                    queue.done(name)
                elif nodelifecycle.ready_condition(node) is None:
                    queue.retry(name, now + evictionzones.RETRY_WITHOUT_CONDITION)
                elif await self._taint_no_execute(name, node):
                    queue.done(name)
                else:
                    queue.retry(name, now)

    async def _taint_no_execute(self, name: str, node: Mapping[str, Any]) -> bool:
        """`SwapNodeControllerTaint` for one node off the queue; False when the write failed."""
        taints = nodelifecycle.no_execute_swap(node, timestamp())
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
