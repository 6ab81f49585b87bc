"""Stopping the background tasks a loop started (informers, watches, tickers) when the loop itself stops.

`task.cancel()` only asks a task to stop: its `finally` blocks (closing a watch stream, flushing events) run the next
time it is scheduled, and an error it ends with is reported by the event loop as "Task exception was never
retrieved" unless someone reads it. A daemon that returns right after cancelling would leave both behind, so its
loops stop their tasks through `cancel_and_wait`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

__all__ = ["cancel_and_wait"]


async def cancel_and_wait(tasks: Iterable[asyncio.Future[Any]]) -> None:
    """Cancel `tasks`, wait until every one has finished, then raise the first error one of them ended with.

    All are waited for before anything is raised: awaiting them one by one would stop at the first error and leave
    the others unfinished and their errors unread. A task that ends cancelled (the usual case) is no error. If the
    caller is cancelled while waiting, the tasks are cancelled once more (which may cut their cleanup short) and
    still waited for; then the caller's cancellation goes on, it is not swallowed.
    """
    pending = list(tasks)
    for task in pending:
        task.cancel()
    if not pending:
        return
    await asyncio.gather(*pending, return_exceptions=True)  # reads every outcome, waits for all even if cancelled
    errors = [error for task in pending if not task.cancelled() and (error := task.exception()) is not None]
    if errors:
        raise errors[0]
