"""The discrete-event engine: one scheduler against simulated kubelets and exporters, deterministic for a seed.

Events, in time order (ties broken by kind, then by insertion):

1. a pod terminates: its kubelet frees its zones;
2. an exporter publishes NRT for its node (every `nrt_period` seconds with a per-node phase, and optionally
   `nrt_event_delay` seconds after each change on the node);
3. a bound pod reaches its kubelet (`bind_delay` after the bind) and is admitted, or rejected with
   `TopologyAffinityError` (recorded; never rescheduled; optionally recreated by a ReplicaSet-like controller);
4. the scheduler's informers hear of an admission, a rejection, a termination or a victim's deletion,
   `status_delay` seconds after it happened (the same delay for all, so they arrive in the order they happened);
5. a pod arrives and gets one scheduling attempt; when no node fits and preemption (DefaultPreemption, as in
   `knuma scheduler`) chooses victims, they are deleted: each stops after its `terminationGracePeriodSeconds`
   (Kubernetes' default 30 s when the pod sets none) and is replaced by its controller when `recreate` is on;
6. pending pods are retried after something that may have freed room (kube-scheduler's unschedulable queue), the
   highest priority first;
7. the scheduler's periodic work (overreserve resync);
8. (samples for the plots, then) the scheduler restarts (`schedulerRestarts`): a new scheduler process starts from
   what its informers list, the last published NRT of every node and the pods bound to nodes, as the API server shows
   them (the status updates it has heard); pods waiting to be scheduled wait for it.

Wall-clock time is measured only around scheduling attempts, for latency and throughput; everything else is
simulated time and depends only on the scenario and the seed.
"""

from __future__ import annotations

import heapq
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from knuma.api.pod import Pod
from knuma.api.resources import CPU, MEMORY
from knuma.scheduler.plugins.strategies import StrategyType
from knuma.sim.exporter import NRTSnapshot, fingerprint
from knuma.sim.schedulers import ListedPod, NodeSetup, ProductScheduler, make_scheduler
from knuma.sim.spec import PodArrival, Scenario, WorkloadSpec
from knuma.testbed.simkubelet import SimKubelet
from knuma.topology.kubelet import TOPOLOGY_AFFINITY_ERROR

__all__ = ["PodRecord", "RunResult", "Sample", "arrivals", "build_kubelets", "run"]

TERMINATE, PUBLISH, ADMIT, NOTIFY, ARRIVE, RETRY, TICK, SAMPLE, RESTART = range(9)
DEFAULT_GRACE_PERIOD = 30.0
"""`terminationGracePeriodSeconds` when a pod sets none (Kubernetes' default)."""
RETRY_DELAY = 1.0
"""Seconds between a change that may free room and the retry of pending pods (coalesced)."""
SAMPLES = 120


@dataclass
class PodRecord:
    pod: Pod
    template: str
    arrived: float
    lifetime: float
    node: str = ""
    bound_at: float | None = None
    admitted_at: float | None = None
    finished_at: float | None = None
    failure: str = ""
    """Kubelet rejection reason (`TopologyAffinityError`, `OutOfcpu`, ...)."""
    attempts: int = 0
    recreations: int = 0
    origin: str = ""
    """The name of the first pod of this replica (recreated pods are `<origin>-r<n>`)."""
    evicted_at: float | None = None
    """When preemption deleted it (a victim)."""


@dataclass(frozen=True)
class Sample:
    time: float
    running: int
    pending: int
    cpu_utilization: float
    topology_affinity_errors: int
    memory_utilization: float = 0.0


@dataclass
class RunResult:
    scheduler: str
    scenario: str
    horizon: float
    pods: dict[str, PodRecord]
    kubelets: dict[str, SimKubelet]
    latencies: list[float] = field(default_factory=list)
    """Wall seconds of every scheduling attempt."""
    samples: list[Sample] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


_ARRIVALS: list[tuple[WorkloadSpec, int, tuple[PodArrival, ...]]] = []
"""The last workload's arrivals (one entry): a process that simulates several schedulers on one scenario (`knuma
simulate`, a worker of `--jobs`) generates them once."""


def arrivals(scenario: Scenario, seed: int) -> list[PodArrival]:
    """`scenario.workload.generate(seed)`, generated once per process for consecutive runs of the same workload and
    seed: the same arrivals and the same (immutable) Pod objects, whose derived values (requests, QoS class, the
    kubelet model's shape ids) are then computed once, not once per scheduler."""
    workload = scenario.workload
    if _ARRIVALS and _ARRIVALS[0][0] is workload and _ARRIVALS[0][1] == seed:
        return list(_ARRIVALS[0][2])
    generated = workload.generate(seed)
    _ARRIVALS[:] = [(workload, seed, tuple(generated))]
    return generated


