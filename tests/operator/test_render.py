"""`knuma render operator`: the operator's Deployment and RBAC. The RBAC is checked the way the API server checks it:
every object the operator applies (for other custom resources than the ones the rules were derived from) is allowed
by exactly the operator's Role or ClusterRole, every role it creates holds no permission it lacks (the API server's
escalation check), nothing is a wildcard, and every rendered object passes the upstream schema."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from knuma.api.numaresources import parse_operator_spec, parse_scheduler_spec
from knuma.operator.desired import operator_objects, scheduler_objects
from knuma.operator.render import LEASE_NAME, render_operator
from tests.deploy.schemas import validate_strict

KNUMA = str(Path(sys.executable).with_name("knuma"))
NS = "numaresources-operator"
PLURALS = {"NetworkPolicy": "networkpolicies"}


def allows(rules: list[dict[str, Any]], verb: str, group: str, resource: str, name: str = "") -> bool:
    """RBAC's `RuleAllows` (plugin/pkg/auth/authorizer/rbac), without wildcards (the test asserts there are none)."""
    for r in rules:
        if group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"]:
            names = r.get("resourceNames") or []
            if not names or name in names:
                return True
    return False


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return render_operator()


def rules_of(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = next(
        o for o in objects if o["kind"] == kind and o["metadata"]["name"] == "knuma-operator"
    )["rules"]
    return found


def other_resources() -> list[dict[str, Any]]:
    """Custom resources unlike the sample the rules come from: two groups, a renamed scheduler."""
    owner: dict[str, Any] = {"apiVersion": "nodetopology.openshift.io/v1", "kind": "X"}
    owner["metadata"] = {"name": "numaresourcesoperator", "uid": "u"}
    groups = [{"poolName": "cnf"}, {"machineConfigPoolSelector": {"matchLabels": {"node-role.kubernetes.io/gpu": ""}}}]
    spec = parse_operator_spec({"nodeGroups": groups, "podExcludes": [{"namespace": "kube-*", "name": "*"}]})
    sched = parse_scheduler_spec({"schedulerName": "numa", "cacheResyncPeriod": "3s"})
    return [*operator_objects(owner, spec, NS), *scheduler_objects(owner, sched, 3, NS)]


def test_every_applied_object_is_allowed_and_nothing_more(rendered: list[dict[str, Any]]) -> None:
    cluster, namespaced = rules_of(rendered, "ClusterRole"), rules_of(rendered, "Role")
    for obj in other_resources():
        group = obj["apiVersion"].rpartition("/")[0]
        resource = PLURALS.get(obj["kind"]) or obj["kind"].lower() + "s"
        name = obj["metadata"]["name"]
        if obj["metadata"].get("namespace"):
            assert obj["metadata"]["namespace"] == NS
            for verb in ("get", "create", "patch", "list", "watch", "delete"):
                assert allows(namespaced, verb, group, resource, name), (verb, obj["kind"], name)
            assert not allows(cluster, "patch", group, resource, name), f"{obj['kind']} writable cluster-wide"
        else:
            for verb in ("get", "create", "patch"):
                assert allows(cluster, verb, group, resource, name), (verb, obj["kind"], name)
            assert not allows(cluster, "patch", group, resource, "someone-elses"), f"any {obj['kind']} is writable"
            assert not allows(cluster, "delete", group, resource, name)
        # the API server's escalation check: a role may only grant what its creator holds
        if obj["kind"] in ("ClusterRole", "Role"):
            held = cluster if obj["kind"] == "ClusterRole" else [*namespaced, *cluster]
            for r in obj["rules"]:
                for g in r["apiGroups"]:
                    for res in r["resources"]:
                        for verb in r["verbs"]:
                            for n in r.get("resourceNames") or [""]:
                                assert allows(held, verb, g, res, n), (obj["metadata"]["name"], verb, g, res, n)
    every = [*cluster, *namespaced]
    assert all("*" not in [*r["apiGroups"], *r["resources"], *r["verbs"]] for r in every)
    assert not any(v in r["verbs"] for r in every for v in ("escalate", "bind", "impersonate"))


def test_what_the_operator_reads_and_its_lease(rendered: list[dict[str, Any]]) -> None:
    cluster, namespaced = rules_of(rendered, "ClusterRole"), rules_of(rendered, "Role")
    group = "nodetopology.openshift.io"
    for verb in ("list", "watch", "get"):
        assert allows(cluster, verb, group, "numaresourcesoperators")
        assert allows(cluster, verb, group, "numaresourcesschedulers")
    assert allows(cluster, "patch", group, "numaresourcesoperators/status")
    assert allows(cluster, "update", group, "numaresourcesschedulers/finalizers")
    assert not allows(cluster, "patch", group, "numaresourcesoperators"), "the operator never edits the spec"
    assert allows(cluster, "get", "", "nodes/proxy") and allows(cluster, "list", "", "nodes")
    assert not allows(cluster, "create", "", "nodes/proxy")
    assert allows(namespaced, "update", "coordination.k8s.io", "leases", LEASE_NAME)
    assert not allows(namespaced, "update", "coordination.k8s.io", "leases", "kube-scheduler")


def test_the_deployment_runs_two_leader_elected_replicas_with_probes(rendered: list[dict[str, Any]]) -> None:
    deployment = next(o for o in rendered if o["kind"] == "Deployment")
    assert deployment["metadata"]["namespace"] == NS and deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "knuma-operator"
    container = pod["containers"][0]
    assert "--leader-elect" in container["args"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz", "/readyz would keep the standby unready"
    assert container["securityContext"]["runAsNonRoot"] is True
    for obj in rendered:
        if obj["kind"] != "CustomResourceDefinition":
            validate_strict(obj, "1.30.0")
    # the arguments are the CLI's: it gets as far as the (missing) kubeconfig
    done = subprocess.run(
        [KNUMA, *container["args"], "--metrics-port=0", "--kubeconfig", "/nonexistent"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "kubeconfig /nonexistent does not exist" in done.stderr, done.stderr


def test_knuma_render_operator_prints_the_stream() -> None:
    done = subprocess.run([KNUMA, "render", "operator", "-R", "3"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    objects = [o for o in yaml.safe_load_all(done.stdout) if o]
    assert [o["kind"] for o in objects][:3] == ["CustomResourceDefinition", "CustomResourceDefinition", "Namespace"]
    assert objects[-1]["kind"] == "Deployment" and objects[-1]["spec"]["replicas"] == 3
