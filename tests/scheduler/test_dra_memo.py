"""The allocator's memo (`knuma.devices.memo`, used by DynamicResources) never changes a decision.

Random clusters of DRA nodes (DGX-like and GPU-server shapes, varied CPUs and Topology Manager policies, some without
NRT data, whose topology object never changes) take random streams of pods with and without claims (varied GPU and
NIC counts, PCIe-root constraints, second claims, repeated and new claim shapes, CPU sizes), with claims written back
as the informer delivers them, pods deleted and reservations undone. The same stream runs with the memo and without
it (`DeviceState.memo = None`), through the daemon's cycle (`ClusterCache` with the DRA zone overlay, `FastPath`, the
default profile): the node chosen, the allocation, the devices' NUMA nodes and the FailedScheduling message must be
the same at every step (nodes of one shape, CPUs and policy share outcomes, renamed: `AllocationMemo.from_similar`).
The same holds between the fast path (DynamicResources node by node on the rows the arrays leave feasible) and the
exact path (every plugin on every node, `schedule_one`). Some pods ask for NICs and GPUs as extended resources a
DeviceClass serves (KEP-5004: `example.com/nic` named by a class, a GPU class's implicit
`deviceclass.resource.kubernetes.io/...` name) instead of claims or besides one, from a sidecar or an init
container too; some nodes list `example.com/nic` in their allocatable (a device plugin serves it there, not DRA), some
list it at 0 (a device plugin with no NIC left: DRA serves it); a few have NRT data only (no Node object: not a
candidate, as in kube-scheduler, but in the cache).
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from knuma.api.pod import Pod
from knuma.scheduler.algorithm import decide
from knuma.scheduler.cache.nrt import ClusterCache
from knuma.scheduler.config.document import read_configuration
from knuma.scheduler.config.load import build_profiles, default_config
from knuma.scheduler.config.model import SchedulerConfiguration
from knuma.scheduler.fast.path import FastPath
from knuma.scheduler.plugins.device_state import DeviceState
from knuma.scheduler.plugins.dra_zones import claimed_devices
from knuma.scheduler.plugins.dynamic_resources import DynamicResources
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.testbed.dra import device_classes, resource_slices
from knuma.testbed.shapes import BUILTIN_SHAPES

GPU, NIC = "gpu.sim.knuma.io", "nic.sim.knuma.io"
EXTENDED_NIC, IMPLICIT_GPU = "example.com/nic", f"deviceclass.resource.kubernetes.io/{GPU}"
NIC_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "nics", "creationTimestamp": "2026-11-29T10:00:00Z"},
    "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{NIC}'"}}], "extendedResourceName": EXTENDED_NIC},
}
ROOT = "resource.kubernetes.io/pcieRoot"
SCHEDULER = "topology-aware-scheduler"
POLICIES = ("single-numa-node", "restricted", "best-effort", "none")


def _node(name: str, cpus: int, nics: str = "") -> dict[str, Any]:
    """`nics`: the `example.com/nic` a device plugin lists in the allocatable ("": none listed)."""
    allocatable = {"cpu": str(cpus), "memory": "512Gi", "pods": "110", **({EXTENDED_NIC: nics} if nics else {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": allocatable, "allocatable": allocatable},
    }


def _nrt(name: str, zones: int, cpus_per_zone: int, policy: str) -> dict[str, Any]:
    resources = [
        {"name": n, "capacity": v, "allocatable": v, "available": v}
        for n, v in (("cpu", str(cpus_per_zone)), ("memory", "256Gi"))
    ]
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name},
        "attributes": [
            {"name": "topologyManagerPolicy", "value": policy},
            {"name": "topologyManagerScope", "value": "container"},
        ],
        "zones": [{"name": f"node-{z}", "type": "Node", "resources": resources} for z in range(zones)],
    }


def _claim_spec(rng: random.Random) -> dict[str, Any]:
    requests: list[dict[str, Any]] = []
    gpus = rng.choice((0, 1, 1, 2, 4))
    if gpus:
        requests.append({"name": "gpu", "exactly": {"deviceClassName": GPU, "count": gpus}})
    nics = rng.choice((1, 1, 2)) if gpus == 0 or rng.random() < 0.7 else 0
    if nics:
        requests.append({"name": "nic", "exactly": {"deviceClassName": NIC, "count": nics}})
    devices: dict[str, Any] = {"requests": requests}
    if gpus == 1 and nics == 1 and rng.random() < 0.6:
        devices["constraints"] = [{"requests": ["gpu", "nic"], "matchAttribute": ROOT}]
    return {"devices": devices}


def _pod(index: int, rng: random.Random, specs: list[dict[str, Any]]) -> tuple[Pod, list[dict[str, Any]]]:
    name = f"p{index:04d}"
    cpus = rng.choice((8, 8, 8, 16, 4))
    container: dict[str, Any] = {
        "name": "c",
        "image": "x",
        "resources": {"limits": {"cpu": str(cpus), "memory": f"{2 * cpus}Gi"}},
    }
    spec: dict[str, Any] = {"schedulerName": SCHEDULER, "containers": [container]}
    claims: list[dict[str, Any]] = []
    extended_only = rng.random() < 0.25
    if extended_only or rng.random() < 0.1:  # devices as extended resources (KEP-5004): DRA where the node has none
        extended = {EXTENDED_NIC: str(rng.choice((1, 1, 2)))}
        if rng.random() < 0.5:
            extended[IMPLICIT_GPU] = str(rng.choice((1, 2)))
        container["resources"]["limits"].update(extended)
        if rng.random() < 0.3:  # an init container (or a sidecar) that needs one NIC too
            limits = {"cpu": "1", "memory": "1Gi", EXTENDED_NIC: "1"}
            init = {"name": "init", "image": "x", "resources": {"limits": limits}}
            spec["initContainers"] = [{**init, "restartPolicy": "Always"} if rng.random() < 0.5 else init]
    if not extended_only and rng.random() < 0.85 / 0.75:
        for k in range(1 if rng.random() < 0.8 else 2):
            claim_spec = rng.choice(specs) if rng.random() < 0.8 else _claim_spec(rng)
            claim_name = f"{name}-c{k}"
            claims.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaim",
                    "metadata": {"name": claim_name, "namespace": "default", "uid": f"claim-{index}-{k}"},
                    "spec": claim_spec,
                }
            )
        container["resources"]["claims"] = [{"name": f"d{k}"} for k in range(len(claims))]
        spec["resourceClaims"] = [
            {"name": f"d{k}", "resourceClaimName": c["metadata"]["name"]} for k, c in enumerate(claims)
        ]
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "uid": f"uid-{index}"}, "spec": spec}
    return Pod.from_manifest(manifest), claims


def _run(
    seed: int, memo: bool, exact: bool = False, config: SchedulerConfiguration | None = None
) -> tuple[list[tuple[Any, ...]], int, int]:
    """The decisions of one random stream (by the fast path, or with `exact` by the exact path); with the memo's hit
    count and how many outcomes came from a similar node (`AllocationMemo.from_similar`). `config`: the scheduler's
    (default: `default_config`)."""
    rng = random.Random(seed)
    shapes = [BUILTIN_SHAPES["dgx"], BUILTIN_SHAPES["gpu"]]
    cache, devices = ClusterCache(), DeviceState()
    if not memo:
        devices.memo = None
    for body in [*device_classes(shapes), NIC_CLASS]:
        devices.set_class(body)
    for i in range(rng.randint(4, 12)):
        shape = rng.choice(shapes)
        name = f"n{i}"
        cpus = rng.choice((8, 16, 24, 48))
        if rng.random() < 0.9:  # the others have NRT data only (`ClusterCache.node_infos` leaves them out)
            cache.upsert_node(_node(name, cpus * shape.zones, rng.choice(("", "", "", "", "2", "0"))))
        if rng.random() < 0.8 or name not in cache.nodes:  # no NRT: the memo sees only their devices in use change
            cache.upsert_nrt(_nrt(name, shape.zones, cpus, rng.choice(POLICIES)))
        for body in resource_slices(name, shape):
            devices.set_slice(body)
    cache.overlay = devices.with_zone_devices
    profile = build_profiles(config or default_config(), devices=devices)[SCHEDULER]
    fast = FastPath(cache)
    plugin = next(p for p in profile.filters if isinstance(p, DynamicResources))
    numa = next(p for p in profile.filters if isinstance(p, NodeResourceTopologyMatch))
    specs = [_claim_spec(rng) for _ in range(3)]
    placed: list[tuple[Pod, list[dict[str, Any]]]] = []
    decisions: list[tuple[Any, ...]] = []
    for index in range(80):
        if placed and rng.random() < 0.15:  # a pod goes away: its claims are deleted
            pod, claims = placed.pop(rng.randrange(len(placed)))
            cache.remove_pod(pod.key)
            for claim in claims:
                devices.delete_claim(claim)
            devices.delete_pod({"metadata": {"namespace": pod.namespace, "name": pod.name}})
        pod, claims = _pod(index, rng, specs)
        for claim in claims:
            devices.set_claim(claim)
        changed = devices.zone_devices_changed()
        for name in list(cache.nodes) if changed is None else changed:
            cache.invalidate(name)
        outcome = decide(profile, pod, cache.node_infos()) if exact else fast.decide(profile, pod)
        if outcome.node is None:
            decisions.append((pod.name, None, outcome.message))
            continue
        assumed = pod
        chosen = {}
        if plugin.applies_to(pod):
            info = cache.node_info(outcome.node)
            assert info is not None
            result, found = plugin.allocations(pod, info)
            assert result.allocatable
            chosen = {c.claim: c.allocation for c in result.results}
            devices.reserve(pod, chosen)
            numa.demand.observe(
                pod, claimed_devices(chosen.values()), found.extended.resources if found.extended else ()
            )
            in_flight = {c.key: chosen.get(c.key) for c in found.claims}
            numa_of = plugin.device_numa(pod, outcome.node, in_flight, found.extended)
            assumed = dataclasses.replace(pod, dra_devices=numa_of)
        cache.assume(assumed, outcome.node)
        decisions.append(
            (pod.name, outcome.node, {k: a.to_dict() for k, a in chosen.items()}, dict(assumed.dra_devices))
        )
        if claims and rng.random() < 0.1:  # Reserve undone (binding failed): the devices are free again
            devices.unreserve(pod)
            cache.forget(pod.key)
            for claim in claims:
                devices.delete_claim(claim)
            continue
        for claim in claims:  # PreBind wrote the allocation; the informer brings it back
            key = f"default/{claim['metadata']['name']}"
            if key in chosen:
                devices.set_claim({**claim, "status": {"allocation": chosen[key].to_dict()}})
        placed.append((pod, claims))
    if devices.memo is None:
        return decisions, 0, 0
    return decisions, devices.memo.hits, devices.memo.similar_hits


@pytest.mark.parametrize("seed", range(8))
def test_memo_changes_no_decision(seed: int) -> None:
    with_memo, hits, similar = _run(seed, memo=True)
    without, _, _ = _run(seed, memo=False)
    assert hits > 0 and similar > 0  # the memo was used, not bypassed, and so were outcomes of similar nodes
    assert any(d[1] is not None for d in with_memo)
    assert with_memo == without


@pytest.mark.parametrize("seed", range(8))
def test_the_fast_path_decides_claim_pods_as_the_exact_path(seed: int) -> None:
    fast, _, _ = _run(seed, memo=True)
    exact, _, _ = _run(seed, memo=True, exact=True)
    assert sum(1 for d in fast if d[1] is not None and d[2]) > 10  # pods with claims were placed
    served = [d for d in fast if d[1] is not None and any("<extended-resources of" in key for key in d[2])]
    assert served  # pods whose extended resources DRA served were placed
    assert fast == exact


def _fit_scores_devices() -> SchedulerConfiguration:
    """NodeResourcesFit scoring the extended resources DRA serves (MostAllocated over cpu, `example.com/nic` and the
    GPU class's implicit name), beside NodeResourceTopologyMatch."""
    resources = [{"name": "cpu", "weight": 1}, {"name": EXTENDED_NIC, "weight": 3}, {"name": IMPLICIT_GPU, "weight": 2}]
    return read_configuration(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": SCHEDULER,
                    "plugins": {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}},
                    "pluginConfig": [
                        {
                            "name": "NodeResourcesFit",
                            "args": {"scoringStrategy": {"type": "MostAllocated", "resources": resources}},
                        }
                    ],
                }
            ],
        }
    )


@pytest.mark.parametrize("seed", range(4))
def test_the_fast_path_agrees_when_node_resources_fit_scores_devices_dra_serves(seed: int) -> None:
    """A scoring strategy that names `example.com/nic` counts the class's NICs on nodes without it
    (`calculateDRAExtendedResourceAllocatableRequest`): the fast path's NodeResourcesFit reads the same devices,
    and its cached rows follow their allocation (the DRA zone overlay reloads the rows whose devices changed)."""
    config = _fit_scores_devices()
    fast, _, _ = _run(seed, memo=True, config=config)
    exact, _, _ = _run(seed, memo=True, exact=True, config=config)
    assert any(d[1] is not None and any("<extended-resources of" in key for key in d[2]) for d in fast)
    assert fast == exact
