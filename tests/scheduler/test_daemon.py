"""End-to-end: `knuma.scheduler.daemon.loop.Scheduler` against a real `knuma apiserver` over HTTPS."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

import pytest

from knuma.kube.leaderelection import LeaseConfig
from knuma.scheduler.cache.knuma import KnumaCache
from knuma.scheduler.daemon.loop import DaemonSettings, LeadershipLost
from knuma.scheduler.framework.profiles import default_profile
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.testing.apiserver import RunningApiServer

from .daemon_env import SCHEDULER_NAME, cluster, running_scheduler

pytestmark = pytest.mark.slow

TWO_ZONES = {0: {"cpu": "4", "memory": "8Gi"}, 1: {"cpu": "4", "memory": "8Gi"}}


async def test_pods_of_every_qos_class_land_on_nodes_that_admit_them(api: RunningApiServer) -> None:
    async with cluster(api) as c:
        await c.add_node("small", {0: {"cpu": "2", "memory": "8Gi"}, 1: {"cpu": "2", "memory": "8Gi"}})
        await c.add_node("big", TWO_ZONES)
        async with running_scheduler(api):
            await c.create_pod("guaranteed", "3", "2Gi")
            await c.create_pod("burstable", "500m", guaranteed=False)
            await c.create_pod("besteffort")
            assert await c.bound("guaranteed") == "big"  # 3 CPUs fit one zone of "big" only
            assert await c.bound("burstable") in ("small", "big")
            assert await c.bound("besteffort") in ("small", "big")
            events = await c.wait_for(lambda: c.events("guaranteed"), what="Scheduled event")
            assert events[0]["reason"] == "Scheduled"
            assert events[0]["message"] == "Successfully assigned default/guaranteed to big"


async def test_pods_for_other_schedulers_are_left_alone(api: RunningApiServer) -> None:
    async with cluster(api) as c:
        await c.add_node("n1", TWO_ZONES)
        async with running_scheduler(api) as daemon:
            await c.create_pod("theirs", "1", scheduler="default-scheduler")
            await c.create_pod("ours", "1")
            await c.bound("ours")
            await asyncio.sleep(0.3)
            assert await c.node_of("theirs") == ""
            assert daemon.scheduled == 1


async def test_the_synced_heap_is_frozen_while_schedulers_run_and_thawed_after_the_last(api: RunningApiServer) -> None:
    """The initial lists are moved out of the cycle collector's reach once synced (`gc.freeze`), and given back when
    the last scheduler in the process stops."""
    assert gc.get_freeze_count() == 0
    async with cluster(api) as c:
        await c.add_node("n1", TWO_ZONES)
        async with running_scheduler(api) as first:
            await c.create_pod("p1", "1")
            await c.bound("p1")
            assert first.ready.is_set() and gc.get_freeze_count() > 0
            async with running_scheduler(api, settings=DaemonSettings(leader_elect=False)) as second:
                await asyncio.wait_for(second.ready.wait(), 10)
            assert gc.get_freeze_count() > 0  # the first still runs
        assert gc.get_freeze_count() == 0


async def test_unschedulable_pod_reports_and_is_scheduled_when_room_appears(api: RunningApiServer) -> None:
    async with cluster(api) as c:
        await c.add_node("n1", TWO_ZONES)
        await c.add_node("n2", TWO_ZONES)
        async with running_scheduler(api):
            await c.create_pod("wide", "6", "2Gi")  # 6 CPUs fit neither zone: node total would admit it

            async def failed() -> list[dict[str, object]]:
                return [e for e in await c.events("wide") if e["reason"] == "FailedScheduling"]

            events = await c.wait_for(failed, what="FailedScheduling")
            assert events[0]["message"] == "0/2 nodes are available: 2 cannot align container."
            assert events[0]["type"] == "Warning"
            # The exporter reports a bigger zone on n2 (e.g. CPUs freed): the pod is scheduled without a retry storm.
            await c.publish_nrt("n2", {0: {"cpu": "8", "memory": "8Gi"}, 1: TWO_ZONES[1]})
            assert await c.bound("wide") == "n2"


async def test_burst_faster_than_nrt_updates_overcommits_no_zone(api: RunningApiServer) -> None:
    """Ten 2-CPU pods, two nodes with two 4-CPU zones each, no NRT update in between: exactly eight fit (two per
    zone); the reservations on the predicted zones keep the scheduler from binding a ninth."""
    async with cluster(api) as c:
        await c.add_node("n1", TWO_ZONES)
        await c.add_node("n2", TWO_ZONES)
        async with running_scheduler(api) as daemon:
            for i in range(10):
                await c.create_pod(f"p{i}", "2", "1Gi")

            async def settled() -> bool:
                return daemon.scheduled == 8 and daemon.queue.counts()["unschedulable"] == 2

            await c.wait_for(settled, what="8 bound, 2 unschedulable")
            nodes = [await c.node_of(f"p{i}") for i in range(10)]
            assert sorted(n for n in nodes if n) == ["n1"] * 4 + ["n2"] * 4
            assert daemon.cache.reserved("n1") == 4


async def test_foreign_pods_are_accounted_for(api: RunningApiServer) -> None:
    async with cluster(api) as c:
        await c.add_node("n1", TWO_ZONES)
        # Bound by someone else (nodeName set directly), 4 exclusive CPUs: one whole zone, not yet in the NRT.
        await c.create_pod("foreign", "4", "1Gi", scheduler="other", node_name="n1")
        async with running_scheduler(api) as daemon:
            for i in range(3):
                await c.create_pod(f"p{i}", "2", "1Gi")

            async def settled() -> bool:
                return daemon.scheduled == 2 and daemon.queue.counts()["unschedulable"] == 1

            await c.wait_for(settled, what="2 bound, 1 unschedulable")


async def test_fresh_nrt_with_matching_fingerprint_drops_the_reservation(api: RunningApiServer) -> None:
    from knuma.api.fingerprint import compute

    async with cluster(api) as c:
        await c.add_node("n1", TWO_ZONES)
        async with running_scheduler(api) as daemon:
            await c.create_pod("p0", "2", "1Gi")
            await c.bound("p0")
            knuma = daemon.cache.nrt
            assert isinstance(knuma, KnumaCache)
            assert knuma.reserved("n1") == 1
            # The kubelet admits p0 (status.startTime): the shadow kubelet takes its zone for real.
            p0 = await c.pod("p0")
            p0["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
            await c.request("PUT", "/api/v1/namespaces/default/pods/p0/status", p0)

            async def admitted() -> bool:
                return knuma.reserved("n1") == 0

            await c.wait_for(admitted, what="p0 admitted on the shadow")
            # The exporter publishes the NRT after the kubelet admitted p0 on zone 0, with the pod fingerprint.
            await c.publish_nrt(
                "n1",
                {0: {"cpu": ("4", "2"), "memory": ("8Gi", "7Gi")}, 1: TWO_ZONES[1]},
                nodeTopologyPodsFingerprint=compute([("default", "p0")]),
            )

            async def reconciled() -> bool:
                return knuma.stats.reconciled == 1

            await c.wait_for(reconciled, what="the NRT checked against the shadow")
            info = daemon.cache.node_info("n1")
            assert info is not None and info.topology is not None
            assert info.topology.zones[0].available["cpu"] == 2000  # not subtracted twice


async def test_deleted_pod_frees_room_for_an_unschedulable_one(api: RunningApiServer) -> None:
    async with cluster(api) as c:
        await c.add_node("n1", {0: {"cpu": "4", "memory": "8Gi"}})
        async with running_scheduler(api) as daemon:
            await c.create_pod("first", "4", "1Gi")
            await c.bound("first")
            await c.create_pod("second", "4", "1Gi")

            async def parked() -> bool:
                return daemon.queue.counts()["unschedulable"] == 1

            await c.wait_for(parked, what="second unschedulable")
            await c.delete_pod("first")
            assert await c.bound("second") == "n1"


async def test_nrt_crd_installed_after_start_is_picked_up(api: RunningApiServer) -> None:
    """Upstream issue #967: NRT objects that appear after the scheduler started must be used."""
    async with cluster(api, crd=False) as c:
        await c.add_node("n1", TWO_ZONES, nrt=False)
        async with running_scheduler(api) as daemon:
            await c.install_crd()
            await c.publish_nrt("n1", {0: {"cpu": "1", "memory": "8Gi"}, 1: {"cpu": "1", "memory": "8Gi"}})

            async def has_nrt() -> bool:
                info = daemon.cache.node_info("n1")
                return info is not None and info.topology is not None

            await c.wait_for(has_nrt, timeout=15, what="NRT in the cache")
            await c.create_pod("p", "2", "1Gi")

            async def failed() -> list[dict[str, object]]:
                return [e for e in await c.events("p") if e["reason"] == "FailedScheduling"]

            events = await c.wait_for(failed, what="FailedScheduling")
            assert "cannot align container" in str(events[0]["message"])


