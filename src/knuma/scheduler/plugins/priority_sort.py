"""PrioritySort (QueueSort): the order of the active queue, as kube-scheduler's default.

Higher `spec.priority` first; among equal priorities, the pod that entered the queue earlier (its queue timestamp,
not its creation time).
"""

from __future__ import annotations

from knuma.api.pod import Pod

__all__ = ["NAME", "PrioritySort"]

NAME = "PrioritySort"


class PrioritySort:
    name = NAME

    def less(self, pod: Pod, timestamp: float, other: Pod, other_timestamp: float) -> bool:
        """`Less(pInfo1, pInfo2)`: does `pod` (queued at `timestamp`) go before `other`?"""
        return pod.priority > other.priority or (pod.priority == other.priority and timestamp < other_timestamp)

    @staticmethod
    def sort_key(pod: Pod, timestamp: float) -> tuple[int, float]:
        """A key that orders as `less` does, for `heapq` and `sorted`."""
        return (-pod.priority, timestamp)
