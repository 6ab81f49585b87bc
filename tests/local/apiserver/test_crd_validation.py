"""Issue 18 items 2, 4, 5 and 12: a CRD is validated whole before it is stored, never shadows a built-in resource,
needs the approval annotation in protected groups, and its patterns run in linear time (RE2)."""

from __future__ import annotations

import copy
import threading
import time
from typing import Any

import pytest

from tests.local.apiserver.conftest import Http, configmap
from tests.local.apiserver.test_crd import CRDS, nrt_crd, widget, widget_crd

WIDGETS = "/apis/example.knuma.io/v1/namespaces/default/widgets"
APPROVAL = "api-approved.kubernetes.io"


def _fields(reply: Any) -> list[str]:
    return [c["field"] for c in reply.json["details"]["causes"]]


def _with_second_version(version: Any) -> dict[str, Any]:
    crd = widget_crd()
    crd["spec"]["versions"].append(version)
    return crd


@pytest.mark.parametrize(
    ("crd", "field"),
    [
        (_with_second_version({"served": True, "storage": False}), "spec.versions[1].name"),
        (_with_second_version({"name": ["v2"], "served": True, "storage": False}), "spec.versions[1].name"),
        (_with_second_version({"name": 2, "served": True, "storage": False}), "spec.versions[1].name"),
        (_with_second_version({"name": "v1", "served": True, "storage": False}), "spec.versions[1].name"),
        (_with_second_version({"name": "V2!", "served": True, "storage": False}), "spec.versions[1].name"),
        (_with_second_version("v2"), "spec.versions[1]"),
        ({**widget_crd(), "spec": {**widget_crd()["spec"], "names": "x"}}, "spec.names"),
        ({**widget_crd(), "spec": {**widget_crd()["spec"], "group": "nodots"}}, "spec.group"),
        ({**widget_crd(), "spec": {**widget_crd()["spec"], "versions": "v1"}}, "spec.versions"),
    ],
)
def test_an_invalid_crd_is_422_and_not_stored(http_client: Http, crd: dict[str, Any], field: str) -> None:
    reply = http_client.post(CRDS, crd)
    assert (reply.status, reply.json["reason"]) == (422, "Invalid"), reply.body
    assert field in _fields(reply)
    assert http_client.get(f"{CRDS}/widgets.example.knuma.io").status == 404
    assert http_client.get("/apis").status == 200
    assert http_client.get("/apis/example.knuma.io").status == 404


def _schema_crd(**props: Any) -> dict[str, Any]:
    crd = widget_crd()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].update(props)
    return crd


@pytest.mark.parametrize(
    ("prop", "field"),
    [
        ({"type": "string", "pattern": "("}, "pattern"),
        ({"type": "string", "pattern": "(a)\\1"}, "pattern"),
        ({"type": "integer", "minimum": "1"}, "minimum"),
        ({"type": "strin"}, "type"),
        ({"type": "object", "properties": []}, "properties"),
        ({"type": "string", "maxLength": -1}, "maxLength"),
    ],
)
def test_a_broken_schema_is_422(http_client: Http, prop: dict[str, Any], field: str) -> None:
    reply = http_client.post(CRDS, _schema_crd(x=prop))
    assert reply.status == 422, reply.body
    assert any(f.endswith(f"properties[x].{field}") for f in _fields(reply)), _fields(reply)
    assert http_client.get(f"{CRDS}/widgets.example.knuma.io").status == 404


def test_an_update_that_breaks_a_crd_is_refused_and_the_old_one_kept(http_client: Http) -> None:
    created = http_client.post(CRDS, widget_crd()).json
    broken = copy.deepcopy(created)
    broken["spec"]["versions"].append({"served": True, "storage": False})
    assert http_client.put(f"{CRDS}/widgets.example.knuma.io", broken).status == 422
    assert http_client.post(WIDGETS, widget("w", size=2)).status == 201


def _crd_for(group: str, plural: str, kind: str, **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}", "annotations": annotations},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