async def test_two_replicas_never_both_schedule(api: RunningApiServer) -> None:
    lease = LeaseConfig(namespace="default", name="knuma-test", lease_duration=3, renew_deadline=2, retry_period=0.2)

    def settings(identity: str) -> DaemonSettings:
        return DaemonSettings(leader_elect=True, lease=lease, identity=identity, initial_backoff=0.1, max_backoff=0.5)

    async with cluster(api) as c:
        await c.add_node("n1", TWO_ZONES)
        async with running_scheduler(api, settings=settings("a")) as a:
            await c.wait_for(lambda: _true(a.ready.is_set()), what="a leads")
            async with running_scheduler(api, settings=settings("b")) as b:
                for i in range(4):
                    await c.create_pod(f"p{i}", "1", "1Gi")
                for i in range(4):
                    await c.bound(f"p{i}")
                # The binding is visible in the API before the leader has read the response and counted it.
                await c.wait_for(lambda: _true(a.scheduled == 4), what="a counts its 4 bindings")
                assert b.scheduled == 0
                assert not b.ready.is_set()
                lease_obj = await c.request("GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/knuma-test")
                assert lease_obj["spec"]["holderIdentity"] == "a"
            # b stopped without ever leading; now stop a: it releases the lease at once.
        lease_obj = await c.request("GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/knuma-test")
        assert lease_obj["spec"]["holderIdentity"] == ""
        async with running_scheduler(api, settings=settings("b")) as b2:
            await c.wait_for(lambda: _true(b2.ready.is_set()), timeout=5, what="b takes over without waiting")
            await c.create_pod("late", "1", "1Gi")
            await c.bound("late")
            await c.wait_for(lambda: _true(b2.scheduled == 1), what="b counts its binding")


