"""What an API server call can fail with, one class per answer a caller handles differently.

kube-apiserver answers a failed request with an HTTP status and a `Status` object (`reason`, `message`); these
classes are those statuses, in the spirit of kopf's `clients/errors.py` and client-go's `apierrors.IsConflict` and
friends: a caller writes `except Conflict:` instead of comparing status codes, and every message carries the
server's words and the URL, so a log line or an error report says which object and why.

`from_status` is the only place in knuma that maps a status code to a class (`knuma.kube.rest` calls it for every
raw request). A connection that fails before any answer (refused, reset, timed out) is `Unavailable` too, with no
status: for a caller it means the same as a 503, try again later.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from knuma.errors import OperationFailed

__all__ = [
    "CHECK_CONNECTION",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeApiError",
    "NotFound",
    "Unauthorized",
    "Unavailable",
    "cannot_reach",
    "connection_failure",
    "from_status",
    "server_of",
]


class KubeApiError(OperationFailed):
    """The API server refused or could not serve a request; `status` is the HTTP status (None when no answer came),
    `reason` and `message` the server's `Status` fields, `url` the request's URL.

    An `OperationFailed` of `knuma.errors`: something outside knuma (the API server) failed or refused."""

    def __init__(
        self,
        method: str,
        url: str,
        status: int | None,
        message: str,
        *,
        reason: str = "",
        body: dict[str, Any] | None = None,
    ) -> None:
        self.method = method
        self.url = url
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}
        answer = f"HTTP {status} {reason}".rstrip() if status is not None else "no answer"
        super().__init__(f"{method} {url}: {answer}: {message}")

    @property
    def summary(self) -> str:
        """The server's answer without the request (`Forbidden: ...`), for a line that already names the object;
        with no answer at all, the whole message (it names the server that could not be reached)."""
        if self.status is None:
            return str(self)
        return f"{self.reason or self.status}: {self.message}"


class Unauthorized(KubeApiError):
    """401: the credentials are missing, wrong or expired (check the kubeconfig's token or certificate)."""


class Forbidden(KubeApiError):
    """403: the user may not do this (RBAC), or the namespace is being terminated."""


class NotFound(KubeApiError):
    """404: the object (or the resource type: a CRD not installed) does not exist."""


class Conflict(KubeApiError):
    """409: the object already exists, or it changed since it was read (a stale `resourceVersion`)."""


class Gone(KubeApiError):
    """410: the `resourceVersion` or `continue` token is older than the server keeps; list again."""


class Invalid(KubeApiError):
    """422: the object fails validation; `body["details"]["causes"]` names each field."""


class Unavailable(KubeApiError):
    """5xx, or no answer at all (connection refused or reset, timeout): the server cannot serve now; retry later.

    Without an answer the message leads with the server, as a user reads it in a log or an error: `cannot reach the
    API server at https://127.0.0.1:1234 (GET /api/v1/nodes): connection refused`."""

    def __str__(self) -> str:
        if self.status is not None:
            return super().__str__()
        parts = urlsplit(self.url)
        return cannot_reach(server_of(self.url), self.message, f"{self.method} {parts.path or '/'}")


CHECK_CONNECTION = "check --kubeconfig / --context and that the server is running"
"""What a command adds after `cannot_reach`'s message: the user's two ways of pointing it at a server."""


def server_of(url: str) -> str:
    """`scheme://host:port` of a URL: the API server a request went to, as the kubeconfig names it."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else url


def cannot_reach(server: str, reason: str, request: str = "") -> str:
    """The one wording of an API server that did not answer, naming it: every command and daemon log says so."""
    where = f" ({request})" if request else ""
    return f"cannot reach the API server at {server}{where}: {reason}"


def connection_failure(err: BaseException) -> str:
    """Why a connection failed, in the operating system's words (`connection refused`, `connection timed out`,
    `name or service not known`, `TLS: certificate verify failed`), from the first `OSError` with an errno in the
    exception chain: HTTP clients wrap it in their own errors (httpx's asynchronous `All connection attempts
    failed` hides it in `__cause__`). Falls back to `TYPE: message`."""
    seen: set[int] = set()
    pending: list[BaseException] = [err]
    timeout = False
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        name = type(current).__name__
        if name in ("SSLCertVerificationError", "SSLError") and isinstance(current, OSError):
            detail = getattr(current, "verify_message", None) or getattr(current, "reason", None) or current
            return f"TLS: {str(detail).lower()}"
        if isinstance(current, OSError) and isinstance(current.errno, int):
            # the errno's own words: asyncio's "Connect call failed ('127.0.0.1', 1234)" carries ECONNREFUSED;
            # resolver errors (socket.gaierror) have negative codes and only their strerror
            words = os.strerror(current.errno) if current.errno > 0 else str(current.strerror or current)
            return words[:1].lower() + words[1:]
        timeout = timeout or isinstance(current, TimeoutError) or "Timeout" in name
        pending += [c for c in (current.__cause__, current.__context__) if c is not None]
        pending += list(getattr(current, "exceptions", ()))  # an ExceptionGroup of attempts
    if timeout:
        return "timed out"
    text = str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


_BY_STATUS: dict[int, type[KubeApiError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
}


def from_status(
    method: str, url: str, status: int, message: str, *, reason: str = "", body: dict[str, Any] | None = None
) -> KubeApiError:
    """The error for an HTTP status of 400 or more (other 4xx, like 400 or 415, are a plain `KubeApiError`)."""
    cls = Unavailable if status >= 500 else _BY_STATUS.get(status, KubeApiError)
    return cls(method, url, status, message, reason=reason, body=body)
