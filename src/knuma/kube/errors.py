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

from typing import Any

from knuma.errors import OperationFailed

__all__ = [
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeApiError",
    "NotFound",
    "Unauthorized",
    "Unavailable",
    "from_status",
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
    """5xx, or no answer at all (connection refused or reset, timeout): the server cannot serve now; retry later."""


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
