"""Issue 18 item 3: no YAML alias bomb, no nesting bomb. Bodies that would expand beyond the decoded-size budget are
413 quickly, bodies nested beyond the depth limit are 400, and the server stays responsive and stores nothing."""

from __future__ import annotations

import json
import time
from typing import Any

from knuma.local.apiserver.bodies import MAX_DEPTH
from tests.local.apiserver.conftest import Http, configmap

CM = "/api/v1/namespaces/default/configmaps"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
BLOBS = "/apis/example.knuma.io/v1/namespaces/default/blobs"


def _alias_bomb(levels: int = 7, fanout: int = 10) -> bytes:
    """The issue's attack: ~400 bytes that expand to 10^7 strings once every alias is followed."""
    lines = ["a0: &a0 [" + ",".join(['"lol"'] * fanout) + "]"]
    for n in range(1, levels):
        lines.append(f"a{n}: &a{n} [" + ",".join([f"*a{n - 1}"] * fanout) + "]")
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\n  annotations: {}\nbinaryData: {}\nx:\n  "
    return (body + "\n  ".join(lines) + "\n").encode()


def _merge_bomb(levels: int = 9) -> bytes:
    lines = ["a0: &a0 {" + ",".join(f"k{j}: v" for j in range(10)) + "}"]
    for n in range(1, levels):
        keys = ",".join([f"<<: *a{n - 1}"] + [f"x{n}_{j}: *a{n - 1}" for j in range(10)])
        lines.append(f"a{n}: &a{n} {{{keys}}}")
    return ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: merge}\nx:\n  " + "\n  ".join(lines) + "\n").encode()


def test_a_yaml_alias_bomb_is_413_at_once_and_stores_nothing(http_client: Http) -> None:
    bomb = _alias_bomb()
    assert len(bomb) < 600
    started = time.monotonic()
    reply = http_client.post(CM, bomb, content_type="application/yaml")
    # Expanded, the bomb is billions of nodes (minutes and gigabytes); refused, milliseconds. Room for a loaded machine.
    assert time.monotonic() - started < 10.0
    assert (reply.status, reply.json["reason"]) == (413, "RequestEntityTooLarge"), reply.body
    assert http_client.get(f"{CM}/bomb").status == 404
    merge = http_client.post(CM, _merge_bomb(), content_type="application/yaml")
    assert merge.status == 413
    recursive = http_client.post(CM, b"metadata: &m {name: r, labels: *m}\n", content_type="application/yaml")
    assert recursive.status == 400 and "refers to itself" in recursive.json["message"]
    apply = http_client.request(
        "PATCH", f"{CM}/bomb?fieldManager=me", _alias_bomb(), content_type="application/apply-patch+yaml"
    )
    assert apply.status == 413
    assert http_client.get("/healthz", auth=False).status == 200
    assert http_client.post(CM, configmap("fine")).status == 201


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth - 1):
        value = {"n": value}
    return value


def test_json_nested_too_deeply_is_400_quickly(http_client: Http) -> None:
    for depth in (MAX_DEPTH + 10, 500, 3000, 100_000):
        body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"x":' + b"[" * depth + b"]" * depth
        started = time.monotonic()
        reply = http_client.post(CM, body + b"}")
        assert time.monotonic() - started < 10.0
        assert (reply.status, reply.json["reason"]) == (400, "BadRequest"), (depth, reply.body[:200])
        assert "nested more than" in reply.json["message"]
    deep_patch = json.dumps({"metadata": {"labels": None}, "x": _nested(MAX_DEPTH + 5)}).encode()
    http_client.post(CM, configmap("target"))
    patched = http_client.patch(f"{CM}/target", deep_patch, "application/merge-patch+json")
    assert patched.status == 400
    assert http_client.get(CM).status == 200


