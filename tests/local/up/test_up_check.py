"""End-to-end: `knuma check` on `knuma up`, bare (its exporters and scheduler run as processes) and with the stack
deployed as a user deploys it (`knuma deploy --wait`).

Healthy first (every node's NRT present, fresh and equal to the kubelet's configz, an exporter pod on each node, the
scheduler Ready with NodeResourceTopologyMatch); then a pod no NUMA zone can hold stays Pending with the scheduler's
reason, and the same pod given to the topology-unaware profile is rejected by the kubelet with TopologyAffinityError,
which `knuma check` attributes to `default-scheduler`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from knuma.testing.polling import eventually
from tests.local.up.test_daemonsets import knuma
from tests.local.up.test_up import Up, guaranteed_pod

pytestmark = pytest.mark.slow


def test_check_healthy_then_pending_and_rejected_pods(start: Callable[..., Up]) -> None:
    up = start("--nodes", "2", "--shape", "small", "--exporters", "in-process")
    # before the stack is deployed, knuma up's own processes are what runs (the nodes' process publishes the NRT)
    bare = eventually(lambda: (r := knuma(up, "check", "-o", "wide")).returncode == 0 and r, timeout=60)
    rows = [line.split() for line in bare.stdout.splitlines()[1:3]]
    assert [row[4:] for row in rows] == [["process", rows[0][5], "of", "knuma", "up"]] * 2
    assert "scheduler topology-aware-scheduler: process " in bare.stdout
    # a silent node publishes nothing: its exporter is reported paused, with the command that brings it back
    up.kubectl("annotate", "node", "worker-001", "sim.knuma.io/heartbeat=stopped")
    silent = eventually(
        lambda: (r := knuma(up, "check", "-o", "json")).returncode == 1 and json.loads(r.stdout), timeout=30
    )
    assert [(e["node"], e["component"], e["detected"].split()[0]) for e in silent["errors"]] == [
        ("worker-001", "process", "paused")
    ]
    up.kubectl("annotate", "node", "worker-001", "sim.knuma.io/heartbeat-")
    eventually(lambda: knuma(up, "check").returncode == 0, timeout=30)
    deployed = knuma(up, "deploy", "--wait", "-T", "90s")
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr

    healthy = eventually(lambda: (r := knuma(up, "check", "-o", "wide")).returncode == 0 and r, timeout=60)
    lines = healthy.stdout.splitlines()
    assert lines[0].split() == ["NODE", "NRT", "FRESH", "TOPOLOGY", "MANAGER", "EXPORTER"]
    for row in lines[1:3]:
        node, nrt, fresh, tm, exporter = row.split()
        assert node.startswith("worker-") and (nrt, fresh) == ("present", "yes")
        assert tm == "single-numa-node/container" and exporter.startswith("tas-topology-updater/knuma-exporter-")
    assert (
        "scheduler topology-aware-scheduler: Deployment tas-scheduler/topology-aware-scheduler, 1/1 ready, "
        "NodeResourceTopologyMatch enabled" in healthy.stdout
    )
    assert lines[-1] == "PASSED>>: the cluster configuration looks ok!"

    # small: 2 zones x 8 CPUs, single-numa-node: 10 CPUs fit the node but no zone
    up.kubectl("apply", "-f", "-", stdin=guaranteed_pod("numa-big", 10, scheduler="topology-aware-scheduler"))
    up.kubectl("apply", "-f", "-", stdin=guaranteed_pod("plain-big", 10, scheduler="default-scheduler"))

    def reported() -> Any:
        result = knuma(up, "check", "-o", "json", "--stale-grace", "1s")
        report = json.loads(result.stdout)
        if (
            result.returncode != 1
            or not report["rejected"]
            or not report["pending"]
            or not report["pending"][0]["message"]
        ):
            return None
        return report

    report = eventually(reported, timeout=60)
    assert report["success"] is False
    assert report["pendingReasons"] == {"cannot align container": 2}
    assert [p["pod"] for p in report["pending"]] == ["default/numa-big"]
    [rejected] = report["rejected"]
    assert (rejected["pod"], rejected["reason"], rejected["scheduler"]) == (
        "default/plain-big",
        "TopologyAffinityError",
        "default-scheduler",
    )
    settings = {(e["component"], e["setting"]) for e in report["errors"]}
    assert settings == {("pod", "default/numa-big"), ("admission", "default/plain-big")}

    text = knuma(up, "check", "-o", "wide", "--stale-grace", "1s")  # whole lines (pytest sets COLUMNS=80)
    assert text.returncode == 1
    errors = [line for line in text.stdout.splitlines() if line.startswith("ERROR#")]
    assert errors == [
        'ERROR#000: Incorrect configuration of cluster: component "pod" setting "default/numa-big": expected '
        '"Scheduled" detected "Pending: 0/2 nodes are available: 2 cannot align container. preemption: 0/2 nodes '
        'are available: 2 No preemption victims found for incoming pod."',
        f'ERROR#001: Incorrect configuration of node "{rejected["node"]}" area "kubelet" component "admission" '
        'setting "default/plain-big": expected "admitted" detected '
        '"TopologyAffinityError, placed by default-scheduler"',
    ]
    assert text.stdout.count("  fix: ") == 2
