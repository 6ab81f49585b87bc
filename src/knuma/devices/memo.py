"""The allocator's verdict per node, remembered while neither the claims' shape nor the node's state changes.

Filter runs the allocator on every node for every pod with claims (upstream's `DynamicResources.Filter` calls
`state.allocator.Allocate(ctx, node)` per node in `pkg/scheduler/framework/plugins/dynamicresources/
dynamicresources.go`, with an allocator its PreFilter builds afresh for each pod, noting that keeping it up to date
across pods would avoid that; it is compiled Go and stops at the first solution, knuma's search scores NUMA
alignment and locality and costs about half a millisecond per node in Python). Pods with claims mostly repeat a
few shapes (1 GPU + 1 NIC on one PCIe root...), and one scheduling cycle changes one node: the other nodes would be
searched again with the same input and give the same answer. `allocate` is a pure function of

- the pending claims' specs (the claim names appear only in the outcome's labels, re-applied on a hit),
- the pod's CPU and memory requests (`Pod.admission_key`: what `alignment.plan_alignment` reads of the pod),
- the node: its name, labels and NUMA topology (compared by identity: the scheduler's cache builds a new one when
  anything on the node changes),
- the devices reachable from the node: the slices (their version), the classes (their version) and which of the
  node's devices are in use,

so an outcome computed for the same inputs is returned as is, re-labelled with the current claims' keys (nothing
else in it depends on them: the allocation results are device IDs, configs from the class and the claim spec, a
node selector from the slices; a failure names the claim in its reason, its `claim` and its stage labels, which
`_relabelled_failure` rewrites, or declines to). The memo is exact by construction: anything that is not in the key
is not an input.

Nodes of one pool are alike: the same NUMA zones with the same free amounts, slices that differ only in their names,
pool names and the node they are bound to, the same devices in use. Their outcomes differ only in those names, so an
outcome computed on one node is also remembered under the node's *class* (`DeviceState.node_class`: everything the
allocator reads, with the node's own pools numbered instead of named) and given to a node of the same class with its
pools and its name put in (`from_similar`): the first pod of a claim shape searches one node per class, not every
node. A failure is shared when nothing in it names the other node or its pools (its claims relabelled), and otherwise
only as a verdict (`similar_failure`, for the fast path's pass/fail checks).
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from knuma.devices.allocator import ClaimAllocation, Outcome
from knuma.topology.node import NodeTopology

__all__ = ["AllocationMemo", "MemoEntry", "NodeState"]

SHAPES_PER_NODE = 16
"""Claim shapes remembered per node (the oldest is dropped): a few shapes repeat, a long tail does not."""
SHARED_ENTRIES = 4096
"""(node class, claim shape) outcomes remembered for similar nodes; all are dropped when full."""


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
class MemoEntry:
    """One remembered outcome, labelled with the claim keys it was computed for."""

    state: NodeState
    keys: tuple[str, ...]
    outcome: Outcome
    derived: dict[Hashable, object] = field(default_factory=dict)
    """What callers compute from the outcome and the node state alone (DynamicResources' placement terms, by the pod
    layout they also read): dropped with the entry."""


@dataclass(frozen=True)
class _Shared:
    node: str
    pools: tuple[tuple[str, str], ...]
    """The node's own pools, (driver, pool name), in the order its class numbers them."""
    entry: MemoEntry


