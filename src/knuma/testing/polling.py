"""Waiting in tests for something another process or thread does: poll a check until it holds.

Tests of real processes (an API server, a scheduler, an exporter) cannot know when the other side acts, so they
poll. One definition keeps the waits generous (CI machines are loaded: a passing check returns at once, only a
failing test waits the whole timeout) and the failure readable: the last `AssertionError` the check raised is the
message, so a test can assert inside its check and see *what* did not hold, not only that time ran out.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any

DEFAULT_TIMEOUT = 30.0
DEFAULT_INTERVAL = 0.05


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
) -> Any:
    """Call `check` until it returns something truthy (returned) or `timeout` seconds pass (AssertionError naming
    `what` and the check's last assertion). Typed `Any` on purpose: checks are written `cond and value`, and the
    value is what the test goes on with."""
    deadline = time.monotonic() + timeout
    last: AssertionError | None = None
    while True:
        try:
            result = check()
            if result:
                return result
        except AssertionError as err:
            last = err
        if time.monotonic() > deadline:
            raise _timed_out(timeout, what, last)
        time.sleep(interval)


async def eventually_async(
    check: Callable[[], object],
    timeout: float = DEFAULT_TIMEOUT,
    interval: float = DEFAULT_INTERVAL,
    what: str = "",
) -> Any:
    """`eventually` on the running event loop; `check` may be a plain function or a coroutine function."""
    deadline = time.monotonic() + timeout
    last: AssertionError | None = None
    while True:
        try:
            outcome = check()
            result = await outcome if inspect.isawaitable(outcome) else outcome
            if result:
                return result
        except AssertionError as err:
            last = err
        if time.monotonic() > deadline:
            raise _timed_out(timeout, what, last)
        await asyncio.sleep(interval)
