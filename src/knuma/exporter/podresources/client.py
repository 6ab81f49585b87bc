"""A small synchronous client for the kubelet PodResources v1 gRPC API over its unix socket.

Why not the generated `PodResourcesListerStub`: it is untyped; the three unary calls are declared here with the
generated message classes, so the rest of the exporter is type-checked end to end.

Every call has a deadline (10 s by default, as upstream clients use). When the kubelet restarts it recreates its
socket; a gRPC channel may then sit in a reconnect backoff, so on `UNAVAILABLE` the client drops the channel, dials
again and retries once. Failures raise `PodResourcesError`, whose message names the socket and says what to check.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

import grpc
from google.protobuf.message import Message

from knuma.exporter.podresources import api_pb2
from knuma.exporter.podresources.model import Allocatable, Pod, allocatable_from_proto, pod_from_proto

__all__ = ["DEFAULT_SOCKET", "CallObserver", "PodResourcesClient", "PodResourcesError", "socket_path"]

DEFAULT_SOCKET = "unix:///var/lib/kubelet/pod-resources/kubelet.sock"
SERVICE = "v1.PodResourcesLister"
MAX_MESSAGE_BYTES = 16 * 1024 * 1024

_Req = TypeVar("_Req", bound=Message)
_Resp = TypeVar("_Resp", bound=Message)


class CallObserver(Protocol):
    """Told about every API call: function name (`list`, `get_allocatable_resources`, `get`), duration, success."""

    def __call__(self, function: str, seconds: float, ok: bool) -> None: ...


class PodResourcesError(RuntimeError):
    """The kubelet PodResources API could not answer."""

    def __init__(self, message: str, code: grpc.StatusCode | None = None) -> None:
        super().__init__(message)
        self.code = code

    @property
    def unimplemented(self) -> bool:
        return self.code is grpc.StatusCode.UNIMPLEMENTED


def socket_path(address: str) -> str:
    """`unix:///var/lib/kubelet/...` or a bare path -> the filesystem path of the socket."""
    if address.startswith("unix://"):
        return address[len("unix://") :]
    if address.startswith("unix:"):
        return address[len("unix:") :]
    if "://" in address:
        raise ValueError(f"unsupported PodResources endpoint {address!r}: expected unix:///path/to/kubelet.sock")
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
        self._channel: grpc.Channel | None = None

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
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    def __enter__(self) -> PodResourcesClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _dial(self) -> grpc.Channel:
        if self._channel is None:
            self._channel = grpc.insecure_channel(
                self.target,
                options=[
                    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                    ("grpc.initial_reconnect_backoff_ms", 100),
                    ("grpc.max_reconnect_backoff_ms", 1000),
                ],
            )
        return self._channel

    def _call(self, function: str, method: str, request: _Req, decode: Callable[[bytes], _Resp]) -> _Resp:
        start = time.perf_counter()
        ok = False
        try:
            response = self._attempt(method, request, decode, retry=True)
            ok = True
            return response
        finally:
            if self.observer is not None:
                self.observer(function, time.perf_counter() - start, ok)

    def _attempt(self, method: str, request: _Req, decode: Callable[[bytes], _Resp], *, retry: bool) -> _Resp:
        if not os.path.exists(self.path):
            raise PodResourcesError(
                f"kubelet PodResources socket {self.target} does not exist: is the kubelet running, and is its "
                "pod-resources directory mounted into this container (mount the directory, not the socket)?",
                grpc.StatusCode.UNAVAILABLE,
            )
        call = self._dial().unary_unary(
            f"/{SERVICE}/{method}", request_serializer=_serialize, response_deserializer=decode
        )
        try:
            response: _Resp = call(request, timeout=self.timeout)
            return response
        except grpc.RpcError as err:
            code = err.code() if isinstance(err, grpc.Call) else None
            details = err.details() if isinstance(err, grpc.Call) else str(err)
            if code is grpc.StatusCode.UNAVAILABLE and retry:
                self.close()  # a restarted kubelet made a new socket: dial afresh instead of waiting for backoff
                return self._attempt(method, request, decode, retry=False)
            raise PodResourcesError(_describe(self.target, method, code, details, self.timeout), code) from None


def _serialize(message: Message) -> bytes:
    return message.SerializeToString()


def _describe(target: str, method: str, code: grpc.StatusCode | None, details: str | None, timeout: float) -> str:
    if code is grpc.StatusCode.UNAVAILABLE:
        return f"kubelet PodResources API at {target} is unreachable ({details}): is the kubelet running?"
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return f"kubelet PodResources API at {target} did not answer {method} within {timeout:g}s"
    if code is grpc.StatusCode.UNIMPLEMENTED:
        return (
            f"kubelet PodResources API at {target} does not implement {method} "
            "(kubelet too old, or its feature gate is off)"
        )
    name = code.name if code is not None else "error"
    return f"kubelet PodResources API at {target}: {method} failed: {name}: {details}"