async def _true(value: bool) -> bool:
    return value


async def test_a_leader_past_its_renew_deadline_stops_before_binding(api: RunningApiServer) -> None:
    """Issue 18 item 10: a leader that resumes after a pause longer than its renew deadline (here: its clock jumps
    25 s, its renew loop would only run in 10 s) must not schedule or bind from its stale queue."""
    lease = LeaseConfig(namespace="default", name="knuma-pause", lease_duration=30, renew_deadline=20, retry_period=10)
    settings = DaemonSettings(leader_elect=True, lease=lease, identity="paused", initial_backoff=0.1, max_backoff=0.5)
    async with cluster(api) as c:
        await c.add_node("n1", TWO_ZONES)
        with pytest.raises(LeadershipLost):
            async with running_scheduler(api, settings=settings) as a:
                await c.wait_for(lambda: _true(a.ready.is_set()), what="a leads")
                elector = a.elector
                assert elector is not None
                real_clock = elector.clock
                elector.clock = lambda: real_clock() + 25.0
                await c.create_pod("stale", "1", "1Gi")
                await c.wait_for(lambda: _true(elector.lost.is_set()), what="the leader steps down")
                await asyncio.sleep(0.5)
                assert not (await c.pod("stale"))["spec"].get("nodeName")
                assert a.scheduled == 0


