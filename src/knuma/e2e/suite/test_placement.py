"""Guaranteed pods that must fit a NUMA zone run on one and are accounted in NRT; pods no zone can hold stay
Pending with a reason instead of being rejected by the kubelet (upstream's `workload_placement` and `[unsched]`)."""

from __future__ import annotations

import time

import pytest

from knuma.api.nrt import Policy
from knuma.e2e.cluster import E2ECluster, eventually, guaranteed_pod
from knuma.e2e.suite.conftest import Stack


def test_a_guaranteed_pod_that_fits_a_zone_runs_and_is_accounted(
    cluster: E2ECluster, stack: Stack, namespace: str
) -> None:
    zone = max(cluster.zones(stack.nodes), key=lambda z: z.available_cpus)
    assert zone.available_cpus >= 1, "no free CPU in any NUMA zone"
    cpus = max(1, zone.available_cpus // 2)
    before = {node: cluster.available_cpus(node) for node in stack.nodes}
    pod = guaranteed_pod("fits", cpus, stack.scheduler_name, **{"e2e.knuma.io/run": cluster.run_id})
    cluster.create_pod(namespace, pod)
    running = eventually(
        lambda: (p := cluster.pod(namespace, "fits"))["status"].get("phase") == "Running" and p, "pod fits to run"
    )
    node = running["spec"]["nodeName"]
    assert node in stack.nodes
    # the exporter publishes the exclusive CPUs: the node's NRT drops by exactly the request
    eventually(lambda: cluster.available_cpus(node) == before[node] - cpus, f"NRT of {node} to account {cpus} CPUs")
    cluster.delete_pod(namespace, "fits")
    eventually(lambda: cluster.available_cpus(node) == before[node], f"NRT of {node} to give the CPUs back")


def test_a_guaranteed_pod_no_zone_can_hold_stays_pending(cluster: E2ECluster, stack: Stack, namespace: str) -> None:
    nrts = cluster.nrts()
    aligned = [n for n in stack.nodes if n in nrts and nrts[n].topology_manager.policy is Policy.SINGLE_NUMA_NODE]
    if not aligned:
        pytest.skip("no node runs the single-numa-node Topology Manager policy: every pod that fits a node fits")
    zones = cluster.zones(aligned)
    cpus = max(z.allocatable_cpus for z in zones) + 1
    if not any(cluster.available_cpus(n) >= cpus for n in aligned):
        pytest.skip(f"no node has {cpus} free CPUs in total: a pod bigger than a zone would not fit the node either")
    cluster.create_pod(
        namespace, guaranteed_pod("too-big", cpus, stack.scheduler_name, **{"e2e.knuma.io/run": cluster.run_id})
    )
    messages = eventually(lambda: cluster.failed_scheduling(namespace, "too-big"), "a FailedScheduling event")
    assert any("nodes are available" in m for m in messages), messages
    time.sleep(5)  # and it stays so: not bound, not rejected
    pod = cluster.pod(namespace, "too-big")
    assert not pod["spec"].get("nodeName") and pod["status"].get("phase") == "Pending", pod["status"]
