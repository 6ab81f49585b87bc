"""`knuma validate`: the pure checks and their exact upstream message format, then the command against a real
`knuma apiserver` whose nodes answer `configz` through the node proxy (as simulated kubelets do)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from knuma.cli.main import app
from knuma.deploy.validate import (
    FAILED,
    PASSED,
    Issue,
    check_kubelet,
    check_version,
    format_issue,
    no_worker_nodes,
    report_json,
    report_text,
)
from knuma.local.apiserver import ProxyRequest, ProxyResponse
from knuma.testing.apiserver import RunningApiServer, apiserver_in_thread

#: A kubelet configured for NUMA alignment (the upstream deployer's positive e2e configuration).
GOOD: dict[str, Any] = {
    "kind": "KubeletConfiguration",
    "apiVersion": "kubelet.config.k8s.io/v1beta1",
    "cpuManagerPolicy": "static",
    "cpuManagerReconcilePeriod": "10s",
    "reservedSystemCPUs": "0",
    "memoryManagerPolicy": "Static",
    "reservedMemory": [{"numaNode": 0, "limits": {"memory": "612Mi"}}],
    "topologyManagerPolicy": "single-numa-node",
    "topologyManagerScope": "container",
}
#: A kubelet as it comes by default: every NUMA-related setting wrong.
BAD: dict[str, Any] = {
    "kind": "KubeletConfiguration",
    "apiVersion": "kubelet.config.k8s.io/v1beta1",
    "cpuManagerPolicy": "none",
    "cpuManagerReconcilePeriod": "1m0s",
    "memoryManagerPolicy": "None",
    "topologyManagerPolicy": "none",
}


def typed(kind: Any, data: dict[str, Any]) -> Any:
    """A lightkube model from a dict (lightkube types `from_dict` loosely)."""
    return kind.from_dict(data)


def test_good_configuration_has_no_issue() -> None:
    assert check_kubelet("w1", GOOD) == []
    assert check_version("v1.33.0+knuma-0.1.0") == []


def test_every_wrong_setting_is_reported_in_upstream_order_and_format() -> None:
    issues = check_kubelet("w1", BAD)
    lines = [format_issue(i, issue) for i, issue in enumerate(issues)]
    assert lines == [
        'ERROR#000: Incorrect configuration of node "w1" area "kubelet" component "CPU manager" setting "policy": '
        'expected "static" detected "none"',
        'ERROR#001: Incorrect configuration of node "w1" area "kubelet" component "CPU manager" '
        'setting "reconcile period": expected "in range [1s, 10s]" detected "1m0s"',
        'ERROR#002: Incorrect configuration of node "w1" area "kubelet" component "configuration" setting "CPU": '
        'expected "reserved some CPU cores" detected "no reserved CPU cores"',
        'ERROR#003: Incorrect configuration of node "w1" area "kubelet" component "memory manager" '
        'setting "policy": expected "Static" detected "None"',
        'ERROR#004: Incorrect configuration of node "w1" area "kubelet" component "configuration" setting "memory": '
        'expected "reserved memory blocks" detected "no reserved memory blocks"',
        'ERROR#005: Incorrect configuration of node "w1" area "kubelet" component "topology manager" '
        'setting "policy": expected "single-numa-node" detected "none"',
    ]
    assert all(issue.fix for issue in issues)


def test_kubelet_defaults_apply_to_missing_keys() -> None:
    issues = check_kubelet("w1", {})
    assert [(i.component, i.setting, i.detected) for i in issues if i.setting == "policy"] == [
        ("CPU manager", "policy", "none"),
        ("memory manager", "policy", "None"),
        ("topology manager", "policy", "none"),
    ]
    assert not [i for i in issues if i.setting == "reconcile period"]  # the default, 10s, is in range


def test_reserved_cpus_by_kube_or_system_reservation_count() -> None:
    """The static CPU manager accepts a reservation through kubeReserved/systemReserved too (upstream only looks at
    reservedSystemCPUs and reports a false error)."""
    config = {**GOOD, "reservedSystemCPUs": "", "kubeReserved": {"cpu": "500m"}}
    assert check_kubelet("w1", config) == []
    assert [i.setting for i in check_kubelet("w1", {**config, "kubeReserved": {"cpu": "0"}})] == ["CPU"]


def test_requested_policy_and_reconcile_period_bounds() -> None:
    assert check_kubelet("w1", {**GOOD, "topologyManagerPolicy": "restricted"}, "restricted") == []
    assert [i.expected for i in check_kubelet("w1", GOOD, "restricted")] == ["restricted"]
    for period, ok in (("1s", True), ("500ms", False), ("10s", True), ("10.5s", False), ("garbage", False)):
        issues = check_kubelet("w1", {**GOOD, "cpuManagerReconcilePeriod": period})
        assert (issues == []) is ok, period


def test_version_and_cluster_lines() -> None:
    (old,) = check_version("v1.20.15")
    assert format_issue(0, old) == (
        'ERROR#000: Incorrect configuration of cluster: component "API Version" setting "": '
        'expected "1.21" detected "v1.20.15"'
    )
    (garbage,) = check_version("nonsense")
    assert garbage.expected == "valid version"
    assert format_issue(1, no_worker_nodes("node-role.kubernetes.io/worker")) == (
        'ERROR#001: Incorrect configuration of cluster: component "" setting "": '
        'expected "worker nodes" detected "none"'
    )


def test_reports() -> None:
    assert report_text([]) == PASSED + "\n"
    issue = Issue("w1", "kubelet", "topology manager", "policy", "single-numa-node", "none", "set it")
    assert report_text([issue]).splitlines()[1:] == ["  fix: set it", FAILED]
    assert report_json([], ["w1"]) == {"success": True, "nodes": ["w1"]}
    assert report_json([issue], ["w1"])["errors"] == [
        {
            "node": "w1",
            "area": "kubelet",
            "component": "topology manager",
            "setting": "policy",
            "expected": "single-numa-node",
            "detected": "none",
            "fix": "set it",
        }
    ]


# -- the command against an API server with nodes ------------------------------------------------------------------


def configz(config: dict[str, Any]) -> Any:
    def handler(request: ProxyRequest) -> ProxyResponse:
        assert request.path == "/configz"
        return ProxyResponse(200, json.dumps({"kubeletconfig": config}).encode())

    return handler


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[RunningApiServer]:
    with apiserver_in_thread(tmp_path / "api") as api:
        yield api


def add_node(api: RunningApiServer, name: str, handler: Any = None, *, worker: bool = True) -> None:
    from lightkube import Client, KubeConfig
    from lightkube.resources.core_v1 import Node

    labels = {"node-role.kubernetes.io/worker": ""} if worker else {"node-role.kubernetes.io/control-plane": ""}
    with Client(KubeConfig.from_file(api.kubeconfig), trust_env=False) as client:
        client.create(typed(Node, {"metadata": {"name": name, "labels": labels}}))
    if handler is not None:
        api.register_node_proxy(name, handler)


def run(api: RunningApiServer, *args: str) -> Any:
    return CliRunner().invoke(app, ["validate", "--kubeconfig", str(api.kubeconfig), *args])


def test_validate_passes_on_well_configured_nodes(cluster: RunningApiServer) -> None:
    add_node(cluster, "worker-0", configz(GOOD))
    add_node(cluster, "worker-1", configz(GOOD))
    add_node(cluster, "master-0", configz(BAD), worker=False)  # not a worker: not checked
    result = run(cluster)
    assert result.exit_code == 0, result.output
    assert result.stdout == PASSED + "\n"
    assert json.loads(run(cluster, "-o", "json").stdout) == {"success": True, "nodes": ["worker-0", "worker-1"]}


def test_validate_reports_every_misconfigured_setting_and_unreadable_nodes(cluster: RunningApiServer) -> None:
    add_node(cluster, "worker-a", configz(GOOD))
    add_node(cluster, "worker-b", configz({**GOOD, "topologyManagerPolicy": "best-effort", "reservedMemory": []}))
    add_node(cluster, "worker-c", configz(BAD))
    add_node(cluster, "worker-d")  # no kubelet answers: 503 from the proxy
    add_node(cluster, "worker-e", lambda request: ProxyResponse(200, b"<html>not json</html>", "text/html"))
    result = run(cluster)
    assert result.exit_code == 1
    errors = [line for line in result.stdout.splitlines() if line.startswith("ERROR#")]
    fixes = [line for line in result.stdout.splitlines() if line.startswith("  fix: ")]
    assert len(errors) == len(fixes) == 2 + 6 + 1 + 1
    assert errors[0] == (
        'ERROR#000: Incorrect configuration of node "worker-b" area "kubelet" component "configuration" '
        'setting "memory": expected "reserved memory blocks" detected "no reserved memory blocks"'
    )
    assert errors[1] == (
        'ERROR#001: Incorrect configuration of node "worker-b" area "kubelet" component "topology manager" '
        'setting "policy": expected "single-numa-node" detected "best-effort"'
    )
    assert all('node "worker-c"' in line for line in errors[2:8])
    assert errors[8].startswith(
        'ERROR#008: Incorrect configuration of node "worker-d" area "kubelet" component "configuration" '
        'setting "configz": expected "readable kubelet configuration" detected "HTTP 503: '
    )
    assert "configz did not return JSON" in errors[9]
    assert result.stdout.endswith(FAILED + "\n")
    report = json.loads(run(cluster, "--json").stdout)
    assert report["success"] is False and len(report["errors"]) == 10
    assert report["nodes"] == ["worker-a", "worker-b", "worker-c", "worker-d", "worker-e"]


def test_validate_without_workers_and_with_another_selector(cluster: RunningApiServer) -> None:
    add_node(cluster, "cp-0", configz(GOOD), worker=False)
    result = run(cluster)
    assert result.exit_code == 1
    assert 'component "" setting "": expected "worker nodes" detected "none"' in result.stdout
    assert run(cluster, "-l", "node-role.kubernetes.io/control-plane").exit_code == 0


def test_validate_usage_and_connection_errors(cluster: RunningApiServer, tmp_path: Path) -> None:
    bad_policy = run(cluster, "--topology-manager-policy", "strict")
    assert bad_policy.exit_code == 2 and "unknown --topology-manager-policy 'strict'" in bad_policy.output
    missing = CliRunner().invoke(app, ["validate", "--kubeconfig", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
    dead = tmp_path / "dead-kubeconfig"
    dead.write_text(cluster.kubeconfig.read_text().replace(cluster.url, "https://127.0.0.1:1"))
    unreachable = CliRunner().invoke(app, ["validate", "--kubeconfig", str(dead)])
    assert unreachable.exit_code == 3 and "cannot reach the API server at https://127.0.0.1:1:" in unreachable.output
    for command in ("deploy", "remove", "detect"):  # the same message, naming the URL, from every deployer command
        result = CliRunner().invoke(app, [command, "--kubeconfig", str(dead)])
        assert result.exit_code == 1, result.output
        assert "error: cannot reach the API server at https://127.0.0.1:1:" in result.output, result.output
