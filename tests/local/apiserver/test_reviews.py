"""TokenReview and SubjectAccessReview on a real `knuma apiserver`, over HTTPS, as a delegating component calls them;
and the `--token-auth-file` users they know about."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from knuma.local.apiserver.authn import UserInfo, read_token_file
from knuma.testing.apiserver import RunningApiServer, apiserver_in_thread

from .conftest import Http

VIEWER = UserInfo("viewer", "u-1", ("monitoring", "system:authenticated"))
ROOT = UserInfo("root", "u-2", ("system:masters", "system:authenticated"))


@pytest.fixture
def api(tmp_path: Path) -> Iterator[RunningApiServer]:
    with apiserver_in_thread(tmp_path, static_tokens={"viewer-token": VIEWER, "root-token": ROOT}) as running:
        yield running


def token_review(token: str, audiences: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"token": token}
    if audiences:
        spec["audiences"] = audiences
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}


def access_review(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


def test_token_review_maps_the_server_token_to_the_admin(api: RunningApiServer, http_client: Http) -> None:
    assert api.token
    reply = http_client.post("/apis/authentication.k8s.io/v1/tokenreviews", token_review(api.token, ["x"]))
    assert reply.status == 201, reply.body
    status = reply.json["status"]
    assert status["authenticated"] is True
    assert status["user"] == {"username": "knuma-admin", "groups": ["system:masters", "system:authenticated"]}
    assert status["audiences"] == ["x"]


def test_token_review_knows_the_static_token_users(http_client: Http) -> None:
    status = http_client.post("/apis/authentication.k8s.io/v1/tokenreviews", token_review("viewer-token")).json[
        "status"
    ]
    assert status == {
        "authenticated": True,
        "user": {"username": "viewer", "uid": "u-1", "groups": ["monitoring", "system:authenticated"]},
    }


def test_token_review_of_an_unknown_token_is_not_authenticated(http_client: Http) -> None:
    reply = http_client.post("/apis/authentication.k8s.io/v1/tokenreviews", token_review("nope"))
    assert reply.status == 201
    assert reply.json["status"]["authenticated"] is False


def test_token_review_without_a_token_is_a_bad_request_as_upstream(http_client: Http) -> None:
    reply = http_client.post("/apis/authentication.k8s.io/v1/tokenreviews", token_review(""))
    assert reply.status == 400
    assert reply.json["message"] == "token is required for TokenReview in authentication"


def test_reviews_need_an_authenticated_caller(http_client: Http) -> None:
    reply = http_client.post("/apis/authentication.k8s.io/v1/tokenreviews", token_review("viewer-token"), auth=False)
    assert reply.status == 401


def test_a_static_user_outside_system_masters_is_forbidden_not_unauthenticated(http_client: Http) -> None:
    reply = http_client.get("/api/v1/namespaces", auth=False, headers={"Authorization": "Bearer viewer-token"})
    assert reply.status == 403, reply.body
    assert reply.json["reason"] == "Forbidden"
    assert 'User "viewer"' in reply.json["message"]
    assert (
        http_client.get("/api/v1/namespaces", auth=False, headers={"Authorization": "Bearer root-token"}).status == 200
    )


@pytest.mark.parametrize(
    ("spec", "allowed"),
    [
        ({"user": "knuma-admin", "groups": ["system:masters"]}, True),
        ({"groups": ["system:masters"]}, True),
        ({"user": "viewer", "groups": ["monitoring"]}, False),
        ({"user": "system:serviceaccount:kube-system:prometheus"}, False),
    ],
)
def test_subject_access_review_allows_system_masters_only(
    http_client: Http, spec: dict[str, Any], allowed: bool
) -> None:
    body = access_review(nonResourceAttributes={"path": "/metrics", "verb": "get"}, **spec)
    reply = http_client.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", body)
    assert reply.status == 201, reply.body
    status = reply.json["status"]
    assert status["allowed"] is allowed
    assert reply.json["spec"]["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}
    if not allowed:
        assert "system:masters" in status["reason"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}, "at least one of user or group"),
        ({"user": "u"}, "exactly one of nonResourceAttributes or resourceAttributes"),
        (
            {"user": "u", "resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"verb": "get"}},
            "cannot be specified in combination",
        ),
    ],
)
def test_subject_access_review_refuses_what_kube_apiserver_refuses(
    http_client: Http, spec: dict[str, Any], message: str
) -> None:
    reply = http_client.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", access_review(**spec))
    assert reply.status == 422, reply.body
    assert reply.json["reason"] == "Invalid"
    assert message in reply.json["message"]


def test_a_review_of_the_wrong_kind_is_refused(http_client: Http) -> None:
    reply = http_client.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", token_review("x"))
    assert reply.status == 400
    assert "not a SubjectAccessReview" in reply.json["message"]


def test_the_token_file_reads_kube_apiserver_s_format(tmp_path: Path) -> None:
    path = tmp_path / "tokens.csv"
    path.write_text('# comment\nt1,alice,1,"system:masters,ops"\n\nt2,bob,2\n')
    users = read_token_file(path)
    assert users["t1"] == UserInfo("alice", "1", ("system:masters", "ops", "system:authenticated"))
    assert users["t2"] == UserInfo("bob", "2", ("system:authenticated",))


def test_a_bad_token_file_is_a_clear_cli_error(tmp_path: Path) -> None:
    path = tmp_path / "tokens.csv"
    path.write_text("only-a-token\n")
    proc = subprocess.run(
        [sys.executable, "-m", "knuma", "apiserver", "--token-auth-file", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "tokens.csv:1: expected token,user,uid" in proc.stderr
    assert "Traceback" not in proc.stderr
