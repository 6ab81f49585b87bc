"""DynamicResources in the daemon against a real `knuma apiserver`: claims allocated NUMA-aligned and written
(allocation, reservedFor, finalizer) before the pod is bound; a burst never hands one device out twice; a claim shared
by two pods; FailedScheduling names the claim, request and stage; an unknown DeviceClass is reported, not a crash; a
pod whose claim does not exist yet waits in PreEnqueue."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from knuma.kube.client import api_session
from knuma.scheduler.config.load import build_profiles, default_config, parse_config
from knuma.scheduler.daemon.loop import DaemonSettings
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.testbed.dra import device_classes, resource_slices
from knuma.testbed.shapes import BUILTIN_SHAPES
from knuma.testing.apiserver import RunningApiServer, apiserver_in_thread

from .daemon_env import SCHEDULER_NAME, Cluster, cluster, running_scheduler

pytestmark = pytest.mark.slow

RES = "/apis/resource.k8s.io/v1"
CLAIMS = f"{RES}/namespaces/default/resourceclaims"
# A DGX-like node as its NRT shows it: 2 NUMA nodes of 56 CPUs (2 reserved on NUMA 0 and 1), 1Ti each.
ZONES = {0: {"cpu": "55", "memory": "1020Gi"}, 1: {"cpu": "55", "memory": "1020Gi"}}


async def dgx(c: Cluster, name: str, free: dict[int, dict[str, str]] | None = None) -> None:
    await c.add_node(name, free or ZONES)
    for body in resource_slices(name, BUILTIN_SHAPES["dgx"]):
        await c.request("POST", f"{RES}/resourceslices", body)


async def classes(c: Cluster) -> None:
    for body in device_classes([BUILTIN_SHAPES["dgx"]]):
        await c.request("POST", f"{RES}/deviceclasses", body)


async def gpu_nic_claim(c: Cluster, name: str, gpus: int = 1, device_class: str = "gpu.sim.knuma.io") -> None:
    requests = [
        {"name": "gpu", "exactly": {"deviceClassName": device_class, "count": gpus}},
        {"name": "nic", "exactly": {"deviceClassName": "nic.sim.knuma.io"}},
    ]
    constraints = [{"requests": ["gpu", "nic"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": requests, "constraints": constraints if gpus == 1 else []}},
    }
    await c.request("POST", CLAIMS, body)


async def claimed_pod(c: Cluster, name: str, claim: str, cpu: str = "8") -> None:
    containers = [
        {
            "name": "c",
            "image": "busybox",
            "resources": {"limits": {"cpu": cpu, "memory": "8Gi"}, "claims": [{"name": "devices"}]},
        }
    ]
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "containers": containers,
            "resourceClaims": [{"name": "devices", "resourceClaimName": claim}],
        },
    }
    await c.request("POST", "/api/v1/namespaces/default/pods", body)


def daemon_profiles() -> dict[str, Any]:
    return build_profiles(default_config())


def numa_of(device: str) -> int:
    return int(device.split("-")[1]) // 4  # dgx: devices 0-3 on NUMA 0, 4-7 on NUMA 1


async def test_claims_are_allocated_aligned_and_written_before_binding(api: RunningApiServer) -> None:
    async with cluster(api) as c:
        await classes(c)
        # NUMA 0 has only 4 CPUs left: an 8-CPU pod's devices must come from NUMA 1.
        await dgx(c, "dgx-0", {0: {"cpu": "4", "memory": "1020Gi"}, 1: ZONES[1]})
        await gpu_nic_claim(c, "train")
        async with running_scheduler(api, daemon_profiles()):
            await claimed_pod(c, "trainer", "train")
            assert await c.bound("trainer") == "dgx-0"
            claim = await c.request("GET", f"{CLAIMS}/train")
            results = claim["status"]["allocation"]["devices"]["results"]
            devices = {r["request"]: r["device"] for r in results}
            assert {numa_of(d) for d in devices.values()} == {1}
            assert devices["gpu"].split("-")[1] == devices["nic"].split("-")[1]  # same PCIe root
            pod = await c.pod("trainer")
            assert claim["status"]["reservedFor"] == [
                {"resource": "pods", "name": "trainer", "uid": pod["metadata"]["uid"]}
            ]
            assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
            assert claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0][
                "values"
            ] == ["dgx-0"]


async def test_a_burst_never_hands_out_one_device_twice(api: RunningApiServer) -> None:
    async with cluster(api) as c:
        await classes(c)
        await dgx(c, "dgx-0")
        for i in range(10):  # 8 GPUs: eight pods fit, two wait
            await gpu_nic_claim(c, f"c{i}")
        async with running_scheduler(api, daemon_profiles()) as daemon:
            for i in range(10):
                await claimed_pod(c, f"p{i}", f"c{i}", cpu="2")

            async def settled() -> bool:
                return daemon.scheduled == 8 and daemon.queue.counts()["unschedulable"] == 2

            await c.wait_for(settled, timeout=20, what="8 bound, 2 unschedulable")
            taken: list[str] = []
            for i in range(10):
                claim = await c.request("GET", f"{CLAIMS}/c{i}")
                allocation = (claim.get("status") or {}).get("allocation")
                if allocation:
                    taken += [r["driver"] + "/" + r["device"] for r in allocation["devices"]["results"]]
            assert len(taken) == 16 and len(set(taken)) == 16
            waiting = [i for i in range(10) if not await c.node_of(f"p{i}")]
            events = [e for e in await c.events(f"p{waiting[0]}") if e["reason"] == "FailedScheduling"]
            assert events, "no FailedScheduling event"
            message = events[-1]["message"]
            assert message.startswith("0/1 nodes are available: 1 cannot allocate all claims: claim default/c")
            assert re.search(r"request (gpu|nic): needs 1 device\(s\), 0 left after the in use stage", message)


async def test_a_claim_shared_by_two_pods_is_allocated_once(api: RunningApiServer) -> None:
    async with cluster(api) as c:
        await classes(c)
        await dgx(c, "dgx-0")
        await dgx(c, "dgx-1")
        await gpu_nic_claim(c, "shared")
        async with running_scheduler(api, daemon_profiles()):
            await claimed_pod(c, "a", "shared", cpu="2")
            first = await c.bound("a")
            await claimed_pod(c, "b", "shared", cpu="2")
            assert await c.bound("b") == first  # the allocation pins the claim to that node
            claim = await c.request("GET", f"{CLAIMS}/shared")
            assert sorted(r["name"] for r in claim["status"]["reservedFor"]) == ["a", "b"]
            assert len(claim["status"]["allocation"]["devices"]["results"]) == 2


async def test_unknown_device_class_is_reported_and_the_daemon_goes_on(api: RunningApiServer) -> None:
    async with cluster(api) as c:
        await classes(c)
        await dgx(c, "dgx-0")
        await gpu_nic_claim(c, "typo", device_class="gpu.sim.knuma.io.typo")
        await gpu_nic_claim(c, "fine")
        async with running_scheduler(api, daemon_profiles()) as daemon:
            await claimed_pod(c, "bad", "typo")

            async def failed() -> list[dict[str, Any]]:
                return [e for e in await c.events("bad") if e["reason"] == "FailedScheduling"]

            events = await c.wait_for(failed, what="FailedScheduling for the unknown class")
            assert "typo" in events[0]["message"] and "gpu.sim.knuma.io.typo" in events[0]["message"]
            await claimed_pod(c, "good", "fine")
            assert await c.bound("good") == "dgx-0"
            # A missing claim: PreEnqueue holds the pod (no FailedScheduling, as upstream) until the claim exists.
            await claimed_pod(c, "orphan", "later-claim")

            async def held() -> bool:
                return "default/orphan" in daemon.gated

            await c.wait_for(held, what="the pod held by PreEnqueue")
            assert not [e for e in await c.events("orphan") if e["reason"] == "FailedScheduling"]
            await gpu_nic_claim(c, "later-claim")
            assert await c.bound("orphan") == "dgx-0"


async def test_the_cache_predicts_the_cpus_next_to_the_devices(api: RunningApiServer) -> None:
    """NUMA 0's GPUs and NICs are taken: the pod's devices come from NUMA 1, so the kubelet puts its CPUs there; the
    scheduler's cache must predict the same (the pod's devices go into its kubelet model), and the pod records the
    choice for later predictions (`scheduling.knuma.io/dra-numa`)."""
    async with cluster(api) as c:
        await classes(c)
        await dgx(c, "dgx-0")
        await gpu_nic_claim(c, "busy", gpus=4)
        busy = await c.request("GET", f"{CLAIMS}/busy")
        taken = [("gpu", "gpu.sim.knuma.io", f"gpu-{i}") for i in range(4)] + [("nic", "nic.sim.knuma.io", "nic-0")]
        results = [{"request": r, "driver": d, "pool": "dgx-0", "device": n} for r, d, n in taken]
        busy["status"] = {"allocation": {"devices": {"results": results}}}
        await c.request("PUT", f"{CLAIMS}/busy/status", busy)
        await gpu_nic_claim(c, "train")
        async with running_scheduler(api, daemon_profiles()) as daemon:
            await claimed_pod(c, "trainer", "train")
            assert await c.bound("trainer") == "dgx-0"
            pod = await c.pod("trainer")
            recorded = json.loads(pod["metadata"]["annotations"]["scheduling.knuma.io/dra-numa"])
            assert set(recorded["c"].values()) == {1}
            (info,) = [n for n in daemon.cache.node_infos() if n.name == "dgx-0"]
            assert info.topology is not None
            free = {z.id: z.available["cpu"] for z in info.topology.zones}
            assert free == {0: 55000, 1: 47000}


async def test_a_pod_without_claims_leaves_free_gpus_their_cpus(api: RunningApiServer) -> None:
    """dgx-a's GPUs are all free, dgx-b's NUMA 0 GPUs are taken by a claim. After a 1-GPU claim pod of 8 CPUs, a
    16-CPU pod without claims goes to dgx-b's NUMA 0 although CPU packing prefers the fuller dgx-a: there it would
    leave a NUMA node with 4 free GPUs and 4 CPUs, too few for the GPU pods seen. The daemon's cache holds each
    zone's DRA devices (`gpu.sim.knuma.io/devices`), counted from the claims."""
    async with cluster(api) as c:
        await classes(c)
        await dgx(c, "dgx-a", {0: {"cpu": "20", "memory": "1020Gi"}, 1: {"cpu": "20", "memory": "1020Gi"}})
        await dgx(c, "dgx-b", {0: {"cpu": "30", "memory": "1020Gi"}, 1: {"cpu": "18", "memory": "1020Gi"}})
        await gpu_nic_claim(c, "busy", gpus=4)
        busy = await c.request("GET", f"{CLAIMS}/busy")
        taken = [("gpu", "gpu.sim.knuma.io", f"gpu-{i}") for i in range(4)] + [("nic", "nic.sim.knuma.io", "nic-0")]
        results = [{"request": r, "driver": d, "pool": "dgx-b", "device": n} for r, d, n in taken]
        busy["status"] = {"allocation": {"devices": {"results": results}}}
        await c.request("PUT", f"{CLAIMS}/busy/status", busy)
        await gpu_nic_claim(c, "train")
        async with running_scheduler(api, daemon_profiles()) as daemon:
            await claimed_pod(c, "trainer", "train")
            assert await c.bound("trainer") in ("dgx-a", "dgx-b")
            await c.create_pod("cpu16", "16", "32Gi")
            assert await c.bound("cpu16") == "dgx-b"
            (info,) = [n for n in daemon.cache.node_infos() if n.name == "dgx-b"]
            assert info.topology is not None
            assert info.topology.zones[0].available["gpu.sim.knuma.io/devices"] == 0
            assert info.topology.zones[0].total("gpu.sim.knuma.io/devices") == 4
            assert info.topology.zones[0].available["cpu"] == 14_000


