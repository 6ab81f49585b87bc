"""Preemption for pods with ResourceClaims: the dry run frees the devices the victims alone hold
(`DeviceState.held_only_by`, KEP-5690), so a high-priority GPU pod can preempt the low-priority pods holding the
GPUs of one NUMA node, through the daemon's cycle (`knuma.scheduler.cycle`) on one DGX-like node."""

from __future__ import annotations

import dataclasses
from typing import Any

from knuma.api.pod import Pod
from knuma.scheduler.cache.nrt import ClusterCache
from knuma.scheduler.config.load import build_profiles, default_config
from knuma.scheduler.cycle import CycleResult, SchedulingCycle
from knuma.scheduler.fast.path import FastPath
from knuma.scheduler.framework.interface import Profile
from knuma.scheduler.plugins.device_state import DeviceState
from knuma.scheduler.plugins.dynamic_resources import DynamicResources
from knuma.testbed.dra import device_classes, resource_slices
from knuma.testbed.shapes import BUILTIN_SHAPES

from .test_dra_memo import _node, _nrt

GPU = "gpu.sim.knuma.io"
SCHEDULER = "topology-aware-scheduler"


def _pod(name: str, priority: int, cpus: int, gpus: int) -> tuple[Pod, list[dict[str, Any]]]:
    container: dict[str, Any] = {
        "name": "c",
        "image": "x",
        "resources": {"limits": {"cpu": str(cpus), "memory": f"{2 * cpus}Gi"}},
    }
    spec: dict[str, Any] = {"schedulerName": SCHEDULER, "priority": priority, "containers": [container]}
    claims: list[dict[str, Any]] = []
    if gpus:
        claims.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": f"{name}-gpus", "namespace": "default", "uid": f"claim-{name}"},
                "spec": {
                    "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": GPU, "count": gpus}}]}
                },
            }
        )
        container["resources"]["claims"] = [{"name": "gpus"}]
        spec["resourceClaims"] = [{"name": "gpus", "resourceClaimName": f"{name}-gpus"}]
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "uid": f"uid-{name}"}, "spec": spec}
    return Pod.from_manifest(manifest), claims


class _Cluster:
    """One DGX-like node (2 NUMA nodes of 54 CPUs and 4 GPUs each, `single-numa-node`) and the daemon's objects."""

    def __init__(self) -> None:
        shape = BUILTIN_SHAPES["dgx"]
        self.cache, self.devices = ClusterCache(), DeviceState()
        for body in device_classes([shape]):
            self.devices.set_class(body)
        self.cache.upsert_node(_node("n0", 108))
        self.cache.upsert_nrt(_nrt("n0", 2, 54, "single-numa-node"))
        for body in resource_slices("n0", shape):
            self.devices.set_slice(body)
        self.cache.overlay = self.devices.with_zone_devices
        self.profile: Profile = build_profiles(default_config(), devices=self.devices)[SCHEDULER]
        self.plugin = next(p for p in self.profile.filters if isinstance(p, DynamicResources))
        self.cycle = SchedulingCycle(self.cache, FastPath(self.cache))

    def place(self, pod: Pod, claims: list[dict[str, Any]], also_reserved_for: tuple[Pod, ...] = ()) -> str:
        """Schedule `pod` as the daemon does and write its claims back allocated and reserved for it (and for
        `also_reserved_for`: a shared claim)."""
        for claim in claims:
            self.devices.set_claim(claim)
        node = self.cycle.run(self.profile, pod).outcome.node
        assert node is not None
        info = self.cache.node_info(node)
        assert info is not None
        result, found = self.plugin.allocations(pod, info)
        assert result.allocatable
        chosen = {c.claim: c.allocation for c in result.results}
        self.devices.reserve(pod, chosen)
        in_flight = {c.key: chosen.get(c.key) for c in found.claims}
        self.cache.assume(dataclasses.replace(pod, dra_devices=self.plugin.device_numa(pod, node, in_flight)), node)
        for claim in claims:
            consumers = [{"resource": "pods", "name": p.name, "uid": p.uid} for p in (pod, *also_reserved_for)]
            allocation = chosen[f"default/{claim['metadata']['name']}"].to_dict()
            self.devices.set_claim({**claim, "status": {"allocation": allocation, "reservedFor": consumers}})
        return node

    def victim_gone_and_late_batch_pod_refused(self, victim: Pod) -> None:
        """The victim is gone and its claim deallocated (deleted with it); a late batch pod asking for the same
        GPUs finds them held for the preemptor."""
        self.cache.remove_pod(victim.key)
        self.devices.delete_claim({"metadata": {"namespace": "default", "name": f"{victim.name}-gpus"}})
        self.devices.delete_pod({"metadata": {"namespace": "default", "name": victim.name}})
        late, late_claims = _pod("late", 0, 8, 4)
        for claim in late_claims:
            self.devices.set_claim(claim)
        refused = self.cycle.run(self.profile, late)
        assert refused.outcome.node is None and "cannot allocate all claims" in refused.outcome.message

    def train_after_two_batch_pods(self) -> tuple[Pod, CycleResult]:
        """Two batch pods (priority 0) holding 4 GPUs each, then `train` (priority 1000, 4 GPUs): its cycle."""
        for name in ("batch-a", "batch-b"):
            self.place(*_pod(name, 0, 8, 4))
        train, claims = _pod("train", 1000, 16, 4)
        for claim in claims:
            self.devices.set_claim(claim)
        return train, self.cycle.run(self.profile, train)


