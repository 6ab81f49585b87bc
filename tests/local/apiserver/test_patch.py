"""Patch flavours and server-side apply, as pure functions and over HTTP."""

from __future__ import annotations

import time

import pytest

from knuma.local.apiserver import fieldmanager
from knuma.local.apiserver.errors import ApiError
from knuma.local.apiserver.patch import json_patch, merge_patch, strategic_merge
from tests.local.apiserver.conftest import Http, pod

POD = {
    "spec": {
        "containers": [
            {
                "name": "a",
                "image": "x:1",
                "env": [{"name": "E1", "value": "1"}, {"name": "E2", "value": "2"}],
                "ports": [{"containerPort": 80}, {"containerPort": 443}],
            },
            {"name": "b", "image": "y:1"},
        ],
        "volumes": [{"name": "v1", "emptyDir": {}}],
        "tolerations": [{"key": "k1", "operator": "Exists"}],
    },
    "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]},
}


def test_strategic_merge_uses_merge_keys() -> None:
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "a",
                    "image": "x:2",
                    "env": [{"name": "E2", "value": "two"}],
                    "ports": [{"containerPort": 8080}],
                },
                {"name": "c", "image": "z:1"},
            ],
            "volumes": [{"name": "v2", "configMap": {"name": "cm"}}],
            "tolerations": [{"key": "k1", "operator": "Equal", "value": "v"}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    out = strategic_merge(POD, patch)
    a, b, c = out["spec"]["containers"]
    assert (a["image"], b["image"], c["name"]) == ("x:2", "y:1", "c")
    assert a["env"] == [{"name": "E1", "value": "1"}, {"name": "E2", "value": "two"}]
    assert [p["containerPort"] for p in a["ports"]] == [80, 443, 8080]
    assert [v["name"] for v in out["spec"]["volumes"]] == ["v1", "v2"]
    assert out["spec"]["tolerations"] == [{"key": "k1", "operator": "Equal", "value": "v"}]
    assert out["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "PodScheduled", "status": "True"},
    ]
    assert POD["spec"]["containers"][0]["image"] == "x:1"  # type: ignore[index]


def test_strategic_merge_directives() -> None:
    deleted = strategic_merge(POD, {"spec": {"containers": [{"name": "b", "$patch": "delete"}]}})
    assert [c["name"] for c in deleted["spec"]["containers"]] == ["a"]
    replaced = strategic_merge(POD, {"spec": {"volumes": [{"name": "only", "emptyDir": {}}, {"$patch": "replace"}]}})
    assert replaced["spec"]["volumes"] == [{"name": "only", "emptyDir": {}}]
    ordered = strategic_merge(POD, {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}})
    assert [c["name"] for c in ordered["spec"]["containers"]] == ["b", "a"]
    removed = strategic_merge({"metadata": {"labels": {"a": "1", "b": "2"}}}, {"metadata": {"labels": {"a": None}}})
    assert removed == {"metadata": {"labels": {"b": "2"}}}
    finalizers = strategic_merge({"metadata": {"finalizers": ["x"]}}, {"metadata": {"finalizers": ["y"]}})
    assert finalizers["metadata"]["finalizers"] == ["x", "y"]
    prim = strategic_merge(
        {"metadata": {"finalizers": ["x", "y"]}}, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}}
    )
    assert prim["metadata"]["finalizers"] == ["y"]
    atomic = strategic_merge({"spec": {"args": ["a", "b"]}}, {"spec": {"args": ["c"]}})
    assert atomic == {"spec": {"args": ["c"]}}
    # handleDirectiveInMergeMap: `$patch: delete` in a map empties it; the key stays, as an empty map
    emptied = strategic_merge(
        {"metadata": {"labels": {"a": "1"}, "name": "p"}}, {"metadata": {"labels": {"$patch": "delete"}}}
    )
    assert emptied == {"metadata": {"labels": {}, "name": "p"}}


def test_merge_and_json_patch() -> None:
    assert merge_patch({"a": {"b": 1, "c": 2}, "l": [1, 2]}, {"a": {"b": None, "d": 3}, "l": [3]}) == {
        "a": {"c": 2, "d": 3},
        "l": [3],
    }
    doc = {"a": [1, 2], "b": {"c": 1}}
    ops = [
        {"op": "add", "path": "/a/-", "value": 3},
        {"op": "replace", "path": "/b/c", "value": 2},
        {"op": "copy", "from": "/b", "path": "/d"},
        {"op": "move", "from": "/a/0", "path": "/e"},
        {"op": "test", "path": "/e", "value": 1},
        {"op": "remove", "path": "/b"},
        {"op": "add", "path": "/x~1y", "value": True},
    ]
    assert json_patch(doc, ops) == {"a": [2, 3], "d": {"c": 2}, "e": 1, "x/y": True}
    with pytest.raises(ApiError) as err:
        json_patch(doc, [{"op": "test", "path": "/a/0", "value": 9}])
    assert err.value.code == 422
    with pytest.raises(ApiError):
        json_patch(doc, [{"op": "remove", "path": "/missing"}])


