"""The allocator's verdict per node, remembered while neither the claims' shape nor the node's state changes.

Filter runs the allocator on every node for every pod with claims (upstream's `DynamicResources.Filter` calls
`Allocator.Allocate` per node in `pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go`; it is
compiled Go and stops at the first solution, knuma's search scores NUMA alignment and locality and costs about a
millisecond per node in Python). Pods with claims mostly repeat a few shapes (1 GPU + 1 NIC on one PCIe root...),
and one scheduling cycle changes one node: the other nodes would be searched again with the same input and give
the same answer. `allocate` is a pure function of

- the pending claims' specs (the claim names appear only in the outcome's labels, re-applied on a hit),
- the pod's CPU and memory requests (`Pod.admission_key`: what `alignment.plan_alignment` reads of the pod),
- the node: its name, labels and NUMA topology (compared by identity: the scheduler's cache builds a new one when
  anything on the node changes),
- the devices reachable from the node: the slices (their version), the classes (their version) and which of the
  node's devices are in use,

so an outcome computed for the same inputs is returned as is. A successful outcome is re-labelled with the current
claims' keys (nothing else in it depends on them: the allocation results are device IDs, configs from the class and
the claim spec, a node selector from the slices); a failure names the claim in its reason, so it is reused only
for the same claim keys. The memo is exact by construction: anything that is not in the key is not an input.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from knuma.devices.allocator import ClaimAllocation, Outcome
from knuma.topology.node import NodeTopology

__all__ = ["AllocationMemo", "NodeState"]

SHAPES_PER_NODE = 16
"""Claim shapes remembered per node (the oldest is dropped): a few shapes repeat, a long tail does not."""


@dataclass(frozen=True)
class NodeState:
    """What the allocator reads of one node besides the claims (see the module docstring)."""

    topology: NodeTopology | None
    labels: Mapping[str, str]
    devices: Hashable
    """The device side: (slices version, classes version, the node's devices in use)."""

    def same(self, other: NodeState) -> bool:
        return self.topology is other.topology and self.devices == other.devices and self.labels == other.labels


@dataclass
class _Entry:
    state: NodeState
    keys: tuple[str, ...]
    outcome: Outcome


@dataclass
class AllocationMemo:
    """node -> claim shape -> the outcome last computed there, with the state it was computed on."""

    entries: dict[str, dict[Hashable, _Entry]] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0

    def get(self, node: str, shape: Hashable, keys: Sequence[str], state: NodeState) -> Outcome | None:
        """The outcome for `shape` on `node` in `state`, labelled with the claim `keys`; None when not known."""
        entry = self.entries.get(node, {}).get(shape)
        if entry is None or not entry.state.same(state):
            self.misses += 1
            return None
        keys = tuple(keys)
        if entry.keys == keys:
            self.hits += 1
            return entry.outcome
        if not entry.outcome.allocatable or len(entry.outcome.results) != len(keys):
            self.misses += 1
            return None
        self.hits += 1
        results = tuple(ClaimAllocation(key, r.allocation) for key, r in zip(keys, entry.outcome.results, strict=True))
        return replace(entry.outcome, results=results)

    def put(self, node: str, shape: Hashable, keys: Sequence[str], state: NodeState, outcome: Outcome) -> None:
        shapes = self.entries.setdefault(node, {})
        shapes.pop(shape, None)
        if len(shapes) >= SHAPES_PER_NODE:
            del shapes[next(iter(shapes))]
        shapes[shape] = _Entry(state, tuple(keys), outcome)

    def clear(self) -> None:
        self.entries.clear()
