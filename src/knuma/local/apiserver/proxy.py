"""The node proxy (`/api/v1/nodes/{name}/proxy/{path}`): requests are forwarded to a Python handler registered for
the node, which is how simulated nodes serve kubelet endpoints such as `configz` without a kubelet."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ProxyRequest:
    method: str
    path: str
    query: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


@dataclass(frozen=True)
class ProxyResponse:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"


ProxyHandler = Callable[[ProxyRequest], "ProxyResponse | Awaitable[ProxyResponse]"]


class NodeProxyRegistry:
    """Node name -> handler; safe to use from any thread (simulated nodes may live outside the server's loop)."""

    def __init__(self) -> None:
        self._handlers: dict[str, ProxyHandler] = {}
        self._lock = threading.Lock()

    def register(self, node: str, handler: ProxyHandler) -> None:
        with self._lock:
            self._handlers[node] = handler

    def unregister(self, node: str) -> None:
        with self._lock:
            self._handlers.pop(node, None)

    def get(self, node: str) -> ProxyHandler | None:
        with self._lock:
            return self._handlers.get(node)

    async def call(self, handler: ProxyHandler, request: ProxyRequest) -> ProxyResponse:
        result = handler(request)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, ProxyResponse):
            raise TypeError(f"node proxy handler returned {type(result).__name__}, expected ProxyResponse")
        return result
