"""Issue 18 item 1 and 12: every metadata field's type and format is validated before anything is stored (422 with
the field path), for built-in kinds and custom resources alike; no such request is a 500 or poisons later LISTs."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.local.apiserver.conftest import Http, configmap, pod
from tests.local.apiserver.test_crd import CRDS, widget_crd

CM = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
NODES = "/api/v1/nodes"
WIDGETS = "/apis/example.knuma.io/v1/namespaces/default/widgets"


def _fields(reply: Any) -> list[str]:
    return [c["field"] for c in reply.json["details"]["causes"]]


@pytest.mark.parametrize(
    ("metadata", "field"),
    [
        ({"name": 5}, "metadata.name"),
        ({"name": ["a"]}, "metadata.name"),
        ({"name": "n", "labels": {"a": 1}}, "metadata.labels.a"),
        ({"name": "n", "labels": "x"}, "metadata.labels"),
        ({"name": "n", "annotations": {"a": ["b"]}}, "metadata.annotations"),
        ({"name": "n", "annotations": {"bad key!": "v"}}, "metadata.annotations"),
        ({"name": "n", "finalizers": 5}, "metadata.finalizers"),
        ({"name": "n", "finalizers": [5]}, "metadata.finalizers[0]"),
        ({"name": "n", "finalizers": ["not a name"]}, "metadata.finalizers[0]"),
        ({"name": "n", "ownerReferences": "x"}, "metadata.ownerReferences"),
        (
            {"name": "n", "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": 5}]},
            "metadata.ownerReferences[0].name",
        ),
        (
            {"name": "n", "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p"}]},
            "metadata.ownerReferences[0].uid",
        ),
        ({"name": "n", "generation": "1"}, "metadata.generation"),
        ({"name": "n", "generateName": 7}, "metadata.generateName"),
        ({"name": "n", "uid": {"a": 1}}, "metadata.uid"),
        ({"name": "n", "resourceVersion": 12}, "metadata.resourceVersion"),
        ({"name": "n", "creationTimestamp": 5}, "metadata.creationTimestamp"),
        ({"name": "n", "managedFields": 5}, "metadata.managedFields"),
        (
            {"name": "n", "managedFields": [{"manager": "m", "operation": "Bogus", "fieldsType": "FieldsV1"}]},
            "metadata.managedFields[0].operation",
        ),
    ],
)
def test_wrongly_typed_or_formatted_metadata_is_422_with_the_field(
    http_client: Http, metadata: dict[str, Any], field: str
) -> None:
    reply = http_client.post(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": metadata})
    assert (reply.status, reply.json["reason"]) == (422, "Invalid"), reply.body
    assert field in _fields(reply)
    listed = http_client.get(NODES)
    assert listed.status == 200 and listed.json["items"] == []


def test_a_node_named_5_never_breaks_listing_or_deletion(http_client: Http) -> None:
    assert http_client.post(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "real"}}).status == 201
    assert http_client.post(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": 5}}).status == 422
    assert [n["metadata"]["name"] for n in http_client.get(NODES).json["items"]] == ["real"]
    assert http_client.delete(f"{NODES}/real").status == 200


def test_integer_label_keys_in_yaml_are_422_not_500(http_client: Http) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels:\n    1: a\n"
    reply = http_client.post(CM, body, content_type="application/yaml")
    assert reply.status == 422 and _fields(reply) == ["metadata.labels"]


def test_updates_and_patches_are_validated_too(http_client: Http) -> None:
    created = http_client.post(CM, configmap("c")).json
    put = http_client.put(f"{CM}/c", {**created, "metadata": {**created["metadata"], "finalizers": 5}})
    assert put.status == 422 and _fields(put) == ["metadata.finalizers"]
    merge = http_client.patch(f"{CM}/c", {"metadata": {"ownerReferences": "x"}}, "application/merge-patch+json")
    assert merge.status == 422 and _fields(merge) == ["metadata.ownerReferences"]
    json_patch = http_client.patch(
        f"{CM}/c", [{"op": "add", "path": "/metadata/labels", "value": {"k": 5}}], "application/json-patch+json"
    )
    assert json_patch.status == 422
    apply = http_client.request(
        "PATCH",
        f"{CM}/c?fieldManager=me",
        yaml.safe_dump(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "managedFields": 5}}
        ).encode(),
        content_type="application/apply-patch+yaml",
    )
    assert apply.status == 422 and _fields(apply) == ["metadata.managedFields"]
    assert http_client.get(CM).status == 200


def test_custom_resources_get_the_same_metadata_validation(http_client: Http) -> None:
    assert http_client.post(CRDS, widget_crd()).status == 201
    body = {"apiVersion": "example.knuma.io/v1", "kind": "Widget", "metadata": {"name": 5}, "spec": {"size": 1}}
    reply = http_client.post(WIDGETS, body)
    assert reply.status == 422 and _fields(reply) == ["metadata.name"]
    body["metadata"] = {"name": "w", "labels": {"x": True}}
    assert http_client.post(WIDGETS, body).status == 422
    assert http_client.get(WIDGETS).status == 200


def test_pod_bodies_of_the_wrong_shape_are_400_not_500(http_client: Http) -> None:
    """As kube-apiserver, whose decoder refuses them before validation: 400 naming the field."""
    spec_five = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": 5}
    reply = http_client.post(PODS, spec_five)
    assert reply.status == 400 and "cannot unmarshal number into field spec of type object" in reply.json["message"]
    bad_containers = pod("q")
    bad_containers["spec"]["containers"] = -1
    reply = http_client.post(PODS, bad_containers)
    assert reply.status == 400 and "spec.containers" in reply.json["message"]
    bad_init = pod("r")
    bad_init["spec"]["initContainers"] = 5
    reply = http_client.post(PODS, bad_init)
    assert reply.status == 400 and "spec.initContainers" in reply.json["message"]
    assert http_client.get(PODS).json["items"] == []


def test_a_binding_with_a_non_string_target_is_rejected(http_client: Http) -> None:
    http_client.post(PODS, pod("p"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"kind": "Node", "name": 5}}
    reply = http_client.post(f"{PODS}/p/binding", binding)
    assert reply.status in (400, 422), reply.body
    assert "nodeName" not in http_client.get(f"{PODS}/p").json["spec"]
