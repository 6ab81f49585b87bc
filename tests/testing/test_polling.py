"""The tests' one way to wait: the value comes back, and a timeout says what did not hold."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from knuma.testing.polling import eventually, eventually_async, pauses


def test_returns_the_first_truthy_value() -> None:
    calls = itertools.count()
    assert eventually(lambda: (n := next(calls)) >= 3 and f"call {n}", interval=0) == "call 3"


def test_timeout_names_the_subject_and_the_last_assertion() -> None:
    def check() -> bool:
        raise AssertionError("pod p is Pending")

    with pytest.raises(AssertionError, match=r"^pod bound not met within 0\.1s: pod p is Pending$"):
        eventually(check, timeout=0.1, interval=0.01, what="pod bound")


def test_async_awaits_coroutine_checks_and_accepts_plain_ones() -> None:
    async def main() -> tuple[object, object]:
        state = {"n": 0}

        async def grows() -> int | None:
            state["n"] += 1
            return state["n"] if state["n"] >= 2 else None

        awaited = await eventually_async(grows, interval=0)
        plain = await eventually_async(lambda: state["n"], interval=0)
        return awaited, plain

    assert asyncio.run(main()) == (2, 2)
    with pytest.raises(AssertionError, match="condition not met within"):
        asyncio.run(eventually_async(lambda: False, timeout=0.05, interval=0.01))


def test_pauses_grow_from_the_interval_to_the_longest_and_stay_there() -> None:
    seen = list(itertools.islice(pauses(0.05, 0.5), 10))
    assert seen[0] == 0.05
    assert all(later > earlier for earlier, later in itertools.pairwise(seen[:7]))
    assert seen[-1] == 0.5 and max(seen) == 0.5
    assert list(itertools.islice(pauses(0.3, 0.1), 3)) == [0.3, 0.3, 0.3]  # never below the first
    assert list(itertools.islice(pauses(0, 0.5), 3)) == [0, 0, 0]


def test_a_failing_check_is_polled_ever_less_often_and_last_at_the_deadline() -> None:
    start = time.monotonic()
    calls: list[float] = []

    def check() -> bool:
        calls.append(time.monotonic())
        return False

    with pytest.raises(AssertionError, match=r"not met within 1\.5s"):
        eventually(check, timeout=1.5, interval=0.05, max_interval=0.3)
    assert 4 <= len(calls) <= 12  # 30 at a fixed 50 ms
    assert calls[-1] >= start + 1.5  # the pause before the last check was cut to end at the deadline
