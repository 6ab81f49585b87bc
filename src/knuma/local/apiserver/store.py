"""Object storage with one monotonic resourceVersion, an event history for watches, and optional durability.

All methods run on the server's event loop thread, so the store needs no locks: a write assigns the next
resourceVersion, persists the object (when a durable backend is configured) *before* returning, appends the event to
the bounded history and offers it to every subscribed watcher without waiting for any of them.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

import msgspec

from knuma.api.types import JsonObj

GroupResource = tuple[str, str]


@dataclass
class WatchEvent:
    """One change: `type` is ADDED, MODIFIED or DELETED; `obj` carries the new resourceVersion."""

    type: str
    rv: int
    gr: GroupResource
    obj: JsonObj
    old: JsonObj | None = None
    #: Bytes the event accounts for in the watch history (set by the store).
    size: int = 0
    _encoded: dict[tuple[str, str], bytes] = field(default_factory=dict, repr=False)

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace") or "")

    def encode(self, api_version: str, type_: str | None = None) -> bytes:
        """The newline-terminated JSON line for watchers of `api_version`, cached across watchers."""
        kind = type_ or self.type
        cached = self._encoded.get((api_version, kind))
        if cached is None:
            obj = self.obj if self.obj.get("apiVersion") == api_version else {**self.obj, "apiVersion": api_version}
            cached = _encode_line({"type": kind, "object": obj})
            self._encoded[(api_version, kind)] = cached
        return cached


_MSGSPEC = msgspec.json.Encoder()


def _encode_line(event: JsonObj) -> bytes:
    """A watch line, encoded once for every watcher. msgspec (about ten times faster than `json.dumps` on a pod) is
    exact here because admission refuses non-finite numbers (`bodies`: as kube-apiserver, which cannot decode them),
    the one value the two encoders give different meanings (msgspec writes `null`, `json` an invalid `NaN`); the
    rest differs only in spelling (`1e100` for `1e+100`, UTF-8 for `\\u` escapes), not in the decoded value.
    Anything msgspec cannot encode goes through `json`."""
    try:
        return _MSGSPEC.encode(event) + b"\n"
    except (TypeError, OverflowError, msgspec.EncodeError):
        return json.dumps(event, separators=(",", ":")).encode() + b"\n"


class Subscriber(Protocol):
    """A watcher: `offer` must never block (the store calls it for every event)."""

    gr: GroupResource

    def offer(self, event: WatchEvent) -> None: ...


class Backend(Protocol):
    """Durable storage: a write must be on disk when the method returns."""

    def load(self) -> tuple[int, list[tuple[GroupResource, JsonObj]]]: ...

    def put(self, gr: GroupResource, obj: JsonObj, rv: int) -> None: ...

    def delete(self, gr: GroupResource, namespace: str, name: str, rv: int) -> None: ...

    def set_aside(self, gr: GroupResource, namespace: str, name: str, reason: str) -> None: ...

    def close(self) -> None: ...


#: The watch history's default bounds: events kept for resuming watches, and their encoded size. A watcher that falls
#: further behind gets 410 Gone and re-lists, as with kube-apiserver's watch cache; the bytes bound keeps a stream of
#: large objects from holding hundreds of megabytes (Python objects take several times their JSON size).
DEFAULT_WINDOW_EVENTS = 10_000
DEFAULT_WINDOW_BYTES = 16 * 1024 * 1024


class Store:
    def __init__(
        self,
        backend: Backend | None = None,
        window: int = DEFAULT_WINDOW_EVENTS,
        window_bytes: int = DEFAULT_WINDOW_BYTES,
    ) -> None:
        if window < 1 or window_bytes < 1:
            raise ValueError("the watch window needs room for at least one event and one byte")
        self._objects: dict[GroupResource, dict[tuple[str, str], JsonObj]] = {}
        self._history: deque[WatchEvent] = deque()
        self._window = window
        self._window_bytes = window_bytes
        #: Encoded size of the events in `_history` (each event's object, twice when it carries the old one).
        self.history_bytes = 0
        self._subscribers: dict[GroupResource, set[Subscriber]] = {}
        self._backend = backend
        self.rv = 0
        #: Oldest resourceVersion a watch can resume from; older ones get 410 Gone.
        self.compacted_rv = 0
        if backend is not None:
            rv, objects = backend.load()
            self.rv = rv
            self.compacted_rv = rv
            for gr, obj in objects:
                md = obj.get("metadata")
                if not isinstance(md, dict) or not isinstance(md.get("name"), str) or not md["name"]:
                    name = md.get("name") if isinstance(md, dict) else None
                    namespace = md.get("namespace") if isinstance(md, dict) else None
                    backend.set_aside(gr, str(namespace or ""), str(name), "metadata.name is not a non-empty string")
                    continue
                if not isinstance(md.get("namespace") or "", str):
                    backend.set_aside(gr, str(md["namespace"]), md["name"], "metadata.namespace is not a string")
                    continue
                self._objects.setdefault(gr, {})[(md.get("namespace") or "", md["name"])] = obj

    # -- reads ---------------------------------------------------------------------------------------------------

    def get(self, gr: GroupResource, namespace: str, name: str) -> JsonObj | None:
        return self._objects.get(gr, {}).get((namespace, name))

    def scan(self, gr: GroupResource, namespace: str | None = None) -> list[JsonObj]:
        """Objects sorted by (namespace, name), the order `continue` tokens rely on."""
        bucket = self._objects.get(gr, {})
        keys = sorted(k for k in bucket if namespace is None or k[0] == namespace)
        return [bucket[k] for k in keys]

    def iter_all(self) -> Iterator[tuple[GroupResource, JsonObj]]:
        for gr, bucket in list(self._objects.items()):
            for obj in list(bucket.values()):
                yield gr, obj

    def count(self, gr: GroupResource) -> int:
        return len(self._objects.get(gr, {}))

    # -- writes --------------------------------------------------------------------------------------------------

    def put(self, gr: GroupResource, obj: JsonObj, *, created: bool) -> JsonObj:
        """Store `obj` (which the caller must not mutate afterwards) with the next resourceVersion."""
        rv = self.rv + 1
        md = obj["metadata"]
        md["resourceVersion"] = str(rv)
        key = (md.get("namespace") or "", md["name"])
        if self._backend is not None:
            self._backend.put(gr, obj, rv)
        self.rv = rv
        bucket = self._objects.setdefault(gr, {})
        old = bucket.get(key)
        bucket[key] = obj
        self._publish(WatchEvent("ADDED" if created else "MODIFIED", rv, gr, obj, old))
        return obj

    def remove(self, gr: GroupResource, namespace: str, name: str) -> JsonObj | None:
        bucket = self._objects.get(gr, {})
        old = bucket.get((namespace, name))
        if old is None:
            return None
        rv = self.rv + 1
        if self._backend is not None:
            self._backend.delete(gr, namespace, name, rv)
        self.rv = rv
        del bucket[(namespace, name)]
        final = {**old, "metadata": {**old["metadata"], "resourceVersion": str(rv)}}
        self._publish(WatchEvent("DELETED", rv, gr, final, old))
        return final

    def set_aside(self, gr: GroupResource, obj: JsonObj, reason: str) -> None:
        """Take a stored object the server cannot serve out of service (at start-up, before anyone watches): it
        leaves the served objects without an event and, when durable, moves to the backend's set-aside table."""
        md = obj["metadata"]
        key = (md.get("namespace") or "", md["name"])
        self._objects.get(gr, {}).pop(key, None)
        if self._backend is not None:
            self._backend.set_aside(gr, key[0], key[1], reason)

    def drop_group_resource(self, gr: GroupResource) -> None:
        """Forget every object of a resource whose CRD went away (its objects were deleted first)."""
        self._objects.pop(gr, None)

    # -- watch ---------------------------------------------------------------------------------------------------

    def _publish(self, event: WatchEvent) -> None:
        event.size = len(event.encode(event.obj.get("apiVersion", ""))) * (2 if event.old is not None else 1)
        self._history.append(event)
        self.history_bytes += event.size
        while len(self._history) > self._window or (self.history_bytes > self._window_bytes and len(self._history) > 1):
            dropped = self._history.popleft()
            self.history_bytes -= dropped.size
            self.compacted_rv = dropped.rv
        for sub in list(self._subscribers.get(event.gr, ())):
            sub.offer(event)

    def subscribe(self, sub: Subscriber) -> None:
        self._subscribers.setdefault(sub.gr, set()).add(sub)

    def unsubscribe(self, sub: Subscriber) -> None:
        self._subscribers.get(sub.gr, set()).discard(sub)

    @property
    def history_len(self) -> int:
        return len(self._history)

    def events_since(self, gr: GroupResource, rv: int) -> list[WatchEvent] | None:
        """Events of `gr` after `rv`, or None when `rv` is older than the retained window (410 Gone)."""
        if rv < self.compacted_rv:
            return None
        return [e for e in self._history if e.rv > rv and e.gr == gr]

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
