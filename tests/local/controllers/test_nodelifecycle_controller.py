"""The node lifecycle controller's loops (`knuma.local.controllers.nodelifecycle_controller`) against a real
`knuma apiserver`, with short periods: master disruption mode removes every NoExecute taint however the nodes went
silent, a second failed node of a zone is tainted a token later, and `kubectl cordon`'s unschedulable taint."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx2

from knuma.api.types import STRATEGIC_MERGE_PATCH
from knuma.kube.client import async_http
from knuma.local.controllers.evictionzones import EvictionRates, ZoneState, zone_key
from knuma.local.controllers.manager import WorkloadControllers
from knuma.testing.apiserver import RunningApiServer
from knuma.testing.polling import eventually_async

LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
MERGE = "application/merge-patch+json"


def stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def add_node(http: httpx2.AsyncClient, name: str, ready: str = "True", zone: str = "z") -> None:
    node = {"metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}}}
    assert (await http.post("/api/v1/nodes", json=node)).status_code == 201
    await add_ready(http, name, ready)


async def add_ready(http: httpx2.AsyncClient, name: str, ready: str = "True") -> None:
    """The kubelet posting its Ready condition with a new heartbeat."""
    condition = {"type": "Ready", "status": ready, "lastHeartbeatTime": stamp(), "lastTransitionTime": stamp()}
    patch = {"status": {"conditions": [condition]}}
    response = await http.patch(
        f"/api/v1/nodes/{name}/status", json=patch, headers={"Content-Type": STRATEGIC_MERGE_PATCH}
    )
    assert response.status_code == 200, response.text


class Kubelets:
    """Lease renewals for the nodes still `alive`, every 0.2 s, from `renewing()` on until its block ends."""

    def __init__(self, http: httpx2.AsyncClient, names: list[str]) -> None:
        self.http, self.alive = http, set(names)

    async def start(self) -> None:
        await self.http.post("/api/v1/namespaces", json={"metadata": {"name": "kube-node-lease"}})
        for name in self.alive:
            lease = {"metadata": {"name": name, "namespace": "kube-node-lease"}, "spec": {"renewTime": stamp()}}
            assert (await self.http.post(LEASES, json=lease)).status_code == 201

    @contextlib.asynccontextmanager
    async def renewing(self) -> AsyncIterator[None]:
        task = asyncio.create_task(self.run())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def run(self) -> None:
        while True:
            for name in list(self.alive):
                patch = {"spec": {"renewTime": stamp()}}
                await self.http.patch(f"{LEASES}/{name}", json=patch, headers={"Content-Type": MERGE})
            await asyncio.sleep(0.2)


@contextlib.asynccontextmanager
async def running(http: httpx2.AsyncClient, **options: Any) -> AsyncIterator[WorkloadControllers]:
    controllers = WorkloadControllers(http, **options)
    task = asyncio.create_task(controllers.run())
    try:
        yield controllers
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def taints(http: httpx2.AsyncClient) -> dict[str, set[str]]:
    nodes = (await http.get("/api/v1/nodes")).json()["items"]
    return {
        n["metadata"]["name"]: {
            f"{t['key'].rsplit('/', 1)[-1]}:{t['effect']}" for t in (n.get("spec") or {}).get("taints") or []
        }
        for n in nodes
    }


async def test_a_not_ready_node_going_silent_with_the_last_ready_one_keeps_no_no_execute_taint(
    api: RunningApiServer,
) -> None:
    """Node a is NotReady (tainted not-ready:NoExecute), b Ready; neither renews anything, so both go Unknown in the
    same pass: writing a's status changes it, and the removal that master disruption mode makes must still happen
    (read again on the conflict, as `RemoveTaintOffNode` does), and no instant swap to unreachable may follow."""
    http = async_http(api.kubeconfig)
    try:
        await add_node(http, "a", ready="False")
        await add_node(http, "b")
        async with running(http, node_monitor_period=0.3, node_monitor_grace_period=1.5) as controllers:
            lifecycle = controllers.node_lifecycle
            await eventually_async(lambda: lifecycle.zones.in_master_disruption(), timeout=30)
            await asyncio.sleep(2.0)  # several passes in master disruption mode
            assert lifecycle.zones.in_master_disruption()
            found = await taints(http)
            assert not [t for node in found.values() for t in node if t.endswith(":NoExecute")], found
            assert "unreachable:NoSchedule" in found["a"] and "unreachable:NoSchedule" in found["b"]
    finally:
        await http.aclose()


async def test_a_node_tainted_one_pass_before_the_rest_goes_down_is_untainted_in_master_disruption(
    api: RunningApiServer,
) -> None:
    """a goes silent one pass before b (b busy with 40 pods to mark not Ready): a is tainted NoExecute from its
    zone's queue, then b's failure puts every zone down and a's taint must go, whatever the two loops interleave."""
    http = async_http(api.kubeconfig)
    kubelets = Kubelets(http, ["a", "b"])
    try:
        await kubelets.start()
        for name in ("a", "b"):
            await add_node(http, name)
        for i in range(40):
            pod = {
                "metadata": {"name": f"p{i}"},
                "spec": {"nodeName": "b", "containers": [{"name": "c", "image": "x"}]},
            }
            assert (await http.post("/api/v1/namespaces/default/pods", json=pod)).status_code == 201
            ready = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
            await http.patch(
                f"/api/v1/namespaces/default/pods/p{i}/status",
                json=ready,
                headers={"Content-Type": STRATEGIC_MERGE_PATCH},
            )
        async with (
            kubelets.renewing(),
            running(http, node_monitor_period=0.5, node_monitor_grace_period=1.5) as controllers,
        ):
            await asyncio.sleep(2.0)
            kubelets.alive.discard("a")
            await eventually_async(lambda: taints_have(http, "a", "unreachable:NoExecute"), timeout=30)
            kubelets.alive.discard("b")
            lifecycle = controllers.node_lifecycle
            await eventually_async(lambda: lifecycle.zones.in_master_disruption(), timeout=30)
            await asyncio.sleep(2.0)
            found = await taints(http)
            assert not [t for node in found.values() for t in node if t.endswith(":NoExecute")], found
    finally:
        await http.aclose()