def test_objects_just_within_the_depth_limit_work_end_to_end(http_client: Http) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "blobs.example.knuma.io"},
        "spec": {
            "group": "example.knuma.io",
            "scope": "Namespaced",
            "names": {"plural": "blobs", "kind": "Blob"},
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
    assert http_client.post(CRDS, crd).status == 201
    # The object itself is one level; `_nested(n)` adds n - 1 more: exactly MAX_DEPTH.
    blob = {
        "apiVersion": "example.knuma.io/v1",
        "kind": "Blob",
        "metadata": {"name": "b"},
        "spec": _nested(MAX_DEPTH),
    }
    created = http_client.post(BLOBS, blob)
    assert created.status == 201, created.body[:300]
    assert http_client.get(f"{BLOBS}/b").json["spec"] == blob["spec"]
    patched = http_client.patch(f"{BLOBS}/b", {"metadata": {"labels": {"x": "y"}}}, "application/merge-patch+json")
    assert patched.status == 200, patched.body[:300]
    applied = http_client.request(
        "PATCH",
        f"{BLOBS}/b?fieldManager=me&force=true",
        json.dumps({**blob, "spec": _nested(MAX_DEPTH - 1)}).encode(),
        content_type="application/apply-patch+yaml",
    )
    assert applied.status == 200, applied.body[:300]
    too_deep = {**blob, "metadata": {"name": "c"}, "spec": _nested(MAX_DEPTH + 1)}
    assert http_client.post(BLOBS, too_deep).status == 400


def _blob_crd(http_client: Http) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "blobs.example.knuma.io"},
        "spec": {
            "group": "example.knuma.io",
            "scope": "Namespaced",
            "names": {"plural": "blobs", "kind": "Blob"},
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
    assert http_client.post(CRDS, crd).status in (201, 409)


def test_numbers_that_are_not_finite_are_400_as_kube_apiserver_cannot_decode_them(http_client: Http) -> None:
    """`NaN`, `Infinity` and `1e400` are not JSON numbers Go can decode; YAML's `.nan` and `.inf` cannot become
    JSON. Each is refused in bodies, patches and apply configurations, and nothing is stored."""
    _blob_crd(http_client)
    head = b'{"apiVersion":"example.knuma.io/v1","kind":"Blob","metadata":{"name":"nan"},"spec":{"x":'
    for literal in (b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1.5e999"):
        reply = http_client.post(BLOBS, head + literal + b"}}")
        assert (reply.status, reply.json["reason"]) == (400, "BadRequest"), (literal, reply.body[:200])
        assert "finite" in reply.json["message"]
    for word in (".nan", ".inf", "-.inf"):
        body = f"apiVersion: example.knuma.io/v1\nkind: Blob\nmetadata: {{name: nan}}\nspec: {{x: {word}}}\n"
        reply = http_client.post(BLOBS, body.encode(), content_type="application/yaml")
        assert reply.status == 400 and "finite" in reply.json["message"], (word, reply.body[:200])
    assert http_client.get(f"{BLOBS}/nan").status == 404
    fine = http_client.post(BLOBS, head + b'1e300,"y":0.1,"z":-0.0}}')
    assert fine.status == 201, fine.body[:200]
    patched = http_client.patch(f"{BLOBS}/nan", b'{"spec":{"x":NaN}}', "application/merge-patch+json")
    assert patched.status == 400
    applied = http_client.request(
        "PATCH",
        f"{BLOBS}/nan?fieldManager=me&force=true",
        b"apiVersion: example.knuma.io/v1\nkind: Blob\nmetadata: {name: nan}\nspec: {x: .nan}\n",
        content_type="application/apply-patch+yaml",
    )
    assert applied.status == 400
    assert http_client.get(f"{BLOBS}/nan").json["spec"] == {"x": 1e300, "y": 0.1, "z": -0.0}


def test_an_integer_of_thousands_of_digits_is_400_saying_so(http_client: Http) -> None:
    """Python cannot convert more than 4300 digits to an int; the answer says the number is out of range, not how to
    raise Python's limit. A number of 4300 digits still decodes (and is refused for what it is: no Go integer type
    holds it, see test_fieldschema)."""
    _blob_crd(http_client)
    head = b'{"apiVersion":"example.knuma.io/v1","kind":"Blob","metadata":{"name":"digits"},"spec":{"x":'
    reply = http_client.post(BLOBS, head + b"-" + b"9" * 4301 + b"}}")
    assert reply.status == 400
    assert reply.json["message"] == (
        "error decoding request body as JSON: a number of 4301 digits is out of range (at most int64, 19 digits)"
    )
    assert http_client.post(BLOBS, head + b"9" * 4300 + b"}}").status == 201


def test_watch_lines_decode_to_what_get_returns(http_client: Http) -> None:
    """Watch events are encoded by msgspec, GET and LIST answers by `json`: the spelling may differ (exponents,
    escapes), the decoded objects may not."""
    _blob_crd(http_client)
    rv = http_client.get(BLOBS).json["metadata"]["resourceVersion"]
    spec = {"big": 1e300, "small": 5e-324, "tenth": 0.1, "int": 2**63 - 1, "huge": 2**70, "text": 'é\u2028"\\\n'}
    blob = {"apiVersion": "example.knuma.io/v1", "kind": "Blob", "metadata": {"name": "spelled"}, "spec": spec}
    assert http_client.post(BLOBS, blob).status == 201
    events = http_client.watch(f"{BLOBS}?watch=true&resourceVersion={rv}&timeoutSeconds=1")
    watched = next(e["object"] for e in events if e["object"]["metadata"]["name"] == "spelled")
    got = http_client.get(f"{BLOBS}/spelled").json
    assert watched == got and got["spec"] == spec
