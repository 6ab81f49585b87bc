"""`TokenReview` and `SubjectAccessReview`: the two APIs a component calls to delegate authentication and
authorization of its own endpoints to the API server (kube-scheduler's secure port, `knuma scheduler --secure-port`).

Both are create-only and stored nowhere; the answer is the request with its `status` filled, `201 Created`.

- `TokenReview` follows `pkg/registry/authentication/tokenreview/storage.go` (`REST.Create`): no namespace, a
  missing `spec.token` is `400 BadRequest` "token is required for TokenReview in authentication", an unknown token
  is `status.authenticated: false`, a known one carries the user (see `authn` for the tokens this server knows).
  `status.audiences` echoes `spec.audiences`: the server's tokens are audience-agnostic, as static tokens are
  (`authenticator.WrapAudienceAgnosticToken`).
- `SubjectAccessReview` follows `pkg/registry/authorization/subjectaccessreview/rest.go` (`REST.Create`) and its
  validation (`pkg/apis/authorization/validation.ValidateSubjectAccessReviewSpec`): exactly one of
  `resourceAttributes` and `nonResourceAttributes`, and a user or a group, else `422 Invalid`. The decision is the
  server's authorization model (`authn.is_privileged`: `system:masters` only); a denial says why in
  `status.reason`.
"""

from __future__ import annotations

from typing import Any

from knuma.api.types import JsonObj
from knuma.local.apiserver import errors
from knuma.local.apiserver.authn import TokenAuthenticator, is_privileged

__all__ = ["SAR_PATH", "TOKENREVIEW_PATH", "review_access", "review_token"]

TOKENREVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"
SAR_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"

_DENIED = (
    "knuma apiserver evaluates no RBAC: it authorizes members of system:masters only (the server token's user, or a "
    "--token-auth-file user in that group)"
)


def _check_kind(body: Any, kind: str, api_version: str) -> JsonObj:
    if not isinstance(body, dict):
        raise errors.bad_request(f"the request body must be a {kind} object")
    if body.get("kind", kind) != kind or body.get("apiVersion", api_version) != api_version:
        raise errors.bad_request(
            f"not a {kind}: got {body.get('apiVersion')!s}/{body.get('kind')!s}; send apiVersion: {api_version}, "
            f"kind: {kind}"
        )
    return body


def _mapping(value: Any) -> JsonObj:
    return value if isinstance(value, dict) else {}


def _answer(body: JsonObj, kind: str, api_version: str, status: JsonObj) -> JsonObj:
    metadata = _mapping(body.get("metadata"))
    return {
        "kind": kind,
        "apiVersion": api_version,
        "metadata": {**metadata, "creationTimestamp": None},
        "spec": body.get("spec") or {},
        "status": status,
    }


def review_token(authenticator: TokenAuthenticator, raw: Any) -> JsonObj:
    """`REST.Create` of tokenreviews: the review with `status` filled."""
    body = _check_kind(raw, "TokenReview", "authentication.k8s.io/v1")
    spec = _mapping(body.get("spec"))
    token = spec.get("token")
    if not isinstance(token, str) or not token:
        raise errors.bad_request("token is required for TokenReview in authentication")
    audiences = [a for a in spec.get("audiences") or [] if isinstance(a, str)]
    user = authenticator.authenticate(token)
    status: JsonObj = {"authenticated": False, "user": {}}
    if user is not None:
        status = {"authenticated": True, "user": user.to_json()}
        if audiences:
            status["audiences"] = audiences
    return _answer(body, "TokenReview", "authentication.k8s.io/v1", status)


def review_access(raw: Any) -> JsonObj:
    """`REST.Create` of subjectaccessreviews: the review with `status` (allowed, or denied with a reason)."""
    body = _check_kind(raw, "SubjectAccessReview", "authorization.k8s.io/v1")
    spec = _mapping(body.get("spec"))
    causes: list[tuple[str, str, str]] = []
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if resource is not None and non_resource is not None:
        causes.append(
            (
                "FieldValueInvalid",
                "spec.nonResourceAttributes",
                "cannot be specified in combination with resourceAttributes",
            )
        )
    if resource is None and non_resource is None:
        causes.append(
            (
                "FieldValueInvalid",
                "spec",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    named = spec.get("user")
    user = named if isinstance(named, str) else ""
    groups = [g for g in spec.get("groups") or [] if isinstance(g, str)]
    if not user and not groups:
        causes.append(("FieldValueInvalid", "spec.user", "at least one of user or group must be specified"))
    if causes:
        raise errors.invalid("SubjectAccessReview", "authorization.k8s.io", "", causes)
    status: JsonObj = {"allowed": True, "reason": "the subject is a member of system:masters"}
    if not is_privileged(user, groups):
        status = {"allowed": False, "reason": _DENIED}
    return _answer(body, "SubjectAccessReview", "authorization.k8s.io/v1", status)
