"""CEL device selectors: compile once, evaluate per device, with the environment of `resource.k8s.io/v1`.

Engine: `common-expression-language` (Rust `cel-interpreter` through PyO3); the README says why (speed: ~20 µs to
compile, ~1-2 µs to evaluate a compiled selector, against ~200 µs and ~400 µs for the pure-Python `cel-python`).

The environment follows `CELDeviceSelector` (`k8s.io/api/resource/v1/types.go`) and `dynamic-resource-allocation/cel`:

- `device.driver` (string), `device.allowMultipleAllocations` (bool);
- `device.attributes["<domain>"].<id>` and `device.capacity["<domain>"].<id>`; an attribute published without a
  domain belongs to the driver's domain; an unknown domain is an empty map, so `has()` on it is false, and reading a
  missing attribute is a runtime error ("no such key"), which aborts the allocation as upstream;
- Kubernetes' `quantity()` and `semver()` libraries (`knuma.devices.quantities`).

Limits: the expression length (10 KiB) is the API's; the runtime cost limit (`CELSelectorExpressionMaxCost`, 1e6)
is enforced before evaluation by a static estimate: every comprehension (`all`, `exists`, `exists_one`, `map`,
`filter`) multiplies the cost of the expression by the largest list an attribute can hold (64).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from knuma.api.dra.device import Device
from knuma.api.dra.deviceclass import CEL_EXPRESSION_MAX
from knuma.api.dra.semver import SemVer
from knuma.devices.quantities import FUNCTIONS, quantity_value, semver_value
from knuma.errors import InvalidInput

if TYPE_CHECKING:
    import cel

__all__ = [
    "MAX_COST",
    "CELError",
    "Selector",
    "cel_program",
    "compile_selector",
    "device_environment",
]

MAX_COST = 1_000_000
LIST_SIZE_ESTIMATE = 64
_COMPREHENSIONS = re.compile(r"\.\s*(all|exists_one|exists|map|filter)\s*\(")
_TOKENS = re.compile(r"\w+|\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|\S")
_BOUND = re.compile(r"\.\s*(?:all|exists_one|exists|map|filter)\s*\(\s*([A-Za-z_]\w*)\s*,")
_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_DOMAIN_LITERAL = re.compile(r"(?:attributes|capacity)\s*\[\s*(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')\s*\]")


class CELError(InvalidInput):
    """A selector that does not compile, is too expensive, fails at run time or does not return a bool. The
    message names where the selector comes from (class or request) and the expression."""


@dataclass(frozen=True)
class Selector:
    expression: str
    program: Any
    domains: tuple[str, ...]
    """Domains the expression indexes with a literal: present (possibly empty) in every environment."""
    cost: int

    def matches(self, environment: Mapping[str, Any], where: str) -> bool:
        """Evaluate against one device's environment; raise `CELError` naming `where` on a runtime error."""
        device = environment
        if self.domains:
            device = {
                **environment,
                "attributes": _with_domains(environment["attributes"], self.domains),
                "capacity": _with_domains(environment["capacity"], self.domains),
            }
        try:
            result = self.program.execute({"device": device, **FUNCTIONS})
        except KeyError as err:
            raise CELError(
                f"{where}: CEL runtime error: no such key: {err.args[0]} (expression: {self.expression})"
            ) from None
        except (RuntimeError, TypeError, ValueError) as err:
            raise CELError(f"{where}: CEL runtime error: {err} (expression: {self.expression})") from None
        if not isinstance(result, bool):
            raise CELError(
                f"{where}: CEL result must be a bool, got {type(result).__name__} {result!r} "
                f"(expression: {self.expression})"
            )
        return result


def _with_domains(by_domain: Mapping[str, Any], domains: tuple[str, ...]) -> Mapping[str, Any]:
    missing = [d for d in domains if d not in by_domain]
    return {**by_domain, **{key: {} for key in missing}} if missing else by_domain


def estimate_cost(expression: str) -> int:
    """A static upper estimate of the runtime cost: tokens, times the list size per comprehension."""
    tokens = len(_TOKENS.findall(expression))
    comprehensions = len(_COMPREHENSIONS.findall(expression))
    return int(tokens * LIST_SIZE_ESTIMATE**comprehensions)


