"""`knuma check`'s decisions over hand-built snapshots: every check finds its problem and stays quiet without it."""

from __future__ import annotations

from typing import Any

import pytest

from knuma.api.fingerprint import compute
from knuma.deploy.check.nodes import check_nodes, matches_selector, stale_nodes
from knuma.deploy.check.report import diagnose, render_json, render_text
from knuma.deploy.check.scheduling import parse_failed_scheduling, profile_enables
from knuma.deploy.check.state import ClusterState, SchedulerDeployment

KUBELET = {"topologyManagerPolicy": "single-numa-node", "topologyManagerScope": "pod"}


def node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"node-role.kubernetes.io/worker": ""}}}


def pod(name: str, node_name: str = "", phase: str = "Running", **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}], **extra.pop("spec", {})}
    if node_name:
        spec["nodeName"] = node_name
    return {
        "metadata": {"name": name, "namespace": extra.pop("namespace", "default"), "labels": extra.pop("labels", {})},
        "spec": spec,
        "status": {"phase": phase, **extra},
    }


def exporter(node_name: str, phase: str = "Running") -> dict[str, Any]:
    return pod(
        f"exp-{node_name}", node_name, phase, namespace="tas", labels={"app.kubernetes.io/name": "knuma-exporter"}
    )


def nrt(name: str, pods: list[tuple[str, str]], policy: str = "single-numa-node", scope: str = "pod") -> dict[str, Any]:
    attrs = {"topologyManagerPolicy": policy, "topologyManagerScope": scope}
    attrs["nodeTopologyPodsFingerprint"] = compute(pods)
    attrs["nodeTopologyPodsFingerprintMethod"] = "all"
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name},
        "zones": [],
        "attributes": [{"name": k, "value": v} for k, v in attrs.items()],
    }


def scheduler(ready: int = 1, plugins: dict[str, Any] | None = None) -> SchedulerDeployment:
    deployment = {
        "metadata": {"name": "topology-aware-scheduler", "namespace": "tas-scheduler"},
        "spec": {"replicas": 1},
        "status": {"readyReplicas": ready},
    }
    profile = {
        "schedulerName": "topology-aware-scheduler",
        "plugins": plugins if plugins is not None else {"filter": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}},
    }
    return SchedulerDeployment(deployment, {"kind": "KubeSchedulerConfiguration", "profiles": [profile]})


def healthy_state() -> ClusterState:
    pods = [exporter("w1"), exporter("w2")]
    return ClusterState(
        nodes=[node("w1"), node("w2")],
        nrts={"w1": nrt("w1", [("tas", "exp-w1")]), "w2": nrt("w2", [("tas", "exp-w2")])},
        nrt_crd_served=True,
        configz={"w1": dict(KUBELET), "w2": dict(KUBELET)},
        pods=pods,
        events=[],
        schedulers=[scheduler()],
    )


def settings(state: ClusterState, **changes: Any) -> ClusterState:
    import dataclasses

    return dataclasses.replace(state, **changes)


def test_a_healthy_cluster_passes() -> None:
    diagnosis = diagnose(healthy_state(), "topology-aware-scheduler")
    assert diagnosis.healthy and diagnosis.issues == []
    text = render_text(diagnosis)
    assert text.endswith("PASSED>>: the cluster configuration looks ok!\n")
    assert "w1     present   yes     single-numa-node/pod   tas/exp-w1" in text
    assert render_json(diagnosis)["success"] is True


def test_missing_nrt_stale_nrt_and_topology_manager_mismatch() -> None:
    state = healthy_state()
    state = settings(
        state,
        nrts={"w1": nrt("w1", [("tas", "exp-w1")], policy="restricted")},  # w2 has none
        pods=[*state.pods, pod("app", "w1")],  # the NRT of w1 does not count this pod yet
    )
    assert stale_nodes(state) == ["w1"]
    rows, issues = check_nodes(state)
    assert [(r.node, r.nrt, r.fresh) for r in rows] == [("w1", "present", "stale"), ("w2", "missing", "-")]
    assert rows[0].topology_manager == "single-numa-node/pod != NRT restricted/pod"
    found = {(i.node, i.component, i.setting, i.detected) for i in issues}
    assert ("w1", "NodeResourceTopology", "pods fingerprint", compute([("tas", "exp-w1")])) in found
    assert ("w1", "topology manager", "policy", "restricted") in found
    assert ("w2", "NodeResourceTopology", "object", "missing") in found
    stale = next(i for i in issues if i.setting == "pods fingerprint")
    assert stale.expected == f"{compute([('tas', 'exp-w1'), ('default', 'app')])} (2 pods)"
    assert "kubectl -n tas logs exp-w1" in stale.fix


def test_terminal_pods_do_not_enter_the_fingerprint() -> None:
    state = healthy_state()
    state = settings(state, pods=[*state.pods, pod("done", "w1", "Succeeded")])
    assert stale_nodes(state) == []


