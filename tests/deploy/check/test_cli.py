"""`knuma check` against a real `knuma apiserver` and against API servers that refuse: the exit statuses and the
messages a user acts on (which permission is missing, which cluster is unreachable)."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from knuma.kube.client import http_client
from knuma.local.apiserver.proxy import ProxyRequest, ProxyResponse
from knuma.testing.apiserver import apiserver_in_thread


def knuma_check(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "knuma", "check", "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def kubeconfig_for(tmp_path: Path, url: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": url}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def test_nodes_without_configz_access_and_no_nrt_crd(tmp_path: Path) -> None:
    def forbidden(request: ProxyRequest) -> ProxyResponse:
        body = {"kind": "Status", "status": "Failure", "reason": "Forbidden", "code": 403}
        body["message"] = 'nodes "w1" is forbidden: User "u" cannot get resource "nodes/proxy"'
        return ProxyResponse(403, json.dumps(body).encode())

    with apiserver_in_thread(tmp_path / "api") as api:
        with http_client(api.kubeconfig) as http:
            reply = http.post("/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "w1"}})
            assert reply.status_code == 201, reply.text
        api.register_node_proxy("w1", forbidden)
        result = knuma_check(api.kubeconfig, "-o", "json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["success"] is False
    errors = {(e["node"], e["component"], e["setting"]): e for e in report["errors"]}
    assert errors[("", "NodeResourceTopology", "installed")]["detected"] == "false"
    configz = errors[("w1", "configuration", "configz")]
    assert "HTTP 403" in configz["detected"] and "nodes/proxy" in configz["fix"]
    assert errors[("w1", "NodeResourceTopology", "object")]["detected"] == "missing"


class FakeApi(BaseHTTPRequestHandler):
    """A JSON API server whose answer per path `answer` gives."""

    def answer(self, path: str) -> tuple[int, dict[str, object]]:
        raise NotImplementedError

    def do_GET(self) -> None:
        status, body = self.answer(self.path)
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        del format, args


@contextlib.contextmanager
def serving(handler: type[FakeApi]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class Refusing(FakeApi):
    """An API server whose RBAC lets the user list nodes but not pods."""

    def answer(self, path: str) -> tuple[int, dict[str, object]]:
        if path.startswith("/api/v1/pods"):
            return 403, {
                "kind": "Status",
                "status": "Failure",
                "reason": "Forbidden",
                "code": 403,
                "message": 'pods is forbidden: User "u" cannot list resource "pods" in API group "" '
                "at the cluster scope",
            }
        if path.startswith("/api/v1/nodes?") or path == "/api/v1/nodes":
            return 200, {"kind": "NodeList", "items": [], "metadata": {}}
        return 404, {"kind": "Status", "code": 404}


@pytest.fixture
def refusing_server() -> Iterator[str]:
    with serving(Refusing) as url:
        yield url


def test_a_missing_permission_names_the_verb_and_the_resource(tmp_path: Path, refusing_server: str) -> None:
    result = knuma_check(kubeconfig_for(tmp_path, refusing_server))
    assert result.returncode == 3
    assert result.stdout == ""
    assert "error: cannot check the cluster: forbidden: cannot list pods:" in result.stderr
    assert '{apiGroups: [""], resources: [pods], verbs: [list]}' in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unreachable_cluster_says_where_it_looked(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    result = knuma_check(kubeconfig_for(tmp_path, f"http://127.0.0.1:{port}"))
    assert result.returncode == 3
    assert f"cannot reach the API server at http://127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_flags_exit_2(tmp_path: Path) -> None:
    kubeconfig = kubeconfig_for(tmp_path, "http://127.0.0.1:1")
    assert knuma_check(kubeconfig, "-o", "yaml").returncode == 2
    result = knuma_check(kubeconfig, "--stale-grace", "soon")
    assert result.returncode == 2 and "--stale-grace" in result.stderr
    assert knuma_check(tmp_path / "missing").returncode == 2


class LeasesForbidden(FakeApi):
    """An API server whose RBAC lets the user list everything `knuma check` lists, but not read Leases in
    kube-system (where `knuma up` records its processes)."""

    def answer(self, path: str) -> tuple[int, dict[str, object]]:
        path = path.split("?")[0]
        if path.startswith("/apis/coordination.k8s.io/"):
            return 403, {"kind": "Status", "reason": "Forbidden", "code": 403, "message": "leases forbidden"}
        if path in ("/api/v1/nodes", "/api/v1/pods", "/api/v1/events", "/apis/apps/v1/deployments"):
            return 200, {"kind": "List", "items": [], "metadata": {}}
        return 404, {"kind": "Status", "code": 404}


def test_leases_the_user_may_not_read_do_not_stop_the_check(tmp_path: Path) -> None:
    with serving(LeasesForbidden) as url:
        result = knuma_check(kubeconfig_for(tmp_path, url), "-o", "json")
    assert result.returncode == 1, result.stderr  # checked (no nodes, no CRD), not stopped by the refusal (3)
    assert {e["component"] for e in json.loads(result.stdout)["errors"]} == {"NodeResourceTopology", "nodes", "profile"}