async def test_partitions_of_one_gpu_share_its_counters(api: RunningApiServer) -> None:
    """A GPU published whole and as two halves and two quarters drawing on its shared counters (a counter slice
    and a device slice in one pool): two pods get a half each; a pod asking for the whole GPU, or for a quarter,
    then waits, and its FailedScheduling says the shared counters are used up."""
    driver = "gpu.example.com"
    pool = {"name": "n1-gpus", "generation": 0, "resourceSliceCount": 2}

    def part(name: str, profile: str, memory: int) -> dict[str, Any]:
        draw = {"counterSet": "gpu-0", "counters": {"memory": {"value": f"{memory}Gi"}}}
        return {"name": name, "attributes": {"profile": {"string": profile}}, "consumesCounters": [draw]}

    counters = {"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}
    devices = [part("gpu-0", "whole", 40), part("half-0", "half", 20), part("half-1", "half", 20)]
    devices += [part("quarter-0", "quarter", 10), part("quarter-1", "quarter", 10)]
    async with cluster(api) as c:
        await c.add_node("n1", ZONES)
        for name, extra in (("n1-counters", {"sharedCounters": [counters]}), ("n1-devices", {"devices": devices})):
            spec = {"driver": driver, "pool": pool, "nodeName": "n1", **extra}
            await c.request("POST", f"{RES}/resourceslices", {"metadata": {"name": name}, "spec": spec})
        for profile in ("whole", "half", "quarter"):
            selector = {"cel": {"expression": f'device.attributes["{driver}"].profile == "{profile}"'}}
            body = {"metadata": {"name": profile}, "spec": {"selectors": [selector]}}
            await c.request("POST", f"{RES}/deviceclasses", body)
        for name, profile in (("h1", "half"), ("h2", "half"), ("w", "whole"), ("q", "quarter")):
            claim = {"name": "gpu", "exactly": {"deviceClassName": profile}}
            await c.request("POST", CLAIMS, {"metadata": {"name": name}, "spec": {"devices": {"requests": [claim]}}})
        async with running_scheduler(api, daemon_profiles()):
            for name in ("h1", "h2"):
                await claimed_pod(c, f"pod-{name}", name, cpu="2")
                assert await c.bound(f"pod-{name}") == "n1"
            halves = set()
            for name in ("h1", "h2"):
                claim = await c.request("GET", f"{CLAIMS}/{name}")
                halves |= {r["device"] for r in claim["status"]["allocation"]["devices"]["results"]}
            assert halves == {"half-0", "half-1"}
            for name in ("w", "q"):
                await claimed_pod(c, f"pod-{name}", name, cpu="2")

                async def failed(pod: str = f"pod-{name}") -> list[str]:
                    return [e["message"] for e in await c.events(pod) if e["reason"] == "FailedScheduling"]

                message = (await c.wait_for(failed, what=f"pod-{name} refused"))[0]
                assert "0 left after the counters stage (the shared counters" in message, message
                assert await c.node_of(f"pod-{name}") == ""


NIC_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "nics"},
    "spec": {
        "selectors": [{"cel": {"expression": "device.driver == 'nic.sim.knuma.io'"}}],
        "extendedResourceName": "example.com/nic",
    },
}


