"""Waiting in tests for something another process or thread does: poll a check until it holds.

Tests of real processes (an API server, a scheduler, an exporter) cannot know when the other side acts, so they
poll. One definition keeps the waits generous (CI machines are loaded: a passing check returns at once, only a
failing test waits the whole timeout) and the failure readable: the last `AssertionError` the check raised is the
message, so a test can assert inside its check and see *what* did not hold, not only that time ran out.

The pause between two checks grows (`interval`, then half as long again each time, up to `max_interval`): a check
of another process is itself work on the machine (a kubectl call is a process start and a request the API server
answers), and polling it 20 times a second through a 10-second grace period took the CPU the processes under test
and the other test workers needed (the silent-node test of `knuma up`: 38 CPU seconds in its 50 s, 21 with growing
pauses). A check that holds soon is still seen within 50 ms; one that takes seconds, within half a second.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable, Iterator
from typing import Any

DEFAULT_TIMEOUT = 30.0
DEFAULT_INTERVAL = 0.05
"""The first pause between two checks."""
MAX_INTERVAL = 0.5
"""The longest pause between two checks, reached after about a second of failing ones."""
BACKOFF = 1.5
"""How much longer each pause is than the one before."""


def pauses(first: float, longest: float) -> Iterator[float]:
    """`first`, then each pause `BACKOFF` times the one before, never above `longest` (nor below `first`)."""
    pause, ceiling = first, max(first, longest)
    while True:
        yield pause
        pause = min(pause * BACKOFF, ceiling)


def _pause_before(deadline: float, pause: float) -> float:
    """The pause, shortened so that the last check comes at the deadline rather than up to a pause after it."""
    return max(0.0, min(pause, deadline - time.monotonic()))


def _timed_out(timeout: float, what: str, last: AssertionError | None) -> AssertionError:
    subject = what or "condition"
    detail = f": {last}" if last is not None and str(last) else ""
    error = AssertionError(f"{subject} not met within {timeout:g}s{detail}")
    error.__cause__ = last
    return error


def eventually(
    check: Callable[[], object],
    timeout: float = DEFAULT_TIMEOUT,
    interval: float = DEFAULT_INTERVAL,
    what: str = "",
    max_interval: float = MAX_INTERVAL,
) -> Any:
    """Call `check` until it returns something truthy (returned) or `timeout` seconds pass (AssertionError naming
    `what` and the check's last assertion), pausing `interval` seconds after the first check and longer after each
    later one, up to `max_interval`. Typed `Any` on purpose: checks are written `cond and value`, and the value is
    what the test goes on with."""
    deadline = time.monotonic() + timeout
    waits = pauses(interval, max_interval)
    last: AssertionError | None = None
    while True:
        try:
            result = check()
            if result:
                return result
        except AssertionError as err:
            last = err
        if time.monotonic() >= deadline:
            raise _timed_out(timeout, what, last)
        time.sleep(_pause_before(deadline, next(waits)))


async def eventually_async(
    check: Callable[[], object],
    timeout: float = DEFAULT_TIMEOUT,
    interval: float = DEFAULT_INTERVAL,
    what: str = "",
    max_interval: float = MAX_INTERVAL,
) -> Any:
    """`eventually` on the running event loop; `check` may be a plain function or a coroutine function."""
    deadline = time.monotonic() + timeout
    waits = pauses(interval, max_interval)
    last: AssertionError | None = None
    while True:
        try:
            outcome = check()
            result = await outcome if inspect.isawaitable(outcome) else outcome
            if result:
                return result
        except AssertionError as err:
            last = err
        if time.monotonic() >= deadline:
            raise _timed_out(timeout, what, last)
        await asyncio.sleep(_pause_before(deadline, next(waits)))
