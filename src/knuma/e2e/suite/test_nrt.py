"""Every node publishes NRT: present, fresh (its pod fingerprint matches the node's pods), with the Topology Manager
attributes of the node's kubelet, and an exporter pod running there (`knuma check`'s node checks)."""

from __future__ import annotations

from knuma.deploy.check import CheckSettings, run_check
from knuma.deploy.validate import format_issue
from knuma.e2e.cluster import E2ECluster
from knuma.e2e.suite.conftest import Stack


def test_every_node_publishes_a_fresh_nrt_matching_its_kubelet(cluster: E2ECluster, stack: Stack) -> None:
    diagnosis = run_check(cluster.http, CheckSettings(scheduler_name=stack.scheduler_name, stale_grace=10.0))
    node_problems = [
        format_issue(n, issue)
        for n, issue in enumerate(diagnosis.issues)
        if issue.area in ("nrt", "exporter") or (issue.area == "kubelet" and issue.component == "configuration")
    ]
    assert node_problems == []
    assert diagnosis.nodes, "no node checked"
    for row in diagnosis.nodes:
        assert (row.node, row.nrt, row.fresh) in ((row.node, "present", "yes"), (row.node, "present", "unknown"))