async def nic_pod(c: Cluster, name: str, cpu: str = "8", nics: str = "1") -> dict[str, Any]:
    """A pod that asks for NICs as an extended resource (`example.com/nic`), which no node's allocatable lists."""
    limits = {"cpu": cpu, "memory": "8Gi", "example.com/nic": nics}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "containers": [{"name": "c", "image": "x", "resources": {"limits": limits}}],
        },
    }
    created: dict[str, Any] = await c.request("POST", "/api/v1/namespaces/default/pods", body)
    return created


async def test_extended_resources_a_device_class_serves_get_a_claim_next_to_the_cpus(api: RunningApiServer) -> None:
    """KEP-5004: `example.com/nic: 1` on a node whose allocatable has no `example.com/nic` comes from the DeviceClass
    that names it. The scheduler creates the claim (owned by the pod, annotated, with the delete-protection finalizer),
    allocates it on the NUMA node the kubelet will give the pod's 8 CPUs (NUMA 0 has 4 left), reserves it for the pod
    and records it in the pod's `status.extendedResourceClaimStatus` before binding."""
    async with cluster(api) as c:
        await classes(c)
        await c.request("POST", f"{RES}/deviceclasses", NIC_CLASS)
        await dgx(c, "dgx-0", {0: {"cpu": "4", "memory": "1020Gi"}, 1: ZONES[1]})
        async with running_scheduler(api, daemon_profiles()) as daemon:
            await nic_pod(c, "nic-user")
            assert await c.bound("nic-user") == "dgx-0"
            numa = next(p for p in daemon.profiles[SCHEDULER_NAME].filters if isinstance(p, NodeResourceTopologyMatch))
            # KnumaBinPacking expects the claim's NIC, not an `example.com/nic` no zone holds (nor both)
            assert numa.demand.devices.mix == {(("cpu", 8), ("memory", 8 << 30), ("nic.sim.knuma.io/devices", 1)): 1}
            pod = await c.pod("nic-user")
            status = pod["status"]["extendedResourceClaimStatus"]
            # the request's index is the resource's among the container's sorted requests (cpu, example.com/nic, memory)
            assert status["requestMappings"] == [
                {"containerName": "c", "resourceName": "example.com/nic", "requestName": "container-0-request-1"}
            ]
            claim = await c.request("GET", f"{CLAIMS}/{status['resourceClaimName']}")
            assert claim["metadata"]["name"].startswith("nic-user-extended-resources-")
            assert claim["metadata"]["annotations"]["resource.kubernetes.io/extended-resource-claim"] == "true"
            (owner,) = claim["metadata"]["ownerReferences"]
            assert (owner["kind"], owner["uid"], owner["controller"]) == ("Pod", pod["metadata"]["uid"], True)
            assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
            assert claim["spec"]["devices"]["requests"] == [
                {
                    "name": "container-0-request-1",
                    "exactly": {"deviceClassName": "nics", "allocationMode": "ExactCount", "count": 1},
                }
            ]
            (result,) = claim["status"]["allocation"]["devices"]["results"]
            assert (result["request"], result["driver"]) == ("container-0-request-1", "nic.sim.knuma.io")
            assert claim["status"]["reservedFor"] == [
                {"resource": "pods", "name": "nic-user", "uid": pod["metadata"]["uid"]}
            ]
            recorded = json.loads(pod["metadata"]["annotations"]["scheduling.knuma.io/dra-numa"])
            assert set(recorded["c"].values()) == {1}  # the NIC is on the NUMA node of the pod's CPUs


