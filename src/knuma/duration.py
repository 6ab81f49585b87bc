"""Go duration strings (`time.ParseDuration`), as Kubernetes component configurations write them: `15s`, `1m30s`,
`500ms`, `1.5h`, `0`."""

from __future__ import annotations

import math
import re
from fractions import Fraction

from knuma.errors import InvalidInput

__all__ = ["DurationError", "format_duration", "parse_duration", "parse_interval"]

_UNITS_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 10**9, "m": 60 * 10**9}
_UNITS_NS["h"] = 3600 * 10**9
_COMPONENT = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")
_WHOLE = re.compile(r"[-+]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+")
_MAX_NS = (1 << 63) - 1


class DurationError(InvalidInput):
    """Not a Go duration string."""


def parse_duration(text: str) -> float:
    """Seconds. Raises `DurationError` for anything `time.ParseDuration` rejects (a bare number other than 0, a
    missing or unknown unit, spaces)."""
    if not isinstance(text, str):
        raise DurationError(f'expected a duration string such as "15s" or "1m30s", got {text!r}')
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return 0.0
    if not _WHOLE.fullmatch(text):
        raise DurationError(
            f"invalid duration {text!r}: expected a number with a unit (ns, us, ms, s, m, h), such as 15s or 1m30s"
        )
    total = sum(Fraction(number) * _UNITS_NS[unit] for number, unit in _COMPONENT.findall(body))
    nanos = int(total)  # Go truncates below a nanosecond
    if nanos > _MAX_NS:
        raise DurationError(f"invalid duration {text!r}: out of range")
    return (-nanos if text.startswith("-") else nanos) / 1e9


def parse_interval(text: str, what: str = "duration") -> float:
    """Seconds from a flag or annotation that takes plain seconds (`60`, `1.5`) or a Go duration (`60s`, `1m30s`,
    `500ms`), as RTE's and the deployer's interval flags do; `0` usually disables. Raises `DurationError` naming
    `what` (e.g. the flag) for anything else, including negative values."""
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = parse_duration(text)
        except DurationError:
            raise DurationError(
                f"invalid {what} {text!r}: expected seconds or a duration such as 10s, 1m30s or 500ms"
            ) from None
    if not math.isfinite(seconds):
        raise DurationError(f"invalid {what} {text!r}: expected a finite number of seconds")
    if seconds < 0:
        raise DurationError(f"invalid {what} {text!r}: must not be negative")
    return seconds


def format_duration(seconds: float) -> str:
    """Go's `Duration.String()` for the common cases: `15s`, `1m30s`, `1h0m0s`, `500ms`, `1.5s`."""
    nanos = round(seconds * 1e9)
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos == 0:
        return "0s"
    if nanos < 10**9:
        for unit, size in (("ms", 10**6), ("µs", 10**3), ("ns", 1)):
            if nanos >= size:
                return sign + _trim(Fraction(nanos, size)) + unit
    hours, rest = divmod(nanos, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    out = _trim(Fraction(rest, 10**9)) + "s"
    if hours or minutes:
        out = f"{minutes}m" + out
    if hours:
        out = f"{hours}h" + out
    return sign + out


def _trim(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.9f}".rstrip("0").rstrip(".")
