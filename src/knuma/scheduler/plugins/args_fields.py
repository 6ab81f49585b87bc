"""Reading plugin arguments from a configuration document: one set of checks and messages for every plugin's args
(NodeResourceTopologyMatch, NodeResourcesFit, InterPodAffinity, PodTopologySpread, DefaultPreemption) and the
deployer's parameter files, so a key path and what is accepted read the same wherever a user meets them."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

__all__ = ["Fail", "field_enum", "field_int", "field_mapping", "quoted"]

Fail = Callable[[str, str], NoReturn]
"""`fail(key path, problem)`: raises the caller's configuration error."""


def quoted(value: Any) -> str:
    """A value as the user wrote it: strings in double quotes, the rest as Python shows them."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def field_mapping(value: Any, path: str, fields: Sequence[str], fail: Fail) -> Mapping[str, Any]:
    """A sub-object with only the `fields` it may have ({} when absent)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        fail(path, f"must be a mapping, got {type(value).__name__}")
    for key in value:
        if key not in fields:
            fail(f"{path}.{key}", f"unknown field; expected one of {', '.join(fields)}")
    return value


def field_enum(value: Any, path: str, choices: Sequence[str], default: str, fail: Fail) -> str:
    """One of `choices` (`default` when absent)."""
    if value is None:
        return default
    if value not in choices:
        fail(path, f"unknown value {quoted(value)}; expected one of {', '.join(choices)}")
    return str(value)


def field_int(value: Any, path: str, fail: Fail) -> int:
    """An integer (booleans are not)."""
    if not isinstance(value, int) or isinstance(value, bool):
        fail(path, f"must be an integer, got {quoted(value)}")
    return value
