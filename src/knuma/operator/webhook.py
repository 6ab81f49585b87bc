"""The operator's conversion webhook: `apiextensions.k8s.io/v1` ConversionReviews for v1alpha1 <-> v1 over HTTPS.

numaresources-operator serves v1alpha1 through controller-runtime's conversion webhook (`--enable-webhooks`,
`--webhook-port 9443`, certificates in a directory). On a real cluster whose CRDs say `strategy: Webhook`, the API
server sends every v1alpha1 read and write of the two kinds here; `knuma.api.numaresources_conversion` does the
field work (the same function for both kinds and directions).

The protocol (kube-apiserver `apiextensions-apiserver/pkg/apiserver/conversion/webhook_converter.go`): a POST of
`{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": {"uid", "desiredAPIVersion",
"objects"}}`; the answer is the same kind with `response: {uid, convertedObjects, result}`, `result.status`
`Success`, or `Failure` with a `message` (the API server then fails the request with it). A body that is not a
ConversionReview is a 400.

Every replica serves it (the Service load-balances over all of them), leader or not: conversion is stateless. The
serving certificate is reloaded when its files change (`knuma.serving.tls`), as a rotated Secret is.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from knuma.api.numaresources_conversion import ConversionError, convert
from knuma.serving.http import Response, SimpleHTTPServer
from knuma.serving.tls import ServingCertificate

__all__ = ["PATH", "WebhookServer", "review"]

log = logging.getLogger("knuma.operator.webhook")

PATH = "/convert"
_REVIEW_API = "apiextensions.k8s.io/v1"


def review(body: Any) -> dict[str, Any]:
    """The ConversionReview answering `body` (a decoded ConversionReview); raises `ValueError` when `body` is not
    one."""
    if (
        not isinstance(body, dict)
        or body.get("kind") != "ConversionReview"
        or not isinstance(body.get("request"), dict)
    ):
        raise ValueError("expected a ConversionReview with a request")
    if body.get("apiVersion") != _REVIEW_API:
        raise ValueError(f"unsupported ConversionReview apiVersion {body.get('apiVersion')!r}: expected {_REVIEW_API}")
    request = body["request"]
    uid, desired, objects = request.get("uid", ""), request.get("desiredAPIVersion", ""), request.get("objects")
    response: dict[str, Any] = {"uid": uid}
    try:
        if not isinstance(objects, list):
            raise ConversionError("request.objects: expected a list")
        response["convertedObjects"] = [convert(obj, desired) for obj in objects]
        response["result"] = {"status": "Success"}
    except ConversionError as err:
        log.warning("conversion %s to %s failed: %s", uid, desired, err)
        response["convertedObjects"] = []
        response["result"] = {"status": "Failure", "message": str(err)}
    return {"apiVersion": _REVIEW_API, "kind": "ConversionReview", "response": response}


def _handle(body: bytes) -> Response:
    try:
        answer = review(json.loads(body))
    except (ValueError, UnicodeDecodeError) as err:
        return 400, "text/plain", f"bad request: {err}\n".encode()
    return 200, "application/json", json.dumps(answer).encode()


class WebhookServer:
    """HTTPS on `port`, POST `/convert`; `certificate` supplies the TLS context per connection."""

    def __init__(self, certificate: ServingCertificate) -> None:
        self.certificate = certificate
        self.server = SimpleHTTPServer({}, tls=certificate.context, posts={PATH: _handle})

    async def start(self, host: str, port: int) -> int:
        return await self.server.start(host, port)

    async def stop(self) -> None:
        await self.server.stop()
