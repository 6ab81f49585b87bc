"""The tests' one way to wait: the value comes back, and a timeout says what did not hold."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from knuma.testing.polling import eventually, eventually_async


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
