"""`cancel_and_wait`: when it returns, every task has finished (its `finally` ran), every outcome has been read, and
the first real error is raised; a cancellation of the caller is not swallowed."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest

from knuma.kube.tasks import cancel_and_wait


async def _forever(record: list[str], name: str, cleanup_delay: float = 0.0) -> None:
    try:
        await asyncio.Event().wait()
    finally:
        await asyncio.sleep(cleanup_delay)  # a cleanup that itself takes a turn of the loop, as closing a stream does
        record.append(name)


async def _fails_on_cancel(record: list[str], name: str) -> None:
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        record.append(name)
        raise RuntimeError(f"{name} failed while stopping") from None


async def test_every_finally_has_run_when_it_returns() -> None:
    record: list[str] = []
    tasks = [asyncio.create_task(_forever(record, f"t{i}", cleanup_delay=0.01 * i)) for i in range(3)]
    await asyncio.sleep(0)  # the tasks are inside their `try`
    await cancel_and_wait(tasks)
    assert sorted(record) == ["t0", "t1", "t2"]
    assert all(t.cancelled() for t in tasks)


async def test_a_task_that_never_started_is_stopped_too() -> None:
    record: list[str] = []
    task = asyncio.create_task(_forever(record, "t"))
    await cancel_and_wait([task])  # cancelled before its first step: its body never runs
    assert task.cancelled() and record == []


async def test_nothing_to_stop() -> None:
    await cancel_and_wait([])


async def test_the_first_error_is_raised_after_all_have_finished() -> None:
    record: list[str] = []
    tasks = [
        asyncio.create_task(_fails_on_cancel(record, "first")),
        asyncio.create_task(_forever(record, "slow", cleanup_delay=0.05)),
        asyncio.create_task(_fails_on_cancel(record, "second")),
    ]
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="first failed while stopping"):
        await cancel_and_wait(tasks)
    assert sorted(record) == ["first", "second", "slow"]  # the slow cleanup after the first error ran all the same
    assert all(t.done() for t in tasks)


async def test_a_task_that_had_already_failed_raises_its_error() -> None:
    async def boom() -> None:
        raise ValueError("broken before the stop")

    task = asyncio.create_task(boom())
    await asyncio.sleep(0)
    assert task.done()
    with pytest.raises(ValueError, match="broken before the stop"):
        await cancel_and_wait([task])


def test_no_error_is_left_unretrieved(caplog: pytest.LogCaptureFixture) -> None:
    """The event loop logs "Task exception was never retrieved" when a task whose error nobody read is collected:
    after `cancel_and_wait` raised the first of three errors, the other two must have been read as well."""
    tasks: list[weakref.ref[asyncio.Task[None]]] = []

    async def stop_three_that_fail() -> None:
        record: list[str] = []
        started = [asyncio.create_task(_fails_on_cancel(record, f"t{i}")) for i in range(3)]
        tasks.extend(weakref.ref(t) for t in started)
        await asyncio.sleep(0)
        with pytest.raises(RuntimeError, match="t0 failed"):
            await cancel_and_wait(started)

    asyncio.run(stop_three_that_fail())  # a loop of its own: its tasks can be collected once it is closed
    gc.collect()
    assert all(ref() is None for ref in tasks)  # collected, so an unread error would have been logged by now
    assert "never retrieved" not in caplog.text


async def test_the_callers_cancellation_goes_on_after_the_tasks_finished() -> None:
    record: list[str] = []
    tasks = [asyncio.create_task(_forever(record, "slow", cleanup_delay=0.05))]
    await asyncio.sleep(0)
    seen: list[str] = []

    async def stopping() -> None:
        try:
            await cancel_and_wait(tasks)
        except asyncio.CancelledError:
            seen.append("finished" if tasks[0].done() else "still running")
            raise
        seen.append("went on")  # must not happen: the caller was cancelled

    caller = asyncio.create_task(stopping())
    await asyncio.sleep(0.01)  # the caller waits for the slow cleanup
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert seen == ["finished"]