def test_a_gpu_pod_preempts_the_pod_holding_the_gpus_of_one_numa_node() -> None:
    cluster = _Cluster()
    batch_a, batch_b = _pod("batch-a", 0, 8, 4), _pod("batch-b", 0, 8, 4)
    cluster.place(*batch_a)
    cluster.place(*batch_b)
    cluster.place(*_pod("web", 0, 4, 0))  # no device: freeing it frees no GPU, so it is not a victim
    train, claims = _pod("train", 1000, 16, 4)
    for claim in claims:
        cluster.devices.set_claim(claim)
    result = cluster.cycle.run(cluster.profile, train)
    assert result.outcome.node is None and "cannot allocate all claims" in result.outcome.message
    assert result.candidate is not None
    assert result.candidate.node == "n0"
    assert [v.name for v in result.candidate.victims] in (["batch-a"], ["batch-b"])
    assert cluster.cache.nominated_node(train.key) == "n0"


def test_devices_shared_with_a_pod_that_stays_are_not_freed() -> None:
    """Each GPU claim is also reserved for a high-priority pod that cannot be evicted: evicting the batch pods
    frees no GPU, so preemption does not help."""
    cluster = _Cluster()
    keeper, _ = _pod("keeper", 2000, 2, 0)
    cluster.place(keeper, [])
    cluster.place(*_pod("batch-a", 0, 8, 4), also_reserved_for=(keeper,))
    cluster.place(*_pod("batch-b", 0, 8, 4), also_reserved_for=(keeper,))
    train, claims = _pod("train", 1000, 16, 4)
    for claim in claims:
        cluster.devices.set_claim(claim)
    result = cluster.cycle.run(cluster.profile, train)
    assert result.candidate is None
    assert "preemption: 0/1 nodes are available" in result.outcome.message


def test_held_only_by_counts_allocations_in_flight() -> None:
    """A pod assumed but not yet bound (its allocation in flight, not written): its devices are its own."""
    cluster = _Cluster()
    pod, claims = _pod("batch-a", 0, 8, 4)
    for claim in claims:
        cluster.devices.set_claim(claim)
    info = cluster.cache.node_info("n0")
    assert info is not None
    result, _ = cluster.plugin.allocations(pod, info)
    cluster.devices.reserve(pod, {c.claim: c.allocation for c in result.results})
    held = cluster.devices.held_only_by({pod.key})
    assert len(held) == 4 and {d[0] for d in held} == {GPU}
    assert cluster.devices.held_only_by({"default/someone-else"}) == frozenset()


def test_the_devices_of_a_nominated_pod_are_held_from_pods_of_lower_priority() -> None:
    """While its victim goes, the GPUs the dry run gave the preemptor are held for it: once the victim's claim is
    deallocated, a late batch pod asking for the same GPUs finds none, a pod of higher priority still could, and the
    preemptor gets them; dropping the nomination releases them."""
    cluster = _Cluster()
    train, result = cluster.train_after_two_batch_pods()
    candidate = result.candidate
    assert candidate is not None
    assert len(cluster.devices.held_against(_pod("late", 0, 8, 4)[0])) == 4
    (victim,) = candidate.victims
    cluster.victim_gone_and_late_batch_pod_refused(victim)
    assert cluster.devices.held_against(_pod("urgent", 5000, 8, 4)[0]) == frozenset()
    assert cluster.place(train, []) == "n0"  # its own hold does not stop it; Reserve replaces the hold
    assert cluster.devices.held == {}


def test_a_cleared_nomination_releases_the_devices_held() -> None:
    """The nominated pod's claim asks for more than any eviction frees now (another pod took GPUs meanwhile):
    preemption cannot help, the nomination is cleared, and so is the hold."""
    cluster = _Cluster()
    train, result = cluster.train_after_two_batch_pods()
    assert result.candidate is not None
    assert train.key in cluster.devices.held
    cluster.place(*_pod("keeper", 2000, 2, 0))
    for name in ("batch-a", "batch-b"):  # every GPU now in claims shared with a pod preemption cannot evict
        stored = cluster.devices.claims[f"default/{name}-gpus"]
        status = dict(stored["status"])
        status["reservedFor"] = [*status["reservedFor"], {"resource": "pods", "name": "keeper", "uid": "uid-keeper"}]
        cluster.devices.set_claim({**stored, "status": status})
    result = cluster.cycle.run(cluster.profile, train)
    assert result.candidate is None and result.clears_nomination
    assert cluster.devices.held == {} and cluster.cache.nominated_node(train.key) == ""


