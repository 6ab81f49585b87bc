"""Watch streams: chunked, newline-delimited `{"type": ..., "object": ...}` events from a resourceVersion.

Each watcher owns a bounded queue that the store fills without ever waiting; a watcher that falls more than
`queue_size` events behind is closed (as kube-apiserver closes unresponsive watchers) and its client resumes from the
last resourceVersion it saw. So one slow client never delays writes or other watchers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web

from knuma.api.types import JsonObj
from knuma.errors import KnumaError
from knuma.local.apiserver import conversion, errors
from knuma.local.apiserver.resources import ResourceType
from knuma.local.apiserver.selectors import FieldRequirement, Requirement, fields_match, labels_match
from knuma.local.apiserver.store import GroupResource, Store, WatchEvent

_CLOSE = None
log = logging.getLogger("knuma.local.apiserver")


@dataclass(eq=False)
class Watcher:
    gr: GroupResource
    namespace: str | None
    labels: list[Requirement]
    fields: list[FieldRequirement]
    queue_size: int = 10000
    queue: asyncio.Queue[tuple[WatchEvent, str] | None] = field(init=False)
    overflowed: bool = False

    def __post_init__(self) -> None:
        self.queue = asyncio.Queue(self.queue_size + 1)

    def matches(self, obj: JsonObj | None) -> bool:
        if obj is None:
            return False
        if self.namespace is not None and obj["metadata"].get("namespace") != self.namespace:
            return False
        return labels_match(self.labels, obj) and fields_match(self.fields, obj)

    def translate(self, event: WatchEvent) -> str | None:
        """The event type this watcher sees, or None: an object leaving the selector is DELETED for it."""
        new = self.matches(event.obj)
        if event.type == "ADDED":
            return "ADDED" if new else None
        old = self.matches(event.old)
        if event.type == "DELETED":
            return "DELETED" if old or new else None
        if new and old:
            return "MODIFIED"
        if new:
            return "ADDED"
        return "DELETED" if old else None

    def offer(self, event: WatchEvent) -> None:
        if self.overflowed:
            return
        kind = self.translate(event)
        if kind is None:
            return
        if self.queue.qsize() >= self.queue_size:
            self.overflowed = True
            self.queue.put_nowait(_CLOSE)
            return
        self.queue.put_nowait((event, kind))


def _bookmark(rt: ResourceType, rv: int, *, initial_end: bool = False) -> bytes:
    md: JsonObj = {"resourceVersion": str(rv), "creationTimestamp": None}
    if initial_end:
        md["annotations"] = {"k8s.io/initial-events-end": "true"}
    obj = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": md}
    return json.dumps({"type": "BOOKMARK", "object": obj}, separators=(",", ":")).encode() + b"\n"


def _error_line(err: errors.ApiError) -> bytes:
    return json.dumps({"type": "ERROR", "object": err.status()}, separators=(",", ":")).encode() + b"\n"


@dataclass
class WatchOptions:
    resource_version: str
    timeout_seconds: float
    bookmarks: bool
    send_initial_events: bool
    bookmark_interval: float
    queue_size: int
    #: A client that accepts no data for this long is disconnected (its handler would otherwise wait forever).
    write_timeout: float = 60.0
    #: Turns each object into what is sent (a one-row Table for `kubectl get -w`); None sends objects as they are.
    render: Callable[[JsonObj], JsonObj] | None = None


def _encode(event: WatchEvent, rt: ResourceType, kind: str, opts: WatchOptions) -> bytes:
    if opts.render is None and rt.storage is None:
        return event.encode(rt.api_version, kind)
    obj = conversion.from_storage(rt, event.obj)
    if opts.render is not None:
        obj = opts.render(obj)
    return json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n"


class _StalledClient(KnumaError):
    pass


async def _send(request: web.Request, response: web.StreamResponse, data: bytes, timeout: float) -> None:
    try:
        await asyncio.wait_for(response.write(data), timeout)
    except TimeoutError as exc:
        if request.transport is not None:
            request.transport.abort()
        raise _StalledClient from exc


async def serve(
    request: web.Request,
    store: Store,
    rt: ResourceType,
    watcher: Watcher,
    opts: WatchOptions,
) -> web.StreamResponse:
    """Stream events to the client until `timeoutSeconds`, a disconnect, or an overflow."""
    initial: list[bytes] = []
    rv_text = opts.resource_version
    start_rv = store.rv
    expired = False
    if opts.send_initial_events or rv_text in ("", "0"):
        for obj in store.scan(rt.storage_gr, watcher.namespace):
            if watcher.matches(obj):
                initial.append(
                    WatchEvent("ADDED", int(obj["metadata"]["resourceVersion"]), rt.storage_gr, obj).encode(
                        rt.api_version
                    )
                )
        if opts.send_initial_events and opts.bookmarks:
            initial.append(_bookmark(rt, start_rv, initial_end=True))
    else:
        try:
            since = int(rv_text)
        except ValueError as exc:
            raise errors.bad_request(f"invalid resource version: {rv_text!r}") from exc
        replay = store.events_since(rt.storage_gr, since)
        if replay is None:
            expired = True
        else:
            for event in replay:
                kind = watcher.translate(event)
                if kind is not None:
                    initial.append(_encode(event, rt, kind, opts))
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json", "Cache-Control": "no-cache"})
    response.enable_chunked_encoding()
    if expired:
        await response.prepare(request)
        err = errors.gone(f"too old resource version: {rv_text} ({store.compacted_rv})")
        await response.write(_error_line(err))
        await response.write_eof()
        return response
    store.subscribe(watcher)
    try:
        await response.prepare(request)
        if initial:
            await _send(request, response, b"".join(initial), opts.write_timeout)
        deadline = time.monotonic() + opts.timeout_seconds
        queue = watcher.queue
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if opts.bookmarks:
                    await _send(request, response, _bookmark(rt, store.rv), opts.write_timeout)
                break
            wait = min(remaining, opts.bookmark_interval) if opts.bookmarks else remaining
            try:
                item = await asyncio.wait_for(queue.get(), wait)
            except TimeoutError:
                if opts.bookmarks and queue.empty() and time.monotonic() < deadline:
                    await _send(request, response, _bookmark(rt, store.rv), opts.write_timeout)
                continue
            chunk: list[bytes] = []
            closing = False
            while True:
                if item is None:
                    closing = True
                    break
                event, kind = item
                chunk.append(_encode(event, rt, kind, opts))
                if queue.empty() or len(chunk) >= 512:
                    break
                item = queue.get_nowait()
            if chunk:
                await _send(request, response, b"".join(chunk), opts.write_timeout)
            if closing:
                break
        with contextlib.suppress(ConnectionError, RuntimeError):
            await asyncio.wait_for(response.write_eof(), opts.write_timeout)
    except _StalledClient:
        log.info("closed a watch of %s whose client stopped reading", rt.plural)
    finally:
        store.unsubscribe(watcher)
    return response