def test_exporter_not_running_and_configz_forbidden() -> None:
    state = healthy_state()
    state = settings(
        state,
        pods=[exporter("w1", "Pending")],
        configz={"w1": dict(KUBELET), "w2": 'HTTP 403: nodes "w2" is forbidden: cannot get resource "nodes/proxy"'},
    )
    _, issues = check_nodes(state)
    by_node = {(i.node, i.area): i for i in issues}
    assert by_node[("w1", "exporter")].detected == "Pending (tas/exp-w1)"
    assert by_node[("w2", "exporter")].detected == "no exporter pod"
    forbidden = by_node[("w2", "kubelet")]
    assert forbidden.setting == "configz" and "resources: [nodes/proxy], verbs: [get]" in forbidden.fix


def test_crd_not_served_and_no_nodes() -> None:
    state = settings(healthy_state(), nodes=[], nrts={}, nrt_crd_served=False)
    _, issues = check_nodes(state)
    assert [(i.component, i.expected, i.detected) for i in issues] == [
        ("NodeResourceTopology", "true", "false"),
        ("nodes", "worker nodes", "none"),
    ]


@pytest.mark.parametrize(
    ("schedulers", "expected"),
    [
        ([], [("profile", "none")]),
        ([scheduler(ready=0)], [("Deployment tas-scheduler/topology-aware-scheduler", "0/1")]),
        (
            [scheduler(plugins={"multiPoint": {"disabled": [{"name": "NodeResourceTopologyMatch"}]}})],
            [("profile topology-aware-scheduler", "not enabled")],
        ),
    ],
)
def test_scheduler_missing_not_ready_or_without_the_plugin(
    schedulers: list[SchedulerDeployment], expected: list[tuple[str, str]]
) -> None:
    diagnosis = diagnose(settings(healthy_state(), schedulers=schedulers), "topology-aware-scheduler")
    assert [(i.component, i.detected) for i in diagnosis.issues] == expected


def test_profile_enables() -> None:
    assert profile_enables({"plugins": {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}}})
    assert not profile_enables({"plugins": {"score": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}}})
    both = {"enabled": [{"name": "NodeResourceTopologyMatch"}], "disabled": [{"name": "NodeResourceTopologyMatch"}]}
    assert not profile_enables({"plugins": {"filter": both}})


def test_failed_scheduling_messages_are_parsed_as_kube_scheduler_writes_them() -> None:
    message = (
        "0/5 nodes are available: 3 cannot align container, 1 Insufficient cpu, 1 node(s) had untolerated taint "
        "{node-role.kubernetes.io/control-plane: }. preemption: 0/5 nodes are available: 5 No preemption victims."
    )
    assert parse_failed_scheduling(message) == {
        "cannot align container": 3,
        "Insufficient cpu": 1,
        "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }": 1,
    }
    assert parse_failed_scheduling("running PreBind plugin DynamicResources: gone") == {
        "running PreBind plugin DynamicResources: gone": 1
    }
    assert parse_failed_scheduling("") == {}


def test_pending_pods_aggregate_their_latest_reasons_and_admission_failures_name_the_scheduler() -> None:
    numa = {"schedulerName": "topology-aware-scheduler"}
    pending = [pod(f"p{i}", "", "Pending", spec=numa) for i in range(3)]
    old = {"message": "0/2 nodes are available: 2 Insufficient cpu.", "lastTimestamp": "2026-01-01T00:00:00Z"}
    new = {"message": "0/2 nodes are available: 2 cannot align container.", "lastTimestamp": "2026-01-01T00:01:00Z"}
    events = [
        {"metadata": {"name": f"e{i}{k}"}, "involvedObject": {"kind": "Pod", "namespace": "default", "name": f"p{i}"}}
        | body
        for i in range(2)
        for k, body in enumerate((old, new))
    ]
    rejected = pod("r", "w1", "Failed", reason="TopologyAffinityError", message="Resources cannot be allocated")
    smt = pod("s", "w2", "Failed", spec=numa, reason="SMTAlignmentError")
    state = settings(healthy_state(), pods=[*healthy_state().pods, *pending, rejected, smt], events=events)
    diagnosis = diagnose(state, "topology-aware-scheduler")
    assert dict(diagnosis.pending_reasons) == {"cannot align container": 4}
    assert [(p.pod, bool(p.message)) for p in diagnosis.pending] == [
        ("default/p0", True),
        ("default/p1", True),
        ("default/p2", False),
    ]
    assert [(f.pod, f.reason, f.scheduler) for f in diagnosis.failed] == [
        ("default/r", "TopologyAffinityError", "default-scheduler"),
        ("default/s", "SMTAlignmentError", "topology-aware-scheduler"),
    ]
    lines = render_text(diagnosis).splitlines()
    errors = [line for line in lines if line.startswith("ERROR#")]
    assert errors[0].startswith('ERROR#000: Incorrect configuration of cluster: component "pod" setting "default/p0"')
    assert errors[2].endswith('expected "Scheduled" detected "Pending, no FailedScheduling event"')
    assert "placed by 'default-scheduler', which does not know NUMA zones" in lines[lines.index(errors[3]) + 1]
    assert "multiples of the node's threads per core" in lines[lines.index(errors[4]) + 1]
    assert lines[-1] == "FAILED>>: the cluster configuration does NOT look ok!"


def test_matches_selector() -> None:
    labels = {"app": "x", "tier": "node"}
    assert matches_selector("app=x", labels) and matches_selector("app==x,tier", labels)
    assert not matches_selector("app=y", labels) and not matches_selector("app!=x", labels)
    assert matches_selector("!missing", labels) and not matches_selector("!app", labels)
