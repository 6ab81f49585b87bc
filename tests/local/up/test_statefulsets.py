"""End-to-end: a StatefulSet (and a Deployment's history) on `knuma up`, driven with kubectl. Its pods are created one
at a time in ordinal order (each once the one before is Ready), placed NUMA-aligned by `topology-aware-scheduler`,
rolled from the highest ordinal down when the template changes, and removed from the highest ordinal when scaled
down; `kubectl rollout status sts` follows it as on a cluster."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
import yaml

from knuma.testing.polling import eventually

from .test_up import Up

pytestmark = pytest.mark.slow


def _statefulset() -> dict[str, Any]:
    limits = {"cpu": "2", "memory": "2Gi"}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {
            "replicas": 3,
            "minReadySeconds": 1,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {
                    "schedulerName": "topology-aware-scheduler",
                    "containers": [
                        {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": limits}}
                    ],
                },
            },
        },
    }


def _pods(up: Up) -> dict[str, dict[str, Any]]:
    pods = up.get("pods", "-l", "app=db")["items"]
    return {p["metadata"]["name"]: p for p in pods if not p["metadata"].get("deletionTimestamp")}


def _ready_at(pod: dict[str, Any]) -> datetime:
    return _time(next(c["lastTransitionTime"] for c in pod["status"]["conditions"] if c["type"] == "Ready"))


def _time(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")


def test_kubectl_drives_an_ordered_statefulset(start: Callable[..., Up]) -> None:
    up = start("--nodes", "2", "--shape", "small")
    eventually(lambda: len(up.get("noderesourcetopologies")["items"]) == 2, timeout=60)
    up.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(_statefulset()))
    out = up.kubectl("rollout", "status", "sts/db", "--timeout=120s", timeout=150)
    assert "partitioned roll out complete: 3 new pods have been updated" in out, out  # partition 0 is set
    pods = _pods(up)
    assert sorted(pods) == ["db-0", "db-1", "db-2"]
    for before, after in (("db-0", "db-1"), ("db-1", "db-2")):  # created once the one before was available
        assert _time(pods[after]["metadata"]["creationTimestamp"]) >= _ready_at(pods[before]) + timedelta(seconds=1)
    assert all(p["spec"]["hostname"] == name and p["spec"]["subdomain"] == "db" for name, p in pods.items())
    assert all(p["metadata"]["annotations"].get("sim.knuma.io/cpus") for p in pods.values())  # admitted, pinned
    revision = pods["db-0"]["metadata"]["labels"]["controller-revision-hash"]

    budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db"},
              "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "db"}}}}  # fmt: skip
    up.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(budget))
    eventually(  # the StatefulSet's replicas are the pods the budget expects
        lambda: (
            [up.get("pdb", "db").get("status", {}).get(k) for k in ("expectedPods", "disruptionsAllowed")] == [3, 1]
        ),
        timeout=30,
    )

    up.kubectl("set", "env", "sts/db", "MODE=replica")
    out = up.kubectl("rollout", "status", "sts/db", "--timeout=120s", timeout=150)
    assert "partitioned roll out complete: 3 new pods have been updated" in out, out
    rolled = _pods(up)
    revisions = {p["metadata"]["labels"]["controller-revision-hash"] for p in rolled.values()}
    assert len(revisions) == 1 and revisions != {revision}
    created = {name: _time(p["metadata"]["creationTimestamp"]) for name, p in rolled.items()}
    assert created["db-2"] < created["db-1"] < created["db-0"]  # replaced from the highest ordinal down, one by one

    history = up.kubectl("rollout", "history", "sts/db").split()
    assert history[history.index("CHANGE-CAUSE") + 1 :] == ["1", "<none>", "2", "<none>"]
    assert "MODE" not in up.kubectl("rollout", "history", "sts/db", "--revision=1")  # the first template
    assert "MODE:" in up.kubectl("rollout", "history", "sts/db", "--revision=2")
    assert up.kubectl("rollout", "undo", "sts/db").strip() == "statefulset.apps/db rolled back"
    up.kubectl("rollout", "status", "sts/db", "--timeout=120s", timeout=150)
    eventually(
        lambda: (
            {p["metadata"]["labels"]["controller-revision-hash"] for p in _pods(up).values()} == {revision}
            and len(_pods(up)) == 3
        ),
        timeout=60,
    )
    history = up.kubectl("rollout", "history", "sts/db").split()
    assert history[history.index("CHANGE-CAUSE") + 1 :] == ["2", "<none>", "3", "<none>"]

    up.kubectl("scale", "sts/db", "--replicas=1")
    eventually(lambda: sorted(p["metadata"]["name"] for p in up.get("pods", "-l", "app=db")["items"]) == ["db-0"],
               timeout=60)  # fmt: skip
    eventually(lambda: up.get("statefulset", "db")["status"].get("replicas") == 1, timeout=30)
    assert up.stop() == 0


def test_kubectl_rollout_history_and_undo_of_a_deployment(start: Callable[..., Up]) -> None:
    up = start("--nodes", "1", "--shape", "small")
    eventually(lambda: len(up.get("noderesourcetopologies")["items"]) == 1, timeout=60)
    deployment = _statefulset()
    deployment["kind"] = "Deployment"
    for key in ("serviceName", "minReadySeconds"):
        del deployment["spec"][key]
    deployment["spec"]["replicas"] = 2
    up.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(deployment))
    up.kubectl("rollout", "status", "deploy/db", "--timeout=120s", timeout=150)
    up.kubectl("set", "env", "deploy/db", "MODE=replica")
    up.kubectl("rollout", "status", "deploy/db", "--timeout=120s", timeout=150)
    history = up.kubectl("rollout", "history", "deploy/db").split()
    assert history[history.index("CHANGE-CAUSE") + 1 :] == ["1", "<none>", "2", "<none>"]
    assert up.kubectl("rollout", "undo", "deploy/db").strip() == "deployment.apps/db rolled back"
    up.kubectl("rollout", "status", "deploy/db", "--timeout=120s", timeout=150)
    env = up.get("deployment", "db")["spec"]["template"]["spec"]["containers"][0].get("env")
    assert env is None  # the first template again
    history = up.kubectl("rollout", "history", "deploy/db").split()
    assert history[history.index("CHANGE-CAUSE") + 1 :] == ["2", "<none>", "3", "<none>"]
    assert up.get("deployment", "db")["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"

    # paused, a template change waits (no new ReplicaSet) until the rollout is resumed
    up.kubectl("rollout", "pause", "deploy/db")
    up.kubectl("set", "env", "deploy/db", "MODE=primary")

    def progressing(reason: str) -> bool:
        conditions = up.get("deployment", "db").get("status", {}).get("conditions") or []
        return any(c["type"] == "Progressing" and c["reason"] == reason for c in conditions)

    eventually(lambda: progressing("DeploymentPaused"), timeout=30)
    assert len(up.get("replicasets", "-l", "app=db")["items"]) == 2
    up.kubectl("rollout", "resume", "deploy/db")
    up.kubectl("rollout", "status", "deploy/db", "--timeout=120s", timeout=150)
    assert len(up.get("replicasets", "-l", "app=db")["items"]) == 3
    assert up.stop() == 0
