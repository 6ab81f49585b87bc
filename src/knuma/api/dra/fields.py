"""Field-path validation errors in the API server's format, and the name rules the `resource.k8s.io` types use.

Errors are collected, not raised one by one, so that a user sees every problem of an object at once, as
kube-apiserver reports them: `ResourceClaim.resource.k8s.io "gpu" is invalid: spec.devices.requests[0].name:
Required value`. The wording of each kind follows `k8s.io/apimachinery/pkg/util/validation/field` (`Required value`,
`Invalid value: ...`, `Duplicate value: ...`, `Too many: ...`, `Unsupported value: ...`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from knuma.api.names import dns1123_label_errors, dns1123_subdomain_errors, max_len_error
from knuma.errors import InvalidInput

__all__ = [
    "FieldError",
    "FieldErrors",
    "ValidationError",
    "dns_label_error",
    "dns_subdomain_error",
    "qualified_name_errors",
]

_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _show(value: object) -> str:
    """Values as the API server prints them: strings quoted, numbers and booleans bare."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    try:
        return json.dumps(value, default=str, sort_keys=True)
    except TypeError:  # keys of mixed types cannot be sorted
        return json.dumps(value, default=str)


@dataclass(frozen=True, slots=True)
class FieldError:
    path: str
    kind: str
    """`Required value`, `Invalid value`, `Duplicate value`, `Too many`, `Unsupported value` or `Forbidden`."""
    detail: str = ""
    value: object = None
    has_value: bool = False

    def __str__(self) -> str:
        text = f"{self.path}: {self.kind}"
        if self.has_value:
            text += f": {_show(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text


@dataclass
class FieldErrors:
    """An accumulator of field errors for one object."""

    errors: list[FieldError] = field(default_factory=list)

    def required(self, path: str, detail: str = "") -> None:
        self.errors.append(FieldError(path, "Required value", detail))

    def invalid(self, path: str, value: object, detail: str) -> None:
        self.errors.append(FieldError(path, "Invalid value", detail, value, True))

    def duplicate(self, path: str, value: object) -> None:
        self.errors.append(FieldError(path, "Duplicate value", "", value, True))

    def too_many(self, path: str, actual: int, limit: int) -> None:
        self.errors.append(FieldError(path, "Too many", f"must have at most {limit} items", actual, True))

    def unsupported(self, path: str, value: object, allowed: Sequence[str]) -> None:
        detail = "supported values: " + ", ".join(json.dumps(a) for a in allowed)
        self.errors.append(FieldError(path, "Unsupported value", detail, value, True))

    def forbidden(self, path: str, detail: str) -> None:
        self.errors.append(FieldError(path, "Forbidden", detail))

    def check_name(self, path: str, value: object, rule: str = "subdomain") -> str:
        """A required string name: return it, recording what is wrong with it."""
        if value is None or value == "":
            self.required(path)
            return ""
        if not isinstance(value, str):
            self.invalid(path, value, "must be a string")
            return ""
        problem = dns_label_error(value) if rule == "label" else dns_subdomain_error(value)
        if problem:
            self.invalid(path, value, problem)
        return value

    def check_qualified_name(self, path: str, value: object, *, require_domain: bool = False) -> str:
        if not isinstance(value, str) or not value:
            self.required(path) if not value else self.invalid(path, value, "must be a string")
            return ""
        for problem in qualified_name_errors(value, require_domain=require_domain):
            self.invalid(path, value, problem)
        return value

    def raise_if_any(self, kind: str, name: str) -> None:
        if self.errors:
            raise ValidationError(kind, name, tuple(self.errors))


class ValidationError(InvalidInput):
    """An object the API server would reject with 422 Unprocessable Entity."""

    def __init__(self, kind: str, name: str, errors: Iterable[FieldError]) -> None:
        self.kind, self.name, self.errors = kind, name, tuple(errors)
        joined = ", ".join(str(e) for e in self.errors)
        if len(self.errors) > 1:
            joined = f"[{joined}]"
        super().__init__(f"{kind} {json.dumps(name)} is invalid: {joined}")


def dns_label_error(value: str) -> str:
    """`IsDNS1123Label`'s first message (`knuma.api.names`); empty when valid."""
    return next(iter(dns1123_label_errors(value)), "")


def dns_subdomain_error(value: str, max_length: int = 253) -> str:
    """`IsDNS1123Subdomain`'s first message (`knuma.api.names`), at most `max_length` characters (a DRA domain: 63);
    empty when valid."""
    if len(value) > max_length:
        return max_len_error(max_length)
    return next(iter(dns1123_subdomain_errors(value)), "")


def qualified_name_errors(value: str, *, require_domain: bool = False) -> list[str]:
    """`validateQualifiedName` of `resource.k8s.io`: `[domain/]identifier`, the domain a DNS subdomain of at most 63
    characters, the identifier a C identifier of at most 32 characters."""
    domain, slash, ident = value.rpartition("/")
    problems = []
    if slash:
        if not domain:
            problems.append("the domain must not be empty")
        else:
            problem = dns_subdomain_error(domain, 63)
            if problem:
                problems.append(f"the domain {problem}")
    elif require_domain:
        problems.append("must include a domain")
    if not ident:
        problems.append("the name must not be empty")
    elif len(ident) > 32:
        problems.append("the name must be no more than 32 characters")
    elif not _C_IDENTIFIER.match(ident):
        problems.append(
            "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
            "characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
            "'[A-Za-z_][A-Za-z0-9_]*')"
        )
    return problems


def mapping(raw: object, path: str, errors: FieldErrors) -> Mapping[str, Any]:
    """A sub-object, or an empty one (recording an error) when it is not a mapping."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        errors.invalid(path, raw, "must be an object")
        return {}
    return raw


def document(raw: object, errors: FieldErrors) -> Mapping[str, Any]:
    """A whole object: a mapping, or an empty one with an error recorded (a JSON body that is `null` or a list)."""
    if not isinstance(raw, Mapping):
        errors.invalid("<object>", raw, "must be an object")
        return {}
    return raw


def items(raw: object, path: str, errors: FieldErrors, limit: int | None = None) -> list[Any]:
    """A list field, or empty (recording an error) when it is not a list; `limit` records `Too many`."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        errors.invalid(path, raw, "must be a list")
        return []
    if limit is not None and len(raw) > limit:
        errors.too_many(path, len(raw), limit)
    return raw


def optional_str(raw: Mapping[str, Any], key: str, path: str, errors: FieldErrors) -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        errors.invalid(f"{path}.{key}" if path else key, value, "must be a string")
        return ""
    return value


def optional_bool(raw: Mapping[str, Any], key: str, path: str, errors: FieldErrors) -> bool | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        errors.invalid(f"{path}.{key}", value, "must be a boolean")
        return None
    return value


def optional_int(raw: Mapping[str, Any], key: str, path: str, errors: FieldErrors) -> int | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        errors.invalid(f"{path}.{key}", value, "must be an integer")
        return None
    return value
