"""A Kubernetes-compatible API server (the subset knuma, kubectl, lightkube and kopf use), with real semantics.

`ApiServer` in `server.py` is the entry point; `knuma apiserver` runs it; `knuma.testing.apiserver` starts it for
tests. One concept per module:

- `store` (objects, the resourceVersion counter, watch history) and `durable` (sqlite backend);
- `rest` (object rules: metadata, concurrency, status, validation), `gc` (finalizers, ownerReferences, namespace
  deletion), `subresources` (scale, binding), `conversion` (served vs stored shapes);
- `patch` (JSON, merge, strategic merge) and `fieldmanager` (managedFields, server-side apply);
- `crd` and `schema` (CustomResourceDefinitions, openAPIV3Schema validation and pruning);
- `selectors`, `watch`, `tables` (kubectl's server-side printing), `discovery`, `validation`, `defaults`;
- `app` (HTTP routing), `protobuf` (kubectl's protobuf bodies), `tls` (self-signed serving cert), `kubeconfig`,
  `proxy` (node proxy handlers), `bench` (loopback throughput).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from knuma.local.apiserver.proxy import ProxyRequest, ProxyResponse

if TYPE_CHECKING:
    from knuma.local.apiserver.server import ApiServer

__all__ = ["ApiServer", "ProxyRequest", "ProxyResponse"]


def __getattr__(name: str) -> Any:
    """`ApiServer` is imported when asked for, not with the package: a simulated node imports only `proxy` (to serve
    its kubelet endpoints), and the server's modules (routing, validation, CEL) took a second of every node process's
    start."""
    if name == "ApiServer":
        from knuma.local.apiserver.server import ApiServer

        return ApiServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
