"""What every simulated scheduler gets at start: each node's allocatable and first published NRT."""

from __future__ import annotations

from dataclasses import dataclass

from knuma.api.resources import ResourceList
from knuma.sim.exporter import NRTSnapshot

__all__ = ["NodeSetup"]


@dataclass(frozen=True)
class NodeSetup:
    """What a scheduler gets at start: the Node's allocatable and the first published NRT."""

    name: str
    allocatable: ResourceList
    nrt: NRTSnapshot