@dataclass
class AllocationMemo:
    """node -> claim shape -> the outcome last computed there, with the state it was computed on; and per (node
    class, claim shape) one such outcome, for the nodes of that class."""

    entries: dict[str, dict[Hashable, MemoEntry]] = field(default_factory=dict)
    shared: dict[tuple[Hashable, Hashable], _Shared] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0
    similar_hits: int = 0

    def entry(self, node: str, shape: Hashable, keys: Sequence[str], state: NodeState) -> MemoEntry | None:
        """The current entry for `shape` on `node` in `state` when it can stand for claims `keys` (as many, distinct,
        and an allocation per claim), without relabelling: what reads only whether the claims fit and on which
        devices (Filter's verdict, Score's terms) needs no more. None when not known (not counted: `get` follows)."""
        entry = self.entries.get(node, {}).get(shape)
        if entry is None or not entry.state.same(state):
            return None
        if not len(set(entry.keys)) == len(entry.keys) == len(keys) == len(set(keys)):
            return None
        if entry.outcome.allocatable and len(entry.outcome.results) != len(keys):
            return None
        self.hits += 1
        return entry

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
        outcome = entry.outcome
        if len(entry.keys) != len(keys) or len(set(entry.keys)) != len(keys):
            self.misses += 1
            return None
        if outcome.allocatable:
            if len(outcome.results) != len(keys):
                self.misses += 1
                return None
            results = tuple(ClaimAllocation(key, r.allocation) for key, r in zip(keys, outcome.results, strict=True))
            self.hits += 1
            return replace(outcome, results=results)
        failed = _relabelled_failure(outcome, dict(zip(entry.keys, keys, strict=True)))
        if failed is None:
            self.misses += 1
            return None
        self.hits += 1
        return failed

    def put(
        self,
        node: str,
        shape: Hashable,
        keys: Sequence[str],
        state: NodeState,
        outcome: Outcome,
        derived: dict[Hashable, object] | None = None,
    ) -> MemoEntry:
        """Remember `outcome`; `derived`: the derived values of a similar node's entry, shared (they are the same)."""
        shapes = self.entries.setdefault(node, {})
        shapes.pop(shape, None)
        if len(shapes) >= SHAPES_PER_NODE:
            del shapes[next(iter(shapes))]
        entry = shapes[shape] = MemoEntry(state, tuple(keys), outcome, {} if derived is None else derived)
        return entry

    def share(
        self, node_class: Hashable, shape: Hashable, node: str, pools: tuple[tuple[str, str], ...], entry: MemoEntry
    ) -> None:
        """Remember `entry`, computed on `node` (whose own pools are `pools`), for the nodes of `node_class`."""
        if len(self.shared) >= SHARED_ENTRIES:
            self.shared.clear()
        self.shared[node_class, shape] = _Shared(node, pools, entry)

    def from_similar(
        self,
        node_class: Hashable,
        shape: Hashable,
        node: str,
        pools: tuple[tuple[str, str], ...],
        keys: Sequence[str],
    ) -> tuple[Outcome, dict[Hashable, object]] | None:
        """The outcome a node of `node_class` gave for `shape`, for `node` (its own pools `pools`, in the class's
        order) and the claims `keys`: the devices' pools and the node selector renamed; with that node's derived
        values (`MemoEntry.derived`, the same for the whole class). A failure only when nothing in it names the
        other node or its pools (the claims relabelled); None when there is none or it cannot be renamed safely."""
        shared = self.shared.get((node_class, shape))
        if shared is None or len(shared.pools) != len(pools):
            return None
        outcome = shared.entry.outcome
        keys = tuple(keys)
        if not len(set(shared.entry.keys)) == len(shared.entry.keys) == len(keys) == len(set(keys)):
            return None
        if not outcome.allocatable:
            text = json.dumps([outcome.reason, outcome.claim, outcome.request, list(outcome.stages.items())])
            if any(_mentions(text, name) for name in (shared.node, *(pool for _, pool in shared.pools))):
                return None
            failed = _relabelled_failure(replace(outcome, node=node), dict(zip(shared.entry.keys, keys, strict=True)))
            if failed is None:
                return None
            self.similar_hits += 1
            return failed, shared.entry.derived
        if len(outcome.results) != len(keys):
            return None
        renamed = _renamed_results(outcome.results, shared.node, node, dict(zip(shared.pools, pools, strict=True)))
        if renamed is None:
            return None
        self.similar_hits += 1
        results = tuple(ClaimAllocation(key, r.allocation) for key, r in zip(keys, renamed, strict=True))
        return replace(outcome, node=node, results=results), shared.entry.derived

    def similar_failure(self, node_class: Hashable, shape: Hashable, keys: Sequence[str]) -> MemoEntry | None:
        """The entry of a node of `node_class` where the claims of `shape` did not fit (as many claims as `keys`):
        a verdict only, its reason is the other node's."""
        shared = self.shared.get((node_class, shape))
        if shared is None or shared.entry.outcome.allocatable or len(shared.entry.keys) != len(keys):
            return None
        self.similar_hits += 1
        return shared.entry

    def clear(self) -> None:
        self.entries.clear()
        self.shared.clear()


