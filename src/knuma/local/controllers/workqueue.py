"""The work loop every local controller runs: client-go's workqueue, reduced to what `knuma up` needs.

Informer handlers `add` a `(kind, key)`; an item already waiting is not queued twice, so a burst of events on one
object costs one sync. After the informers have synced, each item is handed to the controller's `sync`; a sync that
fails with an API error (a conflict, a lost connection) is retried after a second.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from knuma.kube.errors import KubeApiError
from knuma.kube.informer import Informer
from knuma.kube.tasks import cancel_and_wait

__all__ = ["WorkQueue"]

log = logging.getLogger("knuma.local.controllers")

RETRY_AFTER = 1.0


class WorkQueue:
    def __init__(self, name: str) -> None:
        self.name = name
        self._queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self._queued: set[tuple[str, str]] = set()

    def add(self, kind: str, key: str) -> None:
        item = (kind, key)
        if item not in self._queued:
            self._queued.add(item)
            self._queue.put_nowait(item)

    def add_after(self, delay: float, kind: str, key: str) -> None:
        asyncio.get_running_loop().call_later(delay, self.add, kind, key)

    async def run(self, informers: Sequence[Informer], sync: Callable[[str, str], Awaitable[None]]) -> None:
        """Run the informers and sync queued items until cancelled; the informers stop with it."""
        tasks = [asyncio.create_task(i.run()) for i in informers]
        try:
            await asyncio.gather(*(i.synced.wait() for i in informers))
            while True:
                kind, key = await self._queue.get()
                self._queued.discard((kind, key))
                try:
                    await sync(kind, key)
                except KubeApiError as err:
                    log.warning("%s: %s %s: %s; retrying", self.name, kind, key, err)
                    self.add_after(RETRY_AFTER, kind, key)
        finally:
            await cancel_and_wait(tasks)
