"""A real kubelet PodResources v1 gRPC server for tests (see `knuma.nodes.podresources_server`, where simulated nodes
take it from)."""

from knuma.nodes.podresources_server import PodResourcesServer

__all__ = ["PodResourcesServer"]
