"""The kubelet PodResources v1 API: plain data model (`model`), gRPC client (`client`) and generated stubs.

The stubs (`api_pb2.py`, `api_pb2.pyi`, `api_pb2_grpc.py`) are generated from `api.proto` by `regenerate.sh`
(`grpc_tools.protoc --python_out --pyi_out --grpc_python_out`); do not edit them by hand.
"""

from knuma.exporter.podresources.client import DEFAULT_SOCKET, PodResourcesClient, PodResourcesError
from knuma.exporter.podresources.model import Allocatable, Container, Devices, Memory, Pod

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
