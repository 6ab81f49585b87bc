"""Kubernetes' CEL `quantity` and `semver` libraries (`k8s.io/apiserver/pkg/cel/library/quantity.go`, `semver.go`)
as custom functions of the CEL engine.

The engine (`common-expression-language`) converts values to CEL's own types, so a quantity travels as a one-key map
`{"$quantity": "<canonical string>"}` and a version as `{"$semver": "<text>"}`. Equality of two such maps is
equality of the values (canonical strings), and the comparison methods that Kubernetes defines on both types
(`isLessThan`, `isGreaterThan`, `compareTo`) dispatch on the tag, so `device.capacity[d].memory.isGreaterThan(
quantity("1Gi"))` and `device.attributes[d].driverVersion.isLessThan(semver("2.0.0"))` read as upstream.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from knuma.api.dra.semver import SemVer, SemVerError
from knuma.quantity import Quantity, QuantityError, parse_quantity

__all__ = ["FUNCTIONS", "quantity_value", "semver_value"]

QUANTITY_TAG = "$quantity"
SEMVER_TAG = "$semver"


def quantity_value(quantity: Quantity) -> dict[str, str]:
    return {QUANTITY_TAG: str(quantity)}


def semver_value(version: SemVer) -> dict[str, str]:
    return {SEMVER_TAG: str(version)}


def _as_quantity(value: object) -> Quantity:
    if isinstance(value, Mapping) and QUANTITY_TAG in value:
        return parse_quantity(str(value[QUANTITY_TAG]))
    if isinstance(value, int) and not isinstance(value, bool):
        return Quantity.from_int(value)
    raise TypeError(f"expected a quantity, got {value!r}")


def _as_semver(value: object) -> SemVer:
    if isinstance(value, Mapping) and SEMVER_TAG in value:
        return SemVer.parse(str(value[SEMVER_TAG]))
    raise TypeError(f"expected a semver, got {value!r}")


def _quantity(text: object) -> dict[str, str]:
    if not isinstance(text, str):
        raise TypeError(f"quantity() takes a string, got {text!r}")
    try:
        return quantity_value(parse_quantity(text))
    except QuantityError as err:
        raise ValueError(f"invalid quantity: {err}") from None


def _is_quantity(text: object) -> bool:
    try:
        parse_quantity(str(text))
    except QuantityError:
        return False
    return isinstance(text, str)


def _semver(text: object, normalize: object = False) -> dict[str, str]:
    if not isinstance(text, str):
        raise TypeError(f"semver() takes a string, got {text!r}")
    candidate = _normalize(text) if normalize is True else text
    try:
        return semver_value(SemVer.parse(candidate))
    except SemVerError as err:
        raise ValueError(str(err)) from None


def _normalize(text: str) -> str:
    """`semver(s, true)`: strip a leading `v`, fill missing minor/patch with 0 (Kubernetes' normalisation)."""
    core, sep, rest = text.removeprefix("v").partition("-")
    parts = core.split(".")
    parts += ["0"] * (3 - len(parts))
    parts = [str(int(p)) if p.isdigit() else p for p in parts]
    return ".".join(parts) + (sep + rest if sep else "")


def _is_semver(text: object, normalize: object = False) -> bool:
    try:
        _semver(text, normalize)
    except (TypeError, ValueError):
        return False
    return True


def _compare(a: object, b: object) -> int:
    if isinstance(a, Mapping) and SEMVER_TAG in a:
        return _as_semver(a).compare(_as_semver(b))
    left, right = _as_quantity(a).nanos, _as_quantity(b).nanos
    return (left > right) - (left < right)


def _add(a: object, b: object) -> dict[str, str]:
    left, right = _as_quantity(a), _as_quantity(b)
    return quantity_value(Quantity(left.nanos + right.nanos, left.format))


def _sub(a: object, b: object) -> dict[str, str]:
    left, right = _as_quantity(a), _as_quantity(b)
    return quantity_value(Quantity(left.nanos - right.nanos, left.format))


def _as_integer(a: object) -> int:
    q = _as_quantity(a)
    if q.nanos % 10**9:
        raise ValueError("cannot convert value to integer")
    return q.nanos // 10**9


FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "semver": _semver,
    "isSemver": _is_semver,
    "compareTo": _compare,
    "isLessThan": lambda a, b: _compare(a, b) < 0,
    "isGreaterThan": lambda a, b: _compare(a, b) > 0,
    "add": _add,
    "sub": _sub,
    "sign": lambda a: (_as_quantity(a).nanos > 0) - (_as_quantity(a).nanos < 0),
    "isInteger": lambda a: _as_quantity(a).nanos % 10**9 == 0,
    "asInteger": _as_integer,
    "asApproximateFloat": lambda a: _as_quantity(a).nanos / 10**9,
    "major": lambda v: _as_semver(v).major,
    "minor": lambda v: _as_semver(v).minor,
    "patch": lambda v: _as_semver(v).patch,
}
"""Name -> implementation; receiver-style calls (`x.isLessThan(y)`) get the receiver as first argument."""
