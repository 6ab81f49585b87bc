"""Exact Kubernetes resource quantities (`resource.Quantity`), without floats.

A quantity is kept as an exact fraction and rounded up to the nano unit, as the API server does. Scheduling code works
on integers: milli-units for `cpu` (`milli_value`), whole units (bytes, devices) for everything else (`value`, which
rounds up like Go's `Quantity.Value()`).
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from knuma.errors import InvalidInput

__all__ = ["Quantity", "QuantityError", "QuantityFormat", "format_quantity", "parse_quantity"]


class QuantityError(InvalidInput):
    """A string that is not a valid Kubernetes quantity."""


class QuantityFormat(enum.Enum):
    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXP = {v: k for k, v in _DECIMAL.items()}
_BINARY_BY_EXP = {v: k for k, v in _BINARY.items()}

# sign, digits with an optional fraction, then a suffix (SI, binary or exponent), as in k8s.io/apimachinery.
_GRAMMAR = re.compile(r"([+-]?)([0-9]+\.?[0-9]*|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?")
_NANO = 10**9
_MAX_EXPONENT = 30  # far beyond any real resource; keeps arithmetic bounded on hostile input
_MAX_INT64_NANOS = (2**63 - 1) * _NANO  # resource.Quantity's `maxAllowed`
#: Longest quantity text accepted: far beyond any real one (int64 nanos need 29 digits); keeps `Fraction` (and
#: Python's 4,300-digit int conversion limit) away from hostile input.
MAX_QUANTITY_LENGTH = 100


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact quantity and the format its canonical string uses."""

    nanos: int
    """The amount in nano-units (1 == 1e-9 of the base unit), already rounded up."""
    format: QuantityFormat = QuantityFormat.DECIMAL_SI

    @classmethod
    def parse(cls, text: str | int | float) -> Quantity:
        return parse_quantity(text)

    @classmethod
    def from_milli(cls, milli: int) -> Quantity:
        return cls(milli * 10**6, QuantityFormat.DECIMAL_SI)

    @classmethod
    def from_int(cls, value: int, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> Quantity:
        return cls(value * _NANO, fmt)

    def value(self) -> int:
        """Whole units, rounded away from zero (Go `Quantity.Value()`: 1.5 -> 2, -1.5 -> -2)."""
        return _round_away(self.nanos, _NANO)

    def milli_value(self) -> int:
        """Milli-units, rounded away from zero (Go `Quantity.MilliValue()`)."""
        return _round_away(self.nanos, 10**6)

    def exact(self) -> Fraction:
        return Fraction(self.nanos, _NANO)

    def __str__(self) -> str:
        return format_quantity(self.nanos, self.format)


def parse_quantity(text: str | int | float) -> Quantity:
    """Parse `text` (`"1.5Gi"`, `"500m"`, `"1e3"`, `2`) into an exact `Quantity`.

    Raises `QuantityError` naming the value when it is not a Kubernetes quantity.
    """
    if not isinstance(text, str | int | float):  # also keeps unhashable values (lists, dicts) out of the cache
        raise QuantityError(f"invalid quantity {text!r}: expected a string such as '500m' or '1Gi'")
    return _parse(text)


@lru_cache(maxsize=4096)
def _parse(text: str | int | float) -> Quantity:
    if isinstance(text, bool):
        raise QuantityError(f"invalid quantity {text!r}: expected a number or a string such as '500m' or '1Gi'")
    if isinstance(text, int):
        return _capped(text * _NANO, QuantityFormat.DECIMAL_SI)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"invalid quantity {text!r}: must be finite")
        # YAML gives `cpu: 0.5` as a float: its shortest decimal text is what the user wrote.
        exact = Fraction(repr(text))
        nanos = _ceil(abs(exact) * _NANO)
        return _capped(-nanos if exact < 0 else nanos, QuantityFormat.DECIMAL_SI)
    if not isinstance(text, str):
        raise QuantityError(f"invalid quantity {text!r}: expected a string such as '500m' or '1Gi'")
    if len(text) > MAX_QUANTITY_LENGTH:
        raise QuantityError(
            f"invalid quantity {text[:20]!r}... ({len(text)} characters): a quantity has at most "
            f"{MAX_QUANTITY_LENGTH} characters"
        )
    match = _GRAMMAR.fullmatch(text)  # ASCII digits only, no trailing newline: Go's parser accepts nothing else
    if not match:
        raise QuantityError(
            f"invalid quantity {text!r}: expected a number with an optional suffix "
            "(n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent such as e3)"
        )
    sign, number, suffix = match.group(1), match.group(2), match.group(3) or ""
    mantissa = Fraction(number)
    if suffix in _BINARY:
        fmt = QuantityFormat.BINARY_SI
        amount = mantissa * 1024 ** _BINARY[suffix]
    elif suffix[:1] in ("e", "E") and suffix not in _DECIMAL:
        fmt = QuantityFormat.DECIMAL_EXPONENT
        exponent = int(suffix[1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(f"invalid quantity {text!r}: exponent {exponent} is out of range")
        amount = mantissa * Fraction(10) ** exponent
    else:
        fmt = QuantityFormat.DECIMAL_SI
        amount = mantissa * Fraction(10) ** _DECIMAL[suffix]
    nanos = _ceil(amount * _NANO)  # precision beyond nano rounds away from zero, as the API server does
    return _capped(-nanos if sign == "-" else nanos, fmt)


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


def _round_away(nanos: int, unit: int) -> int:
    magnitude = -((-abs(nanos)) // unit)
    return -magnitude if nanos < 0 else magnitude


def _capped(nanos: int, fmt: QuantityFormat) -> Quantity:
    """Go caps DecimalSI and BinarySI quantities at the largest int64 of base units (not DecimalExponent ones)."""
    if fmt is not QuantityFormat.DECIMAL_EXPONENT and abs(nanos) > _MAX_INT64_NANOS:
        nanos = _MAX_INT64_NANOS if nanos > 0 else -_MAX_INT64_NANOS
    return Quantity(nanos, fmt)


def format_quantity(nanos: int, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> str:
    """The canonical string of an amount in nano-units, as `resource.Quantity.String()` prints it."""
    if nanos == 0:
        return "0"
    sign = "-" if nanos < 0 else ""
    magnitude = abs(nanos)
    if fmt is QuantityFormat.BINARY_SI and magnitude % _NANO == 0 and magnitude >= 1024 * _NANO:
        units = magnitude // _NANO
        power = 0
        while power < 6 and units % 1024 == 0:
            units //= 1024
            power += 1
        return f"{sign}{units}{_BINARY_BY_EXP[power] if power else ''}"
    # Decimal: the largest exponent (multiple of 3, from -9) that keeps the mantissa an integer.
    exponent = -9
    while (exponent < 18 or fmt is QuantityFormat.DECIMAL_EXPONENT) and magnitude % 1000 == 0:
        magnitude //= 1000
        exponent += 3
    if fmt is QuantityFormat.DECIMAL_EXPONENT:
        return f"{sign}{magnitude}" + (f"e{exponent}" if exponent else "")
    return f"{sign}{magnitude}{_DECIMAL_BY_EXP[exponent]}"
