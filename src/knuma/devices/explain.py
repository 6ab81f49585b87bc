"""The documents `knuma claims schedule` and `knuma claims allocate` print: every node's verdict, score, allocation
and, for a node that does not fit, the devices surviving each stage and the nearest miss.

The prototype's document keeps its shape (`selected`, `allocations` as `{devicePoolName, deviceCount}`, per node
`score`, `summary` and the verbose `NodeResult` with its Go field names `NodeName` / `DeviceClaimResults`). The DRA
document adds what the prototype could not say: the locality rung and NUMA affinity of a fit, and why a node fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from knuma.api.nodeaffinity import parse_node_selector
from knuma.devices.allocator import Inventory, NodeView, Outcome, allocate, allocated_devices, consumed_capacity
from knuma.devices.prototype import select_node
from knuma.devices.scenario import DRAScenario, PrototypeScenario, ScenarioError

__all__ = ["allocate_document", "schedule_document"]


def schedule_document(scenario: PrototypeScenario | DRAScenario, budget: int) -> dict[str, Any]:
    if isinstance(scenario, PrototypeScenario):
        return _prototype_document(scenario)
    return _dra_document(scenario, budget)


def _prototype_document(scenario: PrototypeScenario) -> dict[str, Any]:
    selected, allocations, results = select_node(scenario.claims, scenario.pools)
    nodes = {
        r.node_name: {
            "score": r.score,
            "summary": r.summary(),
            "allocations": r.allocations() if r.score > 0 else None,
            "verbose": r.to_dict(),
        }
        for r in results
    }
    return {"selected": selected, "allocations": allocations, "nodes": nodes, "warnings": list(scenario.warnings)}


def _pinned_elsewhere(scenario: DRAScenario, node: NodeView) -> str:
    """An allocated claim of the pod whose node selector excludes `node`."""
    for claim in scenario.to_allocate:
        if claim.allocation is None or claim.allocation.node_selector is None:
            continue
        selector, _ = parse_node_selector(claim.allocation.node_selector)
        if not selector.matches(node.labels, node.name):
            return claim.key
    return ""


def _outcome(scenario: DRAScenario, node: NodeView, inventory: Inventory, budget: int) -> Outcome:
    pinned = _pinned_elsewhere(scenario, node)
    if pinned:
        return Outcome(
            node.name, False, reason=f"claim {pinned} is allocated on another node", stage="class", claim=pinned
        )
    return allocate(
        node,
        scenario.to_allocate,
        inventory,
        pod=scenario.pod,
        admin_access_allowed=scenario.admin_access_allowed,
        budget=budget,
        explain=True,
    )


def _summary(outcome: Outcome) -> str:
    if outcome.allocatable:
        where = "" if outcome.affinity is None else ", NUMA " + ",".join(str(n) for n in outcome.affinity)
        rung = f" ({outcome.locality.label}{where})" if outcome.locality is not None else ""
        return f"{outcome.node}: satisfied all claims with score {outcome.score}{rung}"
    claim = outcome.claim or "the pod's claims"
    return f"{outcome.node}: could not satisfy these claims: {claim}"


def _node_document(outcome: Outcome) -> dict[str, Any]:
    return {
        "allocatable": outcome.allocatable,
        "score": outcome.score,
        "summary": _summary(outcome),
        "locality": outcome.locality.label if outcome.locality is not None and outcome.allocatable else None,
        "affinity": list(outcome.affinity) if outcome.affinity is not None else None,
        "allocations": [r.to_dict() for r in outcome.results] if outcome.allocatable else None,
        "reason": outcome.reason or None,
        "stage": outcome.stage or None,
        "exhausted": outcome.exhausted,
        "stages": {request: dict(counts) for request, counts in outcome.stages.items()},
        "attempts": outcome.leaves,
    }


def _inventory(scenario: DRAScenario) -> Inventory:
    pending = {c.key for c in scenario.to_allocate}
    allocated = [c for c in scenario.claims if c.key not in pending]
    return Inventory(
        scenario.slices, scenario.classes, allocated_devices(allocated), consumed=consumed_capacity(allocated)
    )


def _dra_document(scenario: DRAScenario, budget: int) -> dict[str, Any]:
    if not scenario.nodes:
        raise ScenarioError(
            "no nodes in the input: give Node, NodeResourceTopology or node-local ResourceSlice objects"
        )
    inventory = _inventory(scenario)
    outcomes = [_outcome(scenario, node, inventory, budget) for node in scenario.nodes]
    best: Outcome | None = None
    for outcome in outcomes:
        if outcome.allocatable and (best is None or outcome.score > best.score):
            best = outcome
    pod = scenario.pod
    return {
        "pod": f"{pod.namespace}/{pod.name}" if pod is not None else None,
        "claims": [c.key for c in scenario.to_allocate],
        "selected": best.node if best is not None else None,
        "allocations": [r.to_dict() for r in best.results] if best is not None else None,
        "nodes": {o.node: _node_document(o) for o in outcomes},
        "warnings": [*scenario.warnings, *_nothing_to_allocate(scenario)],
    }


def _nothing_to_allocate(scenario: DRAScenario) -> list[str]:
    """A warning when the input holds no pod and no pending claim (a forgotten file), so every node "fits"."""
    if scenario.to_allocate or scenario.pod is not None:
        return []
    return [
        "no pending ResourceClaim and no Pod in the input: nothing to allocate (every node fits); add the pod's file"
    ]


def _select_claims(scenario: DRAScenario, names: Sequence[str]) -> DRAScenario:
    if not names:
        return scenario
    by_key = {c.key: c for c in scenario.claims}
    chosen = []
    for name in names:
        matches = (
            [c for c in scenario.claims if c.key == name]
            if "/" in name
            else [c for c in scenario.claims if c.name == name]
        )
        if not matches:
            known = ", ".join(sorted(by_key)) or "none"
            raise ScenarioError(f"claim {name!r} is not in the input (claims: {known})")
        if len(matches) > 1:
            raise ScenarioError(
                f"claim name {name!r} is ambiguous; use namespace/name: {', '.join(c.key for c in matches)}"
            )
        chosen.append(matches[0])
    return DRAScenario(
        scenario.claims,
        tuple(chosen),
        scenario.classes,
        scenario.slices,
        scenario.nodes,
        scenario.pod,
        scenario.admin_namespaces,
        scenario.warnings,
    )


def allocate_document(scenario: DRAScenario, node: str, claims: Sequence[str], budget: int) -> dict[str, Any]:
    """`knuma claims allocate`: `{"node", "allocatable", "results": [{"claim", "allocation"}], "reason"}`."""
    scenario = _select_claims(scenario, claims)
    view = next((n for n in scenario.nodes if n.name == node), None)
    if view is None:
        shared = any(s.node.all_nodes for s in scenario.slices)
        if not shared:  # no device of the input could be on it (a node selector needs the node's labels): a typo
            known = ", ".join(n.name for n in scenario.nodes) or "none"
            raise ScenarioError(f"node {node!r} is not in the input (nodes: {known})")
        view = NodeView(node)
    outcome = _outcome(scenario, view, _inventory(scenario), budget)
    return {
        "node": node,
        "allocatable": outcome.allocatable,
        "results": [r.to_dict() for r in outcome.results],
        "reason": outcome.reason or None,
    }
