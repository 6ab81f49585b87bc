"""Discovery and the non-resource endpoints clients probe before anything else."""

from __future__ import annotations

from tests.local.apiserver.conftest import Http


def test_core_and_group_discovery(http_client: Http) -> None:
    assert http_client.get("/api").json["versions"] == ["v1"]
    groups = {g["name"]: g for g in http_client.get("/apis").json["groups"]}
    for name in ("apps", "coordination.k8s.io", "events.k8s.io", "rbac.authorization.k8s.io", "scheduling.k8s.io"):
        assert groups[name]["preferredVersion"]["version"] == "v1"
    assert "apiextensions.k8s.io" in groups
    core = {r["name"]: r for r in http_client.get("/api/v1").json["resources"]}
    assert core["configmaps"]["shortNames"] == ["cm"]
    assert core["pods"]["singularName"] == "pod"
    assert core["pods"]["namespaced"] is True
    assert core["nodes"]["namespaced"] is False
    assert "watch" in core["pods"]["verbs"]
    assert core["pods/binding"]["verbs"] == ["create"]
    assert {"pods/status", "nodes/proxy", "namespaces/status"} <= set(core)
    apps = {r["name"]: r for r in http_client.get("/apis/apps/v1").json["resources"]}
    assert apps["deployments"]["shortNames"] == ["deploy"]
    assert "deployments/status" in apps
    group = http_client.get("/apis/apps").json
    assert group["kind"] == "APIGroup"
    assert group["preferredVersion"]["groupVersion"] == "apps/v1"


def test_unknown_group_and_resource_are_404_status(http_client: Http) -> None:
    for path in ("/apis/nope.example.com/v1", "/api/v1/frobs", "/apis/apps/v1/frobs", "/nothing/here"):
        reply = http_client.get(path)
        assert reply.status == 404, path
        assert reply.json["reason"] == "NotFound"
        assert reply.json["message"] == "the server could not find the requested resource"


def test_version_health_and_openapi(http_client: Http) -> None:
    version = http_client.get("/version").json
    assert version["major"] == "1" and version["gitVersion"].startswith("v1.")
    for path in ("/healthz", "/readyz", "/livez"):
        reply = http_client.get(path, auth=False)
        assert (reply.status, reply.body) == (200, b"ok")
    v2 = http_client.get("/openapi/v2")
    assert v2.status == 200
    assert v2.body == b""
    assert v2.headers["content-type"] == "application/com.github.proto-openapi.spec.v2"
    assert http_client.get("/openapi/v3").status == 404


def test_requests_without_token_get_401(http_client: Http) -> None:
    reply = http_client.get("/api/v1/namespaces", auth=False)
    assert reply.status == 401
    assert reply.json["reason"] == "Unauthorized"
    bad = http_client.get("/api/v1/namespaces", auth=False, headers={"Authorization": "Bearer wrong"})
    assert bad.status == 401
    assert http_client.get("/api/v1/namespaces").status == 200