async def test_a_claim_an_earlier_attempt_left_is_deleted_before_the_pod_is_scheduled(api: RunningApiServer) -> None:
    """A scheduler that stopped between creating the claim and binding the pod leaves a claim whose allocation may be
    stale: the next attempt deletes it (upstream's PostFilter) and then allocates afresh."""
    async with cluster(api) as c:
        await classes(c)
        await c.request("POST", f"{RES}/deviceclasses", NIC_CLASS)
        await dgx(c, "dgx-0")
        pod = await nic_pod(c, "nic-user")
        left = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                "name": "nic-user-extended-resources-old",
                "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": "nic-user",
                        "uid": pod["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "devices": {"requests": [{"name": "container-0-request-0", "exactly": {"deviceClassName": "nics"}}]}
            },
        }
        await c.request("POST", CLAIMS, left)
        async with running_scheduler(api, daemon_profiles()):
            assert await c.bound("nic-user", timeout=20) == "dgx-0"
            await c.request("GET", f"{CLAIMS}/nic-user-extended-resources-old", ok=(404,))
            status = (await c.pod("nic-user"))["status"]["extendedResourceClaimStatus"]
            assert status["resourceClaimName"] != "nic-user-extended-resources-old"


async def test_devices_a_device_taint_rule_taints_are_not_allocated(api: RunningApiServer) -> None:
    """KEP-5055: an administrator takes NUMA 0's GPUs out with DeviceTaintRules (`resource.k8s.io/v1alpha3`, found
    by discovery when the scheduler started, created after); a claim that does not tolerate the taint gets a GPU of
    NUMA 1, where it would otherwise get NUMA 0's first."""
    async with cluster(api) as c:
        await classes(c)
        await dgx(c, "dgx-0")
        async with running_scheduler(api, daemon_profiles()) as daemon:
            for gpu in range(4):
                body = {
                    "apiVersion": "resource.k8s.io/v1alpha3",
                    "kind": "DeviceTaintRule",
                    "metadata": {"name": f"maintenance-{gpu}"},
                    "spec": {
                        "deviceSelector": {"driver": "gpu.sim.knuma.io", "pool": "dgx-0", "device": f"gpu-{gpu}"},
                        "taint": {"key": "example.com/maintenance", "effect": "NoSchedule"},
                    },
                }
                await c.request("POST", "/apis/resource.k8s.io/v1alpha3/devicetaintrules", body)

            async def rules_seen() -> bool:
                return len(daemon.devices.taint_rules) == 4

            await c.wait_for(rules_seen, timeout=90, what="the scheduler to watch the DeviceTaintRules")
            await gpu_nic_claim(c, "train")
            await claimed_pod(c, "trainer", "train", cpu="2")
            assert await c.bound("trainer") == "dgx-0"
            claim = await c.request("GET", f"{CLAIMS}/train")
            (gpu,) = [r["device"] for r in claim["status"]["allocation"]["devices"]["results"] if r["request"] == "gpu"]
            assert numa_of(gpu) == 1


