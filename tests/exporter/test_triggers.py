from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from knuma.exporter.triggers import Trigger, UpdateQueue, prepare_notify_file, tick, watch_files


async def test_triggers_coalesce_into_one_update() -> None:
    queue = UpdateQueue(min_interval=0.3)
    for _ in range(50):
        queue.notify(Trigger.REACTIVE)
    queue.notify(Trigger.PERIODIC)
    assert await queue.next() == {Trigger.REACTIVE, Trigger.PERIODIC}
    assert queue.pending == frozenset()


@pytest.mark.slow
async def test_rate_limited_without_losing_events() -> None:
    queue = UpdateQueue(min_interval=0.3)
    queue.notify(Trigger.INITIAL)
    await queue.next()
    started = time.monotonic()
    # a storm of events while the previous update "runs": exactly one more update, not before 0.3 s
    for _ in range(20):
        queue.notify(Trigger.REACTIVE)
        await asyncio.sleep(0.005)
    assert await queue.next() == {Trigger.REACTIVE}
    assert time.monotonic() - started >= 0.29
    # an event arriving during the rate-limit wait joins the pending update
    queue.notify(Trigger.REACTIVE)
    waiter = asyncio.create_task(queue.next())
    await asyncio.sleep(0.1)
    queue.notify(Trigger.PERIODIC)
    assert await waiter == {Trigger.REACTIVE, Trigger.PERIODIC}
    # nothing pending: next() waits
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(queue.next(), 0.4)


async def test_periodic_tick() -> None:
    queue = UpdateQueue(min_interval=0)
    task = asyncio.create_task(tick(queue, 0.05))
    assert await asyncio.wait_for(queue.next(), 1) == {Trigger.PERIODIC}
    task.cancel()
    await tick(queue, 0)  # disabled: returns at once


async def test_file_watch_sees_touch_write_replace_and_create(tmp_path: Path) -> None:
    notify = prepare_notify_file(tmp_path / "run" / "rte" / "notify")
    state = tmp_path / "cpu_manager_state"  # does not exist yet
    queue = UpdateQueue(min_interval=0)
    task = asyncio.create_task(watch_files(queue, [notify, state], poll=0.02))
    await asyncio.sleep(0.05)

    async def expect_event() -> None:
        assert await asyncio.wait_for(queue.next(), 1) == {Trigger.REACTIVE}

    os.utime(notify, ns=(1, 1))  # touch with another time
    await expect_event()
    state.write_text('{"policyName":"static"}')
    await expect_event()
    replacement = tmp_path / "state.tmp"
    replacement.write_text('{"policyName":"static","entries":{}}')
    os.replace(replacement, state)  # the kubelet's atomic checkpoint write
    await expect_event()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(queue.next(), 0.2)
    task.cancel()


def test_notify_file_preparation(tmp_path: Path) -> None:
    path = prepare_notify_file(tmp_path / "a" / "notify")
    assert path.is_file() and path.stat().st_size == 0
    assert prepare_notify_file(path) == path  # an empty existing file is fine
    path.write_text("data")
    with pytest.raises(ValueError, match="not empty"):
        prepare_notify_file(path)
    (tmp_path / "dir").mkdir()
    with pytest.raises(ValueError, match="not a regular file"):
        prepare_notify_file(tmp_path / "dir")
