"""The NRT cache modes (`knuma.scheduler.cache`): upstream's passthrough, overreserve and discardreserved, knuma's own,
and how NodeResourceTopologyMatch's arguments select one."""

from __future__ import annotations

from typing import Any

import pytest

from knuma.api.fingerprint import compute
from knuma.api.pod import Pod
from knuma.scheduler.cache.discardreserved import DiscardReserved
from knuma.scheduler.cache.interface import BoundPod, NRTCache
from knuma.scheduler.cache.knuma import KnumaCache
from knuma.scheduler.cache.nrt import ClusterCache
from knuma.scheduler.cache.overreserve import OverReserve
from knuma.scheduler.cache.passthrough import Passthrough
from knuma.scheduler.cache.select import nrt_cache
from knuma.scheduler.config.load import SchedulerConfigError, build_nrt_cache, build_profiles, parse_config
from knuma.scheduler.fast.path import FastPath
from knuma.scheduler.framework.interface import schedule_one
from knuma.scheduler.plugins.numa import INVALID_TOPOLOGY_DATA
from knuma.scheduler.plugins.numa_args import NumaArgs
from tests.scheduler.builders import guaranteed, nrt, pod

ZONES = {0: {"cpu": "4", "memory": "8Gi"}, 1: {"cpu": "4", "memory": "8Gi"}}
PROFILE = "topology-aware-scheduler"


def node_manifest(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
    }


def cluster(nrt_cache: NRTCache, *names: str, **attributes: str) -> ClusterCache:
    cache = ClusterCache(nrt_cache)
    for name in names or ("n1",):
        cache.upsert_node(node_manifest(name))
        cache.upsert_nrt(nrt(name, ZONES, **attributes))
    return cache


def two_cpu(name: str) -> Pod:
    return pod(guaranteed("c", "2", "1Gi"), name=name)


def bound(p: Pod, node: str = "n1", phase: str = "Running", scheduler: str = PROFILE) -> BoundPod:
    return BoundPod(p.key, p.namespace, p.name, node, phase, phase != "Pending", scheduler, p)


def cpus(cache: ClusterCache, node: str = "n1") -> list[int]:
    info = cache.node_info(node)
    assert info is not None and info.topology is not None
    return [z.available["cpu"] for z in info.topology.zones]


# -- selection ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "mode"),
    [
        (NumaArgs(), "knuma"),
        (NumaArgs(cache_resync_period_seconds=0), "passthrough"),
        (NumaArgs(cache_resync_period_seconds=-1), "passthrough"),
        (NumaArgs(cache_resync_period_seconds=5), "overreserve"),
        (NumaArgs(discard_reserved_nodes=True, cache_resync_period_seconds=5), "discardreserved"),
    ],
)
def test_the_arguments_select_the_cache_as_upstream_does(args: NumaArgs, mode: str) -> None:
    cache = nrt_cache(args)
    assert cache.mode == mode
    assert cache.resync_period == (5.0 if mode == "overreserve" else None)


def test_a_configuration_file_selects_and_configures_the_cache() -> None:
    config = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "numa",
                    "plugins": {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}},
                    "pluginConfig": [
                        {
                            "name": "NodeResourceTopologyMatch",
                            "args": {
                                "cacheResyncPeriodSeconds": 3,
                                "cache": {"foreignPodsDetect": "OnlyExclusiveResources", "informerMode": "Shared"},
                            },
                        }
                    ],
                }
            ],
        }
    )
    cache = build_nrt_cache(config)
    assert isinstance(cache, OverReserve)
    assert (cache.resync_period, cache.foreign_pods_detect, cache.informer_mode) == (
        3,
        "OnlyExclusiveResources",
        "Shared",
    )
    assert cache.profile_names == {"numa"}
    plugin = build_profiles(config, cache)["numa"].filters[-1]
    assert getattr(plugin, "cache", None) is cache


def test_profiles_must_agree_on_the_cache() -> None:
    def profile(name: str, period: int) -> dict[str, Any]:
        return {
            "schedulerName": name,
            "plugins": {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}},
            "pluginConfig": [{"name": "NodeResourceTopologyMatch", "args": {"cacheResyncPeriodSeconds": period}}],
        }

    document = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile("a", 5), profile("b", 10)],
    }
    with pytest.raises(SchedulerConfigError, match=r"profiles\[1\]\.pluginConfig: .*differ from profiles\[0\] \(a\)"):
        parse_config(document)