async def test_a_failed_binding_deletes_the_claim_prebind_created(api: RunningApiServer, tmp_path: Path) -> None:
    """Unreserve after a failed binding (`unreserveExtendedResourceClaim`): the claim PreBind created for the pod's
    extended resources is deleted at once, and its devices are no longer held in flight, instead of waiting for the
    next attempt to find it left behind (the retry comes after a 5 s backoff here). Once bindings go through, the pod
    is bound with one claim of its own, the one its status names."""
    with apiserver_in_thread(tmp_path / "gone") as gone:
        pass  # stopped: the bindings (over the writer session) fail; PreBind's writes still reach the API server
    async with cluster(api) as c:
        await classes(c)
        await c.request("POST", f"{RES}/deviceclasses", NIC_CLASS)
        await dgx(c, "dgx-0")
        settings = DaemonSettings(leader_elect=False, initial_backoff=5, max_backoff=5)
        writer = api_session(gone.kubeconfig, timeout=2)
        async with running_scheduler(api, daemon_profiles(), settings, writer=writer) as daemon:
            pod = await nic_pod(c, "nic-user")
            uid = pod["metadata"]["uid"]

            async def owned() -> list[str]:
                claims = (await c.request("GET", CLAIMS))["items"]
                return [
                    k["metadata"]["name"]
                    for k in claims
                    if any(o.get("uid") == uid for o in k["metadata"].get("ownerReferences") or [])
                ]

            async def recorded() -> str:  # PreBind wrote the pod's status: its claim was created
                status = (await c.pod("nic-user")).get("status") or {}
                return str((status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName") or "")

            async def cleaned_up() -> bool:
                return not daemon.cache.is_assumed("default/nic-user") and not await owned()

            name = await c.wait_for(recorded, timeout=10, what="PreBind's claim")
            await c.wait_for(cleaned_up, timeout=4, what="the claim deleted after the failed binding")
            await c.request("GET", f"{CLAIMS}/{name}", ok=(404,))
            assert not daemon.devices.in_flight
            await daemon.writer.aclose()
            daemon.writer = api_session(api.kubeconfig)  # the bindings reach the API server again
            try:
                assert await c.bound("nic-user", timeout=20) == "dgx-0"
                status = (await c.pod("nic-user"))["status"]["extendedResourceClaimStatus"]
                assert await owned() == [status["resourceClaimName"]]
            finally:
                await daemon.writer.aclose()


async def test_pods_share_a_device_that_allows_multiple_allocations(api: RunningApiServer) -> None:
    """Consumable capacity: one 100G NIC that allows multiple allocations, each share a whole number of 10G steps.
    Three pods asking 25G, 40G and 30G share it (30G, 40G and 30G consumed, each with its own share ID); a fourth
    asking 10G waits, and its FailedScheduling says the device's capacity is what is short; once the 40G pod's claim
    is deallocated, it is placed."""
    driver = "nic.example.com"
    policy = {"default": "10G", "validRange": {"min": "10G", "max": "100G", "step": "10G"}}
    nic = {
        "name": "nic-0",
        "allowMultipleAllocations": True,
        "capacity": {"bandwidth": {"value": "100G", "requestPolicy": policy}},
    }
    async with cluster(api) as c:
        await c.add_node("n1", ZONES)
        pool = {"name": "n1", "generation": 0, "resourceSliceCount": 1}
        spec = {"driver": driver, "pool": pool, "nodeName": "n1", "devices": [nic]}
        await c.request("POST", f"{RES}/resourceslices", {"metadata": {"name": "n1-nics"}, "spec": spec})
        selector = {"cel": {"expression": f"device.driver == '{driver}'"}}
        await c.request(
            "POST", f"{RES}/deviceclasses", {"metadata": {"name": "nic"}, "spec": {"selectors": [selector]}}
        )
        for name, amount in (("a", "25G"), ("b", "40G"), ("c", "30G"), ("d", "10G")):
            request = {
                "name": "nic",
                "exactly": {"deviceClassName": "nic", "capacity": {"requests": {"bandwidth": amount}}},
            }
            await c.request("POST", CLAIMS, {"metadata": {"name": name}, "spec": {"devices": {"requests": [request]}}})
        async with running_scheduler(api, daemon_profiles()):
            for name in ("a", "b", "c"):
                await claimed_pod(c, f"pod-{name}", name, cpu="2")
                assert await c.bound(f"pod-{name}") == "n1"
            results = []
            for name in ("a", "b", "c"):
                claim = await c.request("GET", f"{CLAIMS}/{name}")
                results += claim["status"]["allocation"]["devices"]["results"]
            assert [r["device"] for r in results] == ["nic-0"] * 3
            assert [r["consumedCapacity"]["bandwidth"] for r in results] == ["30G", "40G", "30G"]
            assert len({r["shareID"] for r in results}) == 3
            await claimed_pod(c, "pod-d", "d", cpu="2")

            async def failed() -> list[str]:
                return [e["message"] for e in await c.events("pod-d") if e["reason"] == "FailedScheduling"]

            message = (await c.wait_for(failed, what="pod-d refused"))[0]
            assert "0 left after the device capacity stage" in message, message
            assert await c.node_of("pod-d") == ""
            await c.request("DELETE", "/api/v1/namespaces/default/pods/pod-b?gracePeriodSeconds=0")
            claim = await c.request("GET", f"{CLAIMS}/b")
            claim["status"] = {}
            await c.request("PUT", f"{CLAIMS}/b/status", claim)
            assert await c.bound("pod-d") == "n1"
            got = await c.request("GET", f"{CLAIMS}/d")
            assert got["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] == {"bandwidth": "10G"}


ATTACHED, ATTACH_FAILED = "fabric.example.com/attached", "fabric.example.com/attach-failed"


def binding_profiles(timeout: str | None = None) -> dict[str, Any]:
    """The default profile, with DynamicResources' `bindingTimeout` when given."""
    document = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": SCHEDULER_NAME,
                "plugins": {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}},
                "pluginConfig": [{"name": "DynamicResources", "args": {"bindingTimeout": timeout}}] if timeout else [],
            }
        ],
    }
    return build_profiles(parse_config(document))


