"""The simulated resource-topology-exporter: what the schedulers see of a node, and how late.

A snapshot is the kubelet's NUMA state at publication time plus the pod fingerprint of the pods it accounts for
(`knuma.api.fingerprint`). Schedulers only ever see snapshots;
the engine decides when they are published (every `nrt_period` seconds per node, with a per-node phase, and
optionally `nrt_event_delay` seconds after each change).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from knuma.api.fingerprint import compute
from knuma.topology.node import NodeTopology

__all__ = ["NRTSnapshot", "fingerprint"]


def fingerprint(pod_keys: Iterable[str]) -> str:
    """The pod-set fingerprint of `namespace/name` keys: `knuma.api.fingerprint.compute`, the exporter's own."""
    return compute(key.partition("/")[::2] for key in pod_keys)


@dataclass(frozen=True)
class NRTSnapshot:
    """One published NodeResourceTopology, as a `NodeTopology` (lossless for scheduling) plus the fingerprint."""

    node: str
    topology: NodeTopology
    fingerprint: str
    generation: int
    """The kubelet generation it was taken at (the simulator's resourceVersion)."""
    time: float
