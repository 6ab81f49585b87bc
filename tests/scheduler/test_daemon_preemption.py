"""End-to-end: DefaultPreemption in the daemon against a real `knuma apiserver` (priorities resolved from real
PriorityClasses by the server's Priority admission): NUMA-aware victim selection, the eviction, the nomination, the
preemptor bound once its victims are gone, and the messages when preemption cannot help."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from knuma.scheduler.config.load import build_nrt_cache, build_profiles, default_config, parse_config
from knuma.scheduler.daemon.loop import DaemonSettings
from knuma.testing.apiserver import RunningApiServer

from .daemon_env import NRTS, SCHEDULER_NAME, Cluster, cluster, running_scheduler

pytestmark = pytest.mark.slow

CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"
TWO_ZONES = {0: {"cpu": "4", "memory": "8Gi"}, 1: {"cpu": "4", "memory": "8Gi"}}


def _config(numa_args: dict[str, Any] | None = None) -> Any:
    plugin_config = [{"name": "NodeResourceTopologyMatch", "args": numa_args}] if numa_args else []
    return parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": SCHEDULER_NAME,
                    "plugins": {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}},
                    "pluginConfig": plugin_config,
                }
            ],
        }
    )


async def _classes(c: Cluster, **extra: Any) -> None:
    for name, value in (("low", 10), ("mid", 20), ("high", 1000)):
        body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}}
        await c.request("POST", CLASSES, {**body, "value": value, **extra.get(name, {})})


async def _failed(c: Cluster, name: str) -> list[str]:
    return [str(e["message"]) for e in await c.events(name) if e["reason"] == "FailedScheduling"]


async def test_a_pod_that_only_numa_alignment_blocks_evicts_the_one_pod_holding_its_zone(
    api: RunningApiServer,
) -> None:
    """Two 4-CPU zones, each holding a 3-CPU pod: 2 CPUs free on the node, 1 per zone. A 4-CPU Guaranteed pod of
    higher priority needs a whole zone. Evicting only the less important pod frees one: the other pod is reprieved.
    A node-level dry run would reprieve either (2 + 3 CPUs free is enough on the node); with the NUMA view the
    reprieved pod must keep its zone and the victim must free the other."""
    config = _config()
    nrt = build_nrt_cache(config)
    async with cluster(api) as c:
        await _classes(c)
        await c.add_node("n1", TWO_ZONES)
        async with running_scheduler(api, profiles=build_profiles(config, nrt), nrt=nrt) as daemon:
            await c.create_pod("mid", "3", "1Gi", priorityClassName="mid")
            assert await c.bound("mid") == "n1"
            await c.create_pod("low", "3", "1Gi", priorityClassName="low")
            assert await c.bound("low") == "n1"
            created = await c.create_pod("urgent", "4", "1Gi", priorityClassName="high")
            assert await c.bound("urgent", timeout=20) == "n1"

            async def low_gone() -> bool:
                response = await c.http.get("/api/v1/namespaces/default/pods/low")
                return response.status_code == 404

            await c.wait_for(low_gone, what="the victim deleted")
            assert await c.node_of("mid") == "n1"  # reprieved
            events = await c.wait_for(
                lambda: _events_with(c, "low", "Preempted"), what="the Preempted event on the victim"
            )
            assert events[0]["message"] == f"Preempted by pod {created['metadata']['uid']} on node n1"
            assert events[0]["type"] == "Normal"
            failed = await _failed(c, "urgent")
            # the attempt that preempted says so with no suffix; a later attempt while the victim terminated may have
            # waited for it (events are listed by name, not in the order they were recorded)
            plain = "0/1 nodes are available: 1 Insufficient cpu."
            assert plain in failed, failed
            assert set(failed) <= {
                plain,
                f"{plain} preemption: not eligible due to a terminating pod on the nominated node.",
            }

            async def nominated() -> bool:
                return bool((await c.pod("urgent")).get("status", {}).get("nominatedNodeName") == "n1")

            await c.wait_for(nominated, what="status.nominatedNodeName")
            assert daemon.metrics.registry.get_sample_value("scheduler_preemption_victims_sum") == 1


async def _events_with(c: Cluster, name: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in await c.events(name) if e["reason"] == reason]


async def test_with_preemption_mode_disabled_the_zones_of_victims_are_not_counted_as_freed(
    api: RunningApiServer,
) -> None:
    """Upstream's NUMA plugin (`preemptionMode: Disabled`) sees the published zones in the dry run: the pod that
    only alignment blocks finds no candidate, and no pod is evicted."""
    config = _config({"preemptionMode": "Disabled"})
    nrt = build_nrt_cache(config)
    async with cluster(api) as c:
        await _classes(c)
        await c.add_node("n1", TWO_ZONES)
        async with running_scheduler(api, profiles=build_profiles(config, nrt), nrt=nrt):
            for name in ("a", "b"):
                await c.create_pod(name, "3", "1Gi", priorityClassName="low")
                assert await c.bound(name) == "n1"
            await c.create_pod("urgent", "4", "1Gi", priorityClassName="high")
            failed = await c.wait_for(lambda: _failed(c, "urgent"), what="FailedScheduling")
            assert failed[0] == (
                "0/1 nodes are available: 1 Insufficient cpu. "
                "preemption: 0/1 nodes are available: 1 cannot align container."
            )
            assert await c.node_of("a") == "n1" and await c.node_of("b") == "n1"


async def test_preemption_that_cannot_help_says_why(api: RunningApiServer) -> None:
    """No lower-priority pod to evict, and a pod whose class says `preemptionPolicy: Never`: nothing is evicted and
    the FailedScheduling message ends with kube-scheduler's reason."""
    config = _config()
    nrt = build_nrt_cache(config)
    async with cluster(api) as c:
        await _classes(c, high={"preemptionPolicy": "Never"})
        await c.add_node("n1", TWO_ZONES)
        async with running_scheduler(api, profiles=build_profiles(config, nrt), nrt=nrt):
            await c.create_pod("first", "4", "1Gi", priorityClassName="mid")
            await c.create_pod("second", "4", "1Gi", priorityClassName="mid")
            assert await c.bound("first") == "n1" and await c.bound("second") == "n1"
            await c.create_pod("equal", "4", "1Gi", priorityClassName="mid")
            failed = await c.wait_for(lambda: _failed(c, "equal"), what="FailedScheduling")
            assert failed[0] == (
                "0/1 nodes are available: 1 Insufficient cpu. "
                "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
            )
            await c.create_pod("polite", "4", "1Gi", priorityClassName="high")
            failed = await c.wait_for(lambda: _failed(c, "polite"), what="FailedScheduling")
            assert failed[0] == (
                "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
            )
            assert await c.node_of("first") == "n1" and await c.node_of("second") == "n1"