def _renamed_results(
    results: Sequence[ClaimAllocation], old: str, new: str, pools: Mapping[tuple[str, str], tuple[str, str]]
) -> tuple[ClaimAllocation, ...] | None:
    """`results` computed on node `old` as they are on node `new`: each device of one of `old`'s own pools in the
    matching pool of `new`, a node selector naming `old` naming `new`. None when a selector names `old` in any other
    way than `metadata.name In [old]` (left to the allocator)."""
    out = []
    for claim in results:
        allocation = claim.allocation
        devices = tuple(
            replace(r, driver=pools[key][0], pool=pools[key][1]) if (key := (r.driver, r.pool)) in pools else r
            for r in allocation.results
        )
        selector = allocation.node_selector
        if selector is not None:
            selector = _renamed_selector(selector, old, new)
            if selector is None:
                return None
        out.append(ClaimAllocation(claim.claim, replace(allocation, results=devices, node_selector=selector)))
    return tuple(out)


def _mentions(text: str, name: str) -> bool:
    """Whether `name` (a node or pool name: letters, digits, `-`, `.`) appears in `text` as a whole name, not inside
    a longer one (`node-1` is not in `node-10`)."""
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", text) is not None


def _renamed_selector(selector: Mapping[str, Any], old: str, new: str) -> Mapping[str, Any] | None:
    """A node selector with `metadata.name In [old]` fields naming `new`; None when `old` appears elsewhere."""
    terms, rest = [], []
    for term in selector.get("nodeSelectorTerms") or []:
        fields, others = [], []
        for requirement in term.get("matchFields") or []:
            if requirement.get("key") == "metadata.name" and requirement.get("values") == [old]:
                fields.append({**requirement, "values": [new]})
            else:
                fields.append(requirement)
                others.append(requirement)
        terms.append({**term, "matchFields": fields} if "matchFields" in term else dict(term))
        rest.append({**term, "matchFields": others})
    if json.dumps(old) in json.dumps({**selector, "nodeSelectorTerms": rest}):  # `old` as a whole value
        return None
    return {**selector, "nodeSelectorTerms": terms}


def _relabelled_failure(outcome: Outcome, renamed: Mapping[str, str]) -> Outcome | None:
    """A failed `outcome` naming the claims `renamed` maps to instead: the allocator names a claim only as
    `claim <key>` followed by `,` or `:` in the reason (`search`, `allocator`), in `Outcome.claim` and in the
    `<key>/<request>` labels of `Outcome.stages`. None when a claim key appears anywhere else (not relabelled:
    recomputed)."""
    pattern = re.compile(
        "claim (" + "|".join(re.escape(k) for k in sorted(renamed, key=len, reverse=True)) + ")(?=[,:])"
    )
    if any(key in pattern.sub("", outcome.reason) for key in renamed):
        return None
    reason = pattern.sub(lambda m: f"claim {renamed[m.group(1)]}", outcome.reason)
    if outcome.claim and outcome.claim not in renamed:
        return None
    stages = {}
    for label, counts in outcome.stages.items():
        key, _, request = label.rpartition("/")
        if key not in renamed:
            return None
        stages[f"{renamed[key]}/{request}"] = counts
    return replace(outcome, reason=reason, claim=renamed.get(outcome.claim, outcome.claim), stages=stages)
