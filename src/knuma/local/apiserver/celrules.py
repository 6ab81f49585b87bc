"""CRD validation rules (`x-kubernetes-validations`): CEL expressions evaluated against custom objects on write.

Follows kube-apiserver's `apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go` (`Validator.validate`,
`validateExpressions`, `validateMap`, `validateArray`, `fieldErrorForReason`, `ruleMessageOrDefault`):

- every rule of a schema node runs with `self` bound to the value at that node, for every non-null value (each
  list item, each map value); at the resource root `self` holds `apiVersion`, `kind` and `metadata.name` /
  `metadata.generateName` only (`model.WithTypeAndObjectMeta`);
- a transition rule (one that reads `oldSelf`) runs only on update and only where the old value correlates: through
  object properties and `additionalProperties` (unless `x-kubernetes-map-type` is neither granular nor atomic), and
  through list items only in `x-kubernetes-list-type: map` lists, matched by their `x-kubernetes-list-map-keys`;
  (`optionalOldSelf: true` makes `oldSelf` a CEL optional, which the engine lacks: such a rule is skipped with a
  warning);
- a rule that is false yields one cause at the node's path (plus the rule's `fieldPath`): `Invalid value:
  "<type>": <message>`, or `Forbidden` / `Required value` / `Duplicate value` for the rule's `reason`; the message
  is `messageExpression`'s result, else `message`, else `failed rule: <rule>`;
- a rule that fails to evaluate (a missing key, division by zero) is an `Invalid value` naming the error and the
  rule, as upstream's `"%v evaluating rule: %v"`.

Differences, said where they show: the CEL engine (`common-expression-language`, as `knuma.devices.cel`) has no
runtime cost budget, so kube-apiserver's per-call and per-object cost limits are not enforced (bodies are bounded in
size instead); Kubernetes' CEL libraries are provided for the functions below, and a rule calling one that is not
(`url()`, `ip()`, `format()`, optional field syntax `?.`) is skipped with a `Warning` header rather than rejecting
objects kube-apiserver accepts. CRDs whose rules do not parse, or name variables other than `self` and `oldSelf`,
are rejected at create, as upstream's compile step rejects them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from knuma.api.types import JsonObj
from knuma.devices.cel import cel_program
from knuma.devices.quantities import FUNCTIONS as QUANTITY_FUNCTIONS
from knuma.errors import InvalidInput

__all__ = ["LIBRARY", "Outcome", "RuleCompileError", "compile_causes", "evaluate", "rules_present"]

Cause = tuple[str, str, str]

#: Variables a comprehension macro binds (`self.items.all(item, ...)`): not free variables of the rule.
_BOUND = re.compile(r"\.\s*(?:all|exists_one|exists|map|filter)\s*\(\s*([A-Za-z_]\w*)\s*,")
_UNDEFINED = re.compile(r"Undefined variable or function: '([^']+)'")
_REASONS = {"FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"}


def _index_of(container: Any, item: Any, start: int = 0) -> int:
    try:
        return int(container.index(item, start))
    except ValueError:
        return -1


def _last_index_of(container: Any, item: Any) -> int:
    if isinstance(container, str):
        return container.rfind(item)
    positions = [n for n, value in enumerate(container) if value == item]
    return positions[-1] if positions else -1


def _ascii(text: str, convert: Callable[[str], str]) -> str:
    return "".join(convert(c) if c.isascii() else c for c in text)


def _split(text: str, separator: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    return text.split(separator, limit - 1 if limit > 0 else -1)


def _replace(text: str, old: str, new: str, limit: int = -1) -> str:
    return text.replace(old, new, limit)


def _substring(text: str, start: int, end: int | None = None) -> str:
    if start < 0 or start > len(text) or (end is not None and (end < start or end > len(text))):
        raise IndexError(f"index out of range: {start if end is None else end}")
    return text[start:end]


#: Kubernetes' CEL libraries that the engine lacks: cel-go's strings extension (`ext.Strings`), the Kubernetes
#: list library (`library.Lists`), and quantity/semver (shared with the device selectors).
LIBRARY: Mapping[str, Callable[..., Any]] = {
    **QUANTITY_FUNCTIONS,
    "charAt": lambda text, n: text[n] if n < len(text) else "",
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "lowerAscii": lambda text: _ascii(text, str.lower),
    "upperAscii": lambda text: _ascii(text, str.upper),
    "replace": _replace,
    "split": _split,
    "substring": _substring,
    "trim": str.strip,
    "join": lambda items, separator="": separator.join(items),
    "isSorted": lambda items: all(a <= b for a, b in itertools.pairwise(items)),
    "sum": lambda items: sum(items),
}


@dataclass(frozen=True)
class _Rule:
    program: Any
    message_program: Any | None
    uses_old_self: bool


@dataclass
class Outcome:
    """What the rules said: `causes` for the 422, `warnings` for rules this server could not evaluate."""

    causes: list[Cause]
    warnings: list[str]


class RuleCompileError(InvalidInput):
    """A validation rule (or its messageExpression) that does not parse or names an undeclared variable."""


@lru_cache(maxsize=2048)
def _compile(expression: str) -> Any:
    try:
        program = cel_program(expression)
    except (ValueError, RuntimeError) as err:
        raise RuleCompileError(str(err).replace("\n", " ")) from None
    bound = {m.group(1) for m in _BOUND.finditer(expression)}
    undeclared = set(program.variables()) - {"self", "oldSelf"} - bound
    if undeclared:
        raise RuleCompileError(f"undeclared reference to {', '.join(repr(v) for v in sorted(undeclared))}")
    return program


def _rule(source: JsonObj) -> _Rule:
    program = _compile(str(source.get("rule") or ""))
    message = source.get("messageExpression")
    return _Rule(program, _compile(message) if message else None, "oldSelf" in program.variables())


def _rules_of(schema: JsonObj) -> list[JsonObj]:
    rules = schema.get("x-kubernetes-validations")
    return [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []


def compile_causes(schema: Any, path: str) -> list[Cause]:
    """Rules of a CRD version's schema that do not compile (kube-apiserver rejects such a CRD), recursively."""
    found: list[Cause] = []
    for node, at in _schema_nodes(schema, path):
        for n, rule in enumerate(_rules_of(node)):
            where = f"{at}.x-kubernetes-validations[{n}]"
            expression = rule.get("rule")
            if not isinstance(expression, str) or not expression.strip():
                found.append(("FieldValueRequired", f"{where}.rule", "Required value"))
                continue
            for key in ("rule", "messageExpression"):
                text = rule.get(key)
                if not isinstance(text, str) or not text:
                    continue
                try:
                    _compile(text)
                except RuleCompileError as err:
                    found.append(
                        ("FieldValueInvalid", f"{where}.{key}", f'Invalid value: "{text}": compilation failed: {err}')
                    )
            reason = rule.get("reason")
            if reason is not None and reason not in _REASONS:
                allowed = ", ".join(f'"{r}"' for r in sorted(_REASONS))
                found.append(
                    (
                        "FieldValueNotSupported",
                        f"{where}.reason",
                        f'Unsupported value: "{reason}": supported values: {allowed}',
                    )
                )
    return found


