"""Delegated authentication and authorization of a component's own HTTPS endpoints, as kube-scheduler does it for
its secure port: the bearer token goes to the API server in a `TokenReview`, the user it maps to in a
`SubjectAccessReview` for the non-resource URL and the request's verb.

Upstream, in order (`k8s.io/apiserver`):
- `pkg/authentication/authenticatorfactory/delegating.go` (`DelegatingAuthenticatorConfig.New`): with a client CA
  (`--client-ca-file`), a verified client certificate comes first (`x509.NewDynamic` with
  `CommonNameUserConversion`: user = the subject's CN, groups = its O values; no CN: not authenticated, on to the
  token), then the bearer token; `group.NewAuthenticatedGroupAdder` adds `system:authenticated` to whoever either
  authenticated. The certificate is verified against the CA when the TLS connection is made (`certificate_user`
  reads one that was).
- `pkg/server/options/authentication.go` (`DelegatingAuthenticationOptions`, `ApplyTo`) builds a
  `DelegatingAuthenticatorConfig` with anonymous requests enabled (unless `DisableAnonymous`) and a token webhook
  whose answers are cached for `CacheTTL` (10 s, `--authentication-token-webhook-cache-ttl`);
  `pkg/authentication/authenticatorfactory/delegating.go` (`New`) wraps it so that a request *with* a token the
  webhook rejects fails (401, `bearertoken.New`'s `invalid bearer token`), while a request without one is
  `system:anonymous` in `system:unauthenticated` (`unionauth.NewFailOnError` with `anonymous.NewAuthenticator`).
- `plugin/pkg/authenticator/token/webhook/webhook.go` (`WebhookTokenAuthenticator.AuthenticateToken`) posts an
  `authentication.k8s.io/v1` `TokenReview`; `status.authenticated` false is "not authenticated", and an error
  from the API server fails the request.
- `pkg/server/options/authorization.go` (`DelegatingAuthorizationOptions`, `toAuthorizer`): the
  `AlwaysAllowPaths` (kube-scheduler's `cmd/kube-scheduler/app/options/options.go` sets `/healthz`, `/readyz`,
  `/livez`) are authorized without a review; any other request is a `SubjectAccessReview` (user, uid, groups,
  `nonResourceAttributes` path and verb), allowed answers cached `AllowCacheTTL`, denials `DenyCacheTTL` (10 s each;
  `--authorization-webhook-cache-authorized-ttl`, `--authorization-webhook-cache-unauthorized-ttl`).
- A non-resource request's verb is its lower-cased HTTP method (`request.RequestInfoFactory.NewRequestInfo`).

So with the defaults a scrape every 15 s costs at most one review of each kind per 10 s and token, never one per
request.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from knuma.api.userinfo import UserInfo
from knuma.kube import rest
from knuma.kube.errors import KubeApiError
from knuma.kube.rest import AsyncApi

__all__ = ["DEFAULT_ALWAYS_ALLOW_PATHS", "Decision", "DelegatedAuth", "certificate_user"]

log = logging.getLogger("knuma.kube.delegation")

DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
TOKENREVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECTACCESSREVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"

_TIMEOUT = 10.0
"""`TokenRequestTimeout`'s default; the authorization webhook's is the same."""

ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
AUTHENTICATED = "system:authenticated"


def certificate_user(peer: Mapping[str, Any] | None) -> UserInfo | None:
    """`x509.CommonNameUserConversion` of a verified client certificate (`ssl.SSLSocket.getpeercert()`'s dict): the
    subject's common name as the user, its organizations as the groups, in certificate order; None without a
    certificate or without a common name (the request then authenticates by token, or is anonymous)."""
    if not peer:
        return None
    common_name, organizations = "", []
    for rdn in peer.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                common_name = common_name or str(value)  # Go's pkix.Name keeps the first CN
            elif key == "organizationName":
                organizations.append(str(value))
    if not common_name:
        return None
    return UserInfo(common_name, "", tuple(organizations))


def _with_authenticated_group(user: UserInfo) -> UserInfo:
    """`group.AuthenticatedGroupAdder`: `system:authenticated` joins the groups of an authenticated user unless it is
    there (or the user is `system:anonymous` / in `system:unauthenticated`)."""
    if user.username == ANONYMOUS or AUTHENTICATED in user.groups or UNAUTHENTICATED in user.groups:
        return user
    return UserInfo(user.username, user.uid, (*user.groups, AUTHENTICATED))


@dataclass(frozen=True)
class Decision:
    """A refusal: the HTTP status (401, 403, 500) and the message for the client."""

    status: int
    message: str


T = TypeVar("T")


class _TTLCache(Generic[T]):
    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.entries: dict[object, tuple[float, T]] = {}

    def get(self, key: object) -> T | None:
        entry = self.entries.get(key)
        if entry is None or entry[0] <= self.clock():
            self.entries.pop(key, None)
            return None
        return entry[1]

    def put(self, key: object, value: T, ttl: float) -> None:
        if ttl <= 0:
            return
        if len(self.entries) > 4096:  # bounded: drop the expired, then everything if a token storm filled it
            now = self.clock()
            self.entries = {k: v for k, v in self.entries.items() if v[0] > now}
            if len(self.entries) > 4096:
                self.entries.clear()
        self.entries[key] = (self.clock() + ttl, value)


class DelegatedAuth:
    def __init__(
        self,
        http: AsyncApi,
        *,
        token_ttl: float = 10.0,
        allow_ttl: float = 10.0,
        deny_ttl: float = 10.0,
        always_allow_paths: Sequence[str] = DEFAULT_ALWAYS_ALLOW_PATHS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.http = http
        self.token_ttl, self.allow_ttl, self.deny_ttl = token_ttl, allow_ttl, deny_ttl
        self.always_allow = tuple(always_allow_paths)
        self._tokens: _TTLCache[tuple[UserInfo | None]] = _TTLCache(clock)
        """Token hash to (user,), (None,) for a rejected token: both cached, as `cache.New(..., ttl, ttl)`."""
        self._access: _TTLCache[tuple[bool, str]] = _TTLCache(clock)

    async def check(
        self, method: str, path: str, authorization: str, certificate: UserInfo | None = None
    ) -> Decision | None:
        """None when the request may proceed, else why not. `authorization` is the Authorization header ("" when
        absent); `certificate`: the user of the client's verified certificate (`certificate_user`), which wins over
        the token as upstream's union authenticator tries it first."""
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip() if scheme.lower() == "bearer" else ""
        if authorization.strip() and not token:
            # bearertoken.New ignores other schemes: the request is anonymous
            log.debug("ignoring a non-bearer Authorization header")
        if certificate is not None:
            user = _with_authenticated_group(certificate)
        elif token:
            try:
                reviewed = await self._authenticate(token)
            except KubeApiError as err:
                log.warning("TokenReview failed: %s", err)
                return Decision(401, "Unauthorized")
            if reviewed is None:
                return Decision(401, "Unauthorized")
            user = _with_authenticated_group(reviewed)
        else:
            user = UserInfo(ANONYMOUS, "", (UNAUTHENTICATED,))
        if self._always_allowed(path):
            return None
        verb = method.lower()
        try:
            allowed, reason = await self._authorize(user, verb, path)
        except KubeApiError as err:
            log.warning("SubjectAccessReview failed: %s", err)
            return Decision(500, f"Authorization error (user={user.username}, verb={verb}, resource=, subresource=)")
        if allowed:
            return None
        message = f'forbidden: User "{user.username}" cannot {verb} path "{path}"'
        return Decision(403, f"{message}: {reason}" if reason else message)

    def _always_allowed(self, path: str) -> bool:
        """`path.NewAuthorizer`: exact paths, or prefixes written with a trailing `*`."""
        for allowed in self.always_allow:
            if allowed.endswith("*") and path.startswith(allowed[:-1]):
                return True
            if path == allowed:
                return True
        return False

    async def _authenticate(self, token: str) -> UserInfo | None:
        key = hashlib.sha256(token.encode()).digest()  # cached_token_authenticator keys by a hash, never the token
        cached = self._tokens.get(key)
        if cached is not None:
            return cached[0]
        review = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        answer = await rest.request(self.http, "POST", TOKENREVIEWS, body=review, timeout=_TIMEOUT)
        status = answer.get("status") or {}
        user: UserInfo | None = None
        if status.get("authenticated"):
            user = UserInfo.from_json(status.get("user") or {})
        self._tokens.put(key, (user,), self.token_ttl)
        return user

    async def _authorize(self, user: UserInfo, verb: str, path: str) -> tuple[bool, str]:
        key = (user, verb, path)
        cached = self._access.get(key)
        if cached is not None:
            return cached
        spec: dict[str, object] = {
            "user": user.username,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        answer = await rest.request(self.http, "POST", SUBJECTACCESSREVIEWS, body=review, timeout=_TIMEOUT)
        status = answer.get("status") or {}
        decision = (bool(status.get("allowed")), str(status.get("reason", "")))
        self._access.put(key, decision, self.allow_ttl if decision[0] else self.deny_ttl)
        return decision
