"""The only layer that talks to an API server: client set-up, the request path and its typed errors, informers,
server-side apply, waits.

Daemons and tools (scheduler, exporter, deployer, operator, simulated nodes) build on these modules and keep their
decisions in pure functions elsewhere.

Two client styles, each with its rule:

- **Raw JSON** (`knuma.kube.rest` over `client.async_http` / `client.http_client`) for hot paths and for anything
  that stays a plain dict: informers (list and watch), binds, status and heartbeat writes, leases, events, discovery,
  the node proxy. Every such call goes through `rest.request` / `rest.request_sync` / `rest.stream` (or the
  `get`/`post`/`put`/`patch`/`delete` shorthands), which return the decoded object or raise a typed error from
  `knuma.kube.errors`: `Conflict` (409), `NotFound` (404), `Gone` (410), `Forbidden` (403), `Unauthorized` (401),
  `Invalid` (422), `Unavailable` (5xx or no answer), each carrying the server's `Status` message and the URL.
  Callers catch those classes; no module outside `knuma.kube` (and the API server itself, `knuma.local.apiserver`)
  compares an HTTP status code, which `tests/test_layers.py` checks.
- **lightkube** (`client.sync_client` / `async_client`) for typed one-off calls where its models or its server-side
  apply help: applying manifests (`apply`), waiting on typed objects (`wait`), the exporter's NRT publisher. Wrapped
  in `client.lightkube_errors()`, a lightkube call raises the same typed errors (the publisher does this); the
  deployer and the operator, which only report a failed apply, still read lightkube's own `ApiError`.

Patches are JSON merge patches (`MERGE_PATCH`, defined with the other content types in `knuma.api.types`;
lightkube's `PatchType.MERGE` is the same type), except a condition added to a pod's status, which is a strategic
merge patch (`STRATEGIC_MERGE_PATCH`: conditions merge by type, as kube-scheduler's `PatchPodStatus` sends them).
"""

from knuma.api.types import MERGE_PATCH

__all__ = ["MERGE_PATCH"]
