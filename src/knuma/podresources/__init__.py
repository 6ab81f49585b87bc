"""The kubelet PodResources v1 API: plain data model (`model`), client (`client`, over `channel`) and generated
protobuf messages.

The messages (`api_pb2.py`, `api_pb2.pyi`, and `api_pb2_grpc.py` for grpcio servers) are generated from `api.proto`
by `regenerate.sh` (`grpc_tools.protoc --python_out --pyi_out --grpc_python_out`); do not edit them by hand.

The names below are loaded on first use, so that `knuma.cli` can read `DEFAULT_SOCKET` without loading protobuf.
The server (`server`, grpcio) serves what a caller sets: each simulated node of `knuma up` runs one, tests too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from knuma.podresources.address import DEFAULT_SOCKET

if TYPE_CHECKING:
    from knuma.podresources.client import PodResourcesClient, PodResourcesError
    from knuma.podresources.model import Allocatable, Container, Devices, Memory, Pod

__all__ = [
    "DEFAULT_SOCKET",
    "Allocatable",
    "Container",
    "Devices",
    "Memory",
    "Pod",
    "PodResourcesClient",
    "PodResourcesError",
]

_LAZY = {
    "PodResourcesClient": "client",
    "PodResourcesError": "client",
    "Allocatable": "model",
    "Container": "model",
    "Devices": "model",
    "Memory": "model",
    "Pod": "model",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
