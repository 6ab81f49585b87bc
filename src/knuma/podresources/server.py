"""A real kubelet PodResources v1 gRPC server on a unix socket, serving data the caller sets.

Each simulated node of `knuma up` serves one on its own socket and calls `set_pods` as it admits and releases pods;
tests start it in a temporary directory (`knuma.podresources.server`) and point the exporter at `server.address`.
It speaks the real wire protocol (same service and method names as the kubelet), so clients cannot tell it from a
kubelet:

    with PodResourcesServer(allocatable=Allocatable(cpu_ids=(2, 3)), pods=[...]) as kubelet:
        client = PodResourcesClient(kubelet.address)

`stop()` / `start()` emulate a kubelet restart (the socket disappears and comes back); `get_supported=False` and
`allocatable_supported=False` emulate older kubelets that answer `UNIMPLEMENTED`.
"""

from __future__ import annotations

import collections
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable
from concurrent import futures
from pathlib import Path

import grpc

from knuma.podresources import api_pb2
from knuma.podresources.model import Allocatable, Pod, allocatable_to_proto, pod_to_proto

__all__ = ["PodResourcesServer"]

SERVICE = "v1.PodResourcesLister"


class PodResourcesServer:
    def __init__(
        self,
        socket_path: str | os.PathLike[str] | None = None,
        *,
        allocatable: Allocatable | None = None,
        pods: Iterable[Pod] = (),
        get_supported: bool = True,
        allocatable_supported: bool = True,
        delay: float = 0.0,
        max_workers: int = 4,
    ) -> None:
        # unix socket paths are limited to ~107 bytes: default to a short private directory under the temp dir
        self._own_dir: str | None = None
        if socket_path is None:
            self._own_dir = tempfile.mkdtemp(prefix="kpr-")
            socket_path = os.path.join(self._own_dir, "kubelet.sock")
        self.path = Path(socket_path)
        self.get_supported = get_supported
        self.allocatable_supported = allocatable_supported
        self.delay = delay
        """Seconds every call sleeps before answering (to exercise client deadlines)."""
        self.calls: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self._allocatable = allocatable or Allocatable()
        self._pods: dict[tuple[str, str], Pod] = {}
        self.set_pods(pods)
        self._server: grpc.Server | None = None
        self.max_workers = max_workers

    @property
    def address(self) -> str:
        return f"unix://{self.path.absolute()}"

    def set_allocatable(self, allocatable: Allocatable) -> None:
        with self._lock:
            self._allocatable = allocatable

    def set_pods(self, pods: Iterable[Pod]) -> None:
        with self._lock:
            self._pods = {(p.namespace, p.name): p for p in pods}

    def add_pod(self, pod: Pod) -> None:
        with self._lock:
            self._pods[(pod.namespace, pod.name)] = pod

    def remove_pod(self, namespace: str, name: str) -> None:
        with self._lock:
            self._pods.pop((namespace, name), None)

    @property
    def pods(self) -> list[Pod]:
        with self._lock:
            return list(self._pods.values())

    def start(self) -> PodResourcesServer:
        if self._server is not None:
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            self.path.unlink()
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=self.max_workers, thread_name_prefix="podresources")
        )
        handlers = {
            "List": grpc.unary_unary_rpc_method_handler(
                self._list,
                request_deserializer=api_pb2.ListPodResourcesRequest.FromString,
                response_serializer=api_pb2.ListPodResourcesResponse.SerializeToString,
            ),
            "GetAllocatableResources": grpc.unary_unary_rpc_method_handler(
                self._allocatable_resources,
                request_deserializer=api_pb2.AllocatableResourcesRequest.FromString,
                response_serializer=api_pb2.AllocatableResourcesResponse.SerializeToString,
            ),
            "Get": grpc.unary_unary_rpc_method_handler(
                self._get,
                request_deserializer=api_pb2.GetPodResourcesRequest.FromString,
                response_serializer=api_pb2.GetPodResourcesResponse.SerializeToString,
            ),
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
        server.add_insecure_port(f"unix:{self.path.absolute()}")
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        """Stop serving and remove the socket, as a stopped kubelet does."""
        if self._server is not None:
            self._server.stop(grace=None).wait()
            self._server = None
        if self.path.exists():
            self.path.unlink()

    def close(self) -> None:
        self.stop()
        if self._own_dir is not None:
            shutil.rmtree(self._own_dir, ignore_errors=True)
            self._own_dir = None

    def __enter__(self) -> PodResourcesServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _enter(self, method: str) -> None:
        self.calls[method] += 1
        if self.delay:
            time.sleep(self.delay)

    def _list(
        self, request: api_pb2.ListPodResourcesRequest, context: grpc.ServicerContext
    ) -> api_pb2.ListPodResourcesResponse:
        self._enter("List")
        with self._lock:
            pods = list(self._pods.values())
        return api_pb2.ListPodResourcesResponse(pod_resources=[pod_to_proto(p) for p in pods])

    def _allocatable_resources(
        self, request: api_pb2.AllocatableResourcesRequest, context: grpc.ServicerContext
    ) -> api_pb2.AllocatableResourcesResponse:
        self._enter("GetAllocatableResources")
        if not self.allocatable_supported:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "unknown method GetAllocatableResources")
        with self._lock:
            return allocatable_to_proto(self._allocatable)

    def _get(
        self, request: api_pb2.GetPodResourcesRequest, context: grpc.ServicerContext
    ) -> api_pb2.GetPodResourcesResponse:
        self._enter("Get")
        if not self.get_supported:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "unknown method Get")
        with self._lock:
            pod = self._pods.get((request.pod_namespace, request.pod_name))
        if pod is None:
            context.abort(
                grpc.StatusCode.NOT_FOUND, f"pod {request.pod_name} in namespace {request.pod_namespace} not found"
            )
        return api_pb2.GetPodResourcesResponse(pod_resources=pod_to_proto(pod))