async def taints_have(http: httpx2.AsyncClient, node: str, taint: str) -> bool:
    return taint in (await taints(http)).get(node, set())


async def test_a_second_failed_node_of_a_zone_is_tainted_a_token_later_and_cordon_taints_noschedule(
    api: RunningApiServer,
) -> None:
    """Three nodes in one zone (so two down is not a partial disruption: more than two are needed), 0.5 taints per
    second: the first failed node is tainted at once, the second about 2 s later. A cordoned node gets
    `node.kubernetes.io/unschedulable:NoSchedule`, and loses it when uncordoned."""
    http = async_http(api.kubeconfig)
    kubelets = Kubelets(http, ["a", "b", "c"])
    try:
        await kubelets.start()
        for name in ("a", "b", "c"):
            await add_node(http, name)
        rates = EvictionRates(eviction_rate=0.5)
        async with (
            kubelets.renewing(),
            running(http, node_monitor_period=0.3, node_monitor_grace_period=1.5, eviction_rates=rates),
        ):
            await asyncio.sleep(1.0)
            kubelets.alive -= {"a", "b"}
            times: dict[str, float] = {}
            loop = asyncio.get_running_loop()

            async def tainted() -> bool:
                found = await taints(http)
                for name in ("a", "b"):
                    if "unreachable:NoExecute" in found[name]:
                        times.setdefault(name, loop.time())
                return len(times) == 2

            await eventually_async(tainted, timeout=30, interval=0.05)
            assert abs(times["a"] - times["b"]) >= 1.5  # one token every 2 s, burst 1
            assert "unreachable:NoExecute" not in (await taints(http))["c"]

            patch: dict[str, Any] = {"spec": {"unschedulable": True}}
            await http.patch("/api/v1/nodes/c", json=patch, headers={"Content-Type": MERGE})
            await eventually_async(lambda: taints_have(http, "c", "unschedulable:NoSchedule"), timeout=30)
            uncordon: dict[str, Any] = {"spec": {"unschedulable": None}}
            await http.patch("/api/v1/nodes/c", json=uncordon, headers={"Content-Type": MERGE})

            async def uncordoned() -> bool:
                return not await taints_have(http, "c", "unschedulable:NoSchedule")

            await eventually_async(uncordoned, timeout=30)
    finally:
        await http.aclose()