def test_server_side_apply_ownership_conflicts_and_removal() -> None:
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"a": "1"}},
        "data": {"x": "1", "y": "2"},
    }
    obj = fieldmanager.apply(None, config, "alice", force=False, api_version="v1")
    assert obj["data"] == {"x": "1", "y": "2"}
    fields = obj["metadata"]["managedFields"][0]["fieldsV1"]
    assert fields == {"f:data": {"f:x": {}, "f:y": {}}, "f:metadata": {"f:labels": {"f:a": {}}}}
    # bob sets the same value for x: shared ownership, no conflict; bob adds z.
    bob = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"x": "1", "z": "3"}}
    obj = fieldmanager.apply(obj, bob, "bob", force=False, api_version="v1")
    assert obj["data"] == {"x": "1", "y": "2", "z": "3"}
    with pytest.raises(ApiError) as err:
        fieldmanager.apply(obj, {**bob, "data": {"x": "changed"}}, "bob", force=False, api_version="v1")
    assert err.value.code == 409
    assert err.value.details is not None
    assert err.value.details["causes"][0] == {
        "reason": "FieldManagerConflict",
        "message": 'conflict with "alice"',
        "field": ".data.x",
    }
    # alice stops setting y (only she owned it: removed) and x (bob still owns it: kept).
    obj = fieldmanager.apply(obj, {**config, "data": {}}, "alice", force=False, api_version="v1")
    assert obj["data"] == {"x": "1", "z": "3"}
    forced = fieldmanager.apply(obj, {**bob, "data": {"x": "mine", "z": "3"}}, "bob", force=True, api_version="v1")
    assert forced["data"]["x"] == "mine"


def test_server_side_apply_merges_lists_by_key() -> None:
    base = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "a", "image": "x"}]},
    }
    obj = fieldmanager.apply(None, base, "one", force=False, api_version="v1")
    side = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "b", "image": "y"}]},
    }
    obj = fieldmanager.apply(obj, side, "two", force=False, api_version="v1")
    assert [c["name"] for c in obj["spec"]["containers"]] == ["a", "b"]
    two = next(m for m in obj["metadata"]["managedFields"] if m["manager"] == "two")
    assert 'k:{"name":"b"}' in two["fieldsV1"]["f:spec"]["f:containers"]


def test_apply_over_http_creates_then_conflicts(http_client: Http) -> None:
    path = "/api/v1/namespaces/default/pods/p?fieldManager=ctl"
    body = pod("p")
    created = http_client.patch(path, body, "application/apply-patch+yaml")
    assert created.status == 201
    again = http_client.patch(path, body, "application/apply-patch+yaml")
    assert again.status == 200
    assert again.json["metadata"]["resourceVersion"] == created.json["metadata"]["resourceVersion"]
    other = http_client.patch(
        "/api/v1/namespaces/default/pods/p?fieldManager=other",
        {**body, "spec": {"containers": [{"name": "main", "image": "other:1"}]}},
        "application/apply-patch+yaml",
    )
    assert (other.status, other.json["reason"]) == (409, "Conflict")
    assert 'conflict with "ctl"' in other.json["message"]
    no_manager = http_client.patch("/api/v1/namespaces/default/pods/p", body, "application/apply-patch+yaml")
    assert no_manager.status == 400
    yaml_body = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {extra: 'yes'}\n"
    labelled = http_client.patch(
        "/api/v1/namespaces/default/pods/p?fieldManager=labeler", yaml_body, "application/apply-patch+yaml"
    )
    assert labelled.json["metadata"]["labels"] == {"app": "p", "extra": "yes"}
    broken = http_client.patch(
        "/api/v1/namespaces/default/pods/p?fieldManager=x", b"a: [", "application/apply-patch+yaml"
    )
    assert broken.status == 400
    unknown = http_client.patch("/api/v1/namespaces/default/pods/p", {}, "application/x-unknown")
    assert unknown.status == 415


