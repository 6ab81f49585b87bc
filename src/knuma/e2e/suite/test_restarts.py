"""Restarts: deleting the scheduler's pods keeps running workloads running and pods created meanwhile are scheduled
once it is back (upstream's `scheduler_removal`); deleting a node's exporter pod brings a new one that publishes the
node's NRT again, fresh.

On `knuma up` these pods are simulated: deleting the scheduler's pod makes `knuma up` restart its own scheduler
process (which schedules that profile there), while the exporter test restarts a simulated exporter pod only. On a
real cluster the pods are the processes."""

from __future__ import annotations

from knuma.api.types import JsonObj
from knuma.deploy.check import CheckSettings
from knuma.deploy.check.gather import gather
from knuma.deploy.check.nodes import exporter_pods, stale_nodes
from knuma.e2e.cluster import E2ECluster, eventually, guaranteed_pod
from knuma.e2e.suite.conftest import Stack


def _running(cluster: E2ECluster, namespace: str, name: str) -> JsonObj:
    return eventually(
        lambda: (p := cluster.pod(namespace, name))["status"].get("phase") == "Running" and p, f"pod {name} to run"
    )


def test_scheduler_restart_keeps_workloads_and_schedules_what_waited(
    cluster: E2ECluster, stack: Stack, namespace: str
) -> None:
    labels = {"e2e.knuma.io/run": cluster.run_id}
    cluster.create_pod(namespace, guaranteed_pod("before", 1, stack.scheduler_name, **labels))
    before = _running(cluster, namespace, "before")
    ns, _, name = stack.scheduler_deployment.partition("/")
    selector = ",".join(f"{k}={v}" for k, v in cluster.deployment(ns, name)["spec"]["selector"]["matchLabels"].items())
    old = {p["metadata"]["uid"] for p in cluster.pods(ns, selector)}
    assert old, f"no pod of Deployment {stack.scheduler_deployment}"
    for pod in cluster.pods(ns, selector):
        cluster.delete_pod(ns, pod["metadata"]["name"])
    cluster.create_pod(namespace, guaranteed_pod("during", 1, stack.scheduler_name, **labels))

    def back() -> bool:
        pods = cluster.pods(ns, selector)
        fresh = [p for p in pods if p["metadata"]["uid"] not in old and p["status"].get("phase") == "Running"]
        return bool(fresh) and int(cluster.deployment(ns, name)["status"].get("readyReplicas") or 0) >= 1

    eventually(back, f"Deployment {stack.scheduler_deployment} to run new pods", timeout=180)
    _running(cluster, namespace, "during")
    after = cluster.pod(namespace, "before")
    assert after["metadata"]["uid"] == before["metadata"]["uid"] and after["status"].get("phase") == "Running"


def test_exporter_restart_publishes_again(cluster: E2ECluster, stack: Stack, namespace: str) -> None:
    settings = CheckSettings(scheduler_name=stack.scheduler_name)
    node = stack.nodes[0]
    [old] = [p for p in exporter_pods(gather(cluster.http, settings))[node] if p["status"].get("phase") == "Running"]
    md = old["metadata"]
    cluster.delete_pod(md["namespace"], md["name"])

    def replaced() -> bool:
        pods = exporter_pods(gather(cluster.http, settings)).get(node, [])
        return any(p["metadata"]["uid"] != md["uid"] and p["status"].get("phase") == "Running" for p in pods)

    eventually(replaced, f"a new exporter pod on {node}", timeout=180)
    # a pod on that node is published by the new exporter, and the NRT is fresh again
    pod = guaranteed_pod("after-exporter", 1, stack.scheduler_name, **{"e2e.knuma.io/run": cluster.run_id})
    pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    cluster.create_pod(namespace, pod)
    _running(cluster, namespace, "after-exporter")
    eventually(lambda: node not in stale_nodes(gather(cluster.http, settings)), f"the NRT of {node} to be fresh")
    assert node in cluster.nrts()