def compile_selector(expression: str, where: str) -> Selector:
    """Compile (cached by expression); raise `CELError` naming `where` and the expression."""
    try:
        return _compile(expression)
    except CELError as err:
        raise CELError(f"{where}: {err}") from None


def cel_program(expression: str) -> cel.Program:
    """The CEL library's `compile` (ValueError or RuntimeError for an expression it cannot parse). The library is
    imported at the first expression, not with this module: its package imports its interactive shell
    (prompt_toolkit, rich) with it, 0.3 to 0.8 s of CPU on a 2-core machine at the start of every process that loads
    the allocator (the scheduler, the simulated nodes, the CLI) whether or not it ever meets a CEL expression."""
    import cel

    return cel.compile(expression)


@lru_cache(maxsize=4096)
def _compile(expression: str) -> Selector:
    if len(expression) > CEL_EXPRESSION_MAX:
        raise CELError(f"expression is longer than {CEL_EXPRESSION_MAX} bytes")
    cost = estimate_cost(expression)
    if cost > MAX_COST:
        raise CELError(
            f"compilation failed: estimated cost {cost} exceeds the limit of {MAX_COST} (expression: {expression})"
        )
    try:
        program = cel_program(expression)
    except (ValueError, RuntimeError) as err:
        detail = str(err).replace("\n", " ")
        raise CELError(f"compilation failed: {detail}") from None
    unknown = set(program.functions()) - set(FUNCTIONS)
    unknown = {f for f in unknown if _IDENTIFIER.match(f) and f not in _BUILTINS}
    if unknown:
        raise CELError(f"compilation failed: undeclared reference to {sorted(unknown)} (expression: {expression})")
    bound = {m.group(1) for m in _BOUND.finditer(expression)}
    bad_vars = set(program.variables()) - {"device"} - bound
    if bad_vars:
        raise CELError(
            f"compilation failed: undeclared reference to {sorted(bad_vars)}; only `device` is defined "
            f"(expression: {expression})"
        )
    domains = tuple(dict.fromkeys(m.group(1)[1:-1] for m in _DOMAIN_LITERAL.finditer(expression)))
    return Selector(expression, program, domains, cost)


_BUILTINS = frozenset(
    {
        "size",
        "contains",
        "startsWith",
        "endsWith",
        "matches",
        "has",
        "int",
        "uint",
        "double",
        "string",
        "bool",
        "bytes",
        "type",
        "dyn",
        "duration",
        "timestamp",
        "all",
        "exists",
        "exists_one",
        "map",
        "filter",
        "lowerAscii",
        "upperAscii",
        "trim",
        "split",
        "join",
        "replace",
        "indexOf",
        "lastIndexOf",
        "substring",
        "max",
        "min",
        "getHours",
        "getMinutes",
        "getSeconds",
        "getDayOfWeek",
        "getDayOfMonth",
        "getMonth",
        "getFullYear",
        "getDate",
        "getDayOfYear",
        "getMilliseconds",
    }
)


def _attribute_value(value: object) -> object:
    if isinstance(value, SemVer):
        return semver_value(value)
    if isinstance(value, tuple):
        return [_attribute_value(v) for v in value]
    return value


def device_environment(driver: str, device: Device) -> dict[str, Any]:
    """The `device` variable for one device of `driver` (bare attribute names go to the driver's domain)."""
    attributes: dict[str, dict[str, object]] = {}
    for name, attribute in device.attributes.items():
        domain, _, ident = name.rpartition("/")
        attributes.setdefault(domain or driver, {})[ident] = _attribute_value(attribute.value)
    capacity: dict[str, dict[str, object]] = {}
    for name, quantity in device.capacity.items():
        domain, _, ident = name.rpartition("/")
        capacity.setdefault(domain or driver, {})[ident] = quantity_value(quantity)
    return {
        "driver": driver,
        "attributes": attributes,
        "capacity": capacity,
        "allowMultipleAllocations": device.allow_multiple_allocations,
    }
