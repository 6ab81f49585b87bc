"""End-to-end: the stack's DaemonSets on `knuma up`, as a user deploys them.

`knuma deploy --wait` and `knuma remove --wait` succeed (the DaemonSet controller runs one exporter pod per node and
reports status as kube-controller-manager does); a template change rolls out (`kubectl rollout status`); a NoExecute
taint evicts the daemon pod and its removal brings it back; `knuma remove` keeps the NRT CRD the nodes publish to
unless `--all`, and a re-created CRD gets its objects back at once; `knuma operator` reaches Available on its own,
without a test playing the controllers.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from knuma.testing.polling import eventually
from tests.local.up.test_up import Up

pytestmark = pytest.mark.slow

UPDATER_NS = "tas-topology-updater"
DS = "knuma-exporter"
NRO = """
apiVersion: nodetopology.openshift.io/v1
kind: NUMAResourcesOperator
metadata:
  name: numaresourcesoperator
spec:
  nodeGroups:
  - poolName: worker
"""
NRS = """
apiVersion: nodetopology.openshift.io/v1
kind: NUMAResourcesScheduler
metadata:
  name: numaresourcesscheduler
spec:
  schedulerName: topo-aware-scheduler
"""


def knuma(up: Up, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "knuma", *args, "--kubeconfig", str(up.kubeconfig)],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def daemon_pods(up: Up) -> dict[str, str]:
    """Running daemon pods: node -> controller-revision-hash."""
    pods = up.get("pods", "-n", UPDATER_NS)["items"]
    return {
        p["spec"]["nodeName"]: p["metadata"]["labels"]["controller-revision-hash"]
        for p in pods
        if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    }


def test_deploy_rollout_taints_and_remove_with_wait(start: Callable[..., Up]) -> None:
    up = start("--nodes", "2", "--shape", "small", "--exporters", "in-process")
    deployed = knuma(up, "deploy", "--wait", "-T", "90s")
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    assert f"DaemonSet {UPDATER_NS}/{DS}: 2/2 pods ready, 2/2 updated ✓" in deployed.stderr
    status = up.get("ds", "-n", UPDATER_NS, DS)["status"]
    assert status["desiredNumberScheduled"] == status["numberReady"] == status["numberAvailable"] == 2
    first = daemon_pods(up)
    assert sorted(first) == ["worker-000", "worker-001"]

    # a template change rolls out: every pod replaced by one of the new template
    up.kubectl("-n", UPDATER_NS, "set", "env", f"ds/{DS}", "KNUMA_TEST=1")
    up.kubectl("-n", UPDATER_NS, "rollout", "status", f"ds/{DS}", "--timeout=60s")
    second = eventually(lambda: (pods := daemon_pods(up)) and len(pods) == 2 and pods)
    assert set(second.values()) != set(first.values()) and len(set(second.values())) == 1
    assert up.get("ds", "-n", UPDATER_NS, DS)["status"]["updatedNumberScheduled"] == 2

    # each template is a ControllerRevision: kubectl lists them and rolls back to the first
    history = up.kubectl("-n", UPDATER_NS, "rollout", "history", f"ds/{DS}").split()
    assert history[history.index("CHANGE-CAUSE") + 1 :] == ["1", "<none>", "2", "<none>"]
    undone = up.kubectl("-n", UPDATER_NS, "rollout", "undo", f"ds/{DS}")
    assert undone.strip() == f"daemonset.apps/{DS} rolled back"
    up.kubectl("-n", UPDATER_NS, "rollout", "status", f"ds/{DS}", "--timeout=60s")
    eventually(lambda: set(daemon_pods(up).values()) == set(first.values()) and len(daemon_pods(up)) == 2)
    history = up.kubectl("-n", UPDATER_NS, "rollout", "history", f"ds/{DS}").split()
    assert history[history.index("CHANGE-CAUSE") + 1 :] == ["2", "<none>", "3", "<none>"]  # the first, renumbered

    # a NoExecute taint the pod does not tolerate evicts it; removing the taint brings it back
    up.kubectl("taint", "node", "worker-001", "dedicated=db:NoExecute")
    eventually(lambda: sorted(daemon_pods(up)) == ["worker-000"])
    assert up.get("ds", "-n", UPDATER_NS, DS)["status"]["desiredNumberScheduled"] == 1
    up.kubectl("taint", "node", "worker-001", "dedicated=db:NoExecute-")
    eventually(lambda: sorted(daemon_pods(up)) == ["worker-000", "worker-001"])

    # remove keeps the NRT CRD the nodes publish to, and says so; --all deletes it
    removed = knuma(up, "remove", "--wait", "-T", "90s")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert up.kubectl("get", "ds", "-A", "-o", "name").strip() == ""
    assert "CustomResourceDefinition noderesourcetopologies.topology.node.k8s.io kept" in removed.stdout
    assert "warning: kept CustomResourceDefinition" in removed.stderr and "--all" in removed.stderr
    assert len(up.get("noderesourcetopologies")["items"]) == 2
    all_removed = knuma(up, "remove", "api", "--all", "--wait", "-T", "90s")
    assert all_removed.returncode == 0, all_removed.stdout + all_removed.stderr
    assert "noderesourcetopologies" not in up.kubectl("api-resources", "-o", "name")

    # the CRD created again: the nodes publish their NRT objects again at once, not at their next resync
    assert knuma(up, "deploy", "api").returncode == 0
    eventually(lambda: len(up.get("noderesourcetopologies")["items"]) == 2, timeout=5)
    assert up.stop() == 0


def test_operator_becomes_available_on_knuma_up(start: Callable[..., Up], tmp_path: Path) -> None:
    up = start("--nodes", "2", "--shape", "small", "--exporters", "in-process")
    log = (tmp_path / "operator.log").open("w")
    operator = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "knuma",
            "operator",
            "--kubeconfig",
            str(up.kubeconfig),
            "--resync-period",
            "5s",
            "--metrics-port",
            "0",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        eventually(lambda: "numaresourcesoperators" in up.kubectl("api-resources", "-o", "name"), timeout=60)
        up.kubectl("apply", "-f", "-", stdin=NRO)
        up.kubectl("apply", "-f", "-", stdin=NRS)

        def available(kind: str, name: str) -> bool:
            conditions = (up.get(kind, name).get("status") or {}).get("conditions", [])
            return any(c["type"] == "Available" and c["status"] == "True" for c in conditions)

        eventually(lambda: available("numaresop", "numaresourcesoperator"), timeout=90)
        eventually(lambda: available("numaressched", "numaresourcesscheduler"), timeout=90)
        ds = up.get("ds", "-A")["items"]
        assert [d["status"]["numberReady"] for d in ds] == [2]
    finally:
        operator.terminate()
        operator.wait(30)
        log.close()
    assert up.stop() == 0
