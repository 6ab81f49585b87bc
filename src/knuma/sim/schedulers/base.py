"""What every simulated scheduler gets at start: each node's allocatable and last published NRT, and the pods bound."""

from __future__ import annotations

from dataclasses import dataclass

from knuma.api.pod import Pod
from knuma.api.resources import ResourceList
from knuma.sim.exporter import NRTSnapshot

__all__ = ["ListedPod", "NodeSetup"]


@dataclass(frozen=True)
class NodeSetup:
    """What a scheduler gets at start: the Node's allocatable and its last published NRT."""

    name: str
    allocatable: ResourceList
    nrt: NRTSnapshot


@dataclass(frozen=True)
class ListedPod:
    """A pod bound to a node, as a restarted scheduler's pod informer lists it."""

    pod: Pod
    node: str
    started: bool
    """The kubelet admitted it (`status.startTime` set) as far as the API server has heard."""
