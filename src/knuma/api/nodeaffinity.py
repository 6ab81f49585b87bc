"""Node selectors and node affinity (core/v1), with the semantics of `k8s.io/component-helpers/scheduling/corev1/
nodeaffinity`: what `nodeSelector`, `requiredDuringSchedulingIgnoredDuringExecution` and
`preferredDuringSchedulingIgnoredDuringExecution` select.

- Terms are ORed, the requirements of a term ANDed; an empty term (no `matchExpressions`, no `matchFields`) selects no
  node, and so does a term with an invalid requirement (upstream skips such terms: "lazy errors").
- `matchExpressions` use label selector operators In, NotIn, Exists, DoesNotExist, Gt and Lt (Gt/Lt compare base-10
  int64 values; a label that is not an integer does not match). `matchFields` support only In and NotIn with exactly
  one value, on `metadata.name`.

Parsing returns the errors with their field paths, so a configuration file (`NodeAffinityArgs.addedAffinity`) can be
rejected with a precise message while pod specs, which the API server validated, are read leniently.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "OBJECT_NAME_FIELD",
    "FieldRequirement",
    "NodeSelector",
    "NodeSelectorTerm",
    "PreferredSchedulingTerms",
    "RequiredNodeAffinity",
    "Requirement",
    "label_key_error",
    "node_labels",
    "parse_node_selector",
    "parse_preferred_terms",
    "preferred_terms_of",
    "required_node_names",
]

OBJECT_NAME_FIELD = "metadata.name"
LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_OPERATORS = ("In", "NotIn")

_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_INT64 = re.compile(r"^[+-]?[0-9]+$")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def label_key_error(key: str) -> str | None:
    """`validation.IsQualifiedName`: an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return f"invalid label key {_q(key)}: the prefix must be a DNS subdomain"
    if not name or len(name) > 63 or not _NAME.match(name):
        return (
            f"invalid label key {_q(key)}: the name must be 1-63 alphanumeric characters, '-', '_' or '.', "
            "starting and ending with an alphanumeric character"
        )
    return None


def _label_value_error(value: str) -> str | None:
    if value and (len(value) > 63 or not _NAME.match(value)):
        return (
            f"invalid label value {_q(value)}: at most 63 alphanumeric characters, '-', '_' or '.', "
            "starting and ending with an alphanumeric character"
        )
    return None


def _int64(text: str) -> int | None:
    """Go `strconv.ParseInt(text, 10, 64)`."""
    if not _INT64.match(text):
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def _q(value: object) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True, slots=True)
class Requirement:
    """One `matchExpressions` entry (a label selector requirement)."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()
    number: int = 0
    """The Gt/Lt operand."""

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            return self.key in labels and labels[self.key] in self.values
        if op == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        if self.key not in labels:
            return False
        value = _int64(labels[self.key])
        if value is None:
            return False
        return value > self.number if op == "Gt" else value < self.number


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One `matchFields` entry: `metadata.name` equal (In) or not equal (NotIn) to one value."""

    key: str
    equal: bool
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        return (fields.get(self.key, "") == self.value) == self.equal


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    labels: tuple[Requirement, ...] | None = None
    """None when the term has no `matchExpressions`."""
    fields: tuple[FieldRequirement, ...] | None = None
    """None when the term has no `matchFields`."""

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        if self.labels is None and self.fields is None:
            return False
        if self.labels is not None and not all(r.matches(labels) for r in self.labels):
            return False
        if self.fields is not None and name:
            fields = {OBJECT_NAME_FIELD: name}
            return all(r.matches(fields) for r in self.fields)
        return True


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """`v1.NodeSelector`: its terms ORed. Terms that did not parse are left out (they select nothing)."""

    terms: tuple[NodeSelectorTerm, ...] = ()

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        return any(term.matches(labels, name) for term in self.terms)


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerms:
    terms: tuple[tuple[int, NodeSelectorTerm], ...] = ()
    """(weight, term); terms of weight 0 and empty terms are left out, as upstream."""

    def score(self, labels: Mapping[str, str], name: str) -> int:
        """The sum of the weights of the matching terms."""
        return sum(weight for weight, term in self.terms if term.matches(labels, name))


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """`GetRequiredNodeAffinity`: the pod's `nodeSelector` and required node affinity, both of which must match."""

    node_selector: tuple[tuple[str, str], ...] | None = None
    affinity: NodeSelector | None = None

    @property
    def empty(self) -> bool:
        return self.node_selector is None and self.affinity is None

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        if self.node_selector is not None and not all(labels.get(k) == v for k, v in self.node_selector):
            return False
        return self.affinity is None or self.affinity.matches(labels, name)

    @classmethod
    def from_pod_spec(cls, spec: Mapping[str, Any]) -> RequiredNodeAffinity:
        selector = spec.get("nodeSelector")
        pairs = None
        if isinstance(selector, Mapping) and selector:
            pairs = tuple((str(k), str(v)) for k, v in selector.items())
        required = _node_affinity(spec).get("requiredDuringSchedulingIgnoredDuringExecution")
        affinity = None
        if isinstance(required, Mapping):
            affinity, _ = parse_node_selector(required)
        return cls(pairs, affinity)


