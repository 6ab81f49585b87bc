"""Who a bearer token is, and what that user may do, for `knuma apiserver`.

Authentication: the server's own token (`--token`, the kubeconfig's) is the administrator `knuma-admin` in
`system:masters`; `--token-auth-file` adds users from a static token file, the format of kube-apiserver's
`--token-auth-file` (`pkg/authentication/token/tokenfile.NewCSV`: `token,user,uid,"group1,group2"` per line).
The server issues no ServiceAccount tokens (it has no TokenRequest API), so those are all the tokens it knows.
Every authenticated user also gets `system:authenticated`, as kube-apiserver's `group.NewAuthenticatedGroupAdder`
adds it.

Authorization: the server evaluates no RBAC. It authorizes members of `system:masters`, as kube-apiserver's
privileged-group authorizer (`authorizerfactory.NewPrivilegedGroups`) does before RBAC runs, and denies everyone
else: a static-token user outside `system:masters` is authenticated (a TokenReview says so) but forbidden every
request, and a SubjectAccessReview allows exactly the subjects in `system:masters`. That is what RBAC without any
binding for that user would answer, so a client that delegates authorization sees both outcomes.
"""

from __future__ import annotations

import csv
import hmac
from collections.abc import Mapping
from pathlib import Path

from knuma.api.userinfo import UserInfo
from knuma.errors import ConfigError
from knuma.manifests import UnreadableFile, read_user_file

__all__ = [
    "ADMIN",
    "MASTERS",
    "TokenAuthenticator",
    "TokenFileError",
    "UserInfo",
    "is_privileged",
    "read_token_file",
]

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"


ADMIN = UserInfo("knuma-admin", "", (MASTERS, AUTHENTICATED))
"""The user of the server's own token."""


class TokenFileError(ConfigError):
    """The static token file cannot be read; the message names the line."""


def read_token_file(path: Path) -> dict[str, UserInfo]:
    """Users by token from a kube-apiserver static token file (`tokenfile.NewCSV`): at least token, user and uid per
    line, optional groups as one comma-separated field; blank lines and lines starting with `#` are skipped."""
    try:
        text = read_user_file(path)
    except UnreadableFile as err:
        raise TokenFileError(f"cannot read --token-auth-file {path}: {err.reason}") from None
    users: dict[str, UserInfo] = {}
    for number, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not row or row[0].lstrip().startswith("#"):
            continue
        if len(row) < 3:
            raise TokenFileError(f'{path}:{number}: expected token,user,uid[,"group1,group2"], got {len(row)} field(s)')
        token, user, uid = (part.strip() for part in row[:3])
        if not token or not user:
            raise TokenFileError(f"{path}:{number}: the token and the user must not be empty")
        groups = tuple(g.strip() for g in row[3].split(",") if g.strip()) if len(row) > 3 else ()
        users[token] = UserInfo(user, uid, (*groups, AUTHENTICATED))
    return users


def is_privileged(username: str, groups: tuple[str, ...] | list[str]) -> bool:
    """Whether the server authorizes this subject: `system:masters` only (see the module docstring)."""
    return MASTERS in groups


class TokenAuthenticator:
    """Bearer tokens to users. Every known token is compared in constant time (`hmac.compare_digest`), so the time
    an answer takes says nothing about how much of a token was right."""

    def __init__(self, token: str | None, static: Mapping[str, UserInfo] | None = None) -> None:
        self.token = token
        self.static = dict(static or {})

    def authenticate(self, supplied: str) -> UserInfo | None:
        if not supplied:
            return None
        encoded = supplied.encode()
        if self.token is not None and hmac.compare_digest(encoded, self.token.encode()):
            return ADMIN
        found = None
        for token, user in self.static.items():
            if hmac.compare_digest(encoded, token.encode()):
                found = user
        return found
