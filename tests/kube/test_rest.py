"""The request path against a real `knuma apiserver`: each refusal arrives as its typed error, with the server's
`Status` message and the URL, through the asynchronous, the synchronous and the streaming call alike."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from knuma.kube import MERGE_PATCH, rest
from knuma.kube.client import api_session, async_http, http_client
from knuma.kube.errors import (
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    KubeApiError,
    NotFound,
    Unauthorized,
    Unavailable,
)
from knuma.testing.apiserver import RunningApiServer, apiserver_in_thread

CM = "/api/v1/namespaces/default/configmaps"


def configmap(name: str, namespace: str = "default", finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApiServer]:
    with apiserver_in_thread(tmp_path_factory.mktemp("api"), watch_window=5) as running:
        yield running


Call = tuple[str, str, dict[str, Any] | None, dict[str, str] | None]


def send(api: RunningApiServer, mode: str, call: Call, kubeconfig: Path | None = None) -> dict[str, Any]:
    """One request, through the synchronous function or the asynchronous one (with the `httpx2` client, or the
    `ApiSession` the scheduler binds with)."""
    method, path, body, params = call
    config = kubeconfig or api.kubeconfig
    if mode == "sync":
        with http_client(config) as http:
            return rest.request_sync(http, method, path, body=body, params=params)

    async def run() -> dict[str, Any]:
        http: rest.AsyncApi = api_session(config) if mode == "session" else async_http(config)
        try:
            return await rest.request(http, method, path, body=body, params=params)
        finally:
            await http.aclose()

    return asyncio.run(run())


MODES = pytest.mark.parametrize("mode", ["async", "sync", "session"])


@MODES
def test_success_returns_the_decoded_object(api: RunningApiServer, mode: str) -> None:
    created = send(api, mode, ("POST", CM, configmap(f"ok-{mode}"), None))
    assert created["metadata"]["name"] == f"ok-{mode}" and created["metadata"]["uid"]
    listed = send(api, mode, ("GET", CM, None, {"fieldSelector": f"metadata.name=ok-{mode}"}))
    assert [i["metadata"]["name"] for i in listed["items"]] == [f"ok-{mode}"]


@MODES
def test_409_is_conflict(api: RunningApiServer, mode: str) -> None:
    send(api, mode, ("POST", CM, configmap(f"twice-{mode}"), None))
    with pytest.raises(Conflict) as caught:
        send(api, mode, ("POST", CM, configmap(f"twice-{mode}"), None))
    err = caught.value
    assert (err.status, err.reason, err.method) == (409, "AlreadyExists", "POST")
    assert err.message == f'configmaps "twice-{mode}" already exists'
    assert err.url == f"{api.url}{CM}"
    assert str(err) == f"POST {api.url}{CM}: HTTP 409 AlreadyExists: {err.message}"


@MODES
def test_stale_resource_version_is_conflict(api: RunningApiServer, mode: str) -> None:
    created = send(api, mode, ("POST", CM, configmap(f"stale-{mode}"), None))
    send(api, mode, ("PUT", f"{CM}/stale-{mode}", {**created, "data": {"k": "w"}}, None))
    with pytest.raises(Conflict, match="the object has been modified"):
        send(api, mode, ("PUT", f"{CM}/stale-{mode}", {**created, "data": {"k": "x"}}, None))


@MODES
def test_404_is_not_found(api: RunningApiServer, mode: str) -> None:
    with pytest.raises(NotFound) as caught:
        send(api, mode, ("GET", f"{CM}/missing", None, None))
    assert caught.value.status == 404
    assert caught.value.message == 'configmaps "missing" not found'
    assert caught.value.url.endswith(f"{CM}/missing")


@MODES
def test_410_is_gone(api: RunningApiServer, mode: str) -> None:
    for n in range(3):
        send(api, mode, ("POST", CM, configmap(f"page-{mode}-{n}"), None))
    token = send(api, mode, ("GET", CM, None, {"limit": "1"}))["metadata"]["continue"]
    for n in range(10):  # the server keeps 5 revisions: the token's snapshot expires
        send(api, mode, ("POST", CM, configmap(f"later-{mode}-{n}"), None))
    with pytest.raises(Gone) as caught:
        send(api, mode, ("GET", CM, None, {"limit": "1", "continue": token}))
    assert (caught.value.status, caught.value.reason) == (410, "Expired")


@MODES
def test_403_is_forbidden(api: RunningApiServer, mode: str) -> None:
    namespace = f"closing-{mode}"
    send(api, mode, ("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}}, None))
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    send(api, mode, ("POST", path, configmap("held", namespace, ["example.com/hold"]), None))
    send(api, mode, ("DELETE", f"/api/v1/namespaces/{namespace}", None, None))  # Terminating while `held` stays
    with pytest.raises(Forbidden, match="because it is being terminated") as caught:
        send(api, mode, ("POST", path, configmap("late", namespace), None))
    assert caught.value.status == 403
    send(api, mode, ("PATCH", f"{path}/held", {"metadata": {"finalizers": None}}, None))  # let it go


@MODES
def test_401_is_unauthorized(api: RunningApiServer, mode: str, tmp_path: Path) -> None:
    config = yaml.safe_load(api.kubeconfig.read_text())
    for user in config["users"]:
        user["user"]["token"] = "not-the-token"
    wrong = tmp_path / "kubeconfig"
    wrong.write_text(yaml.safe_dump(config))
    with pytest.raises(Unauthorized) as caught:
        send(api, mode, ("GET", CM, None, None), kubeconfig=wrong)
    assert (caught.value.status, caught.value.message) == (401, "Unauthorized")


@MODES
def test_422_is_invalid_with_the_causes(api: RunningApiServer, mode: str) -> None:
    with pytest.raises(Invalid, match="Bad_Name") as caught:
        send(api, mode, ("POST", CM, configmap("Bad_Name"), None))
    assert caught.value.status == 422
    causes = caught.value.body["details"]["causes"]
    assert [c["field"] for c in causes] == ["metadata.name"]


@MODES
def test_5xx_is_unavailable(api: RunningApiServer, mode: str) -> None:
    node = f"proxyless-{mode}"
    send(api, mode, ("POST", "/api/v1/nodes", {"metadata": {"name": node}}, None))
    with pytest.raises(Unavailable, match="no proxy handler") as caught:
        send(api, mode, ("GET", f"/api/v1/nodes/{node}/proxy/configz", None, None))
    assert (caught.value.status, caught.value.reason) == (503, "ServiceUnavailable")


@MODES
def test_other_4xx_is_the_base_error(api: RunningApiServer, mode: str) -> None:
    with pytest.raises(KubeApiError) as caught:  # a body that is not a ConfigMap for this URL
        send(api, mode, ("POST", CM, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}, None))
    assert type(caught.value) is KubeApiError and caught.value.status == 400


@MODES
def test_no_answer_is_unavailable_without_status(mode: str, tmp_path: Path) -> None:
    with apiserver_in_thread(tmp_path) as gone:
        pass  # stopped: nothing listens on its port any more
    with pytest.raises(Unavailable) as caught:
        send(gone, mode, ("GET", CM, None, None))
    assert caught.value.status is None
    assert caught.value.url == f"{gone.url}{CM}"
    assert caught.value.message == "connection refused"  # the OS's words, also under httpx's async wrapper
    assert str(caught.value) == f"cannot reach the API server at {gone.url} (GET {CM}): connection refused"
    assert not isinstance(caught.value, httpx2.HTTPError)  # callers see only knuma's errors


def test_patch_sends_a_merge_patch(api: RunningApiServer) -> None:
    async def run() -> dict[str, Any]:
        http = async_http(api.kubeconfig)
        try:
            await rest.post(http, CM, {**configmap("merged"), "data": {"a": "1", "b": "2"}})
            return await rest.patch(http, f"{CM}/merged", {"data": {"b": None, "c": "3"}})
        finally:
            await http.aclose()

    assert MERGE_PATCH == "application/merge-patch+json"
    assert asyncio.run(run())["data"] == {"a": "1", "c": "3"}  # merge semantics: null deletes a key


def test_stream_maps_a_refused_watch(api: RunningApiServer) -> None:
    async def run() -> None:
        http = async_http(api.kubeconfig)
        try:
            async with rest.stream(http, "GET", "/apis/example.com/v1/widgets", params={"watch": "true"}):
                raise AssertionError("a watch of an unserved resource must not start")
        finally:
            await http.aclose()

    with pytest.raises(NotFound) as caught:
        asyncio.run(run())
    assert caught.value.method == "GET" and "/apis/example.com/v1/widgets?watch=true" in caught.value.url


def test_lightkube_calls_raise_the_same_errors(api: RunningApiServer, tmp_path: Path) -> None:
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.core_v1 import ConfigMap

    from knuma.kube.client import lightkube_errors, sync_client

    with sync_client(api.kubeconfig) as client:
        client.create(ConfigMap(metadata=ObjectMeta(name="typed"), data={"k": "v"}), namespace="default")
        with pytest.raises(Conflict) as conflict, lightkube_errors():
            client.create(ConfigMap(metadata=ObjectMeta(name="typed"), data={"k": "v"}), namespace="default")
        with pytest.raises(NotFound) as missing, lightkube_errors():
            client.get(ConfigMap, "absent", namespace="default")
    assert (conflict.value.status, conflict.value.method) == (409, "POST")
    assert conflict.value.message == 'configmaps "typed" already exists'
    assert missing.value.url == f"{api.url}{CM}/absent"
    with apiserver_in_thread(tmp_path) as gone:
        pass
    with sync_client(gone.kubeconfig) as client, pytest.raises(Unavailable) as down, lightkube_errors():
        client.get(ConfigMap, "absent", namespace="default")
    assert down.value.status is None and down.value.url == f"{gone.url}{CM}/absent"


def test_api_errors_are_knuma_errors() -> None:
    from knuma.errors import KnumaError, OperationFailed

    for cls in (KubeApiError, Conflict, Forbidden, Gone, Invalid, NotFound, Unauthorized, Unavailable):
        assert issubclass(cls, OperationFailed) and issubclass(cls, KnumaError)


def test_session_rereads_a_rotated_token_file_after_a_401(api: RunningApiServer, tmp_path: Path) -> None:
    """The session caches the kubeconfig's `Authorization` header; a 401 makes the authenticator run again (here:
    re-read the token file the kubelet rotates), and the request is retried once with the new header."""
    config = yaml.safe_load(api.kubeconfig.read_text())
    token = config["users"][0]["user"].pop("token")
    token_file = tmp_path / "token"
    token_file.write_text("stale-token")
    config["users"][0]["user"]["tokenFile"] = str(token_file)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))

    async def run() -> None:
        session = api_session(kubeconfig)
        try:
            with pytest.raises(Unauthorized):  # the file's token is wrong: refreshed once, still refused
                await rest.get(session, CM)
            token_file.write_text(token)  # rotated
            listed = await rest.get(session, CM)
            assert listed["kind"] == "ConfigMapList"
        finally:
            await session.aclose()

    asyncio.run(run())