def _schema_nodes(schema: Any, path: str) -> Iterator[tuple[JsonObj, str]]:
    if not isinstance(schema, dict):
        return
    yield schema, path
    for key, sub in (schema.get("properties") or {}).items():
        yield from _schema_nodes(sub, f"{path}.properties[{key}]")
    if isinstance(schema.get("items"), dict):
        yield from _schema_nodes(schema["items"], f"{path}.items")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _schema_nodes(schema["additionalProperties"], f"{path}.additionalProperties")


def evaluate(schema: JsonObj, new: JsonObj, old: JsonObj | None) -> Outcome:
    """Run every rule of `schema` (a CRD version's `openAPIV3Schema`) on `new`; `old` is the stored object on
    update, None on create."""
    outcome = Outcome([], [])
    _validate(schema, _root_view(new), _root_view(old) if old is not None else None, "", outcome)
    return outcome


def _root_view(obj: JsonObj) -> JsonObj:
    """`self` at the resource root: the object with only `metadata.name` / `metadata.generateName`."""
    md = obj.get("metadata") or {}
    view = dict(obj)
    view["metadata"] = {k: md[k] for k in ("name", "generateName") if k in md}
    return view


def _validate(schema: JsonObj, value: Any, old: Any, path: str, outcome: Outcome) -> None:
    if value is None:
        return  # upstream validates non-null values only
    for source in _rules_of(schema):
        _check(source, schema, value, old, path, outcome)
    if isinstance(value, dict):
        correlate = old if isinstance(old, dict) and _map_correlatable(schema) else {}
        props = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key, sub in value.items():
            if key in props:
                _validate(props[key], sub, correlate.get(key), f"{path}.{key}" if path else key, outcome)
            elif isinstance(additional, dict):
                _validate(additional, sub, correlate.get(key), f"{path}[{key}]", outcome)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        old_items = _map_list(schema, old)
        for n, item in enumerate(value):
            _validate(schema["items"], item, old_items(item), f"{path}[{n}]", outcome)


def _map_correlatable(schema: JsonObj) -> bool:
    """`MapIsCorrelatable`: granular (the default) and atomic maps correlate their keys."""
    return schema.get("x-kubernetes-map-type") in (None, "granular", "atomic")


def _map_list(schema: JsonObj, old: Any) -> Callable[[Any], Any]:
    """`makeMapList`: the old item with the same map keys, for `x-kubernetes-list-type: map` lists only."""
    keys = schema.get("x-kubernetes-list-map-keys")
    if schema.get("x-kubernetes-list-type") != "map" or not isinstance(old, list) or not isinstance(keys, list):
        return lambda item: None

    def identity(item: Any) -> tuple[Any, ...] | None:
        return tuple(item.get(k) for k in keys) if isinstance(item, dict) else None

    by_key = {identity(item): item for item in old}
    return lambda item: by_key.get(identity(item))


