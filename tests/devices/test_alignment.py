"""NUMA alignment: devices chosen together with the NUMA nodes the kubelet gives the pod's CPUs and memory, under the
node's Topology Manager policy, and the locality ladder."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from knuma.api.dra.deviceclass import DeviceClass
from knuma.api.dra.resourceslice import ResourceSlice
from knuma.api.nrt import NodeResourceTopology, Policy, Scope, TopologyManagerConfig
from knuma.api.pod import Pod
from knuma.devices.alignment import plan_alignment
from knuma.devices.allocator import Inventory, NodeView, allocate
from knuma.devices.numa import Locality, placement_of, sockets_from_distances
from knuma.testbed.devices import GPU_DRIVER, NIC_DRIVER, dgx_classes, dgx_node
from knuma.topology.node import NodeTopology
from tests.devices.builders import claim, dev, req, slice_

CLASSES = {c.name: c for c in (DeviceClass.from_dict(d) for d in dgx_classes())}
ROOT = "resource.kubernetes.io/pcieRoot"


def node(policy: str = "single-numa-node", busy_cpu_numa: tuple[int, ...] = ()) -> tuple[NodeView, list[ResourceSlice]]:
    objects = dgx_node("dgx-0", policy=policy)
    nrt = objects[1]
    for zone in nrt["zones"]:
        if int(zone["name"].split("-")[1]) in busy_cpu_numa:
            zone["resources"][0]["available"] = "0"
    topology = NodeTopology.from_nrt(NodeResourceTopology.from_dict(nrt))
    slices = [ResourceSlice.from_dict(o) for o in objects[2:]]
    return NodeView("dgx-0", {}, topology), slices


def pod(cpus: int = 0, extra: dict[str, str] | None = None) -> Pod:
    resources: dict[str, Any] = {}
    if cpus:
        limits = {"cpu": str(cpus), "memory": "8Gi", **(extra or {})}
        resources = {"requests": limits, "limits": limits}
    return Pod.from_manifest(
        {
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": resources}]},
        }
    )


def gpus_and_nic(gpus: int = 1, nics: int = 1, constraint: str | None = None) -> Any:
    constraints = [{"matchAttribute": constraint}] if constraint else None
    requests = [req("gpu", GPU_DRIVER, gpus)] + ([req("nic", NIC_DRIVER, nics)] if nics else [])
    return claim("train", *requests, constraints=constraints)


def devices(outcome: Any) -> list[str]:
    return [d.device for a in outcome.results for d in a.allocation.results]


def numa_of(name: str) -> int:
    return int(name.split("-")[1]) // 2


def test_gpu_and_nic_land_on_one_pcie_root_without_being_asked() -> None:
    view, slices = node(policy="none")
    in_use = frozenset({(GPU_DRIVER, "dgx-0", "gpu-0")})
    outcome = allocate(view, [gpus_and_nic()], Inventory(slices, CLASSES, in_use))
    assert outcome.allocatable and outcome.locality is Locality.PCIE_ROOT and outcome.score == 100
    assert devices(outcome) == ["gpu-1", "nic-1"]  # gpu-0 is taken, so nic-0 would sit on another root


def test_single_numa_node_follows_the_cpus() -> None:
    # NUMA 0 has no free GPU, NUMA 1 no free CPUs: the kubelet can only align CPUs, memory and devices on NUMA 2.
    view, slices = node(busy_cpu_numa=(1,))
    in_use = frozenset((GPU_DRIVER, "dgx-0", f"gpu-{i}") for i in (0, 1))
    outcome = allocate(view, [gpus_and_nic()], Inventory(slices, CLASSES, in_use), pod=pod(cpus=16))
    assert outcome.allocatable, outcome.reason
    assert outcome.affinity == (2,)
    assert {numa_of(d) for d in devices(outcome)} == {2}
    assert outcome.locality is Locality.PCIE_ROOT


def test_single_numa_node_rejects_what_cannot_be_aligned_and_best_effort_takes_the_socket() -> None:
    view, slices = node()
    claims = [gpus_and_nic(gpus=4, nics=0)]
    outcome = allocate(view, claims, Inventory(slices, CLASSES), pod=pod(cpus=4))
    assert not outcome.allocatable and outcome.stage == "NUMA alignment"
    assert "single-numa-node" in outcome.reason and "cpu=4" in outcome.reason
    relaxed, slices = node(policy="best-effort")
    outcome = allocate(relaxed, claims, Inventory(slices, CLASSES), pod=pod(cpus=4))
    assert outcome.allocatable and outcome.locality is Locality.SOCKET
    assert len({numa_of(d) // 2 for d in devices(outcome)}) == 1


def test_restricted_takes_the_narrowest_mask_that_fits() -> None:
    view, slices = node(policy="restricted")
    outcome = allocate(view, [gpus_and_nic(gpus=4, nics=0)], Inventory(slices, CLASSES))
    assert outcome.allocatable and outcome.affinity == (0, 1)


def test_cpus_that_fit_nowhere_name_the_stage() -> None:
    view, slices = node()
    outcome = allocate(view, [gpus_and_nic()], Inventory(slices, CLASSES), pod=pod(cpus=40))
    assert not outcome.allocatable and outcome.stage == "NUMA alignment"
    assert "cpu=40" in outcome.reason


def test_match_attribute_on_pcie_root_across_requests() -> None:
    view, slices = node(policy="none")
    in_use = frozenset((NIC_DRIVER, "dgx-0", f"nic-{i}") for i in range(7))
    outcome = allocate(view, [gpus_and_nic(constraint=ROOT)], Inventory(slices, CLASSES, in_use))
    assert outcome.allocatable and devices(outcome) == ["gpu-7", "nic-7"]
    in_use |= {(GPU_DRIVER, "dgx-0", "gpu-7")}
    outcome = allocate(view, [gpus_and_nic(constraint=ROOT)], Inventory(slices, CLASSES, in_use))
    assert not outcome.allocatable and outcome.stage == "constraint"
    assert "resource.kubernetes.io/pcieRoot" in outcome.reason and not outcome.exhausted


def test_stage_counts_for_explanations() -> None:
    view, slices = node()
    in_use = frozenset((GPU_DRIVER, "dgx-0", f"gpu-{i}") for i in range(6))
    outcome = allocate(view, [gpus_and_nic(gpus=3, nics=0)], Inventory(slices, CLASSES, in_use), pod=pod(cpus=2))
    assert not outcome.allocatable
    assert dict(outcome.stages["default/train/gpu"]) == {
        "class": 8,
        "selector": 8,
        "in use": 2,
        "taint": 2,
        "constraint": 2,
        "NUMA alignment": 2,
    }


def test_device_numa_from_list_and_vendor_aliases() -> None:
    s = slice_(
        "s",
        "n",
        "p",
        "d.example.com",
        dev("a", attributes={"resource.kubernetes.io/numaNode": {"ints": [1, 0]}}),
        dev("b", attributes={"dra.net/numaNode": {"int": 3}, "pcieRoot": {"string": "pci0000:3a"}}),
        dev("c", attributes={"numa": {"string": "2"}}),
        dev("d"),
    )
    placements = [placement_of(d, s.driver) for d in s.devices]
    assert [p.numa for p in placements] == [1, 3, 2, None]
    assert placements[1].pcie_root == "pci0000:3a"
    assert sockets_from_distances({0: {0: 10, 1: 12, 2: 32}, 1: {0: 12, 1: 10, 2: 32}, 2: {0: 32, 1: 32, 2: 10}}) == {
        0: 0,
        1: 0,
        2: 2,
    }


def test_device_plugin_resources_in_the_pod_steer_the_mask() -> None:
    objects = dgx_node("dgx-0")
    nrt = objects[1]
    for zone in nrt["zones"]:
        amount = "1" if zone["name"] == "node-3" else "0"
        zone["resources"].append({"name": "example.com/fpga", "capacity": "1", "allocatable": "1", "available": amount})
    view = NodeView("dgx-0", {}, NodeTopology.from_nrt(NodeResourceTopology.from_dict(nrt)))
    slices = [ResourceSlice.from_dict(o) for o in objects[2:]]
    outcome = allocate(
        view, [gpus_and_nic()], Inventory(slices, CLASSES), pod=pod(cpus=2, extra={"example.com/fpga": "1"})
    )
    assert outcome.allocatable and outcome.affinity == (3,)
    assert {numa_of(d) for d in devices(outcome)} == {3}


@pytest.mark.timeout(120)  # 65,535 masks times 65,535 hints was a scan of 4 billion
def test_the_plan_for_a_sixteen_numa_node_is_computed_and_beyond_sixteen_it_is_refused() -> None:
    """The candidate masks of a restricted 16-NUMA node (8 CPUs a zone, 12 CPUs: every pair of zones is preferred)
    come out narrowest first; a node with more NUMA nodes than knuma models offers no mask at all, as the NUMA
    filter refuses it."""
    pod = Pod.from_manifest(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "containers": [{"name": "a", "image": "x", "resources": {"limits": {"cpu": "12", "memory": "1Gi"}}}]
            },
        }
    )

    def wide(zones: int) -> NodeTopology:
        built = NodeTopology.build(
            "w",
            {i: {"cpu": 8000} for i in range(zones)},  # memory not NUMA-managed: CPU hints alone
            Policy.RESTRICTED,
        )
        return replace(built, config=TopologyManagerConfig(Policy.RESTRICTED, Scope.CONTAINER, 64))

    plan = plan_alignment(wide(16), pod)
    assert plan.required and plan.masks is not None
    assert plan.masks[:2] == (0b11, 0b101) and len(plan.masks) == 16 * 15 // 2
    beyond = plan_alignment(wide(17), pod)
    assert (beyond.masks, beyond.required) == ((), True)
    assert "more than the 16 NUMA nodes knuma models" in beyond.detail