async def test_the_preemptor_waits_for_terminating_victims_and_its_room_is_held_against_lower_priority_pods(
    api: RunningApiServer,
) -> None:
    """Victims that take time to go (a finalizer stands for a long graceful termination): the preemptor is nominated
    and does not preempt again while one is terminating ("not eligible due to a terminating pod on the nominated
    node"), and the room it was nominated for is held: a lower-priority pod that the published zones would admit
    (2 CPUs free in zone 0) is refused while the nomination stands. Once the victim is gone both are placed."""
    config = _config()
    nrt = build_nrt_cache(config)
    hold = {"finalizers": ["example.com/hold"]}
    async with cluster(api) as c:
        await _classes(c)
        await c.add_node("n1", TWO_ZONES)
        async with running_scheduler(api, profiles=build_profiles(config, nrt), nrt=nrt):
            await c.create_pod("keeper", "2", "1Gi", priorityClassName="mid")
            assert await c.bound("keeper") == "n1"
            body = await c.create_pod("slow", "4", "1Gi", priorityClassName="low")
            await c.request("PATCH", "/api/v1/namespaces/default/pods/slow", {"metadata": hold})
            assert await c.bound("slow") == "n1" and body
            await c.create_pod("urgent", "4", "1Gi", priorityClassName="high")

            async def terminating() -> bool:
                return bool((await c.pod("slow"))["metadata"].get("deletionTimestamp"))

            await c.wait_for(terminating, timeout=20, what="the victim's deletion to start")

            async def waiting() -> list[str]:
                return [m for m in await _failed(c, "urgent") if "terminating pod on the nominated node" in m]

            message = (await c.wait_for(waiting, timeout=20, what="the preemptor waiting for its victim"))[0]
            assert message == (
                "0/1 nodes are available: 1 Insufficient cpu. "
                "preemption: not eligible due to a terminating pod on the nominated node."
            )
            await c.create_pod("sneak", "2", "1Gi", priorityClassName="low")
            failed = await c.wait_for(lambda: _failed(c, "sneak"), what="the lower-priority pod refused")
            assert failed[0].startswith("0/1 nodes are available: 1 Insufficient cpu.")
            assert await c.node_of("urgent") == "" and await c.node_of("sneak") == ""
            await c.request("PATCH", "/api/v1/namespaces/default/pods/slow", {"metadata": {"finalizers": None}})
            assert await c.bound("urgent", timeout=20) == "n1"
            assert await c.bound("sneak", timeout=20) == "n1"  # zone 0 (keeper + sneak), zone 1 (urgent)
            assert await c.node_of("keeper") == "n1"