# -- passthrough ---------------------------------------------------------------------------------------------------


def test_passthrough_shows_the_last_published_nrt_and_reserves_nothing() -> None:
    cache = cluster(Passthrough())
    cache.assume(two_cpu("a"), "n1")
    assert cpus(cache) == [4000, 4000]
    cache.upsert_nrt(nrt("n1", {0: {"cpu": "2", "memory": "7Gi"}, 1: ZONES[1]}))
    assert cpus(cache) == [2000, 4000]


# -- overreserve ---------------------------------------------------------------------------------------------------


def test_overreserve_subtracts_a_reserved_pod_from_every_zone_until_a_matching_resync() -> None:
    over = OverReserve(5, profile_names={PROFILE})
    cache = cluster(over)
    a = two_cpu("a")
    cache.assume(a, "n1")
    assert cpus(cache) == [2000, 2000]  # pessimistic: every zone loses the request
    # The exporter publishes before the kubelet ran the pod: nothing changes until a resync.
    cache.upsert_nrt(nrt("n1", ZONES, nodeTopologyPodsFingerprint=compute([])))
    assert cpus(cache) == [2000, 2000]
    assert not over.resync()  # the node is not dirty: no resync attempt
    over.node_maybe_over_reserved("n1")
    cache.pod_bound(bound(a, phase="Pending"))
    assert not over.resync()  # no relevant pod (only a Pending one): "cannot find any pod for node"
    cache.pod_bound(bound(a))
    assert not over.resync()  # the published fingerprint counts no pod; the scheduler sees one: stay dirty
    assert "n1" in over.maybe_over_reserved
    cache.upsert_nrt(
        nrt(
            "n1",
            {0: {"cpu": "2", "memory": "7Gi"}, 1: ZONES[1]},
            nodeTopologyPodsFingerprint=compute([(a.namespace, a.name)]),
        )
    )
    assert cpus(cache) == [2000, 2000]  # published, not adopted yet
    assert over.resync()
    assert cpus(cache) == [2000, 4000]
    assert over.reserved("n1") == 0 and "n1" not in over.maybe_over_reserved


def test_overreserve_assumed_pods_outlive_their_termination() -> None:
    over = OverReserve(5, profile_names={PROFILE})
    cache = cluster(over)
    a = two_cpu("a")
    cache.assume(a, "n1")
    cache.pod_bound(bound(a, phase="Succeeded"))
    cache.delete_pod({"metadata": {"name": "a", "namespace": "default"}, "spec": {"nodeName": "n1"}})
    assert cpus(cache) == [2000, 2000]


def test_overreserve_filter_rejections_mark_the_node_through_the_plugin() -> None:
    over = OverReserve(5, profile_names={PROFILE})
    cache = cluster(over)
    config = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": PROFILE,
                    "plugins": {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}},
                    "pluginConfig": [{"name": "NodeResourceTopologyMatch", "args": {"cacheResyncPeriodSeconds": 5}}],
                }
            ],
        }
    )
    profile = build_profiles(config, over)[PROFILE]
    for i in range(2):
        cache.assume(two_cpu(f"a{i}"), "n1")
    assert cpus(cache) == [0, 0]
    big = pod(guaranteed("c", "2", "1Gi"), name="b")
    assert schedule_one(profile, big, cache.node_infos()).selected is None
    assert over.maybe_over_reserved == {"n1"}
    over.maybe_over_reserved.clear()
    fast = FastPath(cache)
    assert fast.decide(profile, big).node is None
    assert over.maybe_over_reserved == {"n1"}, "the fast path reports its rejections too"