async def test_recovers_from_an_api_server_restart(tmp_path: Path) -> None:
    """The API server goes away and comes back (same data, no watch history): the informers reconnect with backoff,
    get 410 Gone for their old resourceVersions, relist, and scheduling resumes."""
    from urllib.parse import urlsplit

    from knuma.testing.apiserver import apiserver_process

    data = tmp_path / "data"
    with apiserver_process(tmp_path / "first", data_dir=data) as first:
        port = urlsplit(first.url).port or 0
        async with cluster(first) as c:
            await c.add_node("n1", TWO_ZONES)
    daemon_api = first  # its kubeconfig stays valid: token and certificate live in the data directory
    async with running_scheduler(daemon_api) as daemon:
        await asyncio.sleep(0.2)  # no server: the informers are retrying
        with apiserver_process(tmp_path / "second", data_dir=data, port=port) as second:
            async with cluster(second, crd=False) as c:
                await c.wait_for(lambda: _true(daemon.ready.is_set()), timeout=60, what="caches synced after restart")
                await c.create_pod("after-restart", "1", "1Gi")
                assert await c.bound("after-restart", timeout=60) == "n1"
        with apiserver_process(tmp_path / "third", data_dir=data, port=port) as third:
            async with cluster(third, crd=False) as c:
                await c.create_pod("after-second-restart", "1", "1Gi")
                assert await c.bound("after-second-restart", timeout=60) == "n1"


async def test_explain_annotates_per_plugin_results_and_the_numa_placement(api: RunningApiServer) -> None:
    import json

    settings = DaemonSettings(leader_elect=False, explain=True)
    async with cluster(api) as c:
        await c.add_node("n1", TWO_ZONES)
        await c.add_node("n2", {0: {"cpu": "2", "memory": "8Gi"}, 1: {"cpu": "2", "memory": "8Gi"}})
        async with running_scheduler(api, settings=settings):
            await c.create_pod("p", "3", "2Gi")
            assert await c.bound("p") == "n1"
            annotations = (await c.pod("p"))["metadata"]["annotations"]
            prefix = "kube-scheduler-simulator.sigs.k8s.io/"
            filters = json.loads(annotations[prefix + "filter-result"])
            assert filters["n1"] == {"NodeResourcesFit": "passed", "NodeResourceTopologyMatch": "passed"}
            assert filters["n2"]["NodeResourceTopologyMatch"] == "cannot align container"
            assert annotations[prefix + "selected-node"] == "n1"
            assert set(json.loads(annotations[prefix + "score-result"])) == {"n1"}
            assert json.loads(annotations["knuma.io/numa-placement"]) == {"c": [0]}


async def test_profiles_from_a_configuration_file(api: RunningApiServer) -> None:
    """Two profiles in one daemon: the topology-aware one filters by NUMA zones, the other (NUMA plugin disabled)
    places by node totals only, as kube-scheduler would: onto a node whose kubelet will reject the pod."""
    import yaml

    from knuma.scheduler.config.load import build_profiles, parse_config

    config = parse_config(
        yaml.safe_load(
            """
            apiVersion: kubescheduler.config.k8s.io/v1
            kind: KubeSchedulerConfiguration
            profiles:
            - schedulerName: topology-aware-scheduler
              plugins: {multiPoint: {enabled: [{name: NodeResourceTopologyMatch}]}}
            - schedulerName: node-level
            """
        )
    )
    async with cluster(api) as c:
        await c.add_node("n1", TWO_ZONES)
        async with running_scheduler(api, profiles=build_profiles(config)) as daemon:
            await c.create_pod("aware", "6", "2Gi")
            await c.create_pod("unaware", "6", "2Gi", scheduler="node-level")
            assert await c.bound("unaware") == "n1"  # 6 CPUs on the node, none in a single zone

            async def parked() -> bool:
                return daemon.queue.counts()["unschedulable"] == 1

            await c.wait_for(parked, what="the topology-aware pod stays pending")
            assert await c.node_of("aware") == ""