def test_a_restarted_scheduler_holds_the_devices_again_while_the_victim_terminates() -> None:
    """A restart keeps the nomination (restored from `status.nominatedNodeName`) but loses the devices held; the
    preemptor's next attempt, which waits for its victim still terminating, holds them again, so a late batch pod
    does not take them once the victim's claim is deallocated."""
    cluster = _Cluster()
    train, result = cluster.train_after_two_batch_pods()
    assert result.candidate is not None
    (victim,) = result.candidate.victims
    node = result.candidate.node
    cluster.cache.remove_pod(victim.key)  # the victim as the API server now shows it: deleted by the preemption
    cluster.cache.assume(dataclasses.replace(victim, terminating=True, preempted=True), node)
    cluster.devices.held.clear()  # what a restart loses
    waiting = cluster.cycle.run(cluster.profile, train, node)
    assert waiting.candidate is None and not waiting.clears_nomination
    assert "terminating pod on the nominated node" in waiting.outcome.message
    assert len(cluster.devices.held_against(_pod("late", 0, 8, 4)[0])) == 4
    cluster.victim_gone_and_late_batch_pod_refused(victim)
    assert cluster.place(train, []) == node


SHARED = "nic.example.com"


def _shared_nic(cluster: _Cluster) -> None:
    """A 100G NIC on n0 that allows multiple allocations, in 10G steps, and its class."""
    policy = {"default": "10G", "validRange": {"min": "10G", "step": "10G"}}
    device = {
        "name": "nic-0",
        "allowMultipleAllocations": True,
        "capacity": {"bandwidth": {"value": "100G", "requestPolicy": policy}},
    }
    pool = {"name": "n0", "generation": 0, "resourceSliceCount": 1}
    spec = {"driver": SHARED, "pool": pool, "nodeName": "n0", "devices": [device]}
    cluster.devices.set_slice({"metadata": {"name": "n0-shared"}, "spec": spec})
    selector = {"cel": {"expression": f"device.driver == '{SHARED}'"}}
    cluster.devices.set_class({"metadata": {"name": "shared"}, "spec": {"selectors": [selector]}})


def _share_pod(name: str, priority: int, bandwidth: str) -> tuple[Pod, list[dict[str, Any]]]:
    """A 2-CPU pod whose claim asks for `bandwidth` of the shared NIC."""
    capacity = {"requests": {"bandwidth": bandwidth}}
    request = {"name": "nic", "exactly": {"deviceClassName": "shared", "capacity": capacity}}
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"{name}-nic", "namespace": "default", "uid": f"claim-{name}"},
        "spec": {"devices": {"requests": [request]}},
    }
    limits = {"cpu": "2", "memory": "4Gi"}
    container = {"name": "c", "image": "x", "resources": {"limits": limits, "claims": [{"name": "nic"}]}}
    spec = {
        "schedulerName": SCHEDULER,
        "priority": priority,
        "containers": [container],
        "resourceClaims": [{"name": "nic", "resourceClaimName": f"{name}-nic"}],
    }
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "uid": f"uid-{name}"}, "spec": spec}
    return Pod.from_manifest(manifest), [claim]


def test_a_pod_preempts_the_pod_whose_share_of_a_device_it_needs() -> None:
    """Consumable capacity: batch pods hold 60G and 30G of the one shared NIC; `serve` (priority 1000) needs 50G.
    Evicting the 60G pod gives back enough (the dry run returns its share), evicting only the 30G pod would not,
    so the 60G pod is the victim."""
    cluster = _Cluster()
    _shared_nic(cluster)
    cluster.place(*_share_pod("batch-a", 0, "60G"))
    cluster.place(*_share_pod("batch-b", 0, "30G"))
    assert cluster.devices.shares_held_only_by({"default/batch-a"}) == {
        (SHARED, "n0", "nic-0"): {"bandwidth": 60 * 10**18}
    }
    serve, claims = _share_pod("serve", 1000, "50G")
    for claim in claims:
        cluster.devices.set_claim(claim)
    result = cluster.cycle.run(cluster.profile, serve)
    assert result.outcome.node is None and "cannot allocate all claims" in result.outcome.message
    assert result.candidate is not None and [v.name for v in result.candidate.victims] == ["batch-a"]
