"""A Kubernetes-compatible API server (the subset knuma, kubectl, lightkube and kopf use), with real semantics.

`ApiServer` in `server.py` is the entry point; `knuma apiserver` runs it; `knuma.testing.apiserver` starts it for
tests. One concept per module: `store` (objects, resourceVersion, history), `rest` (object rules), `watch`,
`patch`, `fieldmanager` (managedFields and server-side apply), `crd` and `schema`, `selectors`, `discovery`,
`validation`, `defaults`, `durable` (sqlite), `proxy` (node proxy), `app` (HTTP), `kubeconfig`, `bench`.
"""

from knuma.apiserver.proxy import ProxyRequest, ProxyResponse
from knuma.apiserver.server import ApiServer

__all__ = ["ApiServer", "ProxyRequest", "ProxyResponse"]
