"""API errors as Kubernetes `Status` objects.

Clients (kubectl, lightkube, kopf) branch on `reason` and `code`, so every failure the server reports is an
`ApiError` carrying the same reason/code pair a real kube-apiserver would send.
"""

from __future__ import annotations

from knuma.api.types import JsonObj
from knuma.errors import KnumaError


class ApiError(KnumaError):
    """An error that is answered with a `kind: Status` body."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: JsonObj | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> JsonObj:
        """The `Status` body sent to the client."""
        body: JsonObj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def _details(group: str, resource: str, name: str | None) -> JsonObj:
    details: JsonObj = {"kind": resource}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    return details


def _qualified(group: str, resource: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(group: str, resource: str, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{_qualified(group, resource)} "{name}" not found', details=_details(group, resource, name)
    )


def already_exists(group: str, resource: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{_qualified(group, resource)} "{name}" already exists',
        details=_details(group, resource, name),
    )


def conflict(group: str, resource: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(group, resource)} "{name}": {why}',
        details=_details(group, resource, name),
    )


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """A 422 `Invalid` error; each cause is (reason, field, message) like `FieldValueRequired`."""
    text = "; ".join(f"{field}: {message}" for _, field, message in causes)
    details: JsonObj = {
        "name": name,
        "kind": kind,
        "causes": [{"reason": r, "message": m, "field": f} for r, f, m in causes],
    }
    if group:
        details["group"] = group
    label = f"{kind}.{group}" if group else kind
    if len(causes) > 1:
        text = f"[{text}]"
    return ApiError(422, "Invalid", f'{label} "{name}" is invalid: {text}', details=details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def method_not_allowed(message: str = "the server does not allow this method on the requested resource") -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(415, "UnsupportedMediaType", f'the body of the request was in an unknown format: "{content_type}"')


def resource_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden(username: str, method: str, path: str) -> ApiError:
    """What kube-apiserver answers an authenticated user its authorizers deny (the verb as a request verb)."""
    return ApiError(403, "Forbidden", f'forbidden: User "{username}" cannot {method.lower()} path "{path}"')


def admission_forbidden(group: str, resource: str, name: str, why: str) -> ApiError:
    """`admission.NewForbidden`: an admission plugin refused the object (`apierrors.NewForbidden`'s wording)."""
    return ApiError(
        403,
        "Forbidden",
        f'{_qualified(group, resource)} "{name}" is forbidden: {why}',
        details=_details(group, resource, name),
    )


def forbidden_namespace_terminating(namespace: str, kind: str, name: str) -> ApiError:
    return ApiError(
        403,
        "Forbidden",
        f'{kind} "{name}" is forbidden: unable to create new content in namespace {namespace} '
        "because it is being terminated",
    )


def namespace_not_found(namespace: str) -> ApiError:
    return not_found("", "namespaces", namespace)
