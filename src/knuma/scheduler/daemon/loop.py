"""`knuma scheduler`: the secondary scheduler daemon — informers, queue, cycle, reserve, bind, events, leadership.

The loop is kube-scheduler's: pop the highest-priority pending pod, decide on the cache's snapshot (pure
`knuma.scheduler.algorithm.decide`), *assume* the pod on the chosen node in the cache at once (so the next cycle sees
its resources taken, on the NUMA zones the kubelet model predicts), and bind in the background. A failed bind forgets
the assumption and retries the pod after its backoff. Informer events keep the cache true: Node and
NodeResourceTopology changes, pods bound by anyone (foreign pods included), pods that terminate or are deleted; those
that can free room move unschedulable pods back to the active queue.

Only the leader schedules. Informers start before the election, so a standby that takes over has a warm cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import signal
import socket
import time
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2

from knuma.api.disruption import DisruptionBudget
from knuma.api.nrt import GROUP
from knuma.api.pod import DRA_NUMA_ANNOTATION, Pod, PodError
from knuma.api.types import MERGE_PATCH, STRATEGIC_MERGE_PATCH, JsonView
from knuma.devices.allocator import with_new_share_ids
from knuma.errors import InvalidInput, OperationFailed
from knuma.kube import rest
from knuma.kube.errors import Conflict, KubeApiError, NotFound
from knuma.kube.events import EventRecorder, ObjectReference, timestamp
from knuma.kube.informer import Callbacks, Informer, ignore
from knuma.kube.leaderelection import LeaderElector, LeaseConfig
from knuma.kube.tasks import cancel_and_wait
from knuma.scheduler.algorithm import Outcome
from knuma.scheduler.cache.interface import NRTCache
from knuma.scheduler.cache.knuma import KnumaCache
from knuma.scheduler.cache.nrt import ClusterCache, pod_key, terminal
from knuma.scheduler.cycle import SchedulingCycle
from knuma.scheduler.daemon.claims import (
    DeviceInformers,
    create_extended_claim,
    delete_claim,
    pre_bind,
    record_extended_claim,
    unreserve_claims,
)
from knuma.scheduler.daemon.heap import FROZEN_HEAP
from knuma.scheduler.daemon.metrics import SchedulerMetrics
from knuma.scheduler.daemon.queue import QueuedPod, SchedulingQueue
from knuma.scheduler.daemon.unsupported import unsupported_constraints
from knuma.scheduler.explain import simulator_annotations
from knuma.scheduler.fast.path import FastPath
from knuma.scheduler.framework.interface import Profile, schedule_one
from knuma.scheduler.framework.postfilter import Candidate
from knuma.scheduler.plugins.binding_conditions import Binding, BindingState, pods_binding_state
from knuma.scheduler.plugins.device_state import DeviceState
from knuma.scheduler.plugins.dra_extended import ExtendedClaim
from knuma.scheduler.plugins.dra_zones import claimed_devices
from knuma.scheduler.plugins.dynamic_resources import DynamicResources
from knuma.scheduler.plugins.dynamic_resources_args import BINDING_TIMEOUT
from knuma.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from knuma.scheduler.plugins.node_resources_fit import NodeResourcesFit
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch

__all__ = ["DaemonSettings", "Scheduler"]

log = logging.getLogger("knuma.scheduler")

NRT_PATH = f"/apis/{GROUP}/v1alpha2/noderesourcetopologies"
PDB_PATH = "/apis/policy/v1/poddisruptionbudgets"


@dataclass(frozen=True)
class DaemonSettings:
    leader_elect: bool = True
    lease: LeaseConfig = field(default_factory=LeaseConfig)
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}_{os.getpid()}")
    initial_backoff: float = 1.0
    max_backoff: float = 10.0
    max_unschedulable: float = 300.0
    bind_concurrency: int = 16
    component: str = "topology-aware-scheduler"
    explain: bool = False
    """Annotate each pod with per-node, per-plugin results (kube-scheduler-simulator keys) before binding."""
    binding_poll: float = 1.0
    """Seconds between PreBind's looks at the claims while devices' binding conditions are pending (the informer's
    copy, no API call; upstream polls its claim cache every 5 s)."""


def _namespace_metadata(obj: Any) -> Any:
    """What the scheduler keeps of a Namespace: its name, labels and resourceVersion."""
    meta = obj.get("metadata") or {}
    keep = {k: meta[k] for k in ("name", "labels", "resourceVersion") if k in meta}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": keep}


class Scheduler:
    def __init__(
        self,
        http: httpx2.AsyncClient,
        profiles: Mapping[str, Profile],
        settings: DaemonSettings = DaemonSettings(),
        metrics: SchedulerMetrics | None = None,
        nrt: NRTCache | None = None,
        writer: rest.AsyncApi | None = None,
    ) -> None:
        """`nrt`: the NRT cache mode the profiles' NUMA plugins report to (`config.load.build_nrt_cache`); knuma's
        own when None. `writer`: the client for the per-pod writes (bindings, events, annotations), normally an
        `ApiSession` (`knuma.kube.client.api_session`), whose requests cost a quarter of `http`'s in CPU, which
        the scheduling cycle shares; `http` when None. The caller closes both."""
        if not profiles:
            raise InvalidInput("the scheduler needs at least one profile")
        self.http = http
        self.writer: rest.AsyncApi = writer or http
        self.profiles = dict(profiles)
        self.settings = settings
        self.cache = ClusterCache(nrt)
        self.fast = FastPath(self.cache)
        self.cycle = SchedulingCycle(self.cache, self.fast, self._budgets)
        self.queue = SchedulingQueue(
            initial_backoff=settings.initial_backoff,
            max_backoff=settings.max_backoff,
            max_unschedulable=settings.max_unschedulable,
        )
        self.metrics = metrics or SchedulerMetrics()
        self.gated: set[str] = set()
        """Pods a PreEnqueue plugin (SchedulingGates) holds back; they enter the queue when their gates go."""
        self._warned: set[str] = set()
        self._invalid: set[str] = set()
        """Pods refused as invalid (reported once each)."""
        self.metrics.watch(
            lambda: {**self.queue.counts(), "gated": len(self.gated)},
            lambda: (age for _, age in self.cache.nrt_age()),
            lambda: sum(self.cache.reserved(n) for n in self.cache.nodes),
        )
        self.events = EventRecorder(self.writer, settings.component)
        self.elector = LeaderElector(http, settings.identity, settings.lease) if settings.leader_elect else None
        self.nodes = Informer(
            http, "/api/v1/nodes", Callbacks(self._node_added, self._node_updated, self._node_deleted)
        )
        self.nrts = Informer(
            http,
            NRT_PATH,
            Callbacks(self._nrt_added, self._nrt_updated, self._nrt_deleted),
            missing_hint="is the NodeResourceTopology CRD installed? knuma render api | kubectl apply -f -",
        )
        self.pods = Informer(http, "/api/v1/pods", Callbacks(self._pod_added, self._pod_updated, self._pod_deleted))
        self.devices = DeviceState()
        """ResourceClaims, slices, classes and in-flight allocations, shared by every profile's DynamicResources."""
        self.namespaces = Informer(
            http,
            "/api/v1/namespaces",
            Callbacks(self._namespace_changed, self._namespace_updated, self._namespace_changed),
            transform=_namespace_metadata,
        )
        """Namespace labels, for the namespace selectors of pod affinity terms (upstream's namespace lister)."""
        self.budgets = Informer(http, PDB_PATH, Callbacks(ignore, ignore, ignore))
        """PodDisruptionBudgets, read when preemption chooses victims (upstream's PDB lister)."""
        for profile in self.profiles.values():
            for plugin in profile.filters:
                if isinstance(plugin, DynamicResources):
                    plugin.state = self.devices
                if isinstance(plugin, NodeResourcesFit | NodeResourceTopologyMatch):
                    plugin.extended = self.devices.extended  # extended resources DRA serves (KEP-5004)
                if isinstance(plugin, InterPodAffinity):
                    plugin.namespace_labels = self._namespace_labels
        self.device_informers = DeviceInformers(http, self.devices, self._devices_changed)
        self.cache.overlay = self.devices.with_zone_devices
        """KnumaBinPacking charges device-stranding against the DRA devices each NUMA zone has free, counted from
        the claims this scheduler knows and holds in flight (`knuma.scheduler.plugins.dra_zones`)."""
        self._binds = asyncio.Semaphore(settings.bind_concurrency)
        self._tasks: set[asyncio.Task[None]] = set()
        self.scheduled = 0
        self.ready = asyncio.Event()
        """Set when the caches have synced and this replica leads (what `/readyz` reports)."""

    # -- lifecycle ---------------------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Run until `stop` is set (or the task is cancelled); release the lease on the way out."""
        stop = stop or asyncio.Event()
        informers = [
            asyncio.create_task(i.run(), name=f"informer {i.path}")
            for i in (self.nodes, self.nrts, self.pods, self.namespaces, self.budgets, *self.device_informers.all)
        ]
        work: list[asyncio.Task[Any]] = []
        froze = False
        try:
            waiter = asyncio.create_task(stop.wait())
            synced = asyncio.create_task(self._wait_synced())
            await asyncio.wait({waiter, synced}, return_when=asyncio.FIRST_COMPLETED)
            synced.cancel()
            if stop.is_set():
                return
            log.info("caches synced: %d nodes, %d pods", len(self.nodes.store), len(self.pods.store))
            self.cache.nrt.informers_synced()
            FROZEN_HEAP.freeze()
            froze = True
            if self.elector is not None:
                acquire = asyncio.create_task(self.elector.acquire())
                await asyncio.wait({waiter, acquire}, return_when=asyncio.FIRST_COMPLETED)
                if stop.is_set():
                    acquire.cancel()
                    return
                work.append(asyncio.create_task(self.elector.renew_forever()))
                lost = asyncio.create_task(self.elector.lost.wait())
                work.append(lost)
            self.ready.set()
            loop_task = asyncio.create_task(self._loop())
            work.append(loop_task)
            if self.cache.nrt.resync_period:
                work.append(asyncio.create_task(self._resync_forever(self.cache.nrt.resync_period)))
            done, _ = await asyncio.wait({waiter, *work}, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task is not waiter and not task.cancelled() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
            if self.elector is not None and self.elector.lost.is_set():
                raise LeadershipLost("lost the leader lease; stopping so that only one replica schedules")
        finally:
            self.ready.clear()
            with contextlib.suppress(asyncio.CancelledError, Exception):  # the lease is released whatever they did
                await cancel_and_wait([*work, *informers])
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)
            await self.events.flush()
            if froze:
                FROZEN_HEAP.thaw()
            if self.elector is not None:
                await self.elector.release()

    async def _wait_synced(self) -> None:
        await self.nodes.synced.wait()
        await self.pods.synced.wait()
        # NRT data is optional: a cluster without the CRD yet still schedules (nodes without NRT), and NRT objects
        # that appear later are picked up by the informer's retries (upstream issue #967).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.nrts.synced.wait(), timeout=5.0)
        with contextlib.suppress(TimeoutError):  # without namespace labels, only `namespaceSelector: {}` selects
            await asyncio.wait_for(self.namespaces.synced.wait(), timeout=5.0)
        with contextlib.suppress(TimeoutError):  # a server without policy/v1: preemption sees no budget
            await asyncio.wait_for(self.budgets.synced.wait(), timeout=5.0)
        with contextlib.suppress(TimeoutError):  # a cluster without resource.k8s.io still schedules other pods
            await asyncio.wait_for(asyncio.gather(*(i.synced.wait() for i in self.device_informers.all)), timeout=5.0)

    async def _resync_forever(self, period: float) -> None:
        """The NRT cache's resync (upstream: `wait.Forever(nrtCache.Resync, resyncPeriod)`); nodes it flushed may
        fit pods that did not fit before."""
        while True:
            await asyncio.sleep(period)
            if self.cache.nrt.resync():
                self.queue.move_all()

    # -- the scheduling loop ---------------------------------------------------------------------------------

    async def _loop(self) -> None:
        while True:
            queued = await self.queue.pop()
            self.schedule_one(queued)
            await asyncio.sleep(0)  # let informer events and binds run between cycles

    def _leading(self) -> bool:
        """Whether this replica may act now: always without leader election, else only within the renew deadline."""
        return self.elector is None or self.elector.still_leading()

    def schedule_one(self, queued: QueuedPod) -> Outcome | None:
        pod = queued.pod
        if not self._leading():
            self.queue.done(pod.key)  # the next leader lists the pod again
            return None
        current = self.pods.store.get(pod.key)
        if current is None or (current.get("spec") or {}).get("nodeName") or terminal(current):
            self.queue.done(pod.key)
            return None
        profile = self.profiles[pod.scheduler_name]
        start = time.perf_counter()
        self._sync_zone_devices()
        try:
            cycle = self.cycle.run(profile, pod, str((current.get("status") or {}).get("nominatedNodeName") or ""))
        except Exception as err:  # a bug must not stop the scheduler: report, back off, go on
            log.exception("scheduling %s failed", pod.key)
            self.metrics.attempts.labels("error", profile.name).inc()
            self.queue.error(queued)
            self._event(pod, "Warning", "FailedScheduling", f"internal error: {err}")
            self._not_scheduled(pod, current, "SchedulerError", str(err))
            return None
        elapsed = time.perf_counter() - start
        outcome = cycle.outcome
        if outcome.node is None:
            if cycle.post_filter_runs:
                self.metrics.preemption_attempts.inc(cycle.post_filter_runs)
            if cycle.candidate is not None:
                self._nominate(pod, current, cycle.candidate, cycle.displaced)
            elif cycle.clears_nomination:
                self._clear_nomination(pod, current)
            annotations = self._explain(profile, pod) if self.settings.explain else None
            self.metrics.attempts.labels("unschedulable", profile.name).inc()
            self.metrics.attempt_duration.labels("unschedulable", profile.name).observe(elapsed)
            log.info("pod %s is unschedulable: %s", pod.key, outcome.message)
            self.queue.unschedulable(queued)
            self._event(pod, "Warning", "FailedScheduling", outcome.message)
            self._not_scheduled(pod, current, "Unschedulable", outcome.message)
            if annotations:
                self._spawn(self._annotate(pod, annotations))
            dra = _dra_plugin(profile)
            if dra is not None and (stale := dra.stale_claim(pod)):
                self._spawn(delete_claim(self.http, stale))  # upstream's PostFilter: its deletion requeues the pod
            return outcome
        annotations = self._explain(profile, pod) if self.settings.explain else None
        claims: dict[str, Any] | None = None
        extended: ExtendedClaim | None = None
        assumed = pod
        plugin = _dra_plugin(profile)
        if plugin is not None and plugin.applies_to(pod):
            claims, problem, extended = self._reserve_claims(profile, pod, outcome.node)
            if claims:
                # the cache predicts the kubelet's zones with the devices, as the Topology Manager will align them
                numa = plugin.device_numa(pod, outcome.node, claims, extended)
                # and without the requests the extended resource claim maps, as the status PreBind writes says
                mappings = extended.mappings if extended is not None else ()
                backed = frozenset((str(m["containerName"]), str(m["resourceName"])) for m in mappings)
                assumed = dataclasses.replace(pod, dra_devices=numa, dra_backed=backed)
            if problem:
                self.metrics.attempts.labels("unschedulable", profile.name).inc()
                log.info("pod %s: Reserve on %s failed: %s", pod.key, outcome.node, problem)
                self.queue.unschedulable(queued)
                self._event(pod, "Warning", "FailedScheduling", f"running Reserve plugin DynamicResources: {problem}")
                return Outcome(None, message=problem)
        self.metrics.attempts.labels("scheduled", profile.name).inc()
        self.metrics.attempt_duration.labels("scheduled", profile.name).observe(elapsed)
        self.cache.assume(assumed, outcome.node)
        timeout = plugin.args.binding_timeout if plugin is not None else BINDING_TIMEOUT
        self._spawn(self._bind(queued, outcome.node, annotations, claims, assumed.dra_devices, extended, timeout))
        return outcome

    # -- preemption ---------------------------------------------------------------------------------------------

    def _nominate(
        self, pod: Pod, current: JsonView, candidate: Candidate, displaced: Sequence[tuple[Pod, str]]
    ) -> None:
        """Preemption chose `candidate` (the cycle holds its room for the pod): evict the victims, clear the
        nominations it displaced, and write the nomination (`status.nominatedNodeName`), as `prepareCandidate` and
        the scheduler's failure handler do."""
        log.info("pod %s preempts %s on %s", pod.key, ", ".join(v.key for v in candidate.victims), candidate.node)
        self.metrics.preemption_victims.observe(len(candidate.victims))
        for victim in candidate.to_evict:
            self._spawn(self._evict(pod, victim, candidate.node))
        for held_pod, _ in displaced:  # may no longer fit there: their nomination goes, and they look again
            obj = self.pods.store.get(held_pod.key)
            if obj is not None:
                self._clear_nomination(held_pod, obj)
        if displaced:
            self.queue.move_all()
        if (current.get("status") or {}).get("nominatedNodeName") != candidate.node:
            self._spawn(self._patch_status(pod, {"nominatedNodeName": candidate.node}))

    def _budgets(self) -> list[DisruptionBudget]:
        return [DisruptionBudget.from_manifest(obj) for obj in self.budgets.store.values()]

    def _clear_nomination(self, pod: Pod, current: JsonView) -> None:
        self.cache.unnominate(pod.key)
        if (current.get("status") or {}).get("nominatedNodeName"):
            self._spawn(self._patch_status(pod, {"nominatedNodeName": None}))

    def _not_scheduled(self, pod: Pod, current: JsonView, reason: str, message: str) -> None:
        """`handleSchedulingFailure`'s `updatePod`: the pod's `PodScheduled` condition `False` with the reason
        (`Unschedulable`, or `SchedulerError` for an error of the scheduler's own) and the attempt's message, written
        only when one of them changed (`UpdatePodCondition`; its transition time kept while it stays `False`). What
        `kubectl describe pod` shows under Conditions, and what cluster-autoscaler looks for before adding a node."""
        status = current.get("status") or {}
        old = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None) or {}
        if (old.get("status"), old.get("reason"), old.get("message")) == ("False", reason, message):
            return
        condition: dict[str, Any] = {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": old.get("lastTransitionTime") if old.get("status") == "False" else timestamp(),
        }
        generation = (current.get("metadata") or {}).get("generation")
        if generation:
            condition["observedGeneration"] = generation
        self._spawn(self._patch_status(pod, {"conditions": [condition]}, STRATEGIC_MERGE_PATCH))

    async def _patch_status(self, pod: Pod, status: Mapping[str, Any], content_type: str = MERGE_PATCH) -> None:
        """Patch the pod's status (`STRATEGIC_MERGE_PATCH` to merge a condition into its list by type); a pod deleted
        meanwhile needs none."""
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status"
        try:
            await rest.patch(self.writer, path, {"status": dict(status)}, content_type=content_type)
        except NotFound:
            return
        except KubeApiError as err:
            log.warning("updating the status of %s: %s", pod.key, err)

    async def _evict(self, preemptor: Pod, victim: Pod, node: str) -> None:
        """`PreemptPod`: the `DisruptionTarget` condition (reason `PreemptionByScheduler`), then delete the victim
        (its graceful termination applies), then the `Preempted` event on it. A victim already gone is no error."""
        path = f"/api/v1/namespaces/{victim.namespace}/pods/{victim.name}"
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": f"{preemptor.scheduler_name}: preempting to accommodate a higher priority pod",
            "lastTransitionTime": timestamp(),
        }
        try:
            await rest.patch(
                self.writer,
                f"{path}/status",
                {"status": {"conditions": [condition]}},
                content_type=STRATEGIC_MERGE_PATCH,
            )
            await rest.delete(self.writer, path)
        except NotFound:
            return
        except KubeApiError as err:
            log.warning("preempting %s for %s: %s", victim.key, preemptor.key, err)
            self.queue.move_all()  # the preemptor may be stuck waiting: let it look again
            return
        log.info("preempted %s on %s for %s", victim.key, node, preemptor.key)
        self._event(victim, "Normal", "Preempted", f"Preempted by pod {preemptor.uid} on node {node}")

    def _reserve_claims(
        self, profile: Profile, pod: Pod, node: str
    ) -> tuple[dict[str, Any] | None, str, ExtendedClaim | None]:
        """DynamicResources' Reserve: the allocation for the chosen node, held in flight so that the next cycles do
        not hand out its devices before PreBind writes it. Returns (claim key -> allocation or None when already
        allocated, problem, the claim PreBind creates for the pod's extended resources)."""
        plugin = _dra_plugin(profile)
        info = next((n for n in self.cache.node_infos() if n.name == node), None)
        if plugin is None or info is None:
            return None, "", None
        result, claims = plugin.allocations(pod, info)
        if not result.allocatable:
            return None, f"cannot allocate all claims: {result.reason}", None
        chosen = {c.claim: with_new_share_ids(c.allocation) for c in result.results}
        self.devices.reserve(pod, chosen)
        numa = next((p for p in profile.filters if isinstance(p, NodeResourceTopologyMatch)), None)
        if numa is not None:  # the pod's DRA devices join the device shapes KnumaBinPacking expects
            numa.demand.observe(
                pod, claimed_devices(chosen.values()), claims.extended.resources if claims.extended else ()
            )
        return {claim.key: chosen.get(claim.key) for claim in claims.claims}, "", claims.extended

    def _sync_zone_devices(self) -> None:
        """Nodes whose free DRA devices per NUMA zone changed (claims allocated, released or in flight; slices)
        are re-read by the cache, so both decision paths see the counts the next cycle allocates against."""
        changed = self.devices.zone_devices_changed()
        for name in list(self.cache.nodes) if changed is None else changed:
            self.cache.invalidate(name)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _explain(self, profile: Profile, pod: Pod) -> dict[str, str]:
        result = schedule_one(profile, pod, self.cache.node_infos(), explain=True)
        return simulator_annotations(profile, result)

    async def _annotate(self, pod: Pod, annotations: Mapping[str, str]) -> None:
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"
        try:
            await rest.patch(self.writer, path, {"metadata": {"annotations": dict(annotations)}})
        except KubeApiError as err:
            log.warning("annotating %s: %s", pod.key, err)

    async def _bind(
        self,
        queued: QueuedPod,
        node: str,
        annotations: Mapping[str, str] | None = None,
        claims: Mapping[str, Any] | None = None,
        dra_numa: Mapping[str, Mapping[str, int | None]] | None = None,
        extended: ExtendedClaim | None = None,
        binding_timeout: float = BINDING_TIMEOUT,
    ) -> None:
        pod = queued.pod
        if not self._leading():
            self._abandon(queued, node, claims)
            return
        if annotations:
            await self._annotate(pod, annotations)
        created = ""
        if claims:
            if dra_numa:
                await self._annotate(pod, {DRA_NUMA_ANNOTATION: json.dumps(dra_numa, separators=(",", ":"))})
            claims, created, problem = await self._pre_bind(pod, claims, extended)
            if not problem:
                problem = await self._binding_conditions(pod, node, list(claims), binding_timeout)
            if problem:
                log.warning("pod %s: PreBind on %s failed: %s", pod.key, node, problem)
                await self._unreserve(pod, claims, created)
                self.cache.forget(pod.key)
                self.queue.error(queued)
                self._event(pod, "Warning", "FailedScheduling", f"running PreBind plugin DynamicResources: {problem}")
                return
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod.name, "namespace": pod.namespace, **({"uid": pod.uid} if pod.uid else {})},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/binding"
        async with self._binds:
            if not self._leading():  # waiting for a bind slot may have taken past the deadline
                self._abandon(queued, node, claims)
                return
            start = time.perf_counter()
            try:
                await rest.post(self.writer, path, body)
                failure: KubeApiError | None = None
            except KubeApiError as err:
                failure = err
            self.metrics.binding_duration.observe(time.perf_counter() - start)
        if failure is None:
            self.scheduled += 1
            self.queue.done(pod.key)
            log.info("bound %s to %s (attempt %d)", pod.key, node, queued.attempts)
            self.metrics.e2e_duration.labels(str(min(queued.attempts, 15))).observe(time.monotonic() - queued.timestamp)
            self.cache.bound(pod, node)
            self._event(pod, "Normal", "Scheduled", f"Successfully assigned {pod.namespace}/{pod.name} to {node}")
            return
        self.cache.forget(pod.key)
        if claims:
            await self._unreserve(pod, claims, created)
        if isinstance(failure, NotFound | Conflict):
            # Deleted meanwhile, or already bound (by another scheduler or a previous attempt): nothing to retry;
            # the informer brings the pod's real state.
            log.info("binding %s to %s: HTTP %d (pod gone or already bound)", pod.key, node, failure.status)
            self.queue.done(pod.key)
            return
        log.warning("binding %s to %s failed: %s", pod.key, node, failure)
        self.queue.error(queued)
        self.queue.move_all()  # the node we reserved on is free again
        self._event(pod, "Warning", "FailedScheduling", f"Binding rejected: {failure.message[:300] or 'no response'}")

    async def _pre_bind(
        self, pod: Pod, claims: Mapping[str, Any], extended: ExtendedClaim | None
    ) -> tuple[Mapping[str, Any], str, str]:
        """DynamicResources' PreBind: create the claim for the pod's extended resources served by DRA, if any (its
        allocation in flight follows it to its name), write every claim's allocation and reservation, then the
        pod's `status.extendedResourceClaimStatus`. Returns (the claims by their API keys, the created claim's key,
        what failed)."""
        created = ""
        if extended is not None and extended.key in claims:
            created, problem = await create_extended_claim(self.http, extended)
            if problem:
                return {k: a for k, a in claims.items() if k != extended.key}, "", problem
            self.devices.created(extended.key, created)
            claims = {(created if k == extended.key else k): a for k, a in claims.items()}
        problem = await pre_bind(self.http, pod, claims)
        if not problem and created and extended is not None:
            problem = await record_extended_claim(self.http, pod, created, extended)
        return claims, created, problem

    async def _binding_conditions(self, pod: Pod, node: str, keys: Sequence[str], timeout: float) -> str:
        """PreBind's wait for the binding conditions of the pod's devices (KEP-5007, `knuma.scheduler.plugins.
        binding_conditions`): "" once every one is True, else why binding was given up (a failure condition, the
        claim's `bindingTimeout` since its allocation, or `timeout` of waiting here, as upstream's
        `PollUntilContextTimeout`). The caller then unreserves, which deallocates the claims, so the next attempt
        allocates afresh (upstream deallocates them in the next attempt's PostFilter)."""

        def state() -> BindingState:
            current = self.pods.store.get(pod.key)
            if current is None or (current.get("metadata") or {}).get("uid") != pod.uid:
                return BindingState(Binding.FAILED, "the pod was deleted while its devices were being made ready")
            claims = []
            for key in keys:
                claim = self.devices.parsed_claim(key)
                if claim is None or claim.allocation is None:  # deleted, or deallocated by someone else
                    return BindingState(Binding.FAILED, f"resourceclaim {key} is not allocated any more")
                claims.append(claim)
            return pods_binding_state(claims, timeout)

        found = state()
        if found.state is Binding.READY:
            return ""
        self._event(
            pod, "Normal", "BindingConditionsPending", f"waiting for binding conditions for device on node {node}"
        )
        deadline = time.monotonic() + timeout
        while True:
            if found.state is not Binding.WAITING:
                return found.reason
            if time.monotonic() > deadline:
                return "device binding timeout"
            await asyncio.sleep(self.settings.binding_poll)
            found = state()

    async def _unreserve(self, pod: Pod, claims: Mapping[str, Any], created: str) -> None:
        """DynamicResources' Unreserve after a failed PreBind or binding: the allocations in flight are dropped, the
        pod leaves the claims' `reservedFor`, and the claim PreBind created for its extended resources (`created`)
        is deleted (`unreserveExtendedResourceClaim`), so that the next attempt does not find it left behind."""
        self.devices.unreserve(pod)
        await unreserve_claims(self.http, pod, list(claims))
        if created:
            await delete_claim(self.http, created)

    def _abandon(self, queued: QueuedPod, node: str, claims: Mapping[str, Any] | None) -> None:
        """Drop a bind this replica may no longer send (it lost the lease): forget the assumption; the pod stays
        pending for the next leader."""
        log.warning("not binding %s to %s: no longer the leader", queued.pod.key, node)
        self.cache.forget(queued.pod.key)
        if claims:
            self.devices.unreserve(queued.pod)
        self.queue.done(queued.pod.key)

    def _event(self, pod: Pod, event_type: str, reason: str, message: str) -> None:
        ref = ObjectReference("Pod", pod.namespace, pod.name, pod.uid)
        self.events.record(ref, event_type, reason, message, component=pod.scheduler_name)

    # -- informer handlers -----------------------------------------------------------------------------------

    def _node_added(self, obj: JsonView) -> None:
        self.cache.upsert_node(obj)
        self.queue.move_all()

    def _node_updated(self, old: JsonView, new: JsonView) -> None:
        self.cache.upsert_node(new)
        if _schedulable_changed(old, new):
            self.queue.move_all()

    def _node_deleted(self, obj: JsonView) -> None:
        self.cache.delete_node(obj)
        self.devices.forget_node(str((obj.get("metadata") or {}).get("name") or ""))

    def _nrt_added(self, obj: JsonView) -> None:
        self._nrt_changed(obj)

    def _nrt_updated(self, old: JsonView, new: JsonView) -> None:
        del old
        self._nrt_changed(new)

    def _nrt_changed(self, obj: JsonView) -> None:
        nrt = self.cache.nrt
        if not isinstance(nrt, KnumaCache):
            self.cache.upsert_nrt(obj)
            self.queue.move_all()
            return
        before = (nrt.stats.reconciled, nrt.stats.unmatched)
        self.cache.upsert_nrt(obj)
        after = (nrt.stats.reconciled, nrt.stats.unmatched)
        if after[0] > before[0]:
            self.metrics.nrt_reconciles.labels("matched").inc()
        elif after[1] > before[1]:
            self.metrics.nrt_reconciles.labels("unmatched").inc()
        self.queue.move_all()

    def _nrt_deleted(self, obj: JsonView) -> None:
        self.cache.delete_nrt(obj)

    def _namespace_labels(self, namespace: str) -> Mapping[str, str]:
        obj = self.namespaces.store.get(namespace)
        labels = ((obj or {}).get("metadata") or {}).get("labels")
        return labels if isinstance(labels, Mapping) else {}

    def _namespace_changed(self, obj: JsonView) -> None:
        del obj
        self.cache.relations_changed()

    def _namespace_updated(self, old: JsonView, new: JsonView) -> None:
        if (old.get("metadata") or {}).get("labels") != (new.get("metadata") or {}).get("labels"):
            self.cache.relations_changed()
            self.queue.move_all()

    def _pod_added(self, obj: JsonView) -> None:
        self._pod_changed(obj)

    def _pod_updated(self, old: JsonView, new: JsonView) -> None:
        if not (new.get("spec") or {}).get("nodeName") and not terminal(new) and not _pending_pod_changed(old, new):
            return  # e.g. the PodScheduled condition this scheduler wrote: no reason to try it again
        self._pod_changed(new)
        if terminal(new) and not terminal(old):
            self.queue.move_all()  # a pod finished: its resources are free

    def _pod_changed(self, obj: JsonView) -> None:
        spec = obj.get("spec") or {}
        key = pod_key(obj)
        if spec.get("resourceClaims") and self.devices.set_pod(obj):
            self.queue.move_all()  # its generated claims are known now
        if spec.get("nodeName") or terminal(obj):
            if (not self.cache.is_assumed(key) or spec.get("nodeName")) and self.cache.upsert_pod(obj):
                self.queue.move_all()  # a placed pod asks less now (`UpdatePodScaleDown`): room for pending pods
            if key in self.queue and not self.cache.is_assumed(key):
                self.queue.delete(key)
            return
        if spec.get("schedulerName", "default-scheduler") not in self.profiles:
            return
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return
        try:
            pod = Pod.from_manifest(obj)
        except PodError as err:
            self._refuse_invalid(obj, key, err)
            return
        if pod.dra_devices:  # a device choice of an attempt that did not bind: the next attempt chooses again
            pod = dataclasses.replace(pod, dra_devices={})
        if self.cache.is_assumed(key):
            return
        gate = next(
            (s for g in self.profiles[pod.scheduler_name].pre_enqueue if not (s := g.pre_enqueue(pod)).ok), None
        )
        if gate is not None:
            self.gated.add(key)
            self.queue.delete(key)
            return
        self.gated.discard(key)
        nominated = (obj.get("status") or {}).get("nominatedNodeName")
        if nominated and isinstance(nominated, str) and not self.cache.nominated_node(key):
            self.cache.nominate(pod, nominated)  # a preemption before this replica led: keep its room held
        if key not in self._warned and (ignored := unsupported_constraints(pod)):
            self._warned.add(key)
            message = f"knuma does not enforce {'; '.join(ignored)}: the pod is placed as if they were absent"
            log.warning("pod %s: %s", key, message)
            self._event(pod, "Warning", "UnsupportedConstraints", message)
        self.queue.add(pod)

    def _refuse_invalid(self, obj: JsonView, key: str, err: PodError) -> None:
        """A pod knuma cannot judge (kube-apiserver would have refused it, e.g. duplicate container names; or a
        manifest the pod model cannot read): leave it pending, unscheduled, and say why once per pod, as an event
        on the pod, instead of placing it with the wrong container's verdict."""
        self.queue.delete(key)
        if key in self._invalid:
            return
        self._invalid.add(key)
        log.warning("not scheduling %s: %s", key, err)
        metadata = obj.get("metadata") or {}
        ref = ObjectReference(
            "Pod",
            str(metadata.get("namespace") or "default"),
            str(metadata.get("name") or ""),
            str(metadata.get("uid") or ""),
        )
        component = str((obj.get("spec") or {}).get("schedulerName") or "default-scheduler")
        self.events.record(
            ref, "Warning", "FailedScheduling", f"invalid pod, not scheduled: {err}", component=component
        )

    def _devices_changed(self) -> None:
        """A claim, slice or class changed: unschedulable pods may fit now, and pods DynamicResources' PreEnqueue
        held (their claims did not exist) are looked at again."""
        self.queue.move_all()
        for key in list(self.gated):
            obj = self.pods.store.get(key)
            if obj is not None and (obj.get("spec") or {}).get("resourceClaims"):
                self._pod_changed(obj)

    def _pod_deleted(self, obj: JsonView) -> None:
        key = pod_key(obj)
        self.gated.discard(key)
        self._warned.discard(key)
        self._invalid.discard(key)
        self.cache.delete_pod(obj)
        self.devices.delete_pod(obj)
        self.queue.delete(key)
        self.queue.move_all()


