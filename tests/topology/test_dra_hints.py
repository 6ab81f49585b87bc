"""DRA devices in the Topology Manager (knuma's model): a container's allocated devices give the hints of
already-allocated device-plugin devices, merged with the CPU and memory hints under the node's policy."""

from __future__ import annotations

from typing import Any

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import Pod
from knuma.topology import NodeTopology, admit
from knuma.topology.hints import Hint
from knuma.topology.kubelet import TOPOLOGY_AFFINITY_ERROR, dra_device_hints

SNN, RESTRICTED, BEST_EFFORT = Policy.SINGLE_NUMA_NODE, Policy.RESTRICTED, Policy.BEST_EFFORT
ZONES = {0: {"cpu": 8000, "memory": 32 * 1024**3}, 1: {"cpu": 8000, "memory": 32 * 1024**3}}


def node(policy: Policy, scope: Scope = Scope.CONTAINER, free0: int = 8000) -> NodeTopology:
    available = {0: {**ZONES[0], "cpu": free0}, 1: dict(ZONES[1])}
    return NodeTopology.build("worker", ZONES, policy, scope, available=available)


def pod(cpu: str = "4", memory: str = "1Gi") -> Pod:
    limits = {"cpu": cpu, "memory": memory}
    return Pod.from_manifest(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "main", "image": "x", "resources": {"limits": limits}}]},
        }
    )


def devices(*numa: int | None) -> dict[str, Any]:
    return {"main": {f"gpu.sim.knuma.io/node/gpu-{i}": n for i, n in enumerate(numa)}}


def test_hints_are_the_masks_holding_every_device_and_only_the_exact_one_is_preferred() -> None:
    assert dra_device_hints({"a": 1}, [0, 1]) == [Hint(0b10, True), Hint(0b11, False)]
    assert dra_device_hints({"a": 0, "b": 1}, [0, 1]) == [Hint(0b11, True)]
    assert dra_device_hints({"a": None}, [0, 1]) is None


def test_devices_on_one_node_pull_the_cpus_there() -> None:
    admission = admit(pod(), node(SNN), devices(1, 1))
    assert admission.admitted
    assert admission.placements[0].affinity == (1,)
    assert admission.placements[0].allocated["cpu"] == {1: 4000}


def test_devices_across_nodes_are_a_topology_affinity_error_under_single_numa_node() -> None:
    rejected = admit(pod(), node(SNN), devices(0, 1))
    assert (rejected.admitted, rejected.reason) == (False, TOPOLOGY_AFFINITY_ERROR)
    # Restricted: 4 CPUs fit on one node, so the 2-node merge is not preferred; 12 CPUs and 40Gi need both anyway.
    assert not admit(pod(), node(RESTRICTED), devices(0, 1)).admitted
    assert admit(pod("12", "40Gi"), node(RESTRICTED), devices(0, 1)).admitted
    assert admit(pod(), node(BEST_EFFORT), devices(0, 1)).admitted


def test_devices_where_the_cpus_do_not_fit_are_rejected_under_restricted_and_single_numa_node() -> None:
    # NUMA 0 has 2 CPUs left; the devices are there; 4 exclusive CPUs only fit on NUMA 1.
    for policy in (SNN, RESTRICTED):
        rejected = admit(pod(), node(policy, free0=2000), devices(0))
        assert (rejected.admitted, rejected.reason) == (False, TOPOLOGY_AFFINITY_ERROR), policy
    best_effort = admit(pod(), node(BEST_EFFORT, free0=2000), devices(0))
    assert best_effort.admitted and best_effort.placements[0].numa_ids != (0,)
    assert admit(pod(), node(SNN, free0=2000)).admitted  # without the devices the pod fits on NUMA 1


def test_pod_scope_merges_the_devices_of_every_container() -> None:
    assert admit(pod(), node(SNN, Scope.POD), devices(1)).placements[0].affinity == (1,)
    assert not admit(pod(), node(SNN, Scope.POD), devices(0, 1)).admitted


def test_devices_without_numa_affinity_do_not_constrain() -> None:
    assert admit(pod(), node(SNN, free0=2000), devices(None)).admitted
