"""The simulated resource-topology-exporter: what the schedulers see of a node, and how late.

A snapshot is the kubelet's NUMA state at publication time plus the pod fingerprint of the pods it accounts for
(podfingerprint v1 layout: `pfp0v001` + xxhash64 over the sorted per-pod hashes). Schedulers only ever see snapshots;
the engine decides when they are published (every `nrt_period` seconds per node, with a per-node phase, and
optionally `nrt_event_delay` seconds after each change).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import xxhash

from knuma.topology.node import NodeTopology

__all__ = ["NRTSnapshot", "fingerprint"]

FINGERPRINT_PREFIX = "pfp0v001"


def fingerprint(pod_keys: Iterable[str]) -> str:
    """The pod-set fingerprint: equal sets give equal strings, order does not matter."""
    hashes = sorted(_pod_hash(key) for key in pod_keys)
    digest = xxhash.xxh64()
    for value in hashes:
        digest.update(value.to_bytes(8, "little"))
    return FINGERPRINT_PREFIX + digest.hexdigest()


def _pod_hash(key: str) -> int:
    namespace, _, name = key.partition("/")
    return int(xxhash.xxh64_intdigest(name.encode(), seed=xxhash.xxh64_intdigest(namespace.encode())))


@dataclass(frozen=True)
class NRTSnapshot:
    """One published NodeResourceTopology, as a `NodeTopology` (lossless for scheduling) plus the fingerprint."""

    node: str
    topology: NodeTopology
    fingerprint: str
    generation: int
    """The kubelet generation it was taken at (the simulator's resourceVersion)."""
    time: float