async def fabric_gpu(c: Cluster) -> None:
    """A GPU reachable from every node over a fabric (an `allNodes` slice): attached to the node it is allocated
    for (`bindsToNode`), ready once its driver says so (binding conditions)."""
    device = {
        "name": "fgpu-0",
        "bindsToNode": True,
        "bindingConditions": [ATTACHED],
        "bindingFailureConditions": [ATTACH_FAILED],
    }
    pool = {"name": "fabric", "generation": 0, "resourceSliceCount": 1}
    spec = {"driver": "fabric.example.com", "pool": pool, "allNodes": True, "devices": [device]}
    await c.request("POST", f"{RES}/resourceslices", {"metadata": {"name": "fabric"}, "spec": spec})
    selector = {"cel": {"expression": "device.driver == 'fabric.example.com'"}}
    await c.request("POST", f"{RES}/deviceclasses", {"metadata": {"name": "fabric"}, "spec": {"selectors": [selector]}})
    request = {"name": "gpu", "exactly": {"deviceClassName": "fabric"}}
    await c.request("POST", CLAIMS, {"metadata": {"name": "fgpu"}, "spec": {"devices": {"requests": [request]}}})


async def report(c: Cluster, condition: str, reason: str, message: str) -> None:
    """What the fabric's driver writes once it acted on the allocation: the device's condition in the claim."""
    claim = await c.request("GET", f"{CLAIMS}/fgpu")
    device = {
        "driver": "fabric.example.com",
        "pool": "fabric",
        "device": "fgpu-0",
        "conditions": [
            {
                "type": condition,
                "status": "True",
                "reason": reason,
                "message": message,
                "lastTransitionTime": "2026-11-29T12:00:00Z",
            }
        ],
    }
    claim["status"]["devices"] = [device]
    await c.request("PUT", f"{CLAIMS}/fgpu/status", claim)