@pytest.mark.parametrize(
    ("detect", "exclusive_pod", "marked"),
    [("All", False, True), ("OnlyExclusiveResources", False, False), ("OnlyExclusiveResources", True, True)],
)
def test_overreserve_foreign_pods_make_the_node_unusable_until_resync(
    detect: str, exclusive_pod: bool, marked: bool
) -> None:
    over = OverReserve(5, profile_names={PROFILE}, foreign_pods_detect=detect)
    cache = cluster(over)
    spec = guaranteed("c", "2", "1Gi") if exclusive_pod else {"name": "c", "image": "x"}
    foreign = pod(spec, name="foreign")
    cache.pod_bound(bound(foreign, scheduler="default-scheduler"))
    info = cache.node_info("n1")
    assert info is not None
    assert info.nrt_fresh is not marked
    if not marked:
        return
    config = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": PROFILE,
                    "plugins": {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}},
                }
            ],
        }
    )
    profile = build_profiles(config, over)[PROFILE]
    result = schedule_one(profile, two_cpu("b"), cache.node_infos())
    assert result.selected is None and INVALID_TOPOLOGY_DATA in result.failure_summary()
    fast = FastPath(cache)
    assert fast.decide(profile, two_cpu("b")).node is None
    besteffort = pod({"name": "c", "image": "x"}, name="be")
    assert fast.decide(profile, besteffort).node == "n1", "BestEffort pods skip the NUMA check"
    cache.upsert_nrt(nrt("n1", ZONES, nodeTopologyPodsFingerprint=compute([(foreign.namespace, foreign.name)])))
    assert over.resync()
    info = cache.node_info("n1")
    assert info is not None and info.nrt_fresh


def test_overreserve_a_foreign_pod_seen_before_its_nodes_nrt_still_marks_the_node() -> None:
    """At start the pod and NRT informers sync concurrently; upstream lists the NRTs first, so a foreign pod delivered
    before its node's NRT must still mark the node once the NRT arrives (CI once bound a pod right past it)."""
    over = OverReserve(5, profile_names={PROFILE})
    cache = ClusterCache(over)
    cache.upsert_node(node_manifest("n1"))
    cache.pod_bound(bound(pod(guaranteed("c", "2", "1Gi"), name="foreign"), scheduler="default-scheduler"))
    cache.upsert_nrt(nrt("n1", ZONES))
    info = cache.node_info("n1")
    assert info is not None and not info.nrt_fresh
    assert over.foreign == {"n1"}


@pytest.mark.parametrize(
    ("method", "published", "flushes"),
    [
        ("Autodetect", "with-exclusive-resources", True),
        ("Autodetect", "all", False),
        ("All", "with-exclusive-resources", False),
        ("OnlyExclusiveResources", "all", True),
    ],
)
def test_overreserve_resync_method_picks_the_pods_of_the_fingerprint(
    method: str, published: str, flushes: bool
) -> None:
    over = OverReserve(5, profile_names={PROFILE}, resync_method=method)
    cache = cluster(over)
    pinned, shared = two_cpu("pinned"), pod({"name": "c", "image": "x"}, name="shared")
    for p in (pinned, shared):
        cache.assume(p, "n1")
        cache.pod_bound(bound(p))
    over.node_maybe_over_reserved("n1")
    cache.upsert_nrt(
        nrt(
            "n1",
            ZONES,
            nodeTopologyPodsFingerprint=compute([(pinned.namespace, pinned.name)]),
            nodeTopologyPodsFingerprintMethod=published,
        )
    )
    assert over.resync() is flushes


@pytest.mark.parametrize(("mode", "flushes"), [("Dedicated", False), ("Shared", True)])
def test_overreserve_informer_mode_decides_whether_terminal_pods_count(mode: str, flushes: bool) -> None:
    over = OverReserve(5, profile_names={PROFILE}, informer_mode=mode)
    cache = cluster(over)
    done, running = two_cpu("done"), two_cpu("running")
    for p in (done, running):
        cache.assume(p, "n1")
    cache.pod_bound(bound(done, phase="Succeeded"))
    cache.pod_bound(bound(running))
    over.node_maybe_over_reserved("n1")
    cache.upsert_nrt(nrt("n1", ZONES, nodeTopologyPodsFingerprint=compute([(running.namespace, running.name)])))
    assert over.resync() is flushes


def test_overreserve_adopts_a_changed_topology_manager_config_without_fingerprint() -> None:
    over = OverReserve(5, profile_names={PROFILE})
    cache = cluster(over)
    cache.upsert_nrt(nrt("n1", ZONES, policy="restricted"))
    info = cache.node_info("n1")
    assert info is not None and info.topology is not None and info.topology.config.policy.value == "single-numa-node"
    assert over.resync()
    info = cache.node_info("n1")
    assert info is not None and info.topology is not None and info.topology.config.policy.value == "restricted"


# -- discardreserved -----------------------------------------------------------------------------------------------


