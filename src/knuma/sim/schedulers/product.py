"""The simulator's schedulers are the product's: a profile and an NRT cache mode, deciding through the daemon's own
objects (`knuma.scheduler.cache.nrt.ClusterCache` fed with the events a daemon's informers would see, and
`knuma.scheduler.fast.path.FastPath`). The simulator only plays the cluster.

Events map onto what the daemon does:

- a scheduling attempt: the daemon's cycle (`knuma.scheduler.cycle.SchedulingCycle`: nominations, `FastPath.decide`,
  DefaultPreemption when no node fits), then `ClusterCache.assume` (Reserve) and `bound` (PostBind; binding is
  instant here); the victims preemption chose are returned for the engine to evict;
- a victim's deletion heard (`deletionTimestamp`): a pod informer update of a terminating pod;
- the kubelet admitted a pod (heard `status_delay` later): a pod informer update, `Running` with `status.startTime`;
- the pod terminated or was rejected (heard late): a pod informer delete (a recreated pod has a new name);
- an exporter published: an NRT informer update, fingerprint method `all` (the simulated exporter counts every pod);
- the periodic tick: the NRT cache's resync loop (`cacheResyncPeriodSeconds`).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from knuma.api.pod import Pod
from knuma.scheduler.cache.interface import PENDING, RUNNING, BoundPod, NRTCache, PublishedNRT
from knuma.scheduler.cache.nrt import ClusterCache
from knuma.scheduler.cache.select import make_nrt_cache
from knuma.scheduler.cycle import SchedulingCycle
from knuma.scheduler.fast.path import FastPath
from knuma.scheduler.framework.interface import Profile
from knuma.scheduler.framework.profiles import default_profile, node_level_profile
from knuma.scheduler.plugins.default_preemption import DefaultPreemption
from knuma.scheduler.plugins.stable_under_release import StableUnderRelease
from knuma.scheduler.plugins.strategies import ScoringStrategy, StrategyType
from knuma.sim.exporter import NRTSnapshot
from knuma.sim.schedulers.base import ListedPod, NodeSetup
from knuma.topology.node import NodeTopology

__all__ = ["PRODUCT", "Attempt", "ProductScheduler", "product_scheduler"]

FINGERPRINT_METHOD = "all"


@dataclass(frozen=True)
class Attempt:
    """One scheduling attempt's answer: the node bound to, or None; the pods preemption evicts for it; the pod's
    `status.nominatedNodeName` afterwards; and the pods whose nomination the daemon would clear (displaced from the
    node the pod was nominated on). The caller plays the API server, which keeps the nominations."""

    node: str | None
    victims: tuple[Pod, ...] = ()
    nominated: str = ""
    cleared: tuple[str, ...] = ()


class ProductScheduler:
    """One compared scheduler: a product profile plus an NRT cache mode."""

    def __init__(
        self,
        name: str,
        nodes: Sequence[NodeSetup],
        profile: Profile,
        nrt: NRTCache,
        uses_nrt: bool,
        pods: Sequence[ListedPod] = (),
        nominated: Sequence[tuple[Pod, str]] = (),
    ) -> None:
        """Start as the daemon does (`knuma.scheduler.daemon.loop`): the informers list the Nodes, the published NRTs
        and the pods bound to nodes (`pods`: empty on a fresh cluster) and the pending pods with a
        `status.nominatedNodeName` (`nominated`, whose room is held again), then the NRT cache hears
        `informers_synced` and seeds its state from them."""
        self.name = name
        self.profile = profile
        self.uses_nrt = uses_nrt
        self.cache = ClusterCache(nrt)
        self.fast = FastPath(self.cache)
        self.cycle = SchedulingCycle(self.cache, self.fast)
        self.tick_period: float | None = nrt.resync_period
        self.pods: dict[str, Pod] = {}
        for setup in nodes:
            self.cache.node_known(setup.name, setup.allocatable)
            if uses_nrt:
                self.cache.nrt_published(self._published(setup.nrt))
        for listed in pods:
            self.pods[listed.pod.key] = listed.pod
            self.cache.pod_bound(self._bound(listed.pod, listed.node, started=listed.started))
        for pod, node in nominated:
            self.cache.nominate(pod, node)
        nrt.informers_synced()

    @property
    def nrt(self) -> NRTCache:
        return self.cache.nrt

    # -- the scheduling cycle ------------------------------------------------------------------------------------

    def schedule(self, pod: Pod, now: float) -> str | None:
        return self.attempt(pod, now).node

    def attempt(self, pod: Pod, now: float, nominated: str = "") -> Attempt:
        """One cycle as the daemon runs it, for `pod` with `status.nominatedNodeName` `nominated`; the answer says
        what the daemon would write."""
        result = self.cycle.run(self.profile, pod, nominated)
        node = result.outcome.node
        if node is None:
            cleared = tuple(held.key for held, _ in result.displaced)
            candidate = result.candidate
            if candidate is not None:
                return Attempt(None, candidate.to_evict, candidate.node, cleared)
            return Attempt(None, (), "" if result.clears_nomination else nominated, cleared)
        self.cache.assume(pod, node)
        self.cache.bound(pod, node)
        self.pods[pod.key] = pod
        return Attempt(node)

    def topology(self, node: str) -> NodeTopology | None:
        """The NUMA view the next cycle sees for `node` (for tests and reports)."""
        return self.nrt.view(node).topology

    # -- informer events -----------------------------------------------------------------------------------------

    def pod_running(self, key: str, node: str, now: float) -> None:
        pod = self.pods.get(key)
        if pod is not None:
            self.cache.pod_bound(self._bound(pod, node, started=True))

    def pod_terminating(self, key: str, node: str, now: float) -> None:
        """A victim's deletion heard (`metadata.deletionTimestamp` set, after the `DisruptionTarget` condition the
        daemon writes first): it holds its room until it is gone, and a preemptor nominated where it runs waits for
        it (`PodEligibleToPreemptOthers`)."""
        pod = self.pods.get(key)
        if pod is not None:
            pod = self.pods[key] = dataclasses.replace(pod, terminating=True, preempted=True)
            self.cache.pod_bound(self._bound(pod, node, started=True))

    def _bound(self, pod: Pod, node: str, *, started: bool) -> BoundPod:
        """The pod as the informer shows it: Pending until the kubelet admitted it, then Running with a start time."""
        phase = RUNNING if started else PENDING
        return BoundPod(pod.key, pod.namespace, pod.name, node, phase, started, self.profile.name, pod)

    def pod_terminated(self, key: str, node: str, now: float) -> bool:
        if self.pods.pop(key, None) is None:
            return False
        self.cache.pod_removed(key, node)
        return True

    def nrt_published(self, snapshot: NRTSnapshot, now: float) -> bool:
        before = self.nrt.view(snapshot.node)
        self.cache.nrt_published(self._published(snapshot))
        return self.nrt.view(snapshot.node) != before

    def tick(self, now: float) -> bool:
        return self.nrt.resync()

    @staticmethod
    def _published(snapshot: NRTSnapshot) -> PublishedNRT:
        return PublishedNRT(snapshot.node, snapshot.topology, snapshot.fingerprint, FINGERPRINT_METHOD)

    # -- statistics the reports show ---------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        nrt = self.nrt
        out: dict[str, Any] = {"nrt_cache": nrt.mode}
        stats = getattr(nrt, "stats", None)
        if stats is not None:
            out["nrt_reconciled"], out["nrt_unmatched"] = stats.reconciled, stats.unmatched
            out["model_drift"] = stats.drift
        for plugin in self.profile.filters:
            if isinstance(plugin, StableUnderRelease):
                out["unstable_rejections"] = plugin.rejected
        flushes = getattr(nrt, "flushes", None)
        if flushes is not None:
            out["overreserve_flushes"] = flushes
        return out


UPSTREAM_STRATEGY = StrategyType.LEAST_ALLOCATED
"""scheduler-plugins' default `scoringStrategy` (the `nrt-*` baselines model its users)."""

