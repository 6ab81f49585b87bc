"""Go duration strings."""

from __future__ import annotations

import pytest

from knuma.duration import DurationError, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15s", 15.0),
        ("1m30s", 90.0),
        ("0", 0.0),
        ("+0", 0.0),
        ("500ms", 0.5),
        ("1.5h", 5400.0),
        (".5s", 0.5),
        ("1.s", 1.0),
        ("2h45m", 9900.0),
        ("1us", 1e-6),
        ("1µs", 1e-6),
        ("1h1m1s1ms", 3661.001),
        ("-2s", -2.0),
    ],
)
def test_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["15", "s", "1 s", "", "1m30", "-", "1.5.5s", ".s", "1x", "1S", "1sec", "\uff11s"])
def test_rejects_what_go_rejects(text: str) -> None:
    with pytest.raises(DurationError, match="invalid duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"), [(15, "15s"), (90, "1m30s"), (3600, "1h0m0s"), (0.5, "500ms"), (1.5, "1.5s"), (0, "0s")]
)
def test_format(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
