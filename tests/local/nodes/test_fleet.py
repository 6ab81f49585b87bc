"""Simulated nodes against a real `knuma apiserver`: registration, leases, admission, status, NRT, release, restart."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from knuma.api.crd import NRT_CRD
from knuma.api.nrt import NodeResourceTopology
from knuma.api.types import STRATEGIC_MERGE_PATCH
from knuma.kube.client import async_client, async_http
from knuma.local.nodes.fleet import Fleet, FleetSettings
from knuma.local.nodes.heartbeats import HEARTBEAT_ANNOTATION, Heartbeats
from knuma.local.nodes.podstatus import LIFETIME_ANNOTATION, SHUTDOWN_ANNOTATION
from knuma.local.nodes.settings import FleetStats
from knuma.local.nodes.spec import NodeSpec
from knuma.testbed.shapes import BUILTIN_SHAPES
from knuma.testing.apiserver import RunningApiServer
from knuma.testing.polling import eventually_async

from .builders import guaranteed_manifest

NRTS = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
MERGE = {"Content-Type": "application/merge-patch+json"}


def two_nodes() -> list[NodeSpec]:
    small = BUILTIN_SHAPES["small"]  # 2 zones x 8 CPUs, 32Gi each
    return [NodeSpec("sim-0", 0, small, "sim"), NodeSpec("sim-1", 1, small, "sim")]


@contextlib.asynccontextmanager
async def running_fleet(api: RunningApiServer, state: Path, **settings: Any) -> AsyncIterator[Fleet]:
    http = async_http(api.kubeconfig)
    client = async_client(api.kubeconfig, field_manager="knuma-exporter")
    options = {"lease_renew_interval": 0.3, "nrt_min_interval": 0.1, **settings}
    fleet = Fleet(http, client, two_nodes(), FleetSettings(state_dir=state, **options))
    stop = asyncio.Event()
    task = asyncio.create_task(fleet.run(stop))
    try:
        await asyncio.wait_for(fleet.ready.wait(), 10)
        yield fleet
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await http.aclose()
        await client.close()


async def get(http: httpx2.AsyncClient, path: str) -> Any:
    response = await http.get(path)
    assert response.status_code == 200, response.text
    return response.json()


async def zone_cpus(http: httpx2.AsyncClient, node: str) -> list[int]:
    response = await http.get(f"{NRTS}/{node}")
    assert response.status_code == 200
    nrt = NodeResourceTopology.from_dict(response.json())
    return [next(r.available for r in zone.resources if r.name == "cpu") for _, zone in nrt.numa_zones()]


async def phase(http: httpx2.AsyncClient, name: str) -> dict[str, Any]:
    status: dict[str, Any] = (await get(http, f"/api/v1/namespaces/default/pods/{name}"))["status"]
    return status


async def create_bound(http: httpx2.AsyncClient, manifest: dict[str, Any], node: str) -> None:
    manifest = {**manifest, "metadata": {k: v for k, v in manifest["metadata"].items() if k != "uid"}}
    assert (await http.post("/api/v1/namespaces/default/pods", json=manifest)).status_code == 201
    name = manifest["metadata"]["name"]
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name},
        "target": {"kind": "Node", "name": node},
    }
    response = await http.post(f"/api/v1/namespaces/default/pods/{name}/binding", json=binding)
    assert response.status_code == 201, response.text


async def test_nodes_pods_and_nrt_through_a_restart(api: RunningApiServer, tmp_path: Path) -> None:
    http = async_http(api.kubeconfig)
    assert (await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=NRT_CRD)).status_code == 201
    state = tmp_path / "state"
    try:
        async with running_fleet(api, state) as fleet:
            node = await get(http, "/api/v1/nodes/sim-0")
            assert node["metadata"]["labels"]["node-role.kubernetes.io/worker"] == ""
            assert node["status"]["allocatable"]["cpu"] == "16"
            assert [c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready"] == ["True"]
            lease = await get(http, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/sim-1")
            assert (
                lease["spec"]["holderIdentity"] == "sim-1" and lease["metadata"]["ownerReferences"][0]["kind"] == "Node"
            )
            first_renewal = lease["spec"]["renewTime"]

            async def renewed() -> bool:
                lease = await get(http, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/sim-1")
                return bool(lease["spec"]["renewTime"] > first_renewal)

            await eventually_async(renewed)
            assert await eventually_async(lambda: zone_cpus(http, "sim-0")) == [8000, 8000]

            # admitted: Running with a pod IP; the NRT shows 4 CPUs taken on one zone
            await create_bound(http, guaranteed_manifest("fits", 4), "sim-0")

            async def running() -> bool:
                return (await phase(http, "fits")).get("phase") == "Running"

            await eventually_async(running)
            status = await phase(http, "fits")
            assert status["podIP"].startswith("127.128.0.") and status["qosClass"] == "Guaranteed"
            annotations = (await get(http, "/api/v1/namespaces/default/pods/fits"))["metadata"]["annotations"]
            assert annotations == {"sim.knuma.io/numa": '{"app":[0]}', "sim.knuma.io/cpus": '{"app":"0,2,8,10"}'}
            assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"

            async def taken() -> bool:
                return await zone_cpus(http, "sim-0") == [4000, 8000]

            await eventually_async(taken)

            # a pod no single zone can hold: Failed / TopologyAffinityError, nothing taken, a Warning event
            await create_bound(http, guaranteed_manifest("too-wide", 10), "sim-0")

            async def failed() -> bool:
                return (await phase(http, "too-wide")).get("phase") == "Failed"

            await eventually_async(failed)
            status = await phase(http, "too-wide")
            assert status["reason"] == "TopologyAffinityError"
            assert status["message"] == "Pod was rejected: Resources cannot be allocated with Topology locality"
            events = await get(http, "/api/v1/namespaces/default/events")
            assert any(
                e["reason"] == "TopologyAffinityError" and e["involvedObject"]["name"] == "too-wide"
                for e in events["items"]
            )
            assert await zone_cpus(http, "sim-0") == [4000, 8000]

            # a pod with a lifetime completes and gives its CPUs back
            short = guaranteed_manifest("short", 2)
            short["metadata"]["annotations"] = {LIFETIME_ANNOTATION: "0.3s"}
            await create_bound(http, short, "sim-1")

            async def succeeded() -> bool:
                return (await phase(http, "short")).get("phase") == "Succeeded"

            await eventually_async(succeeded)
            assert await eventually_async(lambda: _equal(zone_cpus(http, "sim-1"), [8000, 8000]))
            assert fleet.stats.admitted == 2 and fleet.stats.rejected == 1 and fleet.stats.completed == 1

        # a new process on the same state directory keeps the running pod where it was
        async with running_fleet(api, state) as fleet:
            assert fleet.kubelets["sim-0"].held["default/fits"].numa_ids() == {"app": (0,)}
            await create_bound(http, guaranteed_manifest("second", 6), "sim-0")

            async def second_on_zone_1() -> bool:
                return await zone_cpus(http, "sim-0") == [4000, 2000]

            await eventually_async(second_on_zone_1)
            # deletion releases
            assert (await http.delete("/api/v1/namespaces/default/pods/fits")).status_code == 200
            assert await eventually_async(lambda: _equal(zone_cpus(http, "sim-0"), [8000, 2000]))
            assert fleet.stats.released == 1
    finally:
        await http.aclose()


async def test_a_deleted_pod_holds_its_cpus_until_its_containers_stop(api: RunningApiServer, tmp_path: Path) -> None:
    """Graceful deletion: the pod stays Terminating with its CPUs held while its containers stop
    (`sim.knuma.io/shutdown`), then the kubelet releases them and deletes the pod for good; containers that would
    take longer than the grace period are killed when it ends."""
    http = async_http(api.kubeconfig)
    assert (await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=NRT_CRD)).status_code == 201
    pods = "/api/v1/namespaces/default/pods"
    try:
        async with running_fleet(api, tmp_path / "state") as fleet:
            slow = guaranteed_manifest("slow", 4)
            slow["metadata"]["annotations"] = {SHUTDOWN_ANNOTATION: "3s"}
            stubborn = guaranteed_manifest("stubborn", 4)
            stubborn["metadata"]["annotations"] = {SHUTDOWN_ANNOTATION: "10m"}
            stubborn["spec"]["terminationGracePeriodSeconds"] = 2
            await create_bound(http, slow, "sim-0")
            await create_bound(http, stubborn, "sim-1")

            async def both_running() -> bool:
                return all([(await phase(http, name)).get("phase") == "Running" for name in ("slow", "stubborn")])

            await eventually_async(both_running)
            assert await eventually_async(lambda: _equal(zone_cpus(http, "sim-0"), [4000, 8000]))
            deleted = await http.delete(f"{pods}/slow")
            assert deleted.status_code == 200 and deleted.json()["metadata"]["deletionGracePeriodSeconds"] == 30
            assert (await http.delete(f"{pods}/stubborn")).status_code == 200
            await asyncio.sleep(1.0)
            terminating = await get(http, f"{pods}/slow")
            assert terminating["metadata"]["deletionTimestamp"]
            assert fleet.kubelets["sim-0"].held.get("default/slow") is not None  # still holds its CPUs
            assert await zone_cpus(http, "sim-0") == [4000, 8000]

            async def gone(name: str) -> bool:
                return (await http.get(f"{pods}/{name}")).status_code == 404

            assert await eventually_async(lambda: gone("slow"), timeout=20)
            assert await eventually_async(lambda: gone("stubborn"), timeout=20)  # killed after 2 s, not 10 min
            assert fleet.kubelets["sim-0"].held.get("default/slow") is None
            assert await eventually_async(lambda: _equal(zone_cpus(http, "sim-0"), [8000, 8000]))
            assert fleet.stats.released == 2
    finally:
        await http.aclose()


async def _equal(value: Any, expected: Any) -> bool:
    return bool(await value == expected)


def test_a_heartbeat_annotation_that_is_not_understood_is_logged_once_and_changes_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    heartbeats = Heartbeats(None, {n.name: n for n in two_nodes()}, FleetSettings(), FleetStats())  # type: ignore[arg-type]
    node = {"metadata": {"name": "sim-0", "annotations": {HEARTBEAT_ANNOTATION: "stop"}}}
    with caplog.at_level("WARNING", logger="knuma.local.nodes"):
        assert heartbeats.node_changed(node) is False
        assert heartbeats.node_changed(node) is False
    assert heartbeats.stopped == set()
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        f"node sim-0: annotation {HEARTBEAT_ANNOTATION}='stop' is not understood ('stopped' or no annotation); "
        "its heartbeats go on"
    ]
    stopped = {"metadata": {"name": "sim-0", "annotations": {HEARTBEAT_ANNOTATION: "stopped"}}}
    assert heartbeats.node_changed(stopped) is False and heartbeats.stopped == {"sim-0"}


async def test_a_node_stopped_before_a_restart_stays_silent_after_it(api: RunningApiServer, tmp_path: Path) -> None:
    """A resumed cluster (`knuma up --data-dir`) whose node was annotated stopped: the restarted fleet refreshes its
    labels but posts neither its status nor its Lease, so the node does not flap Ready."""
    http = async_http(api.kubeconfig)
    assert (await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=NRT_CRD)).status_code == 201
    state = tmp_path / "state"
    lease_path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/sim-1"
    async with running_fleet(api, state):
        patch = {"metadata": {"annotations": {HEARTBEAT_ANNOTATION: "stopped"}}}
        assert (await http.patch("/api/v1/nodes/sim-1", json=patch, headers=MERGE)).status_code == 200
    unknown = {"status": {"conditions": [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}]}}
    response = await http.patch(
        "/api/v1/nodes/sim-1/status", json=unknown, headers={"Content-Type": STRATEGIC_MERGE_PATCH}
    )
    assert response.status_code == 200, response.text
    renewed = (await get(http, lease_path))["spec"]["renewTime"]

    def ready(node: dict[str, Any]) -> str:
        return str(next(c for c in node["status"]["conditions"] if c["type"] == "Ready")["status"])

    async with running_fleet(api, state) as fleet:
        assert fleet.heartbeats.stopped == {"sim-1"}
        await asyncio.sleep(1.0)  # three Lease periods
        assert ready(await get(http, "/api/v1/nodes/sim-1")) == "Unknown"
        assert (await get(http, lease_path))["spec"]["renewTime"] == renewed
        assert ready(await get(http, "/api/v1/nodes/sim-0")) == "True"
    await http.aclose()


async def test_a_heartbeat_value_not_understood_is_a_warning_event_on_the_node(
    api: RunningApiServer, tmp_path: Path
) -> None:
    """`kubectl describe node` shows the typo (the log line is in the nodes' log file, not in front of the user)."""
    http = async_http(api.kubeconfig)
    assert (await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=NRT_CRD)).status_code == 201
    async with running_fleet(api, tmp_path / "state") as fleet:
        patch = {"metadata": {"annotations": {HEARTBEAT_ANNOTATION: "stoped"}}}
        assert (await http.patch("/api/v1/nodes/sim-0", json=patch, headers=MERGE)).status_code == 200

        async def warned() -> list[dict[str, Any]]:
            events = (await get(http, "/api/v1/namespaces/default/events"))["items"]
            return [e for e in events if e["reason"] == "UnknownHeartbeatValue"]

        found = await eventually_async(warned, timeout=20)
        assert found[0]["involvedObject"]["name"] == "sim-0" and found[0]["type"] == "Warning"
        assert "'stoped' is not understood" in found[0]["message"]
        assert fleet.heartbeats.stopped == set()
    await http.aclose()