PRODUCT = ("default", "nrt-passthrough", "nrt-overreserve", "nrt-discardreserved", "knuma")

CACHE_OF = {
    "nrt-passthrough": "passthrough",
    "nrt-overreserve": "overreserve",
    "nrt-discardreserved": "discardreserved",
    "knuma": "knuma",
}


def product_scheduler(
    name: str,
    nodes: Sequence[NodeSetup],
    *,
    scoring: ScoringStrategy | None = None,
    resync_period: float = 5.0,
    pods: Sequence[ListedPod] = (),
    nominated: Sequence[tuple[Pod, str]] = (),
) -> ProductScheduler:
    """`default` (kube-scheduler's node-level fit, no NUMA plugin), or the NUMA profile with a cache mode, started
    on `nodes` (their published NRTs) with `pods` bound and the pending pods `nominated` (a restart). Every profile
    preempts, as kube-scheduler's and `knuma scheduler`'s do by default (DefaultPreemption, its dry run's offset
    drawn from a fixed seed so that runs repeat)."""
    preemption = (DefaultPreemption(rng=random.Random(0)),)
    if name == "default":
        profile = node_level_profile(post_filter=preemption)
        return ProductScheduler(
            name, nodes, profile, make_nrt_cache("passthrough"), uses_nrt=False, pods=pods, nominated=nominated
        )
    mode = CACHE_OF[name]
    nrt = make_nrt_cache(mode, resync_period=resync_period, profile_names={name}, wait_for_sync=True)
    if scoring is None and name != "knuma":
        scoring = ScoringStrategy(UPSTREAM_STRATEGY)
    # upstream's deployments run kube-scheduler's default scores, NodeResourcesBalancedAllocation among them; knuma's
    # default configuration takes it out (`own_profile.KNUMA_DISABLED_SCORES`)
    upstream = name != "knuma"
    profile = dataclasses.replace(
        default_profile(scoring, name=name, cache=nrt, balanced_allocation=upstream), post_filter=preemption
    )
    return ProductScheduler(name, nodes, profile, nrt, uses_nrt=True, pods=pods, nominated=nominated)