async def test_gated_pods_wait_and_unsupported_constraints_are_reported(api: RunningApiServer) -> None:
    from knuma.scheduler.config.load import build_profiles, default_config

    async with cluster(api) as c:
        await c.add_node("n1", TWO_ZONES)
        async with running_scheduler(api, profiles=build_profiles(default_config())) as daemon:
            await c.create_pod("gated", "1", "1Gi", schedulingGates=[{"name": "example.com/wait"}])
            volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
            await c.create_pod("claim", "1", "1Gi", volumes=volumes)
            assert await c.bound("claim") == "n1"
            events = await c.wait_for(
                lambda: _reasons(c, "claim", "UnsupportedConstraints"), what="UnsupportedConstraints event"
            )
            assert "volume data (spec.volumes[0].persistentVolumeClaim)" in events[0]["message"]
            assert await c.node_of("gated") == "" and "default/gated" in daemon.gated
            await c.request("PATCH", "/api/v1/namespaces/default/pods/gated", {"spec": {"schedulingGates": None}})
            assert await c.bound("gated") == "n1"


async def _reasons(c: object, pod: str, reason: str) -> list[dict[str, object]]:
    from .daemon_env import Cluster

    assert isinstance(c, Cluster)
    return [e for e in await c.events(pod) if e["reason"] == reason]


async def test_host_ports_of_bound_pods_are_taken(api: RunningApiServer) -> None:
    from knuma.scheduler.config.load import build_profiles, default_config

    port = [{"name": "c", "image": "busybox", "ports": [{"containerPort": 80, "hostPort": 8080}]}]
    async with cluster(api) as c:
        await c.add_node("n1", TWO_ZONES)
        await c.add_node("n2", TWO_ZONES)
        async with running_scheduler(api, profiles=build_profiles(default_config())):
            await c.create_pod("web-1", containers=port)
            first = await c.bound("web-1")
            await c.create_pod("web-2", containers=port)
            assert await c.bound("web-2") == ({"n1", "n2"} - {first}).pop()


async def test_best_effort_pods_spread_and_events_name_the_profile(api: RunningApiServer) -> None:
    """Pods without requests still count on their node (kube-scheduler's non-zero requests), so LeastAllocated
    spreads them instead of piling them on the first node."""
    from knuma.scheduler.config.load import build_profiles, default_config

    async with cluster(api) as c:
        await c.add_node("n1", TWO_ZONES)
        await c.add_node("n2", TWO_ZONES)
        async with running_scheduler(api, profiles=build_profiles(default_config())):
            for i in range(4):
                await c.create_pod(f"be{i}")
                await c.bound(f"be{i}")
            nodes = sorted([await c.node_of(f"be{i}") for i in range(4)])
            assert nodes == ["n1", "n1", "n2", "n2"]
            events = await c.wait_for(lambda: _reasons(c, "be0", "Scheduled"), what="Scheduled event")
            assert events[0]["source"]["component"] == "topology-aware-scheduler"