def _check(source: JsonObj, schema: JsonObj, value: Any, old: Any, path: str, outcome: Outcome) -> None:
    expression = str(source.get("rule") or "").strip()
    shown = path or "<nil>"
    try:
        rule = _rule(source)
    except RuleCompileError as err:  # a CRD stored before its rules were checked
        outcome.causes.append(
            ("FieldValueInvalid", shown, f'Invalid value: "{_type(schema, value)}": rule compile error: {err}')
        )
        return
    if rule.uses_old_self and source.get("optionalOldSelf"):
        outcome.warnings.append(
            f"{shown}: x-kubernetes-validations rule not evaluated by knuma apiserver (optionalOldSelf needs CEL "
            f"optionals, which the engine lacks): {expression}"
        )
        return
    if rule.uses_old_self and old is None:
        return  # transition rules run only where an old value correlates
    context: dict[str, Any] = {**LIBRARY, "self": value}
    if rule.uses_old_self:
        context["oldSelf"] = old
    try:
        result = rule.program.execute(context)
    except Exception as err:  # the engine raises KeyError, TypeError, ZeroDivisionError, RuntimeError
        if _unsupported(err, outcome, expression, shown):
            return
        outcome.causes.append(
            (
                "FieldValueInvalid",
                shown,
                f'Invalid value: "{_type(schema, value)}": '
                f"{_engine_words(err)} evaluating rule: {_error_string(source)}",
            )
        )
        return
    if result is True:
        return
    at = shown
    field_path = source.get("fieldPath")
    if isinstance(field_path, str) and field_path:
        at = f"{path}{field_path}" if field_path.startswith((".", "[")) else f"{path}.{field_path}"
        at = at.lstrip(".")
    detail = _message(source, rule, context) or _default_message(source)
    outcome.causes.append(_cause(source.get("reason"), at, _type(schema, value), detail))


def _message(source: JsonObj, rule: _Rule, context: dict[str, Any]) -> str | None:
    """`evalMessageExpression`: a non-empty one-line string, else None (the static message is used)."""
    if rule.message_program is None:
        return None
    try:
        text = rule.message_program.execute(context)
    except Exception:  # upstream logs it and falls back to the message
        return None
    if not isinstance(text, str) or not text.strip() or "\n" in text.strip() or len(text.strip()) > 5 * 1024:
        return None
    return text.strip()


def _default_message(source: JsonObj) -> str:
    message = str(source.get("message") or "").strip()
    return message or f"failed rule: {_error_string(source)}"


def _error_string(source: JsonObj) -> str:
    return str(source.get("message") or "").strip() or str(source.get("rule") or "").strip()


def _cause(reason: Any, path: str, type_: str, detail: str) -> Cause:
    """`fieldErrorForReason`."""
    if reason == "FieldValueForbidden":
        return ("FieldValueForbidden", path, f"Forbidden: {detail}")
    if reason == "FieldValueRequired":
        return ("FieldValueRequired", path, f"Required value: {detail}")
    if reason == "FieldValueDuplicate":
        return ("FieldValueDuplicate", path, f'Duplicate value: "{type_}"')
    return ("FieldValueInvalid", path, f'Invalid value: "{type_}": {detail}')


def _type(schema: JsonObj, value: Any) -> str:
    """The schema's type as upstream prints it in the error (`sts.Type`), else the value's."""
    declared = schema.get("type")
    if isinstance(declared, str) and declared:
        return declared
    return "object" if isinstance(value, dict) else "array" if isinstance(value, list) else type(value).__name__


def _engine_words(err: Exception) -> str:
    if isinstance(err, KeyError):
        return f"no such key: {err.args[0] if err.args else ''}"
    if isinstance(err, ZeroDivisionError):
        return "division by zero"
    if isinstance(err, IndexError):
        return str(err) or "index out of bounds"
    return str(err).split(". ")[0]


def _unsupported(err: Exception, outcome: Outcome, expression: str, path: str) -> bool:
    """A rule calling a Kubernetes CEL function this engine lacks: a warning, never a rejection."""
    match = _UNDEFINED.search(str(err))
    if match is None or match.group(1) in ("self", "oldSelf"):
        return False
    outcome.warnings.append(
        f"{path}: x-kubernetes-validations rule not evaluated by knuma apiserver (function {match.group(1)!r} is not "
        f"supported): {expression}"
    )
    return True


def rules_present(schema: Any) -> bool:
    """Whether any node of the schema has rules (most CRDs have none: their writes skip this module)."""
    return any(_rules_of(node) for node, _ in _schema_nodes(schema, ""))
