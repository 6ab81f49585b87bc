from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Iterator

import pytest

from knuma.podresources import (
    Allocatable,
    Container,
    Devices,
    Memory,
    Pod,
    PodResourcesClient,
    PodResourcesError,
)
from knuma.podresources.client import socket_path
from knuma.podresources.model import ClaimResource, DynamicResource
from knuma.podresources.server import PodResourcesServer

ALLOCATABLE = Allocatable(
    cpu_ids=(2, 3, 4, 5),
    devices=(Devices("example.com/nic", ("vf0", "vf1"), (0,)), Devices("example.com/gpu", ("gpu0",), ())),
    memory=(Memory("memory", 1 << 30, (0,)), Memory("hugepages-2Mi", 64 << 20, (1,))),
)
POD = Pod(
    "default",
    "app-1",
    (
        Container(
            "main",
            cpu_ids=(2, 3),
            devices=(Devices("example.com/nic", ("vf0",), (0,)),),
            memory=(Memory("memory", 256 << 20, (0, 1)),),
            dynamic_resources=(
                DynamicResource(
                    "app-1-gpu-x7k2p",
                    "default",
                    (ClaimResource("gpu.example.com", "node-a", "gpu-0", ("gpu.example.com/gpu=gpu-0",)),),
                ),
            ),
        ),
        Container("sidecar"),
    ),
)


@pytest.fixture
def kubelet() -> Iterator[PodResourcesServer]:
    with PodResourcesServer(allocatable=ALLOCATABLE, pods=[POD]) as server:
        yield server


def test_round_trip_over_a_real_socket(kubelet: PodResourcesServer) -> None:
    assert os.path.exists(kubelet.path)
    with PodResourcesClient(kubelet.address) as client:
        assert client.get_allocatable_resources() == ALLOCATABLE
        assert client.list() == [POD]
        assert client.get("default", "app-1") == POD
    assert kubelet.calls == {"GetAllocatableResources": 1, "List": 1, "Get": 1}


def test_observer_sees_every_call(kubelet: PodResourcesServer) -> None:
    seen: list[tuple[str, bool]] = []
    client = PodResourcesClient(kubelet.address, observer=lambda f, s, ok: seen.append((f, ok)))
    client.list()
    kubelet.stop()
    with pytest.raises(PodResourcesError):
        client.list()
    assert seen == [("list", True), ("list", False)]


def test_missing_pod_and_unimplemented_get() -> None:
    with PodResourcesServer(pods=[POD], get_supported=False) as server, PodResourcesClient(server.address) as client:
        with pytest.raises(PodResourcesError, match="does not implement Get") as info:
            client.get("default", "app-1")
        assert info.value.unimplemented
        server.get_supported = True
        with pytest.raises(PodResourcesError, match="NOT_FOUND: pod nope in namespace default not found"):
            client.get("default", "nope")


def test_unreachable_kubelet_names_the_socket() -> None:
    missing = os.path.join(tempfile.gettempdir(), "knuma-no-such-dir", "kubelet.sock")
    client = PodResourcesClient(f"unix://{missing}", timeout=1)
    with pytest.raises(PodResourcesError, match=f"unix://{missing} does not exist"):
        client.list()


def test_socket_without_listener_is_reported_unreachable() -> None:
    path = tempfile.mktemp(prefix="kpr-dead-", suffix=".sock")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(path)  # a socket file nobody listens on: what a crashed kubelet leaves behind
    try:
        with pytest.raises(PodResourcesError, match=f"unix://{path} is unreachable") as info:
            PodResourcesClient(path, timeout=2).list()
        assert info.value.code is not None
    finally:
        sock.close()
        os.unlink(path)


def test_deadline(kubelet: PodResourcesServer) -> None:
    kubelet.delay = 0.5
    with pytest.raises(PodResourcesError, match=r"did not answer List within 0\.1s"):
        PodResourcesClient(kubelet.address, timeout=0.1).list()


def test_reconnects_after_kubelet_restart(kubelet: PodResourcesServer) -> None:
    client = PodResourcesClient(kubelet.address, timeout=2)
    assert client.list() == [POD]
    kubelet.stop()
    with pytest.raises(PodResourcesError, match="does not exist"):
        client.list()
    kubelet.set_pods([])
    kubelet.start()
    assert client.list() == []
    kubelet.stop()  # restart between two calls: the old channel is stale, the client must redial
    kubelet.add_pod(POD)
    kubelet.start()
    assert client.list() == [POD]
    client.close()


def test_socket_address_forms() -> None:
    assert socket_path("unix:///var/lib/kubelet/pod-resources/kubelet.sock") == (
        "/var/lib/kubelet/pod-resources/kubelet.sock"
    )
    assert socket_path("unix:/run/k.sock") == "/run/k.sock"
    assert socket_path("/run/k.sock") == "/run/k.sock"
    with pytest.raises(ValueError, match="unsupported"):
        socket_path("tcp://1.2.3.4:10250")
