"""A small synchronous client for the kubelet PodResources v1 API over its unix socket.

The three unary calls go through `channel.Channel` (gRPC over HTTP/2 with `h2`) rather than grpcio, to keep the
node agent's memory small; the messages are the generated protobuf classes, so the wire format is exactly the
kubelet's. The tests run it against a grpcio server (`knuma.podresources.server`).

Every call has a deadline (10 s by default, as upstream clients use) and a 16 MiB limit on the answer. When the
kubelet restarts it recreates its socket: on `UNAVAILABLE` the client drops the connection, dials again and retries
once. Failures raise `PodResourcesError`, whose message names the socket and says what to check.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from google.protobuf.message import Message

from knuma.errors import InvalidInput, OperationFailed
from knuma.podresources import api_pb2
from knuma.podresources.address import DEFAULT_SOCKET
from knuma.podresources.channel import Channel, RpcError, StatusCode
from knuma.podresources.model import Allocatable, Pod, allocatable_from_proto, pod_from_proto

__all__ = [
    "DEFAULT_SOCKET",
    "CallObserver",
    "PodResourcesClient",
    "PodResourcesError",
    "StatusCode",
    "socket_path",
]

SERVICE = "v1.PodResourcesLister"
MAX_MESSAGE_BYTES = 16 * 1024 * 1024

_Resp = TypeVar("_Resp", bound=Message)


class CallObserver(Protocol):
    """Told about every API call: function name (`list`, `get_allocatable_resources`, `get`), duration, success."""

    def __call__(self, function: str, seconds: float, ok: bool) -> None: ...


class PodResourcesError(OperationFailed):
    """The kubelet PodResources API could not answer."""

    def __init__(self, message: str, code: StatusCode | None = None) -> None:
        super().__init__(message)
        self.code = code

    @property
    def unimplemented(self) -> bool:
        return self.code is StatusCode.UNIMPLEMENTED


def socket_path(address: str) -> str:
    """`unix:///var/lib/kubelet/...` or a bare path -> the filesystem path of the socket."""
    if address.startswith("unix://"):
        return address[len("unix://") :]
    if address.startswith("unix:"):
        return address[len("unix:") :]
    if "://" in address:
        raise InvalidInput(f"unsupported PodResources endpoint {address!r}: expected unix:///path/to/kubelet.sock")
    return address


class PodResourcesClient:
    def __init__(
        self,
        address: str = DEFAULT_SOCKET,
        *,
        timeout: float = 10.0,
        observer: CallObserver | None = None,
    ) -> None:
        self.path = os.path.abspath(socket_path(address))
        self.timeout = timeout
        self.observer = observer
        self._channel = Channel(self.path, max_message_bytes=MAX_MESSAGE_BYTES)

    @property
    def target(self) -> str:
        return f"unix://{self.path}"

    def list(self) -> list[Pod]:
        """`List`: every active pod with the exclusive resources of its containers."""
        response = self._call(
            "list", "List", api_pb2.ListPodResourcesRequest(), api_pb2.ListPodResourcesResponse.FromString
        )
        return [pod_from_proto(p) for p in response.pod_resources]

    def get_allocatable_resources(self) -> Allocatable:
        """`GetAllocatableResources`: CPUs, memory and devices the kubelet's managers can allocate."""
        response = self._call(
            "get_allocatable_resources",
            "GetAllocatableResources",
            api_pb2.AllocatableResourcesRequest(),
            api_pb2.AllocatableResourcesResponse.FromString,
        )
        return allocatable_from_proto(response)

    def get(self, namespace: str, name: str) -> Pod:
        """`Get` one pod (kubelet >= 1.27 with `KubeletPodResourcesGet`; `PodResourcesError.unimplemented` before)."""
        response = self._call(
            "get",
            "Get",
            api_pb2.GetPodResourcesRequest(pod_name=name, pod_namespace=namespace),
            api_pb2.GetPodResourcesResponse.FromString,
        )
        return pod_from_proto(response.pod_resources)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> PodResourcesClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, function: str, method: str, request: Message, decode: Callable[[bytes], _Resp]) -> _Resp:
        start = time.perf_counter()
        ok = False
        try:
            response = decode(self._attempt(method, request.SerializeToString(), retry=True))
            ok = True
            return response
        finally:
            if self.observer is not None:
                self.observer(function, time.perf_counter() - start, ok)

    def _attempt(self, method: str, request: bytes, *, retry: bool) -> bytes:
        if not os.path.exists(self.path):
            raise PodResourcesError(
                f"kubelet PodResources socket {self.target} does not exist: is the kubelet running, and is its "
                "pod-resources directory mounted into this container (mount the directory, not the socket)?",
                StatusCode.UNAVAILABLE,
            )
        try:
            return self._channel.unary(f"/{SERVICE}/{method}", request, self.timeout)
        except RpcError as err:
            if err.code is StatusCode.UNAVAILABLE and retry:
                # a restarted kubelet made a new socket; the channel has dropped the old connection: dial afresh
                return self._attempt(method, request, retry=False)
            raise PodResourcesError(
                _describe(self.target, method, err.code, err.details, self.timeout), err.code
            ) from None


def _describe(target: str, method: str, code: StatusCode, details: str, timeout: float) -> str:
    if code is StatusCode.UNAVAILABLE:
        return f"kubelet PodResources API at {target} is unreachable ({details}): is the kubelet running?"
    if code is StatusCode.DEADLINE_EXCEEDED:
        return f"kubelet PodResources API at {target} did not answer {method} within {timeout:g}s"
    if code is StatusCode.UNIMPLEMENTED:
        return (
            f"kubelet PodResources API at {target} does not implement {method} "
            "(kubelet too old, or its feature gate is off)"
        )
    return f"kubelet PodResources API at {target}: {method} failed: {code.name}: {details}"