def test_discardreserved_holds_the_node_from_reserve_to_post_bind() -> None:
    discard = DiscardReserved()
    cache = cluster(discard, "n1", "n2")
    a = two_cpu("a")
    cache.assume(a, "n1")
    first, second = cache.node_infos()
    assert (first.nrt_fresh, second.nrt_fresh) == (False, True)
    cache.bound(a, "n1")
    assert cache.node_info("n1").nrt_fresh  # type: ignore[union-attr]
    b = two_cpu("b")
    cache.assume(b, "n2")
    cache.forget(b.key)
    assert cache.node_info("n2").nrt_fresh  # type: ignore[union-attr]


# -- knuma ---------------------------------------------------------------------------------------------------------


def used(cpu: str, memory: str = "7Gi") -> dict[str, tuple[str, str]]:
    """A zone of 4 CPUs and 8Gi with `cpu` / `memory` available."""
    return {"cpu": ("4", cpu), "memory": ("8Gi", memory)}


def fingerprint(*pods: Pod) -> str:
    return compute((p.namespace, p.name) for p in pods)


def test_knuma_follows_each_pod_from_reserve_to_admission_to_release() -> None:
    knuma = KnumaCache()
    cache = cluster(knuma)
    a, b = two_cpu("a"), two_cpu("b")
    cache.assume(a, "n1")
    cache.assume(b, "n1")
    assert cpus(cache) == [0, 4000]  # both on zone 0, where the kubelet's lowest-zone choice puts them
    assert knuma.reserved("n1") == 2
    cache.pod_bound(bound(a))  # the kubelet admitted a: the shadow takes zone 0 for real
    assert knuma.reserved("n1") == 1 and cpus(cache) == [0, 4000]
    cache.pod_removed(a.key, "n1")  # a terminated: its zone is free at once, before any NRT
    assert cpus(cache) == [2000, 4000]


def test_knuma_checks_the_shadow_against_nrts_that_count_the_same_pods() -> None:
    knuma = KnumaCache()
    cache = cluster(knuma)
    a = two_cpu("a")
    cache.assume(a, "n1")
    cache.pod_bound(bound(a))
    # An NRT that does not count a yet (published before the admission) changes nothing.
    cache.upsert_nrt(nrt("n1", ZONES, nodeTopologyPodsFingerprint=fingerprint()))
    assert cpus(cache) == [2000, 4000] and knuma.stats.unmatched == 1
    # One that counts a and agrees is a consistency check.
    cache.upsert_nrt(nrt("n1", {0: used("2"), 1: ZONES[1]}, nodeTopologyPodsFingerprint=fingerprint(a)))
    assert cpus(cache) == [2000, 4000] and (knuma.stats.reconciled, knuma.stats.drift) == (1, 0)
    # One that counts a but shows it elsewhere (the kubelet chose differently): the NRT wins.
    cache.upsert_nrt(nrt("n1", {0: ZONES[0], 1: used("2")}, nodeTopologyPodsFingerprint=fingerprint(a)))
    assert cpus(cache) == [4000, 2000] and knuma.stats.drift == 1
    cache.pod_removed(a.key, "n1")
    assert cpus(cache) == [4000, 2000], "after drift, a's zones are unknown: its release frees nothing"


def test_knuma_seeds_from_the_nrt_after_a_restart_and_bounds_what_it_does_not_reflect() -> None:
    """A daemon starting on a running cluster: the NRT reflects a (running before) but not b (admitted since); c is
    bound and not admitted yet. The shadow holds a where the NRT shows it; b's zone is unknown, so b is taken from
    every zone until an NRT that counts a and b gives the zones; c is replayed on top."""
    knuma = KnumaCache(wait_for_sync=True)
    cache = ClusterCache(knuma)
    cache.upsert_node(node_manifest("n1"))
    a, b, c = two_cpu("a"), two_cpu("b"), two_cpu("c")
    cache.upsert_nrt(nrt("n1", {0: used("2"), 1: ZONES[1]}, nodeTopologyPodsFingerprint=fingerprint(a)))
    cache.pod_bound(bound(a))
    cache.pod_bound(bound(b))
    cache.pod_bound(bound(c, phase="Pending"))
    assert cache.node_info("n1").topology is None  # type: ignore[union-attr]
    knuma.informers_synced()
    assert cpus(cache) == [0, 0] and knuma.reserved("n1") == 1
    assert not knuma.exact("n1")
    # The kubelet had put b on zone 0: the next NRT that counts a and b says so.
    cache.upsert_nrt(nrt("n1", {0: used("0", "6Gi"), 1: ZONES[1]}, nodeTopologyPodsFingerprint=fingerprint(a, b)))
    assert cpus(cache) == [0, 2000] and knuma.exact("n1")