async def test_overreserve_cache_holds_a_node_with_foreign_pods_until_a_resync_matches(api: RunningApiServer) -> None:
    """The daemon configured as upstream's overreserve cache (`cacheResyncPeriodSeconds: 1`): a pod bound by another
    scheduler makes its node `invalid node topology data` until the resync loop finds the published fingerprint equal
    to the pods running there."""
    from knuma.api.fingerprint import compute
    from knuma.scheduler.cache.overreserve import OverReserve
    from knuma.scheduler.framework.profiles import DEFAULT_PROFILE_NAME

    nrt = OverReserve(1.0, profile_names={DEFAULT_PROFILE_NAME})
    profile = default_profile()
    numa = profile.filters[-1]
    assert isinstance(numa, NodeResourceTopologyMatch)
    numa.cache = nrt
    async with cluster(api) as c:
        await c.add_node("n1", TWO_ZONES)
        foreign = await c.create_pod("foreign", "2", "1Gi", scheduler="other", node_name="n1")
        foreign["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
        await c.request("PUT", "/api/v1/namespaces/default/pods/foreign/status", foreign)
        async with running_scheduler(api, {DEFAULT_PROFILE_NAME: profile}, nrt=nrt) as daemon:
            await c.create_pod("p0", "2", "1Gi")

            async def rejected() -> bool:
                return any("invalid node topology data" in e["message"] for e in await c.events("p0"))

            await c.wait_for(rejected, timeout=30, what="FailedScheduling: invalid node topology data")
            assert daemon.scheduled == 0
            await c.publish_nrt(
                "n1",
                {0: {"cpu": "2", "memory": "7Gi"}, 1: TWO_ZONES[1]},
                nodeTopologyPodsFingerprint=compute([("default", "foreign")]),
                nodeTopologyPodsFingerprintMethod="all",
            )
            assert await c.bound("p0", timeout=30) == "n1"
            assert nrt.flushes == 1


async def test_invalid_pod_gets_an_event_and_is_left_alone(api: RunningApiServer) -> None:
    """kube-apiserver (and `knuma apiserver`) refuse duplicate container names, so the pod comes as an informer
    would deliver it from a server that let it through; the daemon reports it once, never queues it, and goes on
    scheduling."""
    invalid = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "dup", "namespace": "default", "uid": "u-dup"},
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "initContainers": [{"name": "app", "image": "busybox"}],
            "containers": [{"name": "app", "image": "busybox"}],
        },
    }
    async with cluster(api) as c:
        await c.add_node("n1", TWO_ZONES)
        async with running_scheduler(api) as daemon:
            daemon._pod_added(invalid)
            daemon._pod_updated(invalid, invalid)
            assert "default/dup" not in daemon.queue
            await daemon.events.flush()
            events = await c.wait_for(lambda: _reasons(c, "dup", "FailedScheduling"), what="the invalid-pod event")
            assert len(events) == 1 and events[0]["type"] == "Warning"
            assert events[0]["message"] == (
                "invalid pod, not scheduled: pod default/dup is invalid: spec.initContainers[0].name: Duplicate value: "
                '"app" (container names must be unique across initContainers and containers)'
            )
            await c.create_pod("fine", "1", "1Gi")
            assert await c.bound("fine") == "n1"