TAKES = "; $patch takes replace or delete"
BAD_DIRECTIVES = [
    (
        {"spec": {"$setElementOrder/containers": 5}},
        "invalid patch format of setElementOrder list: $setElementOrder/containers must be a list, got 5",
    ),
    (
        {"spec": {"$setElementOrder/containers": ["main"]}},
        "invalid patch format of setElementOrder list: $setElementOrder/containers[0] must be a map with the merge key "
        "name, got main",
    ),
    (
        {"metadata": {"$setElementOrder": [{"name": "main"}]}},
        "invalid patch format of setElementOrder list: $setElementOrder is not $setElementOrder/FIELD",
    ),
    (
        {"metadata": {"$deleteFromPrimitiveList/finalizers": "example.com/x"}},
        "invalid patch format of primitive list: $deleteFromPrimitiveList/finalizers must be a list, got example.com/x",
    ),
    (
        {"metadata": {"$deleteFromPrimitiveList": ["example.com/x"]}},
        "invalid patch format of primitive list: $deleteFromPrimitiveList is not $deleteFromPrimitiveList/FIELD",
    ),
    (
        {"spec": {"$retainKeys": 5}},
        "invalid patch format of retainKeys: $retainKeys must be a list of field names, got 5",
    ),
    (
        {"spec": {"$retainKeys": ["containers"], "hostname": "h"}},
        "invalid patch format of retainKeys: the patch sets hostname, which $retainKeys does not list",
    ),
    ({"spec": {"$patch": "bogus"}}, f"unknown patch type: bogus in map: map[$patch:bogus]{TAKES}"),
    (
        {"$patch": 5, "metadata": {"labels": {"a": "b"}}},
        f"unknown patch type: 5 in map: map[$patch:5 metadata:map[labels:map[a:b]]]{TAKES}",
    ),
    ({"spec": {"$patch": "merge"}}, f"unknown patch type: merge in map: map[$patch:merge]{TAKES}"),
    (
        {"spec": {"containers": [{"name": "main", "$patch": "bogus"}]}},
        f"unknown patch type: bogus in map: map[$patch:bogus name:main]{TAKES}",
    ),
    (
        {"spec": {"containers": [{"name": "main", "$patch": "merge"}]}},
        "merging lists cannot yet be specified in the patch (containers: $patch: merge)",
    ),
]


def test_strategic_merge_directives_with_wrong_values_are_400_naming_the_directive(http_client: Http) -> None:
    """A directive's value of the wrong kind is refused, in strategicpatch's words plus the directive, and the object
    stays as it was; it was a 500 (`$setElementOrder/containers: 5`) or silently ignored (`$patch: bogus`)."""
    path = "/api/v1/namespaces/default/pods/p"
    created = http_client.post("/api/v1/namespaces/default/pods", pod("p")).json
    for body, message in BAD_DIRECTIVES:
        reply = http_client.patch(path, body, "application/strategic-merge-patch+json")
        assert (reply.status, reply.json["reason"], reply.json["message"]) == (400, "BadRequest", message), body
    assert http_client.get(path).json["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    ordered = http_client.patch(
        path,
        {"metadata": {"labels": {"x": "1"}}, "spec": {"$setElementOrder/containers": [{"name": "main"}]}},
        "application/strategic-merge-patch+json",
    )
    assert ordered.status == 200 and ordered.json["metadata"]["labels"] == {"app": "p", "x": "1"}
    emptied = http_client.patch(
        path, {"metadata": {"labels": {"$patch": "delete"}}}, "application/strategic-merge-patch+json"
    )
    assert emptied.status == 200 and not emptied.json["metadata"].get("labels")
    whole = http_client.patch(path, {"$patch": "delete"}, "application/strategic-merge-patch+json")
    assert whole.status == 400, whole.json  # the whole object emptied: not the pod of the URL any more
    assert http_client.get(path).json["metadata"]["resourceVersion"] == emptied.json["metadata"]["resourceVersion"]


@pytest.mark.slow
def test_no_op_writes_keep_the_resource_version(http_client: Http) -> None:
    path = "/api/v1/namespaces/default/pods/p"
    created = http_client.patch(f"{path}?fieldManager=ctl", pod("p"), "application/apply-patch+yaml").json
    http_client.patch(
        f"{path}?fieldManager=labeler", {"metadata": {"labels": {"x": "1"}}}, "application/merge-patch+json"
    )
    rv = http_client.get(path).json["metadata"]["resourceVersion"]
    time.sleep(1.1)  # managedFields times have a one-second resolution
    again = http_client.patch(f"{path}?fieldManager=ctl", pod("p"), "application/apply-patch+yaml").json
    same = http_client.patch(
        f"{path}?fieldManager=labeler", {"metadata": {"labels": {"x": "1"}}}, "application/merge-patch+json"
    ).json
    assert again["metadata"]["resourceVersion"] == rv == same["metadata"]["resourceVersion"]
    assert again["metadata"]["managedFields"][0]["time"] == created["metadata"]["managedFields"][0]["time"]
