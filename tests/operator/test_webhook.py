"""The conversion webhook over real HTTPS on loopback: ConversionReview bodies as kube-apiserver sends them, the
certificate trusted as the CRDs' caBundle makes the API server trust it; `knuma operator --webhook-port` serves it
and installs its CRDs with strategy Webhook; `knuma render operator` wires Service, Secret and CRDs together."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from knuma.kube.client import http_client
from knuma.local.apiserver.tls import Certificate, self_signed
from knuma.operator.webhook import WebhookServer
from knuma.serving.tls import ServingCertificate
from knuma.testing.apiserver import apiserver_in_thread

KNUMA = str(Path(sys.executable).with_name("knuma"))
V1 = "nodetopology.openshift.io/v1"
ALPHA = "nodetopology.openshift.io/v1alpha1"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
ALPHA_NRO = {
    "apiVersion": ALPHA,
    "kind": "NUMAResourcesOperator",
    "metadata": {"name": "numaresourcesoperator", "uid": "1"},
    "spec": {
        "nodeGroups": [{"machineConfigPoolSelector": {"matchLabels": {"a": "b"}}, "disablePodsFingerprinting": True}]
    },
}


def _review(desired: str, *objects: dict[str, Any], uid: str = "705ab4f5-6393-11e8-b7cc-42010a800002") -> bytes:
    body = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": list(objects)},
    }
    return json.dumps(body).encode()


def _post(port: int, ca_pem: str, body: bytes, path: str = "/convert") -> tuple[int, bytes]:
    """POST over TLS, verifying the server against `ca_pem` and the name `localhost`, as the API server does."""
    context = ssl.create_default_context(cadata=ca_pem)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        head = (
            f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        tls.sendall(head.encode() + body)
        data = b""
        while chunk := tls.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def _write_cert(directory: Path, cert: Certificate) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tls.crt").write_text(cert.cert_pem)
    (directory / "tls.key").write_text(cert.key_pem)


async def test_conversion_reviews_over_https(tmp_path: Path) -> None:
    cert = self_signed(["localhost", "127.0.0.1"], common_name="knuma-operator-webhook")
    _write_cert(tmp_path, cert)
    server = WebhookServer(ServingCertificate(tmp_path / "tls.crt", tmp_path / "tls.key", purpose="webhook"))
    port = await server.start("127.0.0.1", 0)
    try:
        status, body = await asyncio.to_thread(_post, port, cert.cert_pem, _review(V1, ALPHA_NRO, uid="abc"))
        assert status == 200, body
        answer = json.loads(body)
        assert answer["apiVersion"] == "apiextensions.k8s.io/v1" and answer["kind"] == "ConversionReview"
        response = answer["response"]
        assert response["uid"] == "abc" and response["result"] == {"status": "Success"}
        [converted] = response["convertedObjects"]
        assert converted["apiVersion"] == V1 and converted["metadata"] == ALPHA_NRO["metadata"]
        assert converted["spec"]["nodeGroups"][0]["config"]["podsFingerprinting"] == "Disabled"

        # an object the webhook cannot convert: Failure with the reason, which the API server returns to the client
        status, body = await asyncio.to_thread(
            _post, port, cert.cert_pem, _review(V1, {"apiVersion": V1, "kind": "Pod"})
        )
        response = json.loads(body)["response"]
        assert status == 200 and response["result"]["status"] == "Failure"
        assert "cannot convert kind 'Pod'" in response["result"]["message"] and response["convertedObjects"] == []

        status, body = await asyncio.to_thread(_post, port, cert.cert_pem, b"{not json")
        assert status == 400 and b"bad request" in body
        status, body = await asyncio.to_thread(_post, port, cert.cert_pem, b"{}", "/other")
        assert status == 404
    finally:
        await server.stop()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_knuma_operator_serves_the_webhook_and_installs_webhook_crds(tmp_path: Path) -> None:
    cert = self_signed(["localhost", "127.0.0.1"], common_name="knuma-operator-webhook")
    certs = tmp_path / "certs"
    _write_cert(certs, cert)
    port = _free_port()
    log = tmp_path / "operator.log"
    with apiserver_in_thread(tmp_path / "api") as api, log.open("w") as err:
        args = ["--kubeconfig", str(api.kubeconfig), "--metrics-port", "0", "--no-leader-elect"]
        args += ["--webhook-port", str(port), "--webhook-cert-dir", str(certs), "-n", "ops"]
        env = {k: v for k, v in os.environ.items() if k != "POD_NAMESPACE"}
        proc = subprocess.Popen([KNUMA, "operator", *args], stdout=subprocess.DEVNULL, stderr=err, env=env)
        try:
            deadline = time.monotonic() + 30
            while "operator started" not in log.read_text():
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
            assert f"serving the conversion webhook (HTTPS) on port {port}" in log.read_text()
            status, body = _post(port, cert.cert_pem, _review(ALPHA, {**ALPHA_NRO, "apiVersion": V1}))
            assert status == 200 and json.loads(body)["response"]["convertedObjects"][0]["apiVersion"] == ALPHA
            with http_client(api.kubeconfig) as http:
                crd = http.get(f"{CRDS}/numaresourcesoperators.nodetopology.openshift.io").json()
            conversion = crd["spec"]["conversion"]
            assert conversion["strategy"] == "Webhook"
            client = conversion["webhook"]["clientConfig"]
            service = {"namespace": "ops", "name": "knuma-operator-webhook", "path": "/convert", "port": 443}
            assert client["service"] == service
            assert base64.b64decode(client["caBundle"]).decode() == cert.cert_pem
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(20)
    assert proc.returncode == 0, log.read_text()


def test_a_missing_certificate_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [KNUMA, "operator", "--webhook-port", "9443", "--webhook-cert-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert f"conversion webhook TLS certificate {tmp_path}/tls.crt does not exist" in done.stderr
    assert "--webhook-cert-dir" in done.stderr


def test_render_operator_wires_the_webhook_and_can_leave_it_out() -> None:
    done = subprocess.run([KNUMA, "render", "operator"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    objects = [o for o in yaml.safe_load_all(done.stdout) if o]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    [secret] = by_kind["Secret"]
    [service] = by_kind["Service"]
    [deployment] = by_kind["Deployment"]
    ca = secret["stringData"]["ca.crt"]
    assert secret["type"] == "kubernetes.io/tls" and secret["stringData"]["tls.crt"] == ca
    for crd in by_kind["CustomResourceDefinition"]:
        webhook = crd["spec"]["conversion"]["webhook"]
        assert crd["spec"]["conversion"]["strategy"] == "Webhook"
        assert webhook["clientConfig"]["service"]["name"] == service["metadata"]["name"]
        assert webhook["clientConfig"]["service"]["namespace"] == service["metadata"]["namespace"]
        assert base64.b64decode(webhook["clientConfig"]["caBundle"]).decode() == ca
    pod = deployment["spec"]["template"]
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    [container] = pod["spec"]["containers"]
    assert "--webhook-port=9443" in container["args"] and "--webhook-address=0.0.0.0" in container["args"]
    assert {"name": "webhook", "containerPort": 9443, "protocol": "TCP"} in container["ports"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "webhook-cert")
    assert f"--webhook-cert-dir={mount['mountPath']}" in container["args"]
    assert {"name": "webhook-cert", "secret": {"secretName": secret["metadata"]["name"]}} in pod["spec"]["volumes"]
    ingress = next(p for p in by_kind["NetworkPolicy"] if p["metadata"]["name"].endswith("ingress-to-webhook"))
    assert ingress["spec"]["ingress"][0]["ports"][0]["port"] == 9443
    # the certificate is valid for the name the API server dials, and verifies as its own CA
    context = ssl.create_default_context(cadata=ca)
    names = context.get_ca_certs()[0]["subjectAltName"]
    assert ("DNS", "knuma-operator-webhook.numaresources-operator.svc") in names

    done = subprocess.run(
        [KNUMA, "render", "operator", "--no-conversion-webhook"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    objects = [o for o in yaml.safe_load_all(done.stdout) if o]
    assert {o["kind"] for o in objects}.isdisjoint({"Secret", "Service"})
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    assert [c["spec"]["conversion"] for c in crds] == [{"strategy": "None"}] * 2
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    assert not any(a.startswith("--webhook") for a in deployment["spec"]["template"]["spec"]["containers"][0]["args"])