async def test_knuma_cache_starts_on_a_running_cluster_without_counting_running_pods_twice(
    api: RunningApiServer,
) -> None:
    """A daemon (re)starting where a pod already runs, reflected in the NRT (its fingerprint counts it): the shadow
    kubelet starts from the NRT and takes the running pod as it is there. Zone 0 has 2 of 4 CPUs left, zone 1 all 4:
    three more 2-CPU pods fit, the fourth does not (counting the running pod twice would leave room for two)."""
    from knuma.api.fingerprint import compute
    from knuma.scheduler.framework.profiles import DEFAULT_PROFILE_NAME

    async with cluster(api) as c:
        await c.add_node("n1", TWO_ZONES, nrt=False)
        running = await c.create_pod("running", "2", "1Gi", scheduler="other", node_name="n1")
        running["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
        await c.request("PUT", "/api/v1/namespaces/default/pods/running/status", running)
        await c.publish_nrt(
            "n1",
            {0: {"cpu": ("4", "2"), "memory": ("8Gi", "7Gi")}, 1: TWO_ZONES[1]},
            nodeTopologyPodsFingerprint=compute([("default", "running")]),
            nodeTopologyPodsFingerprintMethod="all",
        )
        nrt = KnumaCache(wait_for_sync=True)
        profile = default_profile(cache=nrt)
        async with running_scheduler(api, {DEFAULT_PROFILE_NAME: profile}, nrt=nrt) as daemon:
            for i in range(4):
                await c.create_pod(f"p{i}", "2", "1Gi")

            async def settled() -> bool:
                return daemon.scheduled == 3 and daemon.queue.counts()["unschedulable"] == 1

            await c.wait_for(settled, timeout=30, what="3 bound, 1 unschedulable")


async def test_full_pcpus_only_node_gets_no_pod_with_cpus_that_are_not_whole_cores(api: RunningApiServer) -> None:
    """The NRT says the node's CPU manager runs `full-pcpus-only` with 2 threads per core: a 3-CPU pod would fail
    there with SMTAlignmentError, so the daemon reports it unschedulable with its own reason; a 4-CPU pod binds."""
    async with cluster(api) as c:
        await c.add_node("smt", TWO_ZONES, nrt=False)
        await c.publish_nrt("smt", TWO_ZONES, cpuManagerPolicyOptionFullPCPUsOnly="true", cpuManagerCPUsPerCore="2")
        async with running_scheduler(api):
            await c.create_pod("odd", "3", "1Gi")
            events = await c.wait_for(lambda: _reasons(c, "odd", "FailedScheduling"), what="FailedScheduling")
            assert events[0]["message"] == (
                "0/1 nodes are available: 1 cpus not a multiple of the node's CPUs per core (SMTAlignmentError)."
            )
            await c.create_pod("even", "4", "1Gi")
            assert await c.bound("even") == "smt"
            assert await c.node_of("odd") == ""


async def test_a_resize_the_kubelet_made_wakes_a_pod_waiting_for_its_room(api: RunningApiServer) -> None:
    """A node of 4 CPUs without an NRT, a Burstable pod on it holding 3 (its kubelet reported that allocation) and a
    pod of 2 waiting. The first pod's spec shrunk to 1 counts 3 while the kubelet still holds 3 (`PodRequests` with
    `UseStatusResources`), so nothing is bound into room the node has not given back; once the kubelet reports the
    new allocation, the waiting pod is tried again at once (`UpdatePodScaleDown`), and the unschedulable one shows the
    `PodScheduled` condition kube-scheduler writes (`Unschedulable`, with the attempt's message)."""
    async with cluster(api) as c:
        await c.add_node("n1", {0: {"cpu": "4", "memory": "8Gi"}}, nrt=False)
        async with running_scheduler(api) as daemon:
            await c.create_pod("first", "3", "1Gi", guaranteed=False)
            await c.bound("first")
            status = {
                "phase": "Running",
                "startTime": "2026-11-29T00:00:00Z",
                "containerStatuses": [
                    {
                        "name": "c",
                        "image": "busybox",
                        "imageID": "",
                        "ready": True,
                        "restartCount": 0,
                        "state": {"running": {}},
                        "allocatedResources": {"cpu": "3", "memory": "1Gi"},
                        "resources": {"requests": {"cpu": "3", "memory": "1Gi"}},
                    }
                ],
            }
            await c.request("PATCH", "/api/v1/namespaces/default/pods/first/status", {"status": status})
            await c.create_pod("second", "2", "1Gi", guaranteed=False)

            async def parked() -> dict[str, object] | None:
                conditions = (await c.pod("second"))["status"].get("conditions") or []
                return next((x for x in conditions if x["type"] == "PodScheduled"), None)

            condition = await c.wait_for(parked, what="second's PodScheduled condition")
            assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
            assert condition["message"] == "0/1 nodes are available: 1 Insufficient cpu."
            assert daemon.queue.counts()["unschedulable"] == 1

            resize = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}
            await c.request("PATCH", "/api/v1/namespaces/default/pods/first/resize", resize)
            await asyncio.sleep(1.0)
            assert await c.node_of("second") == ""  # the kubelet still holds 3
            status["containerStatuses"][0]["allocatedResources"] = {"cpu": "1", "memory": "1Gi"}  # type: ignore[index]
            status["containerStatuses"][0]["resources"] = {"requests": {"cpu": "1", "memory": "1Gi"}}  # type: ignore[index]
            await c.request("PATCH", "/api/v1/namespaces/default/pods/first/status", {"status": status})
            assert await c.bound("second", timeout=5.0) == "n1"
            conditions = (await c.pod("second"))["status"]["conditions"]
            assert [(x["type"], x["status"]) for x in conditions if x["type"] == "PodScheduled"] == [
                ("PodScheduled", "True")
            ]