async def trainer_waits_for_its_device(c: Cluster) -> None:
    """Create the `trainer` pod using the fabric GPU and wait until PreBind says it waits for binding conditions."""
    await claimed_pod(c, "trainer", "fgpu", cpu="2")

    async def pending() -> bool:
        return any(e["reason"] == "BindingConditionsPending" for e in await c.events("trainer"))

    await c.wait_for(pending, what="BindingConditionsPending")


def fast_polls() -> DaemonSettings:
    return DaemonSettings(leader_elect=False, initial_backoff=0.1, max_backoff=0.5, binding_poll=0.1)


async def test_a_device_with_binding_conditions_is_bound_once_its_driver_reports_it_attached(
    api: RunningApiServer,
) -> None:
    """KEP-5007: the allocation carries the device's binding conditions and a node selector for the chosen node
    (`bindsToNode`); the pod waits in PreBind (`BindingConditionsPending`) until the driver sets the condition."""
    async with cluster(api) as c:
        await c.add_node("n1", ZONES)
        await fabric_gpu(c)
        async with running_scheduler(api, binding_profiles(), fast_polls()):
            await trainer_waits_for_its_device(c)
            claim = await c.request("GET", f"{CLAIMS}/fgpu")
            allocation = claim["status"]["allocation"]
            result = allocation["devices"]["results"][0]
            assert result["bindingConditions"] == [ATTACHED] and result["bindingFailureConditions"] == [ATTACH_FAILED]
            assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["n1"]
            assert allocation["allocationTimestamp"]
            assert await c.node_of("trainer") == ""  # not bound while the device is not attached
            await report(c, ATTACHED, "Attached", "attached to n1")
            assert await c.bound("trainer") == "n1"