async def test_a_pods_writes_reach_the_api_server_in_the_order_they_were_made(api: RunningApiServer) -> None:
    """Under load a pod admitted and at once completed had its Succeeded status written by one writer while another
    still sent its annotations, then its Running status over it: the pod stayed Running for ever, its CPUs released.
    A pod's writes now go through one writer; other pods' are not held up behind a slow one."""
    http = async_http(api.kubeconfig)
    fleet = Fleet(http, None, two_nodes(), FleetSettings(nrt="external", write_concurrency=8))
    sent: list[tuple[str, str]] = []
    first = asyncio.Event()

    async def slow_first_write(path: str, patch: Any) -> bool:  # the HTTP edge: what reaches the API server, when
        if not first.is_set():
            first.set()
            await asyncio.sleep(0.5)  # the 552 ms annotation PATCH of the failing run
        sent.append((path.split("/")[6], patch["status"]["phase"]))
        return True

    fleet._patch = slow_first_write  # type: ignore[method-assign]
    writers = asyncio.create_task(fleet._write_statuses())
    try:
        fleet._write("sim-0", "default/short", "u1", [("status", {"status": {"phase": "Running"}})])
        await first.wait()
        fleet._write("sim-0", "default/short", "u1", [("status", {"status": {"phase": "Succeeded"}})])
        for n in range(8):
            fleet._write("sim-0", f"default/other-{n}", f"o{n}", [("status", {"status": {"phase": "Running"}})])
        await eventually_async(lambda: len(sent) == 10, timeout=10)
    finally:
        writers.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await writers
        await http.aclose()
    assert [phase for pod, phase in sent if pod == "short"] == ["Running", "Succeeded"]
    assert sent.index(("short", "Running")) > 0  # the other pods' writes went on meanwhile
