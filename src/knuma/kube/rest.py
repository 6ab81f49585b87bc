"""The raw JSON request path to the API server: every call that does not go through lightkube goes through here.

Like kopf's `clients/api.py`, one function sends a request and turns the answer into either the decoded JSON object
or a typed error from `knuma.kube.errors` (`Conflict`, `NotFound`, `Gone`, `Forbidden`, `Unauthorized`, `Invalid`,
`Unavailable` for 5xx and for connections that fail). Callers catch those; none looks at an HTTP status code, and
none sees an `httpx2` exception.

The clients come from `knuma.kube.client.async_http` / `http_client` (base URL, TLS and credentials from the
kubeconfig); these functions take one as their first argument, so a daemon keeps one connection pool for all its
calls. `request` and `stream` are asynchronous (the daemons), `request_sync` serves the synchronous tools (deployer,
operator passes, `knuma detect`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx2

from knuma.api.types import MERGE_PATCH, JsonObj
from knuma.kube.errors import KubeApiError, Unavailable, connection_failure, from_status

__all__ = [
    "JSON",
    "MERGE_PATCH",
    "delete",
    "get",
    "patch",
    "post",
    "put",
    "request",
    "request_sync",
    "stream",
]

JSON = "application/json"

Params = Mapping[str, str] | None
Timeout = float | httpx2.Timeout | None


async def request(
    http: httpx2.AsyncClient,
    method: str,
    path: str,
    *,
    body: Any = None,
    params: Params = None,
    content_type: str | None = None,
    timeout: Timeout = None,
) -> JsonObj:
    """Send one request; the decoded JSON object of a 2xx answer (empty for an empty body), else a typed error.

    A body is sent as JSON; a PATCH's as a JSON merge patch unless `content_type` says otherwise."""
    headers = _headers(method, body, content_type)
    extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    try:
        response = await http.request(method, path, json=body, params=params, headers=headers, **extra)
    except (httpx2.HTTPError, OSError) as err:
        raise _no_answer(http.base_url, method, path, err) from err
    return _decoded(method, response)


async def get(http: httpx2.AsyncClient, path: str, *, params: Params = None, timeout: Timeout = None) -> JsonObj:
    return await request(http, "GET", path, params=params, timeout=timeout)


async def post(http: httpx2.AsyncClient, path: str, body: JsonObj) -> JsonObj:
    return await request(http, "POST", path, body=body)


async def put(http: httpx2.AsyncClient, path: str, body: JsonObj) -> JsonObj:
    return await request(http, "PUT", path, body=body)


async def patch(http: httpx2.AsyncClient, path: str, body: JsonObj) -> JsonObj:
    """A JSON merge patch (`MERGE_PATCH`), the patch every knuma writer sends."""
    return await request(http, "PATCH", path, body=body)


async def delete(http: httpx2.AsyncClient, path: str, *, params: Params = None) -> JsonObj:
    return await request(http, "DELETE", path, params=params)


@contextlib.asynccontextmanager
async def stream(
    http: httpx2.AsyncClient, method: str, path: str, *, params: Params = None, timeout: Timeout = None
) -> AsyncIterator[httpx2.Response]:
    """A streamed answer (a watch): the response once its status is 2xx; a failing status or a connection lost
    while reading the body is raised as the same typed errors as `request`'s."""
    extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    try:
        async with http.stream(method, path, params=params, headers={"Accept": JSON}, **extra) as response:
            if response.is_error:
                await response.aread()
                raise _failed(method, response)
            yield response
    except (httpx2.HTTPError, OSError) as err:
        raise _no_answer(http.base_url, method, path, err) from err


def request_sync(
    http: httpx2.Client,
    method: str,
    path: str,
    *,
    body: Any = None,
    params: Params = None,
    content_type: str | None = None,
    timeout: Timeout = None,
) -> JsonObj:
    """`request` for synchronous callers."""
    headers = _headers(method, body, content_type)
    extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    try:
        response = http.request(method, path, json=body, params=params, headers=headers, **extra)
    except (httpx2.HTTPError, OSError) as err:
        raise _no_answer(http.base_url, method, path, err) from err
    return _decoded(method, response)


def _headers(method: str, body: Any, content_type: str | None) -> dict[str, str]:
    if body is None:
        return {"Accept": JSON}
    return {"Accept": JSON, "Content-Type": content_type or (MERGE_PATCH if method == "PATCH" else JSON)}


def _decoded(method: str, response: httpx2.Response) -> JsonObj:
    if response.is_error:
        raise _failed(method, response)
    if not response.content:
        return {}
    try:
        decoded = response.json()
    except ValueError as err:
        raise KubeApiError(
            method, str(response.request.url), response.status_code, f"the answer is not JSON: {err}"
        ) from err
    if not isinstance(decoded, dict):
        raise KubeApiError(method, str(response.request.url), response.status_code, "the answer is not a JSON object")
    return decoded


def _failed(method: str, response: httpx2.Response) -> KubeApiError:
    """The typed error for a 4xx/5xx answer, with the `Status` object's reason and message when the server sent one
    (kube-apiserver always does; a proxied kubelet or a load balancer may send plain text)."""
    body: JsonObj = {}
    try:
        decoded = response.json()
        if isinstance(decoded, dict):
            body = decoded
    except ValueError:
        pass
    message = str(body.get("message") or response.text.strip()[:300] or response.reason_phrase)
    reason = str(body.get("reason") or response.reason_phrase)
    url = str(response.request.url)
    return from_status(method, url, response.status_code, message, reason=reason, body=body)


def _no_answer(base: httpx2.URL, method: str, path: str, err: Exception) -> KubeApiError:
    """No (complete) answer: `Unavailable` when the connection failed or timed out, a plain `KubeApiError` for the rare
    rest (an answer that cannot be decoded, too many redirects); neither has a status."""
    url = str(base).rstrip("/") + path
    if isinstance(err, httpx2.TransportError | OSError):
        return Unavailable(method, url, None, connection_failure(err))
    return KubeApiError(method, url, None, f"{type(err).__name__}: {err}" if str(err) else type(err).__name__)
