"""PodDisruptionBudgets on `knuma apiserver` (served so that the scheduler's preemption can read them): created, listed
by kubectl with kube-apiserver's columns, status written through `/status`, and refused (422) as kube-apiserver's
`ValidatePodDisruptionBudgetSpec` refuses them."""

from __future__ import annotations

from typing import Any

from tests.local.apiserver.conftest import Http, Kubectl

PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
MERGE = "application/merge-patch+json"


def budget(name: str, **spec: Any) -> dict[str, Any]:
    selector = spec.pop("selector", {"matchLabels": {"app": "db"}})
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
            "spec": {"selector": selector, **spec}}  # fmt: skip


def causes(reply: Any) -> dict[str, str]:
    assert reply.status == 422, reply.json
    return {c["field"]: c["message"] for c in reply.json["details"]["causes"]}


def test_a_budget_is_served_with_its_status_and_kubectl_columns(http_client: Http, kubectl: Kubectl) -> None:
    made = http_client.post(PDBS, budget("db", minAvailable=2))
    assert made.status == 201, made.json
    status = {"status": {"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3}}
    patched = http_client.patch(f"{PDBS}/db/status", status, MERGE)
    assert patched.status == 200, patched.json
    assert patched.json["status"]["disruptionsAllowed"] == 1
    table = kubectl("get", "pdb").stdout.splitlines()
    assert table[0].split() == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"]
    assert table[1].split()[:4] == ["db", "2", "N/A", "1"]
    negative = http_client.patch(
        f"{PDBS}/db/status", {"status": {"disruptionsAllowed": -1}}, "application/merge-patch+json"
    )
    assert causes(negative) == {"status.disruptionsAllowed": "Invalid value: -1: must be greater than or equal to 0"}


def test_invalid_budgets_are_refused_as_kube_apiserver_refuses_them(http_client: Http) -> None:
    both = causes(http_client.post(PDBS, budget("both", minAvailable=1, maxUnavailable=1)))
    assert both["spec"].endswith("minAvailable and maxUnavailable cannot be both set")
    assert causes(http_client.post(PDBS, budget("neg", minAvailable=-1))) == {
        "spec.minAvailable": "Invalid value: -1: must be greater than or equal to 0"
    }
    assert causes(http_client.post(PDBS, budget("big", maxUnavailable="120%"))) == {
        "spec.maxUnavailable": 'Invalid value: "120%": must not be greater than 100%'
    }
    assert causes(http_client.post(PDBS, budget("word", minAvailable="half")))["spec.minAvailable"].startswith(
        "Invalid value: \"half\": a valid percent string must be a numeric string followed by an ending '%'"
    )
    selector = {"matchExpressions": [{"key": "app", "operator": "In"}]}
    assert causes(http_client.post(PDBS, budget("sel", minAvailable=1, selector=selector))) == {
        "spec.selector.matchExpressions[0].values": "Required value: must be specified when `operator` is 'In' or "
        "'NotIn'"
    }
    policy = causes(http_client.post(PDBS, budget("pol", minAvailable=1, unhealthyPodEvictionPolicy="Never")))
    assert policy == {
        "spec.unhealthyPodEvictionPolicy": 'Unsupported value: "Never": supported values: "AlwaysAllow", '
        '"IfHealthyBudget"'
    }
    assert http_client.get(PDBS).json["items"] == []


def test_kubectl_create_pdb_is_decoded_from_protobuf(http_client: Http, kubectl: Kubectl) -> None:
    """`kubectl create poddisruptionbudget` sends protobuf; integers and percentages come through as JSON would have
    them, and the generator's selector too."""
    kubectl("create", "pdb", "db", "--selector=app=db,tier=data", "--min-available=2")
    kubectl("create", "pdb", "web", "--selector=app=web", "--max-unavailable=25%")
    specs = {b["metadata"]["name"]: b["spec"] for b in http_client.get(PDBS).json["items"]}
    assert specs == {
        "db": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db", "tier": "data"}}},
        "web": {"maxUnavailable": "25%", "selector": {"matchLabels": {"app": "web"}}},
    }
    refused = kubectl("create", "pdb", "big", "--selector=app=x", "--max-unavailable=120%", check=False)
    assert refused.returncode == 1 and "must not be greater than 100%" in refused.stderr
