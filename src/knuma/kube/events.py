"""Kubernetes Events (`core/v1`), as kube-scheduler records them, with client-go's deduplication and rate limit.

`kubectl describe pod` and `kubectl get events` show what the scheduler did: `Scheduled` (Normal) and
`FailedScheduling` (Warning). The same (object, reason, message) within the dedupe window becomes a count increment
on the existing Event instead of a new object, and a token bucket caps the write rate, so a pod that stays
unschedulable through many attempts never floods the API server.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from knuma.kube import rest
from knuma.kube.errors import KubeApiError, NotFound
from knuma.kube.ratelimit import TokenBucket

__all__ = ["EventRecorder", "ObjectReference", "parse_timestamp", "timestamp"]

log = logging.getLogger("knuma.kube.events")


@dataclass(frozen=True)
class ObjectReference:
    kind: str
    namespace: str
    name: str
    uid: str = ""
    api_version: str = "v1"

    def to_dict(self) -> dict[str, str]:
        out = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:  # a cluster-scoped object (a Node) has none (`omitempty`)
            out["namespace"] = self.namespace
        if self.uid:
            out["uid"] = self.uid
        return out

    @property
    def event_namespace(self) -> str:
        """Where its Events go: its namespace, `default` for a cluster-scoped object (client-go's `makeEvent`)."""
        return self.namespace or "default"


@dataclass
class _Recorded:
    name: str
    count: int
    last: float


class EventRecorder:
    def __init__(
        self,
        http: rest.AsyncApi,
        component: str,
        *,
        qps: float = 50.0,
        burst: int = 100,
        dedupe_window: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.http = http
        self.component = component
        self.dedupe_window = dedupe_window
        self.clock = clock
        self._limit = TokenBucket(qps, burst, clock())
        self._last_ns = 0
        self._recorded: dict[tuple[ObjectReference, str, str], _Recorded] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.dropped = 0

    def record(
        self, ref: ObjectReference, event_type: str, reason: str, message: str, *, component: str | None = None
    ) -> None:
        """Send (in the background) unless the rate limit is exhausted; never raises. `component` overrides the
        reporting component (a scheduler reports each pod's profile name, as kube-scheduler does)."""
        if not self._limit.try_accept(self.clock()):
            self.dropped += 1
            return
        task = asyncio.get_running_loop().create_task(
            self._send(ref, event_type, reason, message, component or self.component)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def flush(self) -> None:
        """Wait for the events in flight (at shutdown)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _send(self, ref: ObjectReference, event_type: str, reason: str, message: str, component: str) -> None:
        key = (ref, reason, message)
        now = self.clock()
        stamp = timestamp()
        previous = self._recorded.get(key)
        path = f"/api/v1/namespaces/{ref.event_namespace}/events"
        try:
            if previous is not None and now - previous.last < self.dedupe_window:
                previous.count += 1
                previous.last = now
                patch = {"count": previous.count, "lastTimestamp": stamp}
                with contextlib.suppress(NotFound):  # expired meanwhile: record a new one
                    await rest.patch(self.http, f"{path}/{previous.name}", patch)
                    return
            name = self._event_name(ref)
            body = _event(name, ref, event_type, reason, message, component, stamp)
            await rest.post(self.http, path, body)
            self._recorded[key] = _Recorded(name, 1, now)
            if len(self._recorded) > 4096:
                self._expire(now)
        except KubeApiError as err:
            log.warning("could not record event %s for %s/%s: %s", reason, ref.namespace, ref.name, err)

    def _event_name(self, ref: ObjectReference) -> str:
        """client-go's `makeEvent`: the object's name and the time in nanoseconds in hex, so that `kubectl get
        events` (sorted by name) lists an object's events in the order they happened. Strictly increasing here, so
        two events of one recorder in the same nanosecond do not collide."""
        self._last_ns = max(time.time_ns(), self._last_ns + 1)
        return f"{ref.name}.{self._last_ns:x}"

    def _expire(self, now: float) -> None:
        for key in [k for k, v in self._recorded.items() if now - v.last >= self.dedupe_window]:
            del self._recorded[key]


def _event(
    name: str, ref: ObjectReference, event_type: str, reason: str, message: str, component: str, stamp: str
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": ref.event_namespace},
        "involvedObject": ref.to_dict(),
        "type": event_type,
        "reason": reason,
        "message": message,
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": component,
        "action": "Scheduling" if reason in ("Scheduled", "FailedScheduling") else reason,
        "count": 1,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
    }


def timestamp() -> str:
    """Now, as Kubernetes writes times in objects (RFC 3339, UTC, seconds)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(value: object) -> dt.datetime | None:
    """A time as objects carry it (`metav1.Time` / `MicroTime`: RFC 3339, `Z` or an offset, seconds or fractions),
    timezone-aware; None when it is absent or not such a time (objects written before validation, or by hand)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)
