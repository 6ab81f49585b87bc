"""End-to-end: the scheduler daemon against a real `knuma apiserver` honours required pod anti-affinity (one replica
per node, the extra one pending with kube-scheduler's FailedScheduling message), also for replicas created at once
and scheduled back to back before any binding comes back through the informer."""

from __future__ import annotations

from typing import Any

import pytest

from knuma.scheduler.config.load import build_profiles, default_config
from knuma.testing.apiserver import RunningApiServer

from .daemon_env import SCHEDULER_NAME, Cluster, cluster, running_scheduler

pytestmark = pytest.mark.slow

TWO_ZONES = {0: {"cpu": "4", "memory": "8Gi"}, 1: {"cpu": "4", "memory": "8Gi"}}
HOSTNAME = "kubernetes.io/hostname"


async def create_replica(c: Cluster, name: str, app: str, **spec: Any) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
            **spec,
        },
    }
    await c.request("POST", "/api/v1/namespaces/default/pods", body)


def anti_affinity(app: str, key: str = HOSTNAME) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


async def test_replicas_with_required_anti_affinity_land_one_per_node(api: RunningApiServer) -> None:
    async with cluster(api) as c:
        for name in ("n1", "n2", "n3"):
            await c.add_node(name, TWO_ZONES)
        async with running_scheduler(api, profiles=build_profiles(default_config())) as daemon:
            for i in range(4):  # created together: the later ones are decided while the earlier are only assumed
                await create_replica(c, f"web-{i}", "web", affinity=anti_affinity("web"))

            async def placed() -> list[str]:
                nodes = [await c.node_of(f"web-{i}") for i in range(4)]
                return nodes if sum(1 for n in nodes if n) == 3 else []

            nodes = await c.wait_for(placed, timeout=20, what="three replicas bound")
            assert sorted(n for n in nodes if n) == ["n1", "n2", "n3"]
            pending = next(f"web-{i}" for i, n in enumerate(nodes) if not n)

            async def failed() -> list[dict[str, Any]]:
                return [e for e in await c.events(pending) if e["reason"] == "FailedScheduling"]

            events = await c.wait_for(failed, what="FailedScheduling for the extra replica")
            assert events[0]["message"] == (
                "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes are "
                "available: 3 No preemption victims found for incoming pod."
            )
            assert not [e for e in await c.events(pending) if e["reason"] == "UnsupportedConstraints"]
            # a pod without terms of its own is kept off the replicas' nodes too (their anti-affinity selects it)
            await create_replica(c, "web-plain", "web")

            async def refused() -> list[dict[str, Any]]:
                return [e for e in await c.events("web-plain") if e["reason"] == "FailedScheduling"]

            events = await c.wait_for(refused, what="FailedScheduling for the plain pod")
            assert "3 node(s) didn't satisfy existing pods anti-affinity rules" in events[0]["message"]
            # another app is not concerned, and a deleted replica frees its node for the pending one
            await create_replica(c, "api-0", "api")
            assert await c.bound("api-0") in ("n1", "n2", "n3")
            await c.delete_pod("web-plain")
            freed = nodes[0] if nodes[0] else nodes[1]
            victim = f"web-{nodes.index(freed)}"
            await c.delete_pod(victim)
            assert await c.bound(pending, timeout=20) == freed
            assert daemon.scheduled >= 5


async def add_zoned_node(c: Cluster, name: str, zone: str) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name, "topology.kubernetes.io/zone": zone}},
        "status": {"allocatable": {"cpu": "16", "memory": "32Gi", "pods": "110"}},
    }
    await c.request("POST", "/api/v1/nodes", node)


async def test_zone_spread_keeps_skew_at_most_one(api: RunningApiServer) -> None:
    """Nine replicas with a DoNotSchedule zone spread (maxSkew 1) over three zones of unequal size, created at once:
    three per zone; a constraint on a label no node has leaves the pod pending with the upstream message."""
    zone_key = "topology.kubernetes.io/zone"
    constraint = {
        "maxSkew": 1,
        "topologyKey": zone_key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "api"}},
    }
    async with cluster(api, crd=False) as c:
        zone_of = {"a1": "z1", "a2": "z1", "a3": "z1", "b1": "z2", "c1": "z3"}
        for name, zone in zone_of.items():
            await add_zoned_node(c, name, zone)
        async with running_scheduler(api, profiles=build_profiles(default_config())):
            for i in range(9):
                await create_replica(c, f"api-{i}", "api", topologySpreadConstraints=[constraint])

            async def all_bound() -> list[str]:
                nodes = [await c.node_of(f"api-{i}") for i in range(9)]
                return nodes if all(nodes) else []

            nodes = await c.wait_for(all_bound, timeout=20, what="nine replicas bound")
            per_zone = {zone: sum(1 for n in nodes if zone_of[n] == zone) for zone in ("z1", "z2", "z3")}
            assert per_zone == {"z1": 3, "z2": 3, "z3": 3}
            rack = {**constraint, "topologyKey": "rack"}
            await create_replica(c, "racked", "api", topologySpreadConstraints=[rack])

            async def failed() -> list[dict[str, Any]]:
                return [e for e in await c.events("racked") if e["reason"] == "FailedScheduling"]

            events = await c.wait_for(failed, what="FailedScheduling for the pod without a rack")
            assert events[0]["message"] == (
                "0/5 nodes are available: 5 node(s) didn't match pod topology spread constraints (missing required "
                "label). preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling."
            )
            assert not [e for e in await c.events("api-0") if e["reason"] == "UnsupportedConstraints"]