async def test_the_readme_example_evicts_one_batch_pod_for_the_latency_critical_one(api: RunningApiServer) -> None:
    """`examples/scheduler/preemption.yaml` and `market-feed.yaml` against `examples/schedule/nodes.yaml`, with the
    configuration `knuma scheduler` runs without a file: the session the README shows."""
    examples = Path(__file__).resolve().parents[2] / "examples"
    paths = {
        "Node": "/api/v1/nodes",
        "NodeResourceTopology": NRTS,
        "PriorityClass": CLASSES,
        "Pod": "/api/v1/namespaces/default/pods",
    }

    async def apply(path: Path) -> None:
        for obj in yaml.safe_load_all(path.read_text()):
            await c.request("POST", paths[obj["kind"]], obj)

    config = default_config()
    nrt = build_nrt_cache(config)
    async with cluster(api) as c:
        await apply(examples / "schedule" / "nodes.yaml")
        async with running_scheduler(api, profiles=build_profiles(config, nrt), nrt=nrt):
            await apply(examples / "scheduler" / "preemption.yaml")
            assert await c.bound("batch-1") == "worker-b" and await c.bound("batch-2") == "worker-b"
            await apply(examples / "scheduler" / "market-feed.yaml")
            assert await c.bound("market-feed", timeout=20) == "worker-b"
            pods = (await c.request("GET", "/api/v1/namespaces/default/pods"))["items"]
            assert sorted(p["metadata"]["name"] for p in pods) == ["batch-1", "market-feed"]
            events = await c.wait_for(lambda: _events_with(c, "batch-2", "Preempted"), what="the Preempted event")
            assert events[0]["message"].endswith(" on node worker-b")


async def test_the_preemptor_goes_to_the_node_its_victims_left_even_when_another_scores_better(
    api: RunningApiServer,
) -> None:
    """kube-scheduler's `evaluateNominatedNode`: once its victims are gone the pod takes the node it was nominated
    for, although an empty node (which LeastAllocated prefers) opened up meanwhile."""
    config = _config()  # no scoringStrategy: upstream's LeastAllocated, which spreads
    nrt = build_nrt_cache(config)
    settings = DaemonSettings(leader_elect=False, initial_backoff=4.0, max_backoff=4.0)
    async with cluster(api) as c:
        await _classes(c)
        await c.add_node("n1", TWO_ZONES)
        await c.add_node("n2", TWO_ZONES, unschedulable=True)
        async with running_scheduler(api, profiles=build_profiles(config, nrt), settings=settings, nrt=nrt):
            await c.create_pod("keeper", "3", "1Gi", priorityClassName="mid")
            assert await c.bound("keeper") == "n1"
            await c.create_pod("slow", "3", "1Gi", priorityClassName="low")
            await c.request("PATCH", "/api/v1/namespaces/default/pods/slow", {"metadata": {"finalizers": ["x/y"]}})
            assert await c.bound("slow") == "n1"
            await c.create_pod("urgent", "4", "1Gi", priorityClassName="high")

            async def terminating() -> bool:
                return bool((await c.pod("slow"))["metadata"].get("deletionTimestamp"))

            await c.wait_for(terminating, timeout=20, what="the victim's deletion to start")
            await c.request("PATCH", "/api/v1/nodes/n2", {"spec": {"unschedulable": None}})
            await c.request("PATCH", "/api/v1/namespaces/default/pods/slow", {"metadata": {"finalizers": None}})
            assert await c.bound("urgent", timeout=30) == "n1"


async def test_a_disruption_budget_sends_preemption_to_the_pods_it_does_not_protect(api: RunningApiServer) -> None:
    """The daemon reads PodDisruptionBudgets: with the pods of n1 protected (no disruption allowed, as the
    disruption controller would write it), the victim is on n2 whatever node the dry run starts from."""
    config = _config()
    nrt = build_nrt_cache(config)
    pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
    async with cluster(api) as c:
        await _classes(c)
        for node in ("n1", "n2"):
            await c.add_node(node, TWO_ZONES)
        budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db"},
                  "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}}}  # fmt: skip
        await c.request("POST", pdbs, budget)
        await c.request("PATCH", f"{pdbs}/db/status", {"status": {"disruptionsAllowed": 0, "currentHealthy": 2}})
        async with running_scheduler(api, profiles=build_profiles(config, nrt), nrt=nrt):
            for name, app in (("db-0", "db"), ("db-1", "db"), ("web-0", "web"), ("web-1", "web")):
                labels = {"metadata": {"labels": {"app": app}}}
                node = "n1" if app == "db" else "n2"
                await c.create_pod(
                    name, "3", "1Gi", priorityClassName="low", nodeSelector={"kubernetes.io/hostname": node}
                )
                await c.request("PATCH", f"/api/v1/namespaces/default/pods/{name}", labels)
                assert await c.bound(name) == node
            await c.create_pod("urgent", "4", "1Gi", priorityClassName="high")
            assert await c.bound("urgent", timeout=20) == "n2"
            names = {
                p["metadata"]["name"] for p in (await c.request("GET", "/api/v1/namespaces/default/pods"))["items"]
            }
            assert {"db-0", "db-1"} <= names and len(names & {"web-0", "web-1"}) == 1
