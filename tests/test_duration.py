"""Go duration strings."""

from __future__ import annotations

import pytest

from knuma.duration import DurationError, format_duration, parse_duration, parse_interval


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


@pytest.mark.parametrize(
    ("text", "seconds"), [("60", 60.0), ("1.5", 1.5), ("0", 0.0), (" 1m30s ", 90.0), ("500ms", 0.5)]
)
def test_an_interval_is_plain_seconds_or_a_go_duration(text: str, seconds: float) -> None:
    assert parse_interval(text, "--sleep-interval") == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("soon", "expected seconds or a duration"),
        ("-1", "must not be negative"),
        ("-5s", "must not be negative"),
        ("inf", "finite"),
    ],
)
def test_a_bad_interval_names_the_flag(text: str, problem: str) -> None:
    with pytest.raises(DurationError, match=f"invalid --sleep-interval '{text}': .*{problem}"):
        parse_interval(text, "--sleep-interval")
