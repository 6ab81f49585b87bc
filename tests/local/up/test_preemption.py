"""End-to-end: NUMA-aware preemption on `knuma up` (simulated kubelets that admit or reject with the Topology
Manager's rules, exporters publishing NRT): the evicted pod frees exactly the zone the preemptor needs, and the
kubelet admits the preemptor there."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from knuma.testing.polling import eventually
from tests.local.up.test_up import Up

pytestmark = pytest.mark.slow


def _pod(name: str, cpus: int, priority_class: str) -> dict[str, Any]:
    limits = {"cpu": str(cpus), "memory": "2Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": "topology-aware-scheduler",
            "priorityClassName": priority_class,
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": limits}}],
        },
    }


def _class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def _running(up: Up, name: str) -> bool:
    status = up.get("pod", name).get("status") or {}
    return status.get("phase") == "Running" and bool(status.get("startTime"))


def _preempt(
    up: Up, batch: list[dict[str, Any]], preemptor: dict[str, Any], *, shutdown: str = ""
) -> tuple[dict[str, Any], list[str]]:
    """Run the batch pods (with the two priority classes), then the preemptor; wait for it to run and check that
    exactly one batch pod was preempted. The pods by name, and the batch pods left.

    With `shutdown`, the batch pods' containers take that long to stop (`sim.knuma.io/shutdown`): the victim stays
    Terminating, marked `DisruptionTarget` by the scheduler and still holding its CPUs, while the preemptor waits
    nominated to the node and does not run."""
    for pod in batch:
        if shutdown:
            pod["metadata"]["annotations"] = {"sim.knuma.io/shutdown": shutdown}
    up.kubectl(
        "apply", "-f", "-", stdin=yaml.safe_dump_all([_class("batch", 1000), _class("critical", 1000000), *batch])
    )
    eventually(lambda: all(_running(up, p["metadata"]["name"]) for p in batch), timeout=90)
    up.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(preemptor))
    name = preemptor["metadata"]["name"]
    if shutdown:

        def waiting_for_a_terminating_victim() -> bool:
            pods = {p["metadata"]["name"]: p for p in up.get("pods")["items"]}
            victims = [p for n, p in pods.items() if n.startswith("batch") and p["metadata"].get("deletionTimestamp")]
            waiting = pods[name]
            if not victims or waiting["spec"].get("nodeName") or not waiting["status"].get("nominatedNodeName"):
                return False
            conditions = victims[0]["status"].get("conditions") or []
            assert any(c["type"] == "DisruptionTarget" and c["reason"] == "PreemptionByScheduler" for c in conditions)
            return True

        eventually(waiting_for_a_terminating_victim, timeout=60)
        time.sleep(3)  # the victim's containers take `shutdown` to stop: it still holds its CPUs
        assert waiting_for_a_terminating_victim()
    eventually(lambda: _running(up, name), timeout=120)
    pods = {p["metadata"]["name"]: p for p in up.get("pods")["items"]}
    survivors = sorted(name for name in pods if name.startswith("batch"))
    assert len(survivors) == 1, survivors
    preempted = [e for e in up.get("events")["items"] if e["reason"] == "Preempted"]
    assert len(preempted) == 1 and preempted[0]["involvedObject"]["name"] not in survivors
    assert preempted[0]["message"].endswith("on node " + pods[preemptor["metadata"]["name"]]["spec"]["nodeName"])
    return pods, survivors


def test_a_pod_only_numa_alignment_blocks_preempts_one_pod_and_the_kubelet_admits_it(
    start: Callable[..., Up],
) -> None:
    """One `small` node (two 8-CPU zones) running two 5-CPU batch pods, one per zone: 6 CPUs free on the node, 3 per
    zone. A 6-CPU pod of higher priority fits the node but no zone: one batch pod is evicted, the preemptor waits
    while its containers take 8 s to stop, then runs on its zone; the other batch pod keeps running."""
    up = start("--nodes", "1", "--shape", "small")
    eventually(lambda: len(up.get("noderesourcetopologies")["items"]) == 1, timeout=60)
    batch = [_pod("batch-a", 5, "batch"), _pod("batch-b", 5, "batch")]
    pods, _ = _preempt(up, batch, _pod("critical", 6, "critical"), shutdown="8s")
    assert not [p for p in pods.values() if (p.get("status") or {}).get("reason") == "TopologyAffinityError"]
    assert up.stop() == 0


def _gpu_pod(name: str, cpus: int, priority_class: str) -> dict[str, Any]:
    pod = _pod(name, cpus, priority_class)
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpus"}]
    pod["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "four-gpus"}]
    return pod


def test_a_gpu_pod_preempts_the_pod_holding_one_numa_nodes_gpus_and_runs_on_them(
    start: Callable[..., Up],
) -> None:
    """One DGX-like node (4 GPUs per NUMA node): two batch pods hold 4 GPUs each. A higher-priority pod asking for 4
    GPUs fits no node until a batch pod goes: the dry run counts the victim's GPUs as free (its claim is reserved
    for it alone), one batch pod is evicted, the resourceclaim controller deletes its claim, and the preemptor gets
    those GPUs, with CPUs on their NUMA node."""
    up = start("--nodes", "1", "--shape", "dgx")
    eventually(lambda: len(up.get("resourceslices")["items"]) == 2, timeout=60)
    eventually(lambda: len(up.get("noderesourcetopologies")["items"]) == 1, timeout=60)
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "four-gpus", "namespace": "default"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.sim.knuma.io", "count": 4}}]
                }
            }
        },
    }
    up.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(template))
    batch = [_gpu_pod("batch-a", 8, "batch"), _gpu_pod("batch-b", 8, "batch")]
    pods, survivors = _preempt(up, batch, _gpu_pod("train", 16, "critical"))
    numa = json.loads(pods["train"]["metadata"]["annotations"]["sim.knuma.io/numa"])
    assert len({zone for zones in numa.values() for zone in zones}) == 1  # its CPUs and GPUs on one NUMA node

    def claims() -> set[str]:
        return {c["metadata"]["name"].split("-gpus-")[0] for c in up.get("resourceclaims")["items"]}

    eventually(lambda: claims() == {"train", *survivors}, timeout=60)  # the victim's claim deleted with it
    assert up.stop() == 0
