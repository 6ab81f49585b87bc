"""End-to-end: a node whose kubelet goes silent on `knuma up`, as kube-controller-manager handles it.

The node is annotated `sim.knuma.io/heartbeat=stopped` (its simulated kubelet is cut off: no Lease renewal, no
status, no pod writes); after `--node-monitor-grace-period` the node lifecycle controller marks it NotReady
(conditions Unknown, "Kubelet stopped posting node status.") and taints it `node.kubernetes.io/unreachable`
(NoSchedule and NoExecute); the taint eviction controller deletes its pods once their toleration runs out
(DisruptionTarget condition, TaintManagerEviction event); they stay Terminating, since no kubelet confirms, while the
Deployment's replacements run on the healthy node (the NoSchedule taint keeps them off); a pod tolerating the taint
without `tolerationSeconds` stays. The `node.kubernetes.io/out-of-service` taint (non-graceful node shutdown) lets
PodGC force-delete the Terminating pods; when the annotation goes, the node is Ready again and untainted.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from knuma.testing.polling import eventually
from tests.local.up.test_daemonsets import knuma
from tests.local.up.test_up import Up

pytestmark = pytest.mark.slow

UNREACHABLE = "node.kubernetes.io/unreachable"
TWO_SMALL_NODES = (
    *("--nodes", "2", "--shape", "small", "--exporters", "in-process"),
    *("--lease-renew-interval", "2", "--node-monitor-grace-period", "10s"),
)
"""Two nodes whose kubelets renew their Lease every 2 s, silent ones NotReady 10 s after their last renewal."""


def deployment(name: str, replicas: int, toleration_seconds: int | None, node: str | None = None) -> str:
    """`toleration_seconds` None: a pod that tolerates every taint for ever (as daemon pods of the node's agents);
    `node`: pinned there by a node selector."""
    toleration: dict[str, Any] = {"operator": "Exists"}
    if toleration_seconds is not None:
        toleration = {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}
        toleration["tolerationSeconds"] = toleration_seconds
    return yaml.safe_dump(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "schedulerName": "topology-aware-scheduler",
                        "tolerations": [toleration],
                        **({"nodeSelector": {"kubernetes.io/hostname": node}} if node else {}),
                        "containers": [
                            {
                                "name": "app",
                                "image": "registry.k8s.io/pause:3.10",
                                "resources": {"limits": {"cpu": "2", "memory": "1Gi"}},
                            }
                        ],
                    },
                },
            },
        }
    )


def pods(up: Up, app: str) -> list[dict[str, Any]]:
    return list(up.get("pods", "-l", f"app={app}")["items"])


def ready_condition(node: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in node["status"]["conditions"] if c["type"] == "Ready")


def test_a_silent_node_is_tainted_and_its_pods_are_replaced_on_the_healthy_node(start: Callable[..., Up]) -> None:
    up = start(*TWO_SMALL_NODES)
    up.kubectl("apply", "-f", "-", stdin=deployment("web", 2, toleration_seconds=2))
    eventually(lambda: up.get("deployment", "web")["status"].get("readyReplicas") == 2, timeout=90)
    silent = pods(up, "web")[0]["spec"]["nodeName"]
    up.kubectl("apply", "-f", "-", stdin=deployment("keeper", 1, toleration_seconds=None, node=silent))
    eventually(lambda: up.get("deployment", "keeper")["status"].get("readyReplicas") == 1, timeout=90)
    healthy = next(n for n in ("worker-000", "worker-001") if n != silent)
    on_silent = {p["metadata"]["name"] for p in pods(up, "web") if p["spec"]["nodeName"] == silent}
    # healthy nodes stay Ready well past the grace period (renewals every 2 s, grace 10 s)
    assert all(ready_condition(n)["status"] == "True" for n in up.get("nodes")["items"])

    up.kubectl("annotate", "node", silent, "sim.knuma.io/heartbeat=stopped")
    node = eventually(
        lambda: (n := up.get("node", silent)) and ready_condition(n)["status"] == "Unknown" and n, timeout=60
    )
    assert ready_condition(node)["reason"] == "NodeStatusUnknown"
    assert ready_condition(node)["message"] == "Kubelet stopped posting node status."
    tainted = eventually(lambda: (t := up.get("node", silent)["spec"].get("taints") or []) and len(t) >= 2 and t)
    assert {(t["key"], t["effect"]) for t in tainted} >= {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}
    assert "NotReady" in up.kubectl("get", "node", silent)
    assert ready_condition(up.get("node", healthy))["status"] == "True"

    # the web pods on the silent node are evicted after their 2 s and stay Terminating (no kubelet confirms); the
    # replacements run on the healthy node
    def replaced() -> bool:
        current = pods(up, "web")
        terminating = {p["metadata"]["name"] for p in current if p["metadata"].get("deletionTimestamp")}
        live = [p for p in current if not p["metadata"].get("deletionTimestamp")]
        ready = [p for p in live if p["status"].get("phase") == "Running" and p["spec"]["nodeName"] == healthy]
        return terminating == on_silent and len(ready) == 2

    eventually(replaced, timeout=90)
    stuck = [p for p in pods(up, "web") if p["metadata"]["name"] in on_silent]
    conditions = {c["type"]: c for c in stuck[0]["status"]["conditions"]}
    assert conditions["DisruptionTarget"]["reason"] == "DeletionByTaintManager"
    assert conditions["Ready"]["status"] == "False"  # MarkPodsNotReady
    events = up.get("events", "--field-selector", "reason=TaintManagerEviction")["items"]
    evicted = {e["involvedObject"]["name"] for e in events if e["message"].startswith("Marking for deletion Pod")}
    assert on_silent <= evicted
    # the pod that tolerates the taints for ever stays where it is, not Ready
    keeper = pods(up, "keeper")
    assert len(keeper) == 1 and not keeper[0]["metadata"].get("deletionTimestamp")
    assert {c["type"]: c["status"] for c in keeper[0]["status"]["conditions"]}["Ready"] == "False"

    # out of service (non-graceful node shutdown): PodGC force-deletes the Terminating pods
    up.kubectl("taint", "node", silent, "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute")
    eventually(lambda: not on_silent & {p["metadata"]["name"] for p in pods(up, "web")}, timeout=90)
    up.kubectl("taint", "node", silent, "node.kubernetes.io/out-of-service-")

    # the kubelet comes back: Ready, untainted
    up.kubectl("annotate", "node", silent, "sim.knuma.io/heartbeat-")
    eventually(lambda: ready_condition(up.get("node", silent))["status"] == "True", timeout=60)
    eventually(
        lambda: not [t for t in up.get("node", silent)["spec"].get("taints") or [] if t["key"] == UNREACHABLE],
        timeout=60,
    )
    # its kubelet reports the pod it kept running Ready again
    eventually(
        lambda: {c["type"]: c["status"] for c in pods(up, "keeper")[0]["status"]["conditions"]}["Ready"] == "True"
    )
    assert pods(up, "keeper")[0]["spec"]["nodeName"] == silent


def test_when_every_node_is_silent_nothing_is_evicted(start: Callable[..., Up]) -> None:
    """Master disruption mode (`handleDisruption`): with no node Ready in any zone the controller assumes it is the
    one cut off and taints nothing NoExecute, so pods tolerating the taint for 8 s are still there well after that;
    the NoSchedule taints stay (no new pods go there). When the kubelets come back the pods were never touched."""
    up = start(*TWO_SMALL_NODES)
    up.kubectl("apply", "-f", "-", stdin=deployment("web", 2, toleration_seconds=8))
    eventually(lambda: up.get("deployment", "web")["status"].get("readyReplicas") == 2, timeout=90)
    before = {p["metadata"]["name"] for p in pods(up, "web")}

    up.kubectl("annotate", "node", "--all", "sim.knuma.io/heartbeat=stopped")
    eventually(lambda: all(ready_condition(n)["status"] == "Unknown" for n in up.get("nodes")["items"]), timeout=60)

    def effects(node: dict[str, Any]) -> set[str]:
        return {t["effect"] for t in node["spec"].get("taints") or [] if t["key"] == UNREACHABLE}

    # both unreachable for scheduling; neither for eviction (a node that went silent one pass before the other may
    # have had its NoExecute taint for a pass: entering master disruption removes it)
    eventually(lambda: all(effects(n) == {"NoSchedule"} for n in up.get("nodes")["items"]), timeout=30)
    time.sleep(15)  # without the guard: NoExecute one pass (5 s) after Unknown, the pods deleted 8 s later
    assert all(effects(n) == {"NoSchedule"} for n in up.get("nodes")["items"])
    current = pods(up, "web")
    assert {p["metadata"]["name"] for p in current} == before
    assert not [p for p in current if p["metadata"].get("deletionTimestamp")]

    up.kubectl("annotate", "node", "--all", "sim.knuma.io/heartbeat-")
    eventually(lambda: all(ready_condition(n)["status"] == "True" for n in up.get("nodes")["items"]), timeout=60)
    eventually(lambda: all(not effects(n) for n in up.get("nodes")["items"]), timeout=60)
    eventually(lambda: up.get("deployment", "web")["status"].get("readyReplicas") == 2, timeout=60)
    assert {p["metadata"]["name"] for p in pods(up, "web")} == before


def exporter_state(up: Up, node: str) -> str | None:
    """The /proc state letter (R, S, T for stopped, ...) of `knuma up`'s exporter process for `node`; None if none."""
    found = exporter_process(up, node)
    return found[1] if found is not None else None


def exporter_process(up: Up, node: str) -> tuple[int, str] | None:
    """(pid, state letter) of `knuma up`'s exporter process for `node`."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == up.process.pid and b"exporter" in args and node.encode() in args:
            return int(entry.name), fields[0]
    return None


def check_report(up: Up) -> Any:
    result = knuma(up, "check", "-o", "json", "--stale-grace", "0s")
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def _paused_alone(report: Any) -> Any:
    """The report once worker-000's exporter is reported paused and nothing else is wrong but worker-000 (and its
    NRT, if it had none yet), else None."""
    paused = report["nodes"][0]["exporter"].startswith("paused ")
    return report if paused and {e["node"] for e in report["errors"]} == {"worker-000"} else None


def test_the_exporter_process_of_a_silent_node_is_paused(start: Callable[..., Up]) -> None:
    """With `--exporters process` each node's `knuma exporter` stands for a pod on that node: while the node is
    silent it is paused (SIGSTOP), so it cannot publish either; it resumes with the node, and a `knuma up` stopped
    meanwhile still stops it."""
    # a grace period longer than the test: no Node update (Unknown, taints) re-pauses the exporter behind our back
    up = start("--nodes", "2", "--shape", "small", "--exporters", "process", "--node-monitor-grace-period", "120s")
    eventually(lambda: exporter_state(up, "worker-000") not in (None, "T"), timeout=60)
    up.kubectl("annotate", "node", "worker-000", "sim.knuma.io/heartbeat=stopped")
    eventually(lambda: exporter_state(up, "worker-000") == "T", timeout=30)
    assert exporter_state(up, "worker-001") not in (None, "T")
    # knuma check reads knuma up's record of its processes: the paused one is the problem, with what brings it back
    # worker-001's NRT must be fresh too: on a loaded machine its exporter may publish late (`--stale-grace 0s`)
    report = eventually(lambda: _paused_alone(check_report(up)), timeout=60, what="only worker-000 reported wrong")
    assert report["nodes"][1]["exporter"].startswith("process ")
    [problem] = [e for e in report["errors"] if e["area"] == "exporter"]
    assert (problem["component"], problem["expected"]) == ("process", "running")
    assert "kubectl annotate node worker-000 sim.knuma.io/heartbeat-" in problem["fix"]
    up.kubectl("annotate", "node", "worker-000", "sim.knuma.io/heartbeat-")
    eventually(lambda: exporter_state(up, "worker-000") not in (None, "T"), timeout=30)
    up.kubectl("annotate", "node", "worker-001", "sim.knuma.io/heartbeat=stopped")
    eventually(lambda: exporter_state(up, "worker-001") == "T", timeout=30)
    # the exporter dies while its node is silent: the supervisor starts it again, paused again
    crashed = exporter_process(up, "worker-001")
    assert crashed is not None
    os.kill(crashed[0], signal.SIGKILL)
    eventually(
        lambda: (p := exporter_process(up, "worker-001")) is not None and p[0] != crashed[0] and p[1] == "T",
        timeout=45,
    )
    assert up.stop() == 0
    assert exporter_state(up, "worker-001") is None
