"""The h2-based gRPC channel against a real grpcio server (the kubelet's wire protocol), and against broken peers."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from knuma.podresources import Allocatable, Container, Devices, Memory, Pod, PodResourcesClient
from knuma.podresources.api_pb2 import ListPodResourcesRequest, ListPodResourcesResponse
from knuma.podresources.channel import Channel, RpcError, StatusCode
from knuma.podresources.server import PodResourcesServer

LIST = "/v1.PodResourcesLister/List"


def many_pods(count: int) -> list[Pod]:
    return [
        Pod(
            f"namespace-{i % 37}",
            f"pod-with-a-long-name-{i:06d}",
            (
                Container(
                    "app",
                    cpu_ids=(2 * i, 2 * i + 1),
                    devices=(Devices("example.com/nic", (f"vf-{i}-a", f"vf-{i}-b"), (i % 8,)),),
                    memory=(Memory("memory", 1 << 30, (i % 8,)), Memory("hugepages-2Mi", 1 << 21, (i % 8,))),
                ),
                Container("sidecar"),
            ),
        )
        for i in range(count)
    ]


@pytest.fixture
def kubelet() -> Iterator[PodResourcesServer]:
    with PodResourcesServer(allocatable=Allocatable(cpu_ids=(0, 1)), pods=many_pods(3)) as server:
        yield server


def test_large_answer_streams_through_flow_control() -> None:
    """Several MiB in one answer: beyond the receive window, so WINDOW_UPDATEs must flow."""
    pods = many_pods(20000)
    with PodResourcesServer(pods=pods) as server, PodResourcesClient(server.address) as client:
        raw = Channel(str(server.path)).unary(LIST, b"", timeout=10)
        assert len(raw) > 3 * 1024 * 1024  # three times the receive window the channel announces
        assert client.list() == pods


def test_same_bytes_as_grpcio(kubelet: PodResourcesServer) -> None:
    ours = Channel(str(kubelet.path)).unary(LIST, ListPodResourcesRequest().SerializeToString(), timeout=5)
    with grpc.insecure_channel(kubelet.address) as channel:
        call = channel.unary_unary(
            LIST,
            request_serializer=ListPodResourcesRequest.SerializeToString,
            response_deserializer=ListPodResourcesResponse.FromString,
        )
        theirs = call(ListPodResourcesRequest(), timeout=5)
    assert ListPodResourcesResponse.FromString(ours) == theirs


def test_answer_above_the_limit_is_refused_and_the_channel_recovers(kubelet: PodResourcesServer) -> None:
    channel = Channel(str(kubelet.path), max_message_bytes=64)
    with pytest.raises(RpcError) as info:
        channel.unary(LIST, b"", timeout=5)
    assert info.value.code is StatusCode.RESOURCE_EXHAUSTED
    channel.max_message_bytes = 1 << 20
    assert ListPodResourcesResponse.FromString(channel.unary(LIST, b"", timeout=5)).pod_resources


def test_status_from_trailers(kubelet: PodResourcesServer) -> None:
    channel = Channel(str(kubelet.path))
    with pytest.raises(RpcError) as info:
        channel.unary("/v1.PodResourcesLister/Nope", b"", timeout=5)
    assert info.value.code is StatusCode.UNIMPLEMENTED
    with pytest.raises(RpcError) as info:
        channel.unary("/v1.PodResourcesLister/Get", b"\x0a\x04nope\x12\x02ns", timeout=5)
    assert info.value.code is StatusCode.NOT_FOUND
    assert info.value.details == "pod nope in namespace ns not found"  # grpc-message is percent-decoded
    assert channel.unary(LIST, b"", timeout=5)  # the connection survives failed calls


def test_deadline_then_recovery(kubelet: PodResourcesServer) -> None:
    channel = Channel(str(kubelet.path))
    kubelet.delay = 0.5
    with pytest.raises(RpcError) as info:
        channel.unary(LIST, b"", timeout=0.1)
    assert info.value.code is StatusCode.DEADLINE_EXCEEDED
    kubelet.delay = 0
    assert channel.unary(LIST, b"", timeout=5)


def test_calls_from_many_threads(kubelet: PodResourcesServer) -> None:
    with PodResourcesClient(kubelet.address) as client, ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: client.list(), range(64)))
    assert all(r == kubelet.pods for r in results)


def serve_once(behaviour: str) -> tuple[str, threading.Thread]:
    """A unix socket whose peer is not a gRPC server: it answers HTTP/1.1, or hangs up at once."""
    path = tempfile.mktemp(prefix="kpr-bad-", suffix=".sock")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(1)

    def run() -> None:
        conn, _ = listener.accept()
        if behaviour == "http1":
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        conn.close()
        listener.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return path, thread


@pytest.mark.parametrize("behaviour", ["http1", "hang-up"])
def test_a_peer_that_is_not_grpc_is_unavailable(behaviour: str) -> None:
    path, thread = serve_once(behaviour)
    try:
        with pytest.raises(RpcError) as info:
            Channel(path).unary(LIST, b"", timeout=5)
        assert info.value.code is StatusCode.UNAVAILABLE
        assert path in info.value.details
    finally:
        thread.join(5)
        os.unlink(path)
