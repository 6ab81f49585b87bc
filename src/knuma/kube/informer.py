"""Informers: keep a local copy of one resource in sync with the API server, and tell a handler what changed.

client-go's reflector in asyncio, over plain JSON (no typed decoding on the hot path):

- **List** (paginated with `limit`/`continue`), then diff against the local store, so a relist after a lost watch
  reports the deletions and updates that happened meanwhile, not only what the new list contains.
- **Watch** from the list's `resourceVersion` with `allowWatchBookmarks=true` (bookmarks advance the resume point
  without sending objects) and a server-side `timeoutSeconds`; when the stream ends, watch again from the last
  resourceVersion seen.
- **410 Gone** (the resume point is older than the server keeps, or the server restarted): relist.
- Connection errors and 5xx: retry with exponential backoff (0.5 s doubling to 30 s), then relist.

Handlers run on the informer's task, in event order; they must not block. `synced` is set after the first list
has been delivered, which is what a scheduler waits for before its first cycle.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx2
import msgspec

from knuma.api.types import JsonObj
from knuma.kube import rest
from knuma.kube.errors import Gone, KubeApiError, NotFound

__all__ = ["Backoff", "Callbacks", "EventHandler", "Informer", "decode_event", "ignore", "object_key"]

log = logging.getLogger("knuma.kube.informer")


class EventHandler(Protocol):
    def on_add(self, obj: JsonObj) -> None: ...
    def on_update(self, old: JsonObj, new: JsonObj) -> None: ...
    def on_delete(self, obj: JsonObj) -> None: ...


class Callbacks:
    """An `EventHandler` from one callable per event kind."""

    def __init__(
        self,
        on_add: Callable[[JsonObj], None],
        on_update: Callable[[JsonObj, JsonObj], None],
        on_delete: Callable[[JsonObj], None],
    ) -> None:
        self.on_add, self.on_update, self.on_delete = on_add, on_update, on_delete


def ignore(*objs: JsonObj) -> None:
    """A callback for events nothing reacts to (the store is what is read)."""
    del objs


def object_key(obj: Mapping[str, Any]) -> str:
    """`namespace/name`, or `name` for cluster-scoped objects (client-go's MetaNamespaceKeyFunc)."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


@dataclass
class Backoff:
    initial: float = 0.5
    maximum: float = 30.0
    current: float = field(init=False, default=0.0)

    def next(self) -> float:
        self.current = self.initial if self.current == 0 else min(self.maximum, self.current * 2)
        return self.current * random.uniform(0.8, 1.2)

    def reset(self) -> None:
        self.current = 0.0


class Informer:
    """List-then-watch one collection (`path`, e.g. `/api/v1/pods` or `/apis/topology.node.k8s.io/v1alpha2/...`)."""

    def __init__(
        self,
        http: httpx2.AsyncClient,
        path: str,
        handler: EventHandler,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        watch_timeout: int = 300,
        backoff: Backoff | None = None,
        on_error: Callable[[str], None] | None = None,
        transform: Callable[[JsonObj], JsonObj] | None = None,
        missing_hint: str | None = None,
    ) -> None:
        """`missing_hint`: what to tell the user when the resource is not served (404), e.g. a CRD to install."""
        self.http = http
        self.path = path
        self.handler = handler
        self.selectors = {
            k: v for k, v in (("labelSelector", label_selector), ("fieldSelector", field_selector)) if v is not None
        }
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.backoff = backoff or Backoff()
        self.on_error = on_error
        self.transform = transform
        """Applied to every object before it is stored and handed to the handler (client-go's SetTransform): a
        component that needs a few fields keeps only those. The result must keep `metadata.name`, `namespace` and
        `resourceVersion`."""
        self.missing_hint = missing_hint
        self.store: dict[str, JsonObj] = {}
        self.resource_version = ""
        self.synced = asyncio.Event()
        self.relists = 0

    async def run(self) -> None:
        """Until cancelled: list, watch, and recover from every failure by retrying."""
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list()
                    need_list = False
                await self._watch()
                self.backoff.reset()
            except asyncio.CancelledError:
                raise
            except Gone:
                log.info("watch of %s expired at resourceVersion %s; relisting", self.path, self.resource_version)
                need_list = True
            except (KubeApiError, ValueError) as err:
                delay = self.backoff.next()
                # a KubeApiError names the request and the server (`cannot reach the API server at URL (GET
                # PATH): connection refused`); an undecodable answer gets the path
                problem = str(err) if isinstance(err, KubeApiError) else f"{self.path}: {type(err).__name__}: {err}"
                if isinstance(err, NotFound) and self.missing_hint:
                    problem = f"{problem} ({self.missing_hint})"
                message = f"{problem}; retrying in {delay:.1f}s"
                log.warning("%s", message)
                if self.on_error is not None:
                    self.on_error(message)
                await asyncio.sleep(delay)
                need_list = need_list or not self.resource_version

    async def _list(self) -> None:
        items: dict[str, JsonObj] = {}
        params: dict[str, str] = {**self.selectors, "limit": str(self.page_size)}
        while True:
            body = await rest.get(self.http, self.path, params=params)
            for item in body.get("items") or []:
                items[object_key(item)] = self.transform(item) if self.transform else item
            meta = body.get("metadata") or {}
            if not meta.get("continue"):
                self.resource_version = str(meta.get("resourceVersion") or "")
                break
            params["continue"] = meta["continue"]
        self._replace(items)
        self.relists += 1
        self.synced.set()

    def _replace(self, items: dict[str, JsonObj]) -> None:
        """Deliver the difference between the store and a fresh list (deletions first, as client-go's Replace)."""
        for key in [k for k in self.store if k not in items]:
            self._deliver(self.handler.on_delete, self.store.pop(key))
        for key, obj in items.items():
            old = self.store.get(key)
            self.store[key] = obj
            if old is None:
                self._deliver(self.handler.on_add, obj)
            elif _rv(old) != _rv(obj):
                self._deliver(self.handler.on_update, old, obj)

    def _deliver(self, callback: Callable[..., None], *objs: JsonObj) -> None:
        """Run a handler; a failing handler is logged and skipped, never stops the informer (client-go recovers
        handler panics the same way)."""
        try:
            callback(*objs)
        except Exception:
            log.exception("%s: event handler failed for %s", self.path, object_key(objs[-1]))

    async def _watch(self) -> None:
        params = {
            **self.selectors,
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": self.resource_version,
            "timeoutSeconds": str(int(self.watch_timeout * random.uniform(1.0, 2.0))),
        }
        timeout = httpx2.Timeout(10.0, read=self.watch_timeout * 2 + 30)
        async with rest.stream(self.http, "GET", self.path, params=params, timeout=timeout) as response:
            pending = bytearray()
            async for chunk in response.aiter_bytes():
                pending += chunk
                end = pending.rfind(b"\n")
                if end < 0:
                    continue
                complete, pending = bytes(pending[:end]), pending[end + 1 :]
                for line in complete.split(b"\n"):
                    if line.strip():
                        self._apply(decode_event(line))

    def _apply(self, event: Mapping[str, Any]) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone("WATCH", self.path, 410, str(obj.get("message", "410 Gone")), reason="Expired", body=obj)
            raise ValueError(f"watch error: {obj.get('message', obj)}")
        rv = _rv(obj)
        if kind == "BOOKMARK":
            self.resource_version = rv or self.resource_version
            return
        if self.transform is not None:
            obj = self.transform(obj)
        key = object_key(obj)
        if kind in ("ADDED", "MODIFIED"):
            old = self.store.get(key)
            self.store[key] = obj
            if old is None:
                self._deliver(self.handler.on_add, obj)
            else:
                self._deliver(self.handler.on_update, old, obj)
        elif kind == "DELETED":
            old = self.store.pop(key, None)
            self._deliver(self.handler.on_delete, old if old is not None else obj)
        self.resource_version = rv or self.resource_version


def decode_event(line: bytes) -> Any:
    """One watch event line. msgspec decodes a pod's event in a fifth of `json.loads`' time (the scheduler's
    informer decodes one per binding); what msgspec refuses (an integer beyond 64 bits) goes to `json.loads`, so the
    result is always `json.loads`'."""
    try:
        return _decoder.decode(line)
    except msgspec.DecodeError:
        return json.loads(line)


_decoder = msgspec.json.Decoder()


def _rv(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
