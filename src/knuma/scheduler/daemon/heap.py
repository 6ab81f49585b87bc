"""The scheduler's heap, frozen for the cycle collector while a scheduler runs (`FROZEN_HEAP`), and the same for a
benchmark that times the daemon's cycle in process (`frozen_heap`), so that it measures the garbage collection the
daemon has, not a heavier one."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["FROZEN_HEAP", "frozen_heap"]


class FrozenHeap:
    """`gc.freeze()` once the caches have synced, for as long as a scheduler runs in the process.

    The initial lists (every Node, NRT and Pod, and the cache built from them) are most of the heap and live as long
    as the scheduler; CPython's full collections traverse all of it each time (at 5000 nodes and 10,000 pods,
    about 0.3 s of CPU per collection, about 10% of the scheduler's CPU through a burst of bindings). Frozen
    objects are skipped by the cycle collector and still freed by reference counting when an informer replaces
    them (JSON objects form no cycles). Counted, so that the last scheduler to stop in a process (tests run
    several) unfreezes."""

    def __init__(self) -> None:
        self.holders = 0

    def freeze(self) -> None:
        self.holders += 1
        gc.freeze()

    def thaw(self) -> None:
        self.holders -= 1
        if self.holders == 0:
            gc.unfreeze()


FROZEN_HEAP = FrozenHeap()


@contextmanager
def frozen_heap() -> Iterator[None]:
    """`FROZEN_HEAP` held for the block: what `Scheduler.run` does from its caches' sync to its stop."""
    FROZEN_HEAP.freeze()
    try:
        yield
    finally:
        FROZEN_HEAP.thaw()