def build_kubelets(scenario: Scenario) -> dict[str, SimKubelet]:
    kubelets: dict[str, SimKubelet] = {}
    for pool in scenario.cluster.pools:
        for name in pool.node_names():
            topology = pool.shape.topology(name, pool.policy, pool.scope)
            kubelets[name] = SimKubelet(name, pool.shape.allocatable(), topology)
    return kubelets


def snapshot(kubelet: SimKubelet, now: float, last: NRTSnapshot | None = None) -> NRTSnapshot:
    """What the exporter publishes: zones and config (no memory-manager groups: NRT does not carry them). `last`:
    the node's previous publication, reused when nothing changed on the node since."""
    if last is not None and last.generation == kubelet.generation and last.node == kubelet.name:
        return replace(last, time=now)
    topology = kubelet.topology.with_zones(kubelet.topology.zones, memory_groups={})  # keeps its hardware key
    return NRTSnapshot(kubelet.name, topology, fingerprint(kubelet.running), kubelet.generation, now)


def run(
    scenario: Scenario,
    scheduler_name: str,
    seed: int = 0,
    *,
    check_conservation: bool = False,
    progress: Callable[[float], None] | None = None,
    scheduler_options: dict[str, Any] | None = None,
) -> RunResult:
    """Simulate `scenario` with one scheduler; same scenario and seed give the same placements."""
    return _Engine(scenario, scheduler_name, seed, check_conservation, progress, scheduler_options or {}).run()


