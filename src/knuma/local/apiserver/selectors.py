"""Label and field selectors, parsed once per request and matched against stored objects.

The grammar is the one `kubectl -l` and `--field-selector` send: `a=b`, `a==b`, `a!=b`, `a in (x,y)`,
`a notin (x,y)`, `a`, `!a`, separated by commas. Field selectors support only `=`, `==` and `!=` on a fixed set of
fields per kind, like kube-apiserver, and reject anything else with 400 BadRequest.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from knuma.api.types import JsonObj
from knuma.local.apiserver.errors import bad_request


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op == "=":
            return value == self.values[0]
        if self.op == "!=":
            return value != self.values[0]
        if self.op == "in":
            return present and value in self.values
        return not present or value not in self.values  # notin


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current = ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_SET = re.compile(rf"^({_KEY})\s+(in|notin)\s+\(([^)]*)\)$")
_CMP = re.compile(rf"^({_KEY})\s*(==|=|!=)\s*(.*)$")
_EXISTS = re.compile(rf"^(!?)\s*({_KEY})$")
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


def parse_label_selector(text: str | None) -> list[Requirement]:
    """Parse a label selector; raises 400 BadRequest on syntax errors, like kube-apiserver."""
    if not text:
        return []
    reqs: list[Requirement] = []
    for part in _split_top_level(text):
        if m := _SET.match(part):
            values = tuple(v.strip() for v in m.group(4).split(",") if v.strip())
            if not values or not all(_VALUE.match(v) for v in values):
                raise bad_request(f"unable to parse requirement: invalid values in {part!r}")
            reqs.append(Requirement(m.group(1), m.group(3), values))
        elif m := _CMP.match(part):
            value = m.group(4).strip()
            if not _VALUE.match(value):
                raise bad_request(f"unable to parse requirement: invalid label value: {value!r}")
            op = "!=" if m.group(3) == "!=" else "="
            reqs.append(Requirement(m.group(1), op, (value,)))
        elif m := _EXISTS.match(part):
            reqs.append(Requirement(m.group(2), "!" if m.group(1) else "exists"))
        else:
            raise bad_request(f"unable to parse requirement: {part!r}")
    return reqs


def labels_match(reqs: list[Requirement], obj: JsonObj) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(r.matches(labels) for r in reqs)


def match_label_selector_object(selector: JsonObj | None, labels: dict[str, str]) -> bool:
    """Match a structured `LabelSelector` (matchLabels + matchExpressions), as used in specs."""
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        op = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}.get(expr.get("operator", ""))
        if op is None:
            return False
        if not Requirement(expr["key"], op, tuple(expr.get("values") or ())).matches(labels):
            return False
    return True


def _path(*keys: str) -> Callable[[JsonObj], str]:
    def get(obj: JsonObj) -> str:
        cur: Any = obj
        for k in keys:
            if not isinstance(cur, dict):
                return ""
            cur = cur.get(k)
        if cur is None:
            return ""
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return get


_COMMON_FIELDS: dict[str, Callable[[JsonObj], str]] = {
    "metadata.name": _path("metadata", "name"),
    "metadata.namespace": _path("metadata", "namespace"),
}

#: Fields each kind supports in field selectors, beyond metadata.name/namespace (the kube-apiserver sets).
KIND_FIELDS: dict[str, dict[str, Callable[[JsonObj], str]]] = {
    "Pod": {
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.schedulerName": _path("spec", "schedulerName"),
        "spec.serviceAccountName": _path("spec", "serviceAccountName"),
        "spec.hostNetwork": _path("spec", "hostNetwork"),
        "spec.restartPolicy": _path("spec", "restartPolicy"),
        "status.phase": _path("status", "phase"),
        "status.podIP": _path("status", "podIP"),
        "status.nominatedNodeName": _path("status", "nominatedNodeName"),
    },
    "Node": {"spec.unschedulable": _path("spec", "unschedulable")},
    "Namespace": {"status.phase": _path("status", "phase")},
    # pkg/registry/resource/resourceslice/strategy.go: toSelectableFields.
    "ResourceSlice": {"spec.nodeName": _path("spec", "nodeName"), "spec.driver": _path("spec", "driver")},
    "Secret": {"type": _path("type")},
    "Event": {
        "involvedObject.kind": _path("involvedObject", "kind"),
        "involvedObject.name": _path("involvedObject", "name"),
        "involvedObject.namespace": _path("involvedObject", "namespace"),
        "involvedObject.uid": _path("involvedObject", "uid"),
        "reason": _path("reason"),
        "type": _path("type"),
        "source": _path("source", "component"),
    },
}


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    negate: bool
    value: str
    getter: Callable[[JsonObj], str]

    def matches(self, obj: JsonObj) -> bool:
        return (self.getter(obj) == self.value) != self.negate


def parse_field_selector(text: str | None, kind: str) -> list[FieldRequirement]:
    """Parse a field selector for `kind`; unsupported fields are a 400 like `field label not supported: x`."""
    if not text:
        return []
    supported = {**_COMMON_FIELDS, **KIND_FIELDS.get(kind, {})}
    reqs: list[FieldRequirement] = []
    for part in _split_top_level(text):
        m = re.match(r"^([^=!]+?)\s*(==|=|!=)\s*(.*)$", part)
        if not m:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        name = m.group(1).strip()
        getter = supported.get(name)
        if getter is None:
            raise bad_request(f"field label not supported: {name}")
        reqs.append(FieldRequirement(name, m.group(2) == "!=", m.group(3).strip(), getter))
    return reqs


def fields_match(reqs: list[FieldRequirement], obj: JsonObj) -> bool:
    return all(r.matches(obj) for r in reqs)