async def test_a_small_partially_disrupted_zone_stops_tainting_until_it_recovers(api: RunningApiServer) -> None:
    """Zone z has four nodes, zone y one (so z down is never master disruption); one taint per 8 s, burst 1. a fails
    and is tainted at once. b and c fail before the next token: three of four not Ready is a partial disruption (more
    than two, at least 55%), and a zone of at most `large_cluster_size_threshold` nodes then taints nothing
    (`ReducedQPSFunc`: rate 0), so b and c are still untainted after the next token would have come. When c's kubelet
    reports Ready again, z is Normal (two down) and b is tainted at the normal rate; a keeps its taint throughout."""
    http = async_http(api.kubeconfig)
    names = ["a", "b", "c", "d"]
    kubelets = Kubelets(http, [*names, "y1"])
    z = zone_key({"metadata": {"labels": {"topology.kubernetes.io/zone": "z"}}})
    try:
        await kubelets.start()
        for name in names:
            await add_node(http, name, zone="z")
        await add_node(http, "y1", zone="y")
        rates = EvictionRates(eviction_rate=0.125, secondary_eviction_rate=0.125, large_cluster_size_threshold=50)
        async with (
            kubelets.renewing(),
            running(http, node_monitor_period=0.3, node_monitor_grace_period=1.5, eviction_rates=rates) as controllers,
        ):
            lifecycle = controllers.node_lifecycle
            loop = asyncio.get_running_loop()
            await asyncio.sleep(1.0)
            kubelets.alive.discard("a")
            await eventually_async(lambda: taints_have(http, "a", "unreachable:NoExecute"), timeout=30, interval=0.05)
            tainted_a = loop.time()
            kubelets.alive -= {"b", "c"}
            await eventually_async(lambda: lifecycle.zones.states.get(z) is ZoneState.PARTIAL_DISRUPTION, timeout=30)
            await asyncio.sleep(max(0.0, tainted_a + 9.5 - loop.time()))  # past the next token at the normal rate
            found = await taints(http)
            assert "unreachable:NoSchedule" in found["b"] and "unreachable:NoSchedule" in found["c"], found
            assert "unreachable:NoExecute" not in found["b"] | found["c"], found
            assert "unreachable:NoExecute" in found["a"], found

            kubelets.alive.add("c")
            await add_ready(http, "c")
            await eventually_async(lambda: lifecycle.zones.states.get(z) is ZoneState.NORMAL, timeout=30)
            await eventually_async(lambda: taints_have(http, "b", "unreachable:NoExecute"), timeout=30)
            found = await taints(http)
            assert "unreachable:NoExecute" in found["a"] and "unreachable" not in str(found["c"]), found
    finally:
        await http.aclose()


async def test_a_node_whose_kubelet_never_posted_status_is_unknown_after_the_startup_grace(
    api: RunningApiServer,
) -> None:
    """A Node object with no status and no Lease (a kubelet that registered nothing more): after the startup grace
    (`--node-startup-grace-period`, here 1.5 s against a 60 s monitor grace) its conditions are Unknown with
    `NodeStatusNeverUpdated`, and it is tainted unreachable."""
    http = async_http(api.kubeconfig)
    try:
        assert (await http.post("/api/v1/nodes", json={"metadata": {"name": "fresh"}})).status_code == 201
        await add_node(http, "other")  # Ready, not renewing either: silent only after the 60 s grace
        async with running(http, node_monitor_period=0.3, node_monitor_grace_period=60, node_startup_grace_period=1.5):
            await eventually_async(lambda: taints_have(http, "fresh", "unreachable:NoSchedule"), timeout=30)
            node = (await http.get("/api/v1/nodes/fresh")).json()
            ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
            assert (ready["status"], ready["reason"]) == ("Unknown", "NodeStatusNeverUpdated")
            assert "unreachable:NoSchedule" not in (await taints(http))["other"]
    finally:
        await http.aclose()
