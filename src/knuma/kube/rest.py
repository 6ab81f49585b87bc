"""The raw JSON request path to the API server: every call that does not go through lightkube goes through here.

Like kopf's `clients/api.py`, one function sends a request and turns the answer into either the decoded JSON object
or a typed error from `knuma.kube.errors` (`Conflict`, `NotFound`, `Gone`, `Forbidden`, `Unauthorized`, `Invalid`,
`Unavailable` for 5xx and for connections that fail). Callers catch those; none looks at an HTTP status code, and
none sees an `httpx2` exception.

The clients come from `knuma.kube.client.async_http` / `http_client` (base URL, TLS and credentials from the
kubeconfig); these functions take one as their first argument, so a daemon keeps one connection pool for all its
calls. The asynchronous requests also accept an `ApiSession` (`knuma.kube.client.api_session`: same kubeconfig,
knuma's own keep-alive HTTP/1.1 connections, a fraction of the client CPU per request) for the scheduler's per-pod
writes. `request` and `stream` are asynchronous (the daemons), `request_sync` serves the synchronous tools
(deployer, operator passes, `knuma detect`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx2

from knuma.api.types import MERGE_PATCH, JsonObj
from knuma.kube.errors import KubeApiError, Unavailable, connection_failure, from_status
from knuma.kube.session import Answer, ApiSession

__all__ = [
    "JSON",
    "MERGE_PATCH",
    "AsyncApi",
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
_COMPACT = json.JSONEncoder(separators=(",", ":"))
"""`json.dumps(body, separators=(",", ":"))`'s encoder, built once instead of per request."""
AsyncApi = httpx2.AsyncClient | ApiSession
"""What the asynchronous requests accept: the `httpx2` client, or the faster `ApiSession` for hot write paths."""


async def request(
    http: AsyncApi,
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
    if isinstance(http, ApiSession):
        content = None if body is None else _COMPACT.encode(body).encode()
        seconds = timeout.read if isinstance(timeout, httpx2.Timeout) else timeout
        return _decoded(
            method, await http.send(method, path, content=content, params=params, headers=headers, timeout=seconds)
        )
    extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    try:
        response = await http.request(method, path, json=body, params=params, headers=headers, **extra)
    except (httpx2.HTTPError, OSError) as err:
        raise _no_answer(http.base_url, method, path, err) from err
    return _decoded(method, _answer(response))


async def get(http: AsyncApi, path: str, *, params: Params = None, timeout: Timeout = None) -> JsonObj:
    return await request(http, "GET", path, params=params, timeout=timeout)


async def post(http: AsyncApi, path: str, body: JsonObj) -> JsonObj:
    return await request(http, "POST", path, body=body)


async def put(http: AsyncApi, path: str, body: JsonObj) -> JsonObj:
    return await request(http, "PUT", path, body=body)


async def patch(http: AsyncApi, path: str, body: JsonObj, *, content_type: str = MERGE_PATCH) -> JsonObj:
    """A JSON merge patch (`MERGE_PATCH`), the patch knuma writers send; `STRATEGIC_MERGE_PATCH` where a list must
    merge by key (a pod's status conditions)."""
    return await request(http, "PATCH", path, body=body, content_type=content_type)


async def delete(http: AsyncApi, path: str, *, params: Params = None, body: JsonObj | None = None) -> JsonObj:
    """`body`: DeleteOptions (a grace period, preconditions)."""
    return await request(http, "DELETE", path, params=params, body=body)


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
                raise _failed(method, _answer(response))
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
    return _decoded(method, _answer(response))


def _headers(method: str, body: Any, content_type: str | None) -> dict[str, str]:
    if body is None:
        return {"Accept": JSON}
    return {"Accept": JSON, "Content-Type": content_type or (MERGE_PATCH if method == "PATCH" else JSON)}


def _answer(response: httpx2.Response) -> Answer:
    return Answer(response.status_code, response.reason_phrase, response.content, str(response.request.url))


def _decoded(method: str, answer: Answer) -> JsonObj:
    if answer.status >= 400:
        raise _failed(method, answer)
    if not answer.content:
        return {}
    try:
        decoded = json.loads(answer.content)
    except ValueError as err:
        raise KubeApiError(method, answer.url, answer.status, f"the answer is not JSON: {err}") from err
    if not isinstance(decoded, dict):
        raise KubeApiError(method, answer.url, answer.status, "the answer is not a JSON object")
    return decoded


def _failed(method: str, answer: Answer) -> KubeApiError:
    """The typed error for a 4xx/5xx answer, with the `Status` object's reason and message when the server sent one
    (kube-apiserver always does; a proxied kubelet or a load balancer may send plain text)."""
    body: JsonObj = {}
    try:
        decoded = json.loads(answer.content)
        if isinstance(decoded, dict):
            body = decoded
    except ValueError:
        pass
    text = answer.content.decode("utf-8", errors="replace")
    message = str(body.get("message") or text.strip()[:300] or answer.reason)
    reason = str(body.get("reason") or answer.reason)
    return from_status(method, answer.url, answer.status, message, reason=reason, body=body)


def _no_answer(base: httpx2.URL, method: str, path: str, err: Exception) -> KubeApiError:
    """No (complete) answer: `Unavailable` when the connection failed or timed out, a plain `KubeApiError` for the rare
    rest (an answer that cannot be decoded, too many redirects); neither has a status."""
    url = str(base).rstrip("/") + path
    if isinstance(err, httpx2.TransportError | OSError):
        return Unavailable(method, url, None, connection_failure(err))
    return KubeApiError(method, url, None, f"{type(err).__name__}: {err}" if str(err) else type(err).__name__)