class _Engine:
    def __init__(
        self,
        scenario: Scenario,
        scheduler_name: str,
        seed: int,
        check: bool,
        progress: Callable[[float], None] | None,
        options: dict[str, Any],
    ) -> None:
        self.scenario = scenario
        self.check = check
        self.progress = progress
        self.kubelets = build_kubelets(scenario)
        self.published = {name: snapshot(kubelet, 0.0) for name, kubelet in self.kubelets.items()}
        """The last NRT each exporter published."""
        self.listed: dict[str, ListedPod] = {}
        """Pods bound to nodes as the API server shows them (what a restarted scheduler lists)."""
        self.nominations: dict[str, str] = {}
        """Pending pods' `status.nominatedNodeName`, as the API server shows them."""
        if scenario.scoring is not None:
            options = {"scoring": StrategyType.parse(scenario.scoring), **options}
        self.scheduler_name, self.options = scheduler_name, options
        self.scheduler: ProductScheduler = self.start_scheduler()
        self.restarts = 0
        self.arrivals = arrivals(scenario, seed)
        self.horizon = scenario.horizon(self.arrivals)
        self.rng = random.Random(f"{seed}/exporter")
        self.queue: list[tuple[float, int, int, Any]] = []
        self.seq = 0
        self.pods: dict[str, PodRecord] = {}
        self.pending: dict[str, PodRecord] = {}
        self.retry_at: float | None = None
        self.event_publish: dict[str, float] = {}
        self.latencies: list[float] = []
        self.samples: list[Sample] = []
        self.tae = 0
        self.recreated = 0
        self.preempted = 0
        self.cpu_total = sum(k.allocatable.get(CPU, 0) for k in self.kubelets.values())
        self.memory_total = sum(k.allocatable.get(MEMORY, 0) for k in self.kubelets.values())

    def start_scheduler(self) -> ProductScheduler:
        setups = [NodeSetup(k.name, k.allocatable, self.published[k.name]) for k in self.kubelets.values()]
        return make_scheduler(
            self.scheduler_name,
            setups,
            resync_period=self.scenario.resync_period,
            pods=sorted(self.listed.values(), key=lambda p: p.pod.key),  # the API server lists in key order
            nominated=[(self.pods[key].pod, node) for key, node in sorted(self.nominations.items())],
            **self.options,
        )

    def push(self, when: float, kind: int, data: Any) -> None:
        heapq.heappush(self.queue, (when, kind, self.seq, data))
        self.seq += 1

    def run(self) -> RunResult:
        for arrival in self.arrivals:
            self.push(arrival.time, ARRIVE, arrival)
        period = self.scenario.nrt_period
        for name in self.kubelets:
            self.push(self.rng.uniform(0, period), PUBLISH, (name, True))
        if self.scheduler.tick_period:
            self.push(self.scheduler.tick_period, TICK, None)
        step = self.horizon / SAMPLES
        for index in range(SAMPLES + 1):
            self.push(index * step, SAMPLE, None)
        for when in self.scenario.scheduler_restarts:
            self.push(when, RESTART, None)
        handlers: dict[int, Callable[[float, Any], None]] = {
            TERMINATE: self.on_terminate,
            PUBLISH: self.on_publish,
            ADMIT: self.on_admit,
            NOTIFY: self.on_notify,
            ARRIVE: self.on_arrive,
            RETRY: self.on_retry,
            TICK: self.on_tick,
            SAMPLE: self.on_sample,
            RESTART: self.on_restart,
        }
        last_report = 0.0
        while self.queue and self.queue[0][0] <= self.horizon:
            now, kind, _, data = heapq.heappop(self.queue)
            handlers[kind](now, data)
            if self.progress is not None and now - last_report >= self.horizon / 100:
                last_report = now
                self.progress(now / self.horizon)
        if self.progress is not None:
            self.progress(1.0)
        stats = {**self.scheduler.stats(), "recreated": self.recreated}
        if self.scenario.scheduler_restarts:
            stats["scheduler_restarts"] = self.restarts
        return RunResult(
            self.scheduler.name,
            self.scenario.name,
            self.horizon,
            self.pods,
            self.kubelets,
            self.latencies,
            self.samples,
            stats,
        )

    # -- handlers ----------------------------------------------------------------------------------------------

    def on_arrive(self, now: float, data: Any) -> None:
        arrival: PodArrival | PodRecord = data
        if isinstance(arrival, PodRecord):
            record = arrival
        else:
            record = PodRecord(arrival.pod, arrival.template, arrival.time, arrival.lifetime)
        self.pods[record.pod.key] = record
        if not self.attempt(record, now):
            self.pending[record.pod.key] = record

    def attempt(self, record: PodRecord, now: float) -> bool:
        record.attempts += 1
        started = time.perf_counter()
        attempt = self.scheduler.attempt(record.pod, now, self.nominations.get(record.pod.key, ""))
        self.latencies.append(time.perf_counter() - started)
        for victim in attempt.victims:
            self.evict(victim.key, now)
        for key in attempt.cleared:
            self.nominations.pop(key, None)
        node = attempt.node
        if node is None:
            if attempt.nominated:
                self.nominations[record.pod.key] = attempt.nominated
            else:
                self.nominations.pop(record.pod.key, None)
            return False
        self.nominations.pop(record.pod.key, None)
        record.node = node
        record.bound_at = now
        self.listed[record.pod.key] = ListedPod(record.pod, node, started=False)
        self.push(now + self.scenario.bind_delay, ADMIT, record)
        return True

    def evict(self, key: str, now: float) -> None:
        """Preemption deleted `key`: the informers hear of its deletion, and it stops within its grace period."""
        record = self.pods.get(key)
        if record is None or record.evicted_at is not None or record.finished_at is not None:
            return
        record.evicted_at = now
        self.preempted += 1
        listed = self.listed.get(key)
        if listed is not None:  # the API server shows its deletionTimestamp at once
            self.listed[key] = replace(listed, pod=replace(listed.pod, terminating=True, preempted=True))
        self.push(now + self.scenario.status_delay, NOTIFY, ("terminating", record))
        grace = record.pod.spec.get("terminationGracePeriodSeconds")
        self.push(now + (DEFAULT_GRACE_PERIOD if grace is None else float(grace)), TERMINATE, record)

    def on_admit(self, now: float, record: PodRecord) -> None:
        if record.evicted_at is not None or record.finished_at is not None:
            return  # deleted before its kubelet started it
        kubelet = self.kubelets[record.node]
        result = kubelet.admit(record.pod)
        if self.check:
            kubelet.check()
        delay = self.scenario.status_delay
        if not result.admitted:
            record.failure = result.reason
            record.finished_at = now
            if result.reason == TOPOLOGY_AFFINITY_ERROR:
                self.tae += 1
            self.push(now + delay, NOTIFY, ("failed", record))
            return
        record.admitted_at = now
        self.push(now + delay, NOTIFY, ("running", record))
        if math.isfinite(record.lifetime):
            self.push(now + record.lifetime, TERMINATE, record)
        self.changed(record.node, now)

    def on_notify(self, now: float, data: tuple[str, PodRecord]) -> None:
        """The scheduler's informers (and the ReplicaSet controller) see a pod's status change."""
        what, record = data
        key, node = record.pod.key, record.node
        if what == "running":
            if record.evicted_at is None:
                self.listed[key] = ListedPod(record.pod, node, started=True)
                self.scheduler.pod_running(key, node, now)
            return
        if what == "terminating":
            if record.finished_at is None:
                self.scheduler.pod_terminating(key, node, now)
            return
        self.listed.pop(key, None)
        if self.scheduler.pod_terminated(key, node, now):
            self.want_retry(now)
        if what == "failed" or record.evicted_at is not None:
            self.recreate(record, now)

    def recreate(self, record: PodRecord, now: float) -> None:
        policy = self.scenario.recreate
        if not policy.enabled or record.recreations >= policy.max_per_pod:
            return
        origin = record.origin or record.pod.name
        name = f"{origin}-r{record.recreations + 1}"
        pod = replace(record.pod, name=name, uid=name)
        replacement = PodRecord(pod, record.template, now + policy.delay, record.lifetime)
        replacement.recreations = record.recreations + 1
        replacement.origin = origin
        self.recreated += 1
        self.push(now + policy.delay, ARRIVE, replacement)

    def on_terminate(self, now: float, record: PodRecord) -> None:
        if record.finished_at is not None:
            return  # ended already (its lifetime, or its grace period after preemption)
        record.finished_at = now
        self.push(now + self.scenario.status_delay, NOTIFY, ("gone", record))
        if record.admitted_at is None:
            return  # a victim deleted before its kubelet started it
        kubelet = self.kubelets[record.node]
        kubelet.release(record.pod.key)
        if self.check:
            kubelet.check()
        self.changed(record.node, now)

    def changed(self, node: str, now: float) -> None:
        delay = self.scenario.nrt_event_delay
        if delay is None:
            return
        when = now + delay
        if self.event_publish.get(node, -1.0) >= now:
            return  # a publication is already on its way and will include this change
        self.event_publish[node] = when
        self.push(when, PUBLISH, (node, False))

    def on_publish(self, now: float, data: tuple[str, bool]) -> None:
        node, periodic = data
        if periodic:
            self.push(now + self.scenario.nrt_period, PUBLISH, (node, True))
        if not self.scheduler.uses_nrt:
            return
        published = self.published[node] = snapshot(self.kubelets[node], now, self.published[node])
        if self.scheduler.nrt_published(published, now):
            self.want_retry(now)

    def on_restart(self, now: float, data: Any) -> None:
        """The scheduler process restarts: everything it held in memory is gone."""
        self.scheduler = self.start_scheduler()
        self.restarts += 1
        self.want_retry(now)

    def on_tick(self, now: float, data: Any) -> None:
        period = self.scheduler.tick_period
        assert period is not None
        self.push(now + period, TICK, None)
        if self.scheduler.tick(now):
            self.want_retry(now)

    def want_retry(self, now: float) -> None:
        if self.pending and self.retry_at is None:
            self.retry_at = now + RETRY_DELAY
            self.push(self.retry_at, RETRY, None)

    def on_retry(self, now: float, data: Any) -> None:
        self.retry_at = None
        failed: set[tuple[Any, ...]] = set()
        preempted = self.preempted
        for key, record in sorted(self.pending.items(), key=lambda item: -item[1].pod.priority):
            signature = _signature(record.pod)
            if signature in failed:
                continue  # an identical pod just failed and nothing was freed since
            if self.attempt(record, now):
                del self.pending[key]
            elif self.preempted == preempted:
                failed.add(signature)
            preempted = self.preempted

    def on_sample(self, now: float, data: Any) -> None:
        running = cpu = memory = 0
        for kubelet in self.kubelets.values():  # one pass (5000 nodes x 121 samples)
            running += len(kubelet.running)
            requested = kubelet.requested
            cpu += requested.get(CPU, 0)
            memory += requested.get(MEMORY, 0)
        self.samples.append(
            Sample(
                now,
                running,
                len(self.pending),
                cpu / self.cpu_total if self.cpu_total else 0.0,
                self.tae,
                memory / self.memory_total if self.memory_total else 0.0,
            )
        )


def _signature(pod: Pod) -> tuple[Any, ...]:
    """Pods with equal signatures are interchangeable for every scheduler here."""
    return (
        pod.qos,
        tuple(sorted(pod.pod_requests.items())),
        pod.priority,
        pod.spec.get("preemptionPolicy"),
        tuple((c.kind, tuple(sorted(c.requests.items()))) for c in pod.all_containers),
        tuple(sorted(pod.overhead.items())),
    )