def test_knuma_seeds_every_running_pod_as_unknown_when_the_nrt_counts_other_pods() -> None:
    """The NRT was published before a pod that has terminated since (the fingerprint matches no set of listed pods):
    no running pod is known to be reflected, so each is taken from every zone."""
    knuma = KnumaCache(wait_for_sync=True)
    cache = ClusterCache(knuma)
    cache.upsert_node(node_manifest("n1"))
    a, gone = two_cpu("a"), two_cpu("gone")
    cache.upsert_nrt(nrt("n1", {0: used("0"), 1: ZONES[1]}, nodeTopologyPodsFingerprint=fingerprint(a, gone)))
    cache.pod_bound(bound(a))
    knuma.informers_synced()
    assert cpus(cache) == [0, 2000] and not knuma.exact("n1") and knuma.stats.unmatched == 1


def test_a_pod_held_without_zones_may_free_any_zone_that_could_hold_it() -> None:
    """After a restart, StableUnderRelease considers the release of a pod whose zones are unknown on each zone that
    could have held it; releasing such a pod makes the node inexact until an NRT gives the zones again."""
    knuma = KnumaCache(wait_for_sync=True)
    cache = ClusterCache(knuma)
    cache.upsert_node(node_manifest("n1"))
    a = two_cpu("a")
    cache.upsert_nrt(nrt("n1", {0: used("2"), 1: ZONES[1]}, nodeTopologyPodsFingerprint=fingerprint(a)))
    cache.pod_bound(bound(a))
    knuma.informers_synced()
    assert cpus(cache) == [2000, 4000] and knuma.exact("n1")
    releases = [[z.available["cpu"] for z in after.zones] for _, after in knuma.single_releases("n1")]
    assert releases == [[4000, 4000]]  # zone 1 is whole: a can only be on zone 0
    cache.pod_removed(a.key, "n1")
    assert cpus(cache) == [2000, 4000] and not knuma.exact("n1")


def test_knuma_reseeds_when_the_node_is_reconfigured() -> None:
    knuma = KnumaCache()
    cache = cluster(knuma)
    a = two_cpu("a")
    cache.assume(a, "n1")
    cache.pod_bound(bound(a))
    cache.upsert_nrt(nrt("n1", {0: {"cpu": ("8", "6"), "memory": "8Gi"}, 1: ZONES[1]}))  # more CPUs, no fingerprint
    assert cpus(cache) == [6000, 4000]


def test_overreserve_resync_counts_the_pods_again_once_they_change() -> None:
    """Resync reuses a node's pod fingerprint while its pods stay as they were; a pod leaving, arriving or changing
    phase is counted at the next resync (here: the NRT reflects one pod, the scheduler sees two until one is gone)."""
    over = OverReserve(5, profile_names={PROFILE})
    cache = cluster(over)
    first, second = two_cpu("first"), two_cpu("second")
    for p in (first, second):
        cache.assume(p, "n1")
        cache.pod_bound(bound(p))
    over.node_maybe_over_reserved("n1")
    cache.upsert_nrt(nrt("n1", ZONES, nodeTopologyPodsFingerprint=compute([(first.namespace, first.name)])))
    assert not over.resync()
    assert not over.resync()  # nothing changed: still a mismatch
    cache.pod_removed(second.key, "n1")
    assert over.resync()  # the pods now match the NRT: flushed
    assert over.reserved("n1") == 0
    third = two_cpu("third")
    cache.assume(third, "n1")
    cache.pod_bound(bound(third, phase="Pending"))
    over.node_maybe_over_reserved("n1")
    assert over.resync()  # a Pending pod does not count (Dedicated): the fingerprint still matches
    cache.assume(third, "n1")
    cache.pod_bound(bound(third))
    over.node_maybe_over_reserved("n1")
    assert not over.resync()  # Running now: counted, and the NRT does not reflect it