async def test_a_binding_failure_gives_the_allocation_up(api: RunningApiServer) -> None:
    """The driver reports the failure condition: the pod is not bound, the claim is deallocated (so the next attempt
    allocates afresh) and FailedScheduling carries the condition's reason and message."""
    async with cluster(api) as c:
        await c.add_node("n1", ZONES)
        await fabric_gpu(c)
        async with running_scheduler(api, binding_profiles(), fast_polls()):
            await trainer_waits_for_its_device(c)
            await report(c, ATTACH_FAILED, "NoPath", "no fabric path to n1")

            async def failed() -> list[str]:
                return [e["message"] for e in await c.events("trainer") if e["reason"] == "FailedScheduling"]

            message = (await c.wait_for(failed, what="FailedScheduling"))[0]
            assert 'claim fgpu binding failed: reason=NoPath, message="no fabric path to n1"' in message, message
            assert await c.node_of("trainer") == ""

            async def allocated_again() -> bool:
                claim = await c.request("GET", f"{CLAIMS}/fgpu")
                return "devices" not in (claim.get("status") or {})

            await c.wait_for(allocated_again, what="the failed allocation given up")


async def test_a_device_that_never_gets_ready_times_out(api: RunningApiServer) -> None:
    """`bindingTimeout: 1s`: nobody sets the condition, PreBind gives up after a second, deallocates and says so."""
    async with cluster(api) as c:
        await c.add_node("n1", ZONES)
        await fabric_gpu(c)
        async with running_scheduler(api, binding_profiles("1s"), fast_polls()):
            await claimed_pod(c, "trainer", "fgpu", cpu="2")

            async def failed() -> list[str]:
                return [e["message"] for e in await c.events("trainer") if e["reason"] == "FailedScheduling"]

            message = (await c.wait_for(failed, what="FailedScheduling"))[0]
            assert "binding timeout" in message, message
            assert await c.node_of("trainer") == ""


async def test_zones_that_still_list_a_resource_dra_serves_hold_none_of_it(api: RunningApiServer) -> None:
    """A node moving from a device plugin to DRA: its Node lists `example.com/nic` at 0, its NRT zones still list
    the plugin's NICs, none free. The pod gets its NIC from DRA, and the kubelet leaves the request out
    (`removeMissingExtendedResources`): the scheduler places it, and its cache predicts the kubelet's zones for it
    (the assumed pod carries the claim's request mappings, `Pod.dra_backed`): 8 CPUs on NUMA 0 beside the NIC, not
    8 taken from every zone as for a pod the model would not admit."""
    async with cluster(api) as c:
        await classes(c)
        await c.request("POST", f"{RES}/deviceclasses", NIC_CLASS)
        allocatable = {"cpu": "110", "memory": "2040Gi", "example.com/nic": "0"}
        await c.add_node("dgx-0", ZONES, allocatable=allocatable, nrt=False)
        stale: dict[int, dict[str, tuple[str, str] | str]] = {
            z: {**ZONES[z], "example.com/nic": ("4", "0")} for z in (0, 1)
        }
        await c.publish_nrt("dgx-0", stale)
        for body in resource_slices("dgx-0", BUILTIN_SHAPES["dgx"]):
            await c.request("POST", f"{RES}/resourceslices", body)
        async with running_scheduler(api, daemon_profiles()) as daemon:
            await nic_pod(c, "nic-user")
            assert await c.bound("nic-user") == "dgx-0"
            (info,) = [n for n in daemon.cache.node_infos() if n.name == "dgx-0"]
            assert info.topology is not None
            assert {z.id: z.available["cpu"] for z in info.topology.zones} == {0: 47000, 1: 55000}
            assert {z.id: z.available["example.com/nic"] for z in info.topology.zones} == {0: 0, 1: 0}


async def test_a_pod_deleted_while_waiting_for_its_device_gives_the_allocation_back(api: RunningApiServer) -> None:
    """PreBind stops waiting for binding conditions once the pod is gone: the claim is deallocated at once (not after
    `bindingTimeout`), its status left without `reservedFor` (absent, not null, as kube-apiserver stores it)."""
    async with cluster(api) as c:
        await c.add_node("n1", ZONES)
        await fabric_gpu(c)
        async with running_scheduler(api, binding_profiles(), fast_polls()):
            await trainer_waits_for_its_device(c)
            await c.request("DELETE", "/api/v1/namespaces/default/pods/trainer?gracePeriodSeconds=0")

            async def given_back() -> tuple[dict[str, Any]] | None:
                status = (await c.request("GET", f"{CLAIMS}/fgpu")).get("status") or {}
                return (status,) if "allocation" not in status else None

            (status,) = await c.wait_for(given_back, what="the claim deallocated")
            assert "reservedFor" not in status, status
