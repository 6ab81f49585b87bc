"""`authentication.k8s.io/v1` `UserInfo`: who a token is, as a TokenReview answers it and a SubjectAccessReview
asks about it.

One type for both sides: `knuma apiserver` writes it into its TokenReview answers (`to_json`) and the scheduler's
secure port reads it back (`from_json`) before asking whether that user may read `/metrics`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["UserInfo"]


@dataclass(frozen=True)
class UserInfo:
    """An authenticated user: name, uid (may be empty) and groups. Hashable, so review answers can be cached by it."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        body: dict[str, object] = {"username": self.username, "groups": list(self.groups)}
        if self.uid:
            body["uid"] = self.uid
        return body

    @classmethod
    def from_json(cls, info: Mapping[str, Any]) -> UserInfo:
        return cls(str(info.get("username", "")), str(info.get("uid", "")), tuple(info.get("groups") or ()))
