"""Node proxy: /api/v1/nodes/{name}/proxy/{path} forwards to a handler registered in-process."""

from __future__ import annotations

import json

import pytest

from knuma.local.apiserver import ProxyRequest, ProxyResponse
from knuma.testing.apiserver import RunningApiServer
from tests.local.apiserver.conftest import Http, Kubectl


def node(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def test_proxy_forwards_to_registered_handler(api: RunningApiServer, http_client: Http) -> None:
    http_client.post("/api/v1/nodes", node("sim-0"))
    calls: list[ProxyRequest] = []

    async def configz(request: ProxyRequest) -> ProxyResponse:
        calls.append(request)
        body = {"kubeletconfig": {"topologyManagerPolicy": "single-numa-node", "path": request.path}}
        return ProxyResponse(200, json.dumps(body).encode())

    api.register_node_proxy("sim-0", configz)
    reply = http_client.get("/api/v1/nodes/sim-0/proxy/configz?x=1")
    assert reply.status == 200
    assert reply.json["kubeletconfig"] == {"topologyManagerPolicy": "single-numa-node", "path": "/configz"}
    assert calls[0].method == "GET" and calls[0].query == "x=1"
    assert "authorization" not in {k.lower() for k in calls[0].headers}


def test_proxy_without_handler_is_503_and_unknown_node_404(http_client: Http) -> None:
    http_client.post("/api/v1/nodes", node("real-0"))
    reply = http_client.get("/api/v1/nodes/real-0/proxy/configz")
    assert (reply.status, reply.json["reason"]) == (503, "ServiceUnavailable")
    assert 'no proxy handler for node "real-0"' in reply.json["message"]
    assert http_client.get("/api/v1/nodes/ghost/proxy/configz").status == 404


@pytest.mark.slow
def test_kubectl_get_raw_through_proxy(api: RunningApiServer, http_client: Http, kubectl: Kubectl) -> None:
    http_client.post("/api/v1/nodes", node("sim-1"))
    api.register_node_proxy("sim-1", lambda req: ProxyResponse(200, b'{"ok":true}'))
    out = kubectl("get", "--raw", "/api/v1/nodes/sim-1/proxy/configz").stdout
    assert json.loads(out) == {"ok": True}
