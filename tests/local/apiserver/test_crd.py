"""CustomResourceDefinitions: runtime registration, Established, schema validation, status subresource, removal."""

from __future__ import annotations

from typing import Any

import yaml

from tests.local.apiserver.conftest import MANIFESTS, Http

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
NRT = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"


def nrt_crd() -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load((MANIFESTS / "nrt-crd.yaml").read_text())
    return crd


def widget_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.knuma.io"},
        "spec": {
            "group": "example.knuma.io",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "required": ["size"],
                                    "properties": {
                                        "size": {"type": "integer", "minimum": 1},
                                        "color": {"type": "string", "enum": ["red", "blue"]},
                                    },
                                },
                                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            },
                        }
                    },
                }
            ],
        },
    }


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.knuma.io/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def test_crd_registers_resources_and_is_established(http_client: Http) -> None:
    assert http_client.get(NRT).status == 404
    created = http_client.post(CRDS, nrt_crd())
    assert created.status == 201
    conditions = {c["type"]: c["status"] for c in created.json["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert created.json["status"]["storedVersions"] == ["v1alpha2"]
    groups = {g["name"]: g for g in http_client.get("/apis").json["groups"]}
    nrt_group = groups["topology.node.k8s.io"]
    assert nrt_group["preferredVersion"]["version"] == "v1alpha2"
    assert [v["version"] for v in nrt_group["versions"]] == ["v1alpha2", "v1alpha1"]
    resources = http_client.get("/apis/topology.node.k8s.io/v1alpha2").json["resources"]
    assert resources[0]["shortNames"] == ["node-res-topo"]
    assert resources[0]["namespaced"] is False
    assert http_client.get(NRT).json["items"] == []
    assert http_client.get("/apis/topology.node.k8s.io/v1alpha1/noderesourcetopologies").status == 200


def test_schema_validation_rejects_missing_and_mistyped_fields(http_client: Http) -> None:
    http_client.post(CRDS, nrt_crd())
    missing = http_client.post(
        NRT, {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology", "metadata": {"name": "n"}}
    )
    assert (missing.status, missing.json["reason"]) == (422, "Invalid")
    assert missing.json["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "zones"}
    ]
    assert missing.json["message"] == 'NodeResourceTopology.topology.node.k8s.io "n" is invalid: zones: Required value'
    wrong = http_client.post(
        NRT,
        {
            "apiVersion": "topology.node.k8s.io/v1alpha2",
            "kind": "NodeResourceTopology",
            "metadata": {"name": "n"},
            "zones": [{"name": "node-0", "type": "Node", "resources": [{"name": "cpu", "capacity": [1]}]}],
        },
    )
    assert wrong.status == 422
    fields = {c["field"] for c in wrong.json["details"]["causes"]}
    assert fields == {
        "zones[0].resources[0].capacity",
        "zones[0].resources[0].allocatable",
        "zones[0].resources[0].available",
    }
    v1alpha1 = http_client.post(
        "/apis/topology.node.k8s.io/v1alpha1/noderesourcetopologies",
        {
            "apiVersion": "topology.node.k8s.io/v1alpha1",
            "kind": "NodeResourceTopology",
            "metadata": {"name": "n"},
            "zones": [],
        },
    )
    assert v1alpha1.status == 422
    assert v1alpha1.json["details"]["causes"][0]["field"] == "topologyPolicies"


def test_custom_status_subresource_enum_minimum_and_pruning(http_client: Http) -> None:
    http_client.post(CRDS, widget_crd())
    path = "/apis/example.knuma.io/v1/namespaces/default/widgets"
    assert http_client.post(path, widget("w", size=0)).status == 422
    bad_enum = http_client.post(path, widget("w", size=1, color="green"))
    assert bad_enum.status == 422 and bad_enum.json["details"]["causes"][0]["reason"] == "FieldValueNotSupported"
    created = http_client.post(path, {**widget("w", size=1, extra="pruned"), "status": {"ignored": True}})
    assert created.status == 201
    assert created.json["spec"] == {"size": 1}
    assert "status" not in created.json
    status = http_client.patch(
        f"{path}/w/status", {"status": {"ready": True}, "spec": {"size": 9}}, "application/merge-patch+json"
    )
    assert status.json["status"] == {"ready": True}
    assert status.json["spec"] == {"size": 1}
    main = http_client.patch(
        f"{path}/w", {"status": {"ready": False}, "spec": {"size": 2}}, "application/merge-patch+json"
    )
    assert main.json["status"] == {"ready": True}
    assert main.json["metadata"]["generation"] == 2
    smp = http_client.patch(f"{path}/w", {"spec": {"size": 3}}, "application/strategic-merge-patch+json")
    assert (smp.status, smp.json["reason"]) == (415, "UnsupportedMediaType")


def test_deleting_a_crd_removes_its_objects_and_resources(http_client: Http) -> None:
    http_client.post(CRDS, widget_crd())
    path = "/apis/example.knuma.io/v1/namespaces/default/widgets"
    http_client.post(path, widget("w", size=1))
    assert http_client.delete(f"{CRDS}/widgets.example.knuma.io").status == 200
    assert http_client.get(path).status == 404
    assert "example.knuma.io" not in {g["name"] for g in http_client.get("/apis").json["groups"]}
    http_client.post(CRDS, widget_crd())
    assert http_client.get(path).json["items"] == []


def test_invalid_crd_is_rejected(http_client: Http) -> None:
    crd = widget_crd()
    crd["metadata"]["name"] = "wrong"
    reply = http_client.post(CRDS, crd)
    assert (reply.status, reply.json["reason"]) == (422, "Invalid")


def test_strict_field_validation_reports_unknown_fields(http_client: Http) -> None:
    http_client.post(CRDS, widget_crd())
    path = "/apis/example.knuma.io/v1/namespaces/default/widgets"
    strict = http_client.post(f"{path}?fieldValidation=Strict", widget("w", size=1, extra="typo"))
    assert (strict.status, strict.json["reason"]) == (400, "BadRequest")
    assert strict.json["message"] == (
        'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.extra"'
    )
    lenient = http_client.post(f"{path}?fieldValidation=Ignore", widget("w", size=1, extra="typo"))
    assert lenient.status == 201 and lenient.json["spec"] == {"size": 1}


def test_custom_resource_scale_subresource(http_client: Http) -> None:
    crd = widget_crd()
    crd["spec"]["versions"][0]["subresources"]["scale"] = {
        "specReplicasPath": ".spec.size",
        "statusReplicasPath": ".status.size",
    }
    http_client.post(CRDS, crd)
    path = "/apis/example.knuma.io/v1/namespaces/default/widgets"
    http_client.post(path, widget("w", size=2))
    scale = http_client.get(f"{path}/w/scale").json
    assert (scale["kind"], scale["spec"]["replicas"], scale["status"]["replicas"]) == ("Scale", 2, 0)
    patched = http_client.patch(f"{path}/w/scale", {"spec": {"replicas": 5}}, "application/merge-patch+json")
    assert patched.json["spec"]["replicas"] == 5
    assert http_client.get(f"{path}/w").json["spec"]["size"] == 5
    bad = http_client.patch(f"{path}/w/scale", {"spec": {"replicas": -1}}, "application/merge-patch+json")
    assert bad.status == 422
    resources = {r["name"]: r for r in http_client.get("/apis/example.knuma.io/v1").json["resources"]}
    assert resources["widgets/scale"]["kind"] == "Scale" and resources["widgets/scale"]["group"] == "autoscaling"