class LeadershipLost(OperationFailed):
    """This replica lost the lease; it stops (its supervisor restarts it as a standby)."""


def _pending_pod_changed(old: JsonView, new: JsonView) -> bool:
    """`isPodUpdated` (kube-scheduler's `updatePodInSchedulingQueue`): whether an update of a pending pod changed more
    than its resourceVersion, generation, managed fields, finalizers and status, the status's claim statuses and
    nomination excepted (DRA and preemption read those)."""

    def stripped(obj: JsonView) -> tuple[Any, ...]:
        metadata = obj.get("metadata") or {}
        status = obj.get("status") or {}
        ignored = ("resourceVersion", "generation", "managedFields", "finalizers")
        return (
            {k: v for k, v in metadata.items() if k not in ignored},
            obj.get("spec"),
            [status.get(k) for k in ("resourceClaimStatuses", "extendedResourceClaimStatus", "nominatedNodeName")],
        )

    return stripped(old) != stripped(new)


def _schedulable_changed(old: JsonView, new: JsonView) -> bool:
    """Node changes that can make a pod fit: allocatable, labels, taints, unschedulable, conditions."""
    return any(
        (old.get(a) or {}).get(b) != (new.get(a) or {}).get(b)
        for a, b in (
            ("status", "allocatable"),
            ("metadata", "labels"),
            ("spec", "taints"),
            ("spec", "unschedulable"),
            ("status", "conditions"),
        )
    )


async def serve_until_signalled(scheduler: Scheduler) -> None:
    """Run the scheduler until SIGTERM or SIGINT, then stop gracefully (the lease is released)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await scheduler.run(stop)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


def _dra_plugin(profile: Profile) -> DynamicResources | None:
    """The profile's DynamicResources plugin (None when it does not run it)."""
    return next((p for p in profile.filters if isinstance(p, DynamicResources)), None)