def _node_affinity(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    affinity = spec.get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def preferred_terms_of(spec: Mapping[str, Any]) -> PreferredSchedulingTerms:
    """The pod's preferred node affinity. Terms that do not parse are left out (upstream fails the scheduling attempt
    with an error instead; the API server rejects such pods, so this only matters for hand-made objects)."""
    raw = _node_affinity(spec).get("preferredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        return PreferredSchedulingTerms()
    terms: list[tuple[int, NodeSelectorTerm]] = []
    for item in raw:  # one at a time, so that one bad term does not drop the others
        parsed, errors = parse_preferred_terms([item])
        if not errors:
            terms.extend(parsed.terms)
    return PreferredSchedulingTerms(tuple(terms))


def required_node_names(spec: Mapping[str, Any]) -> frozenset[str] | None:
    """NodeAffinity's PreFilter: the node names the required terms allow through `matchFields metadata.name In`, or
    None when some term does not restrict names (terms are ORed). An empty set: the terms conflict."""
    required = _node_affinity(spec).get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    if not isinstance(terms, Sequence) or isinstance(terms, str) or not terms:
        return None
    names: set[str] = set()
    for term in terms:
        term_names: set[str] | None = None
        fields = term.get("matchFields") if isinstance(term, Mapping) else None
        for req in fields if isinstance(fields, Sequence) and not isinstance(fields, str) else ():
            if isinstance(req, Mapping) and req.get("key") == OBJECT_NAME_FIELD and req.get("operator") == "In":
                values = {str(v) for v in req.get("values") or ()}
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        names |= term_names
    return frozenset(names)


def node_labels(node: Mapping[str, Any] | None) -> Mapping[str, str]:
    """`metadata.labels` of a core/v1 Node object (empty without one)."""
    if not node:
        return {}
    labels = (node.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, Mapping) else {}


# -- parsing --------------------------------------------------------------------------------------------------------


def _items(raw: Any, path: str, errors: list[str]) -> Sequence[Any]:
    if raw is None:
        return ()
    if isinstance(raw, Sequence) and not isinstance(raw, str):
        return raw
    errors.append(f"{path}: must be a list")
    return ()


def _requirement(raw: Any, path: str, errors: list[str]) -> Requirement | None:
    if not isinstance(raw, Mapping):
        errors.append(f"{path}: must be a mapping with key, operator and values")
        return None
    found = len(errors)
    key, op = raw.get("key"), raw.get("operator")
    values = _items(raw.get("values"), f"{path}.values", errors)
    strings = [v for v in values if isinstance(v, str)]
    if len(strings) != len(values):
        errors.append(f"{path}.values: must be a list of strings")
    if not isinstance(key, str) or not key:
        errors.append(f"{path}.key: required")
    elif (problem := label_key_error(key)) is not None:
        errors.append(f"{path}.key: {problem}")
    number = 0
    if op in ("In", "NotIn"):
        if not values:
            errors.append(f"{path}.values: for 'In', 'NotIn' operators, values set can't be empty")
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errors.append(f"{path}.values: values set must be empty for exists and does not exist")
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errors.append(f"{path}.values: for 'Gt', 'Lt' operators, exactly one value is required")
        for i, value in enumerate(strings):
            parsed = _int64(value)
            if parsed is None:
                errors.append(f"{path}.values[{i}]: for 'Gt', 'Lt' operators, the value must be an integer")
            else:
                number = parsed
    else:
        errors.append(f"{path}.operator: unsupported value {_q(op)}; expected one of {', '.join(LABEL_OPERATORS)}")
    for i, value in enumerate(strings):
        if (problem := _label_value_error(value)) is not None:
            errors.append(f"{path}.values[{i}]: {problem}")
    if len(errors) > found:
        return None
    assert isinstance(key, str) and isinstance(op, str)
    return Requirement(key, op, frozenset(strings), number)


def _field_requirement(raw: Any, path: str, errors: list[str]) -> FieldRequirement | None:
    if not isinstance(raw, Mapping):
        errors.append(f"{path}: must be a mapping with key, operator and values")
        return None
    op, key = raw.get("operator"), raw.get("key")
    values = _items(raw.get("values"), f"{path}.values", errors)
    if op not in FIELD_OPERATORS:
        errors.append(f"{path}.operator: unsupported value {_q(op)}; expected one of {', '.join(FIELD_OPERATORS)}")
        return None
    if len(values) != 1 or not isinstance(values[0], str):
        errors.append(f"{path}.values: must have one element")
        return None
    return FieldRequirement(str(key or ""), op == "In", values[0])


def _is_empty_term(raw: Mapping[str, Any]) -> bool:
    return not raw.get("matchExpressions") and not raw.get("matchFields")


def _term(raw: Mapping[str, Any], path: str, errors: list[str]) -> NodeSelectorTerm | None:
    found = len(errors)
    labels = fields = None
    expressions = _items(raw.get("matchExpressions"), f"{path}.matchExpressions", errors)
    if expressions:
        parsed = [_requirement(r, f"{path}.matchExpressions[{i}]", errors) for i, r in enumerate(expressions)]
        labels = tuple(r for r in parsed if r is not None)
    match_fields = _items(raw.get("matchFields"), f"{path}.matchFields", errors)
    if match_fields:
        parsed_fields = [_field_requirement(r, f"{path}.matchFields[{i}]", errors) for i, r in enumerate(match_fields)]
        fields = tuple(r for r in parsed_fields if r is not None)
    return None if len(errors) > found else NodeSelectorTerm(labels, fields)


def parse_node_selector(raw: Mapping[str, Any], path: str = "") -> tuple[NodeSelector, list[str]]:
    """A `v1.NodeSelector` (`{nodeSelectorTerms: [...]}`) and the errors found, as `path: problem` strings. Terms
    with errors are left out of the selector; empty terms too (they select nothing)."""
    errors: list[str] = []
    prefix = f"{path}.nodeSelectorTerms" if path else "nodeSelectorTerms"
    terms = []
    for i, term in enumerate(_items(raw.get("nodeSelectorTerms"), prefix, errors)):
        if not isinstance(term, Mapping):
            errors.append(f"{prefix}[{i}]: must be a mapping with matchExpressions and/or matchFields")
            continue
        if _is_empty_term(term):
            continue
        parsed = _term(term, f"{prefix}[{i}]", errors)
        if parsed is not None:
            terms.append(parsed)
    return NodeSelector(tuple(terms)), errors


def parse_preferred_terms(raw: Sequence[Any], path: str = "") -> tuple[PreferredSchedulingTerms, list[str]]:
    """`[]v1.PreferredSchedulingTerm` and the errors found (`NewPreferredSchedulingTerms`)."""
    errors: list[str] = []
    terms = []
    for i, item in enumerate(raw):
        where = f"{path}[{i}]" if path else f"[{i}]"
        if not isinstance(item, Mapping):
            errors.append(f"{where}: must be a mapping with weight and preference")
            continue
        weight = item.get("weight", 0)
        if not isinstance(weight, int) or isinstance(weight, bool):
            errors.append(f"{where}.weight: must be an integer")
            continue
        preference = item.get("preference") or {}
        if not isinstance(preference, Mapping):
            errors.append(f"{where}.preference: must be a node selector term")
            continue
        if weight == 0 or _is_empty_term(preference):
            continue
        term = _term(preference, f"{where}.preference", errors)
        if term is not None:
            terms.append((weight, term))
    return PreferredSchedulingTerms(tuple(terms)), errors
