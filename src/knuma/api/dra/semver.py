"""Semantic versions 2.0.0 as `resource.k8s.io` device attributes use them (`version` values).

The API server parses them with `blang/semver/v4` `Parse` (strict: `MAJOR.MINOR.PATCH[-PRE][+BUILD]`, no leading
`v`, no leading zeros in numeric parts); CEL's `semver()` and the comparison methods follow the same precedence
rules (build metadata ignored, a pre-release sorts before its release, numeric identifiers compare numerically and
sort before alphanumeric ones).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from knuma.errors import InvalidInput

__all__ = ["SemVer", "SemVerError"]

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


class SemVerError(InvalidInput):
    """Not a semantic version."""


@functools.total_ordering
@dataclass(frozen=True, slots=True)
class SemVer:
    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> SemVer:
        match = _SEMVER.match(text) if isinstance(text, str) else None
        if not match:
            raise SemVerError(f"invalid semantic version {text!r}: expected MAJOR.MINOR.PATCH such as '1.2.3'")
        pre = tuple(match.group(4).split(".")) if match.group(4) else ()
        build = tuple(match.group(5).split(".")) if match.group(5) else ()
        return cls(int(match.group(1)), int(match.group(2)), int(match.group(3)), pre, build)

    def _key(self) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, pre)

    def compare(self, other: SemVer) -> int:
        a, b = self._key(), other._key()
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SemVer) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __lt__(self, other: SemVer) -> bool:
        return self._key() < other._key()

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text
