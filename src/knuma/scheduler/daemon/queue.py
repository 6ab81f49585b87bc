"""The scheduling queue, as kube-scheduler's: active, backoff, and unschedulable pods.

- **active**: ordered by PrioritySort (higher `spec.priority` first, then earlier arrival).
- **backoff**: pods whose last attempt failed wait `initial * 2^(attempts-1)` seconds, capped (1 s to 10 s by default,
  `podInitialBackoffSeconds` / `podMaxBackoffSeconds`), before they return to active.
- **unschedulable**: pods no node could take. They move out (to backoff if their backoff has not expired, else
  active) on a cluster event that can make them schedulable — a node added or changed, an NRT update, a pod deleted —
  or after `max_unschedulable` seconds (kube-scheduler's 5 minute flush). A move request that arrives while a pod is
  being scheduled is remembered, so the pod does not sleep through the event that would have freed room.

Pure logic plus an `asyncio.Event` to wake the scheduling loop; time comes from an injectable clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from knuma.api.pod import Pod

__all__ = ["QueuedPod", "SchedulingQueue"]


@dataclass
class QueuedPod:
    pod: Pod
    timestamp: float
    """When the pod entered the queue (first time); e2e scheduling latency starts here."""
    attempts: int = 0
    last_failure: float = 0.0
    unschedulable_since: float = 0.0

    @property
    def key(self) -> str:
        return self.pod.key


@dataclass(order=True)
class _HeapItem:
    priority: int
    timestamp: float
    seq: int
    key: str = field(compare=False)


class SchedulingQueue:
    def __init__(
        self,
        *,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_unschedulable: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_unschedulable = max_unschedulable
        self.clock = clock
        self._active: dict[str, QueuedPod] = {}
        self._seq_of: dict[str, int] = {}
        """The heap entry that is live for each active pod (older entries are skipped when popped)."""
        self._heap: list[_HeapItem] = []
        self._backoff: dict[str, QueuedPod] = {}
        self._unschedulable: dict[str, QueuedPod] = {}
        self._in_flight: dict[str, QueuedPod] = {}
        self._move_requested: set[str] = set()
        self._seq = 0
        self.wake = asyncio.Event()

    # -- what comes in ---------------------------------------------------------------------------------------

    def add(self, pod: Pod) -> None:
        """A pending pod appeared or changed: new pods go to active; known ones keep their place and attempts."""
        key = pod.key
        for pool in (self._active, self._backoff, self._unschedulable, self._in_flight):
            queued = pool.get(key)
            if queued is not None:
                queued.pod = pod
                if pool is self._unschedulable:
                    # The pod itself changed (e.g. its requests or tolerations): it may fit now.
                    del self._unschedulable[key]
                    self._to_backoff_or_active(queued)
                return
        self._push(QueuedPod(pod, self.clock()))

    def delete(self, key: str) -> None:
        self._active.pop(key, None)
        self._seq_of.pop(key, None)
        self._backoff.pop(key, None)
        self._unschedulable.pop(key, None)
        self._in_flight.pop(key, None)
        self._move_requested.discard(key)

    def __contains__(self, key: str) -> bool:
        return any(key in pool for pool in (self._active, self._backoff, self._unschedulable, self._in_flight))

    # -- the scheduling loop -------------------------------------------------------------------------------------

    def pop_ready(self) -> QueuedPod | None:
        """The next active pod (moving due backoff pods first), or None when nothing is ready."""
        self.flush()
        while self._heap:
            item = heapq.heappop(self._heap)
            if self._seq_of.get(item.key) != item.seq:
                continue  # stale: the pod left active, or was pushed again later
            del self._seq_of[item.key]
            queued = self._active.pop(item.key)
            queued.attempts += 1
            self._in_flight[queued.key] = queued
            return queued
        self.wake.clear()
        return None

    async def pop(self) -> QueuedPod:
        """Wait for the next pod to schedule."""
        while True:
            queued = self.pop_ready()
            if queued is not None:
                return queued
            delay = self.next_due()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), timeout=delay)

    def done(self, key: str) -> None:
        """The cycle for `key` ended with the pod bound (or gone)."""
        self._in_flight.pop(key, None)
        self._move_requested.discard(key)

    def unschedulable(self, queued: QueuedPod) -> None:
        """No node fits: park the pod until an event may help (or right back to backoff if one already came)."""
        self._in_flight.pop(queued.key, None)
        now = self.clock()
        queued.last_failure = now
        if queued.key in self._move_requested:
            self._move_requested.discard(queued.key)
            self._to_backoff_or_active(queued)
            return
        queued.unschedulable_since = now
        self._unschedulable[queued.key] = queued

    def error(self, queued: QueuedPod) -> None:
        """An error (API failure, bind failure): retry after the pod's backoff."""
        self._in_flight.pop(queued.key, None)
        self._move_requested.discard(queued.key)
        queued.last_failure = self.clock()
        self._backoff[queued.key] = queued
        self.wake.set()

    def move_all(self) -> None:
        """A cluster event that can make unschedulable pods schedulable (node, NRT, pod deletion)."""
        for queued in list(self._unschedulable.values()):
            del self._unschedulable[queued.key]
            self._to_backoff_or_active(queued)
        self._move_requested.update(self._in_flight)

    def flush(self) -> None:
        now = self.clock()
        for queued in [q for q in self._backoff.values() if self._backoff_expiry(q) <= now]:
            del self._backoff[queued.key]
            self._push(queued)
        for queued in [
            q for q in self._unschedulable.values() if now - q.unschedulable_since >= self.max_unschedulable
        ]:
            del self._unschedulable[queued.key]
            self._to_backoff_or_active(queued)

    def next_due(self) -> float:
        """Seconds until the next backoff expiry (at most 1 s, so the unschedulable flush also runs)."""
        now = self.clock()
        due = [self._backoff_expiry(q) - now for q in self._backoff.values()]
        return max(0.0, min([1.0, *due]))

    def backoff_duration(self, queued: QueuedPod) -> float:
        return float(min(self.max_backoff, self.initial_backoff * 2 ** max(0, queued.attempts - 1)))

    def counts(self) -> dict[str, int]:
        return {
            "active": len(self._active),
            "backoff": len(self._backoff),
            "unschedulable": len(self._unschedulable),
            "gated": 0,
        }

    # -- internals -----------------------------------------------------------------------------------------------

    def _push(self, queued: QueuedPod) -> None:
        self._seq += 1
        self._active[queued.key] = queued
        self._seq_of[queued.key] = self._seq
        heapq.heappush(self._heap, _HeapItem(-queued.pod.priority, queued.timestamp, self._seq, queued.key))
        self.wake.set()

    def _backoff_expiry(self, queued: QueuedPod) -> float:
        return queued.last_failure + self.backoff_duration(queued)

    def _to_backoff_or_active(self, queued: QueuedPod) -> None:
        if self._backoff_expiry(queued) > self.clock():
            self._backoff[queued.key] = queued
            self.wake.set()
        else:
            self._push(queued)