@pytest.mark.parametrize(
    ("group", "plural", "kind"),
    [
        ("apps", "deployments", "Deployment"),
        ("coordination.k8s.io", "leases", "Lease"),
        ("apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition"),
    ],
)
def test_a_crd_cannot_take_over_a_built_in_resource(http_client: Http, group: str, plural: str, kind: str) -> None:
    approved = {APPROVAL: "https://github.com/kubernetes/enhancements/pull/1111"}
    reply = http_client.post(CRDS, _crd_for(group, plural, kind, **approved))
    assert reply.status == 422, reply.body
    # `apps` is refused already for having no dot in the group name (as upstream); the others as built-ins.
    assert ("spec.names.plural" if "." in group else "spec.group") in _fields(reply)
    assert http_client.get(f"{CRDS}/{plural}.{group}").status == 404
    # The built-in type is still served as before.
    assert http_client.get(f"/apis/{group}/v1" if group else "/api/v1").json["resources"]


def test_deleting_the_nrt_crd_cannot_be_forced_through_a_crd_for_crds(http_client: Http) -> None:
    assert http_client.post(CRDS, nrt_crd()).status == 201
    assert http_client.post(CRDS, widget_crd()).status == 201
    approved = {APPROVAL: "https://github.com/kubernetes/enhancements/pull/1111"}
    http_client.post(CRDS, _crd_for("apiextensions.k8s.io", "customresourcedefinitions", "Crd", **approved))
    http_client.delete(f"{CRDS}/customresourcedefinitions.apiextensions.k8s.io")
    names = {c["metadata"]["name"] for c in http_client.get(CRDS).json["items"]}
    assert names == {"noderesourcetopologies.topology.node.k8s.io", "widgets.example.knuma.io"}


def test_protected_groups_need_the_approval_annotation(http_client: Http) -> None:
    missing = http_client.post(CRDS, _crd_for("things.k8s.io", "things", "Thing"))
    assert missing.status == 422
    assert missing.json["details"]["causes"][0] == {
        "reason": "FieldValueRequired",
        "field": f"metadata.annotations[{APPROVAL}]",
        "message": f'Required value: protected groups must have approval annotation "{APPROVAL}", '
        "see https://github.com/kubernetes/enhancements/pull/1111",
    }
    bogus = http_client.post(CRDS, _crd_for("x.kubernetes.io", "things", "Thing", **{APPROVAL: "bad value"}))
    assert bogus.status == 422 and "with either a URL or a reason" in bogus.json["message"]
    approved = _crd_for("things.k8s.io", "things", "Thing", **{APPROVAL: "https://github.com/kubernetes/k/pull/1"})
    assert http_client.post(CRDS, approved).status == 201
    unapproved = _crd_for("x.kubernetes.io", "things", "Thing", **{APPROVAL: "unapproved, experimental"})
    assert http_client.post(CRDS, unapproved).status == 201
    # Other groups need nothing; the NRT CRD carries its approval like upstream's.
    assert http_client.post(CRDS, _crd_for("example.org", "things", "Thing")).status == 201
    assert http_client.post(CRDS, nrt_crd()).status == 201


def test_a_catastrophic_pattern_is_matched_in_linear_time(http_client: Http) -> None:
    word = {"type": "string", "pattern": "^(a+)+$"}
    assert http_client.post(CRDS, _schema_crd(word=word, digits={"type": "string", "pattern": "^\\d+$"})).status == 201
    health: list[float] = []

    def probe() -> None:
        started = time.monotonic()
        http_client.get("/healthz", auth=False)
        health.append(time.monotonic() - started)

    body = widget("w", size=1)
    body["spec"]["word"] = "a" * 28 + "!"
    started = time.monotonic()
    thread = threading.Thread(target=probe)
    thread.start()
    reply = http_client.post(WIDGETS, body)
    thread.join()
    # Python's backtracking `re` needs ~16 s here; RE2 microseconds. The bound leaves room for a loaded machine.
    assert time.monotonic() - started < 8.0
    assert health[0] < 8.0
    assert reply.status == 422 and "should match '^(a+)+$'" in reply.json["message"]
    body["spec"]["word"] = "aaaa"
    assert http_client.post(WIDGETS, body).status == 201
    # RE2 semantics, as kube-apiserver's Go regexp: `\\d` is ASCII digits only.
    assert http_client.post(WIDGETS, {**widget("x", size=1), "spec": {"size": 1, "digits": "\u0663"}}).status == 422
    assert http_client.post(WIDGETS, {**widget("y", size=1), "spec": {"size": 1, "digits": "3"}}).status == 201
    assert http_client.post("/api/v1/namespaces/default/configmaps", configmap("still-fine")).status == 201
