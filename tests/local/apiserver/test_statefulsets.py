"""StatefulSets on `knuma apiserver`: served under apps/v1 (`sts`), defaulted and validated as kube-apiserver does
(`SetDefaults_StatefulSet`, `ValidateStatefulSetSpec`, `ValidateStatefulSetUpdate`), with a scale subresource and a
`kubectl get` table."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from tests.local.apiserver.conftest import Http, Kubectl

SETS = "/apis/apps/v1/namespaces/default/statefulsets"
MERGE = "application/merge-patch+json"


def statefulset(name: str = "db", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
            **spec,
        },
    }


def causes(reply: Any) -> dict[str, str]:
    assert reply.status == 422, reply.json
    return {c["field"]: c["message"] for c in reply.json["details"]["causes"]}


def test_a_statefulset_is_defaulted_and_scaled_through_its_subresource(http_client: Http) -> None:
    created = http_client.post(SETS, statefulset())
    assert created.status == 201, created.json
    spec = created.json["spec"]
    assert spec["replicas"] == 1 and spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert created.json["status"] == {"replicas": 0, "availableReplicas": 0}
    scale = http_client.get(f"{SETS}/db/scale")
    assert scale.status == 200 and scale.json["spec"]["replicas"] == 1 and scale.json["status"]["selector"] == "app=db"
    patched = http_client.patch(f"{SETS}/db/scale", {"spec": {"replicas": 3}}, MERGE)
    assert patched.status == 200, patched.json
    assert http_client.get(f"{SETS}/db").json["spec"]["replicas"] == 3


def test_what_kube_apiserver_refuses_is_refused(http_client: Http) -> None:
    wrong = statefulset(podManagementPolicy="Sequential", updateStrategy={"type": "OnDelete", "rollingUpdate": {}})
    wrong["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    wrong["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    found = causes(http_client.post(SETS, wrong))
    assert found["spec.podManagementPolicy"] == (
        'Unsupported value: "Sequential": supported values: "OrderedReady", "Parallel"'
    )
    assert found["spec.updateStrategy.rollingUpdate"].endswith("only allowed for updateStrategy 'RollingUpdate'")
    assert found["spec.template.metadata.labels"] == (
        'Invalid value: map[string]string{"app":"other"}: `selector` does not match template `labels`'
    )
    assert found["spec.template.spec.restartPolicy"] == 'Unsupported value: "OnFailure": supported values: "Always"'
    negative = causes(
        http_client.post(SETS, statefulset(replicas=-1, updateStrategy={"rollingUpdate": {"partition": -2}}))
    )
    assert set(negative) == {"spec.replicas", "spec.updateStrategy.rollingUpdate.partition"}


def test_updates_may_change_only_what_kube_apiserver_lets_change(http_client: Http) -> None:
    stored = http_client.post(SETS, statefulset()).json
    changed = copy.deepcopy(stored)
    changed["spec"]["serviceName"] = "elsewhere"
    refused = causes(http_client.put(f"{SETS}/db", changed))
    assert refused["spec"].startswith("Forbidden: updates to statefulset spec for fields other than 'replicas'")
    allowed = copy.deepcopy(stored)
    allowed["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.k8s.io/pause:3.11"
    allowed["spec"]["replicas"] = 2
    del allowed["spec"]["podManagementPolicy"]  # defaulted again on update: not a change
    assert http_client.put(f"{SETS}/db", allowed).status == 200


def test_kubectl_apply_get_and_scale(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(statefulset(replicas=2)))
    table = kubectl("get", "sts").stdout.splitlines()
    assert table[0].split() == ["NAME", "READY", "AGE"] and table[1].split()[:2] == ["db", "0/2"]
    assert "statefulset.apps/db scaled" in kubectl("scale", "sts/db", "--replicas=4").stdout
    assert kubectl("get", "statefulset", "db", "-o", "jsonpath={.spec.replicas}").stdout == "4"


def test_the_example_is_accepted_with_strict_field_validation(http_client: Http) -> None:
    """`examples/up/statefulset.yaml` (the README's session), volume claim templates included."""
    example = yaml.safe_load((Path(__file__).resolve().parents[3] / "examples" / "up" / "statefulset.yaml").read_text())
    created = http_client.post(f"{SETS}?fieldValidation=Strict", example)
    assert created.status == 201, created.json
    assert created.json["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"] == {"storage": "10Gi"}


def test_controller_revisions_need_data_that_never_changes(http_client: Http, kubectl: Kubectl) -> None:
    revisions = "/apis/apps/v1/namespaces/default/controllerrevisions"
    owner = http_client.post(SETS, statefulset()).json
    body = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": "db-abc",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "name": "db",
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "data": {"spec": {"template": {"$patch": "replace", "spec": {"containers": []}}}},
        "revision": 1,
    }
    assert causes(http_client.post(revisions, {**body, "data": None})) == {"data": "Required value"}
    assert "revision" in causes(http_client.post(revisions, {**body, "revision": -1}))
    created = http_client.post(f"{revisions}?fieldValidation=Strict", body)
    assert created.status == 201, created.json
    renumbered = http_client.patch(f"{revisions}/db-abc", {"revision": 2}, MERGE)
    assert renumbered.status == 200 and renumbered.json["revision"] == 2
    assert "data" in causes(http_client.patch(f"{revisions}/db-abc", {"data": {"other": 1}}, MERGE))
    table = kubectl("get", "controllerrevisions").stdout.splitlines()
    assert table[0].split() == ["NAME", "CONTROLLER", "REVISION", "AGE"]
    assert table[1].split()[:3] == ["db-abc", "statefulset.apps/db", "2"]
