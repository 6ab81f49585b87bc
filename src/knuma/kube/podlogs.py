"""Reading a container's log (`GET /api/v1/namespaces/NS/pods/NAME/log`): plain text, which `knuma.kube.rest` (JSON
objects only) does not return; failures become the same typed errors (`knuma.kube.errors`)."""

from __future__ import annotations

from urllib.parse import quote

import httpx2

from knuma.kube.errors import KubeApiError, Unavailable, from_status

__all__ = ["read_log"]


def read_log(http: httpx2.Client, namespace: str, pod: str, container: str, tail_lines: int | None = None) -> str:
    """The container's log (its last `tail_lines` lines); `NotFound`, `Forbidden`, ... when the API server or the
    kubelet behind it refuses, `Unavailable` when there is no answer."""
    path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(pod, safe='')}/log"
    params = {"container": container}
    if tail_lines is not None:
        params["tailLines"] = str(tail_lines)
    url = str(http.base_url).rstrip("/") + path
    try:
        response = http.get(path, params=params, headers={"Accept": "text/plain, application/json"})
    except (httpx2.HTTPError, OSError) as err:
        kind = Unavailable if isinstance(err, httpx2.TransportError | OSError) else KubeApiError
        raise kind("GET", url, None, f"{type(err).__name__}: {err}" if str(err) else type(err).__name__) from err
    if response.is_error:
        body: dict[str, object] = {}
        try:
            decoded = response.json()
            if isinstance(decoded, dict):
                body = decoded
        except ValueError:
            pass
        message = str(body.get("message") or response.text.strip()[:300] or response.reason_phrase)
        reason = str(body.get("reason") or response.reason_phrase)
        raise from_status("GET", url, response.status_code, message, reason=reason, body=body)
    return response.text
