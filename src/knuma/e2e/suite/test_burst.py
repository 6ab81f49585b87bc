"""A burst of Guaranteed pods created faster than the exporters publish (every NRT is stale for the burst): the
scheduler must account its own placements (reserve), so the kubelet rejects none (`TopologyAffinityError`), the
zones fill up, and the pods that do not fit stay Pending (upstream's `scheduler_cache` Tier0 test)."""

from __future__ import annotations

from knuma.api.types import JsonObj
from knuma.e2e.cluster import E2ECluster, eventually, guaranteed_pod
from knuma.e2e.suite.conftest import Stack

MAX_PODS = 40


def test_a_burst_against_stale_nrt_gets_no_topology_affinity_errors(
    cluster: E2ECluster, stack: Stack, namespace: str
) -> None:
    zones = [z for z in cluster.zones(stack.nodes) if z.allocatable_cpus >= 2]
    assert zones, "no NUMA zone with 2 CPUs or more"
    unit = max(1, min(z.allocatable_cpus for z in zones) // 2)
    fits = sum(z.available_cpus // unit for z in zones)
    count = min(fits + 2, MAX_PODS)
    labels = {"e2e.knuma.io/run": cluster.run_id, "e2e.knuma.io/burst": "1"}
    for i in range(count):
        cluster.create_pod(namespace, guaranteed_pod(f"burst-{i:02d}", unit, stack.scheduler_name, **labels))

    def settled() -> list[JsonObj] | None:
        pods = cluster.pods(namespace, "e2e.knuma.io/burst=1")
        for pod in pods:
            phase = pod["status"].get("phase")
            if phase == "Pending" and pod["spec"].get("nodeName"):
                return None  # bound, not yet started
            if phase == "Pending" and not cluster.failed_scheduling(namespace, pod["metadata"]["name"]):
                return None  # not yet tried
        return pods

    pods = eventually(settled, "every pod of the burst to run or to be reported unschedulable", timeout=180)
    rejected = [
        (p["metadata"]["name"], p["status"].get("reason")) for p in pods if p["status"].get("phase") == "Failed"
    ]
    assert rejected == [], "the kubelet rejected pods the scheduler placed on stale NRT data"
    running = sum(1 for p in pods if p["status"].get("phase") == "Running")
    # every zone's free units are used, up to what the nodes' other (shared-pool) requests leave
    assert min(count, fits) - len(stack.nodes) <= running <= min(count, fits), (running, fits, count)
