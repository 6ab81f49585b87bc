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


PODS = "/api/v1/namespaces/default/pods"


def running_pod(http_client: Http, name: str, app: str = "db", ready: bool = True) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": app}},
            "spec": {"containers": [{"name": "c", "image": "x"}]}}  # fmt: skip
    assert http_client.post(PODS, body).status == 201
    status = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}
    assert http_client.patch(f"{PODS}/{name}/status", status, MERGE).status == 200


def evict(http_client: Http, name: str) -> Any:
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}}
    return http_client.post(f"{PODS}/{name}/eviction", body)


def test_evictions_spend_the_budget_and_stop_at_zero(http_client: Http) -> None:
    """`EvictionREST.Create`: one disruption allowed, two Ready pods: the first eviction is granted (the budget
    records it and has none left), the second is 429 with the budget's numbers, a Pending pod goes regardless."""
    for name in ("db-0", "db-1"):
        running_pod(http_client, name)
    assert http_client.post(PDBS, budget("db", minAvailable=1)).status == 201
    counted = {"status": {"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1}}
    assert http_client.patch(f"{PDBS}/db/status", counted, MERGE).status == 200
    granted = evict(http_client, "db-0")
    assert granted.status == 201 and granted.json["status"] == "Success"
    assert http_client.get(f"{PODS}/db-0").status == 404
    spent = http_client.get(f"{PDBS}/db").json["status"]
    assert spent["disruptionsAllowed"] == 0 and list(spent["disruptedPods"]) == ["db-0"]
    (condition,) = spent["conditions"]  # the last disruption spent: not allowed any more
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "DisruptionAllowed",
        "False",
        "InsufficientPods",
    )
    refused = evict(http_client, "db-1")
    assert (refused.status, refused.json["reason"]) == (429, "TooManyRequests")
    assert refused.json["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert refused.json["details"]["causes"] == [
        {"reason": "DisruptionBudget", "message": "The disruption budget db needs 1 healthy pods and has 2 currently"}
    ]
    assert http_client.get(f"{PODS}/db-1").status == 200
    pending = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-2", "labels": {"app": "db"}},
               "spec": {"containers": [{"name": "c", "image": "x"}]}}  # fmt: skip
    assert http_client.post(PODS, pending).status == 201
    assert evict(http_client, "db-2").status == 201  # Pending: no budget consulted


def test_a_budget_not_yet_processed_or_two_budgets_refuse_the_eviction(http_client: Http) -> None:
    running_pod(http_client, "web-0", app="web")
    assert http_client.post(PDBS, budget("web", minAvailable=0, selector={"matchLabels": {"app": "web"}})).status == 201
    stale = evict(http_client, "web-0")  # no status yet: observedGeneration 0 < generation 1
    assert stale.status == 429
    assert (
        stale.json["details"]["causes"][0]["message"]
        == "The disruption budget web is still being processed by the server."
    )
    assert (
        http_client.post(PDBS, budget("web-too", minAvailable=0, selector={"matchLabels": {"app": "web"}})).status
        == 201
    )
    two = evict(http_client, "web-0")
    assert two.status == 500
    assert (
        two.json["message"]
        == "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    )


def test_kubectl_drain_waits_for_the_budget(http_client: Http, kubectl: Kubectl) -> None:
    """kubectl drain evicts (discovery names `pods/eviction`'s group and version, else it would delete) and retries on
    429 until its timeout; once the budget allows a disruption the pod is evicted."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}  # fmt: skip
    assert http_client.post("/api/v1/nodes", node).status == 201
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-0", "labels": {"app": "db"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]}}  # fmt: skip
    assert http_client.post(PODS, body).status == 201
    ready = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    assert http_client.patch(f"{PODS}/db-0/status", ready, MERGE).status == 200
    assert http_client.post(PDBS, budget("db", minAvailable=1)).status == 201
    none_left = {"status": {"observedGeneration": 1, "disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1}}
    assert http_client.patch(f"{PDBS}/db/status", none_left, MERGE).status == 200
    blocked = kubectl("drain", "n1", "--force", "--timeout=4s", check=False, timeout=60)
    assert blocked.returncode == 1
    assert "Cannot evict pod as it would violate the pod's disruption budget." in blocked.stderr + blocked.stdout
    assert http_client.get(f"{PODS}/db-0").status == 200
    one_left = {"status": {"disruptionsAllowed": 1}}
    assert http_client.patch(f"{PDBS}/db/status", one_left, MERGE).status == 200
    # no kubelet runs here to stop the pod and delete it for good, so the eviction asks for no grace period
    drained = kubectl("drain", "n1", "--force", "--grace-period=0", "--timeout=20s", timeout=60)
    assert "pod/db-0 evicted" in drained.stdout


def test_the_eviction_body_is_read_as_kube_apiserver_reads_it(http_client: Http) -> None:
    """The name must be the pod's; a dry run (in the body or the query) checks the budget and changes nothing;
    `deleteOptions.preconditions` guard the deletion, checked after the budget is spent, as upstream (its
    disruption controller gives the disruption back once `disruptedPods` expires)."""
    running_pod(http_client, "db-0")
    assert http_client.post(PDBS, budget("db", minAvailable=0)).status == 201
    counted = {"status": {"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 1, "desiredHealthy": 0}}
    assert http_client.patch(f"{PDBS}/db/status", counted, MERGE).status == 200
    url = f"{PODS}/db-0/eviction"
    other = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "db-1"}}
    assert http_client.post(url, other).json["message"] == "name in URL does not match name in Eviction object"
    assert http_client.post(url, {**other, "kind": "Pod"}).status == 400
    dry = {**other, "metadata": {"name": "db-0"}, "deleteOptions": {"dryRun": ["All"]}}
    assert http_client.post(url, dry).status == 201
    assert http_client.post(f"{url}?dryRun=All", {**dry, "deleteOptions": {}}).status == 201
    assert http_client.get(f"{PODS}/db-0").status == 200
    assert http_client.get(f"{PDBS}/db").json["status"]["disruptionsAllowed"] == 1  # nothing spent
    mismatch = http_client.post(f"{url}?dryRun=All", {**dry, "deleteOptions": {"dryRun": ["Some"]}})
    assert mismatch.status == 400 and "Non-matching dry-run options" in mismatch.json["message"]
    wrong = {**other, "metadata": {"name": "db-0"}, "deleteOptions": {"preconditions": {"uid": "not-the-pod"}}}
    refused = http_client.post(url, wrong)
    assert refused.status == 409 and "Precondition failed: UID in precondition: not-the-pod" in refused.json["message"]
    assert http_client.get(f"{PODS}/db-0").status == 200
    assert http_client.patch(f"{PDBS}/db/status", counted, MERGE).status == 200
    uid = http_client.get(f"{PODS}/db-0").json["metadata"]["uid"]
    right = {**other, "metadata": {"name": "db-0"}, "deleteOptions": {"preconditions": {"uid": uid}}}
    assert http_client.post(url, right).status == 201
    assert http_client.get(f"{PODS}/db-0").status == 404
