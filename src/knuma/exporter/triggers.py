"""When to update: a periodic tick, a touched notify file, a changed kubelet state file, a changed configuration
file, a pod turning terminal; at most once per second.

`UpdateQueue` is the rate limiter with coalescing: every trigger is remembered until an update consumes it (no event
is lost), and all triggers that arrive while an update is pending or running collapse into the next single update,
started no sooner than `min_interval` after the previous one (no storm).

File watchers poll `stat()` (mtime, ctime, size, inode) every 100 ms rather than using inotify: it needs no extra
dependency, sees `touch` (a ctime change, inotify's IN_ATTRIB) and files replaced by rename (the kubelet writes its
checkpoints that way), and costs a few syscalls per second.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import os
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from knuma.errors import InvalidInput

__all__ = ["KUBELET_STATE_FILES", "Trigger", "UpdateQueue", "prepare_notify_file", "tick", "watch_files"]

log = logging.getLogger("knuma.exporter.triggers")

KUBELET_STATE_FILES = ("cpu_manager_state", "memory_manager_state", "device-plugins/kubelet_internal_checkpoint")


class Trigger(enum.StrEnum):
    INITIAL = "initial"
    PERIODIC = "periodic"
    REACTIVE = "reactive"
    RETRY = "retry"
    CONFIG = "config"
    """The kubelet config file or the exporter's config file changed: re-read them before the update."""
    DELETED = "deleted"
    """The published object was deleted, or its CRD re-created: publish it again at once."""


class UpdateQueue:
    def __init__(self, min_interval: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.min_interval = min_interval
        self._clock = clock
        self._pending: set[Trigger] = set()
        self._wakeup = asyncio.Event()
        self._last: float | None = None

    def notify(self, trigger: Trigger) -> None:
        self._pending.add(trigger)
        self._wakeup.set()

    @property
    def pending(self) -> frozenset[Trigger]:
        return frozenset(self._pending)

    async def next(self) -> frozenset[Trigger]:
        """Wait for at least one trigger and for the rate limit; return every trigger collected meanwhile."""
        while not self._pending:
            self._wakeup.clear()
            await self._wakeup.wait()
        if self._last is not None:
            delay = self._last + self.min_interval - self._clock()
            if delay > 0:
                await asyncio.sleep(delay)
        triggers = frozenset(self._pending)
        self._pending.clear()
        self._last = self._clock()
        return triggers


async def tick(queue: UpdateQueue, interval: float) -> None:
    """Periodic trigger; `interval <= 0` disables it."""
    if interval <= 0:
        return
    while True:
        await asyncio.sleep(interval)
        queue.notify(Trigger.PERIODIC)


def prepare_notify_file(path: str | os.PathLike[str]) -> Path:
    """Create the notify file (and its directory) as RTE does; refuse a non-regular or non-empty existing file,
    which would mean the path points somewhere it should not."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o750)
    if target.exists() or target.is_symlink():
        info = target.lstat()
        if not stat.S_ISREG(info.st_mode):
            raise InvalidInput(f"--notify-file {target}: exists and is not a regular file")
        if info.st_size:
            raise InvalidInput(f"--notify-file {target}: exists and is not empty; refusing to use it")
        return target
    target.touch()
    return target


def _signature(path: Path) -> tuple[int, int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino)


async def watch_files(
    queue: UpdateQueue, paths: Sequence[Path], poll: float = 0.1, trigger: Trigger = Trigger.REACTIVE
) -> None:
    """Notify `queue` with `trigger` whenever one of `paths` is created, written, touched, replaced or removed."""
    seen = {path: _signature(path) for path in paths}
    while True:
        await asyncio.sleep(poll)
        for path in paths:
            current = _signature(path)
            if current != seen[path]:
                seen[path] = current
                log.debug("%s changed", path)
                queue.notify(trigger)
