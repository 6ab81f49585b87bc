"""The k8srm prototype's scheduler: `SelectNode` of `pkg/schedule/schedule.go` at `1116416`, with its result types
(`result_types.go`) and exact result strings.

Per node, each claim is evaluated against the node's pools: pools are filtered (no devices, driver mismatch, CEL
error, CEL false, with the prototype's failure reasons), then pool sets are tried smallest first in lexicographic
order (gonum `combin.Combinations` = `itertools.combinations`), filling greedily with `matchAttributes` checked
against the first pool of the set; the first best set of the smallest size that succeeds wins (score 100). A node
scores the integer average of its claims' scores, 0 when any claim fails.

Where the prototype is wrong, knuma does the right thing (documented in the README):

- claims on one node were evaluated independently, so two claims could double-book one pool: knuma subtracts each
  claim's allocation from the pools before evaluating the next claim (the prototype's own TODO);
- nodes were walked in Go map order, so among equal scores the chosen node was random: knuma walks nodes by name and
  keeps the first best;
- zero claims divided by zero (a panic): knuma scores such a node 100 with no allocations.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from knuma.api.devmgmt.types import Attribute, DeviceClaim, DevicePool
from knuma.devices.cel import CELError, compile_selector

__all__ = ["ClaimResult", "NodeResult", "PoolResult", "PoolSetResult", "select_node"]


@dataclass
class PoolResult:
    pool_name: str
    device_count: int = 0
    failure_reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"deviceCount": self.device_count, "poolName": self.pool_name}
        if self.failure_reason:
            out["failureReason"] = self.failure_reason
        return out


@dataclass
class PoolSetResult:
    pool_results: list[PoolResult] = field(default_factory=list)
    score: int = 0
    failure_reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"poolResults": [p.to_dict() for p in self.pool_results], "score": self.score}
        if self.failure_reason:
            out["failureReason"] = self.failure_reason
        return out


@dataclass
class ClaimResult:
    claim_name: str
    pool_set_results: list[PoolSetResult] | None = None
    best: int = -1
    ignored_pools: list[PoolResult] = field(default_factory=list)

    @property
    def score(self) -> int:
        return 0 if self.best < 0 or not self.pool_set_results else self.pool_set_results[self.best].score

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "best": self.best,
            "claimName": self.claim_name,
            "poolSetResults": None if self.pool_set_results is None else [p.to_dict() for p in self.pool_set_results],
        }
        if self.ignored_pools:
            out["ignoredPools"] = [p.to_dict() for p in self.ignored_pools]
        return dict(sorted(out.items()))


@dataclass
class NodeResult:
    node_name: str
    claim_results: list[ClaimResult] = field(default_factory=list)

    @property
    def score(self) -> int:
        if not self.claim_results:
            return 100
        scores = [c.score for c in self.claim_results]
        return 0 if 0 in scores else sum(scores) // len(scores)

    def allocations(self) -> list[dict[str, Any]]:
        out = []
        for claim in self.claim_results:
            if claim.best >= 0 and claim.pool_set_results:
                for pool in claim.pool_set_results[claim.best].pool_results:
                    out.append({"devicePoolName": pool.pool_name, "deviceCount": pool.device_count})
        return out

    def summary(self) -> str:
        failed = [c.claim_name for c in self.claim_results if c.score == 0]
        if failed:
            return f"{self.node_name}: could not satisfy these claims: {', '.join(failed)}"
        return f"{self.node_name}: satisfied all claims with score {self.score}"

    def to_dict(self) -> dict[str, Any]:
        return {"DeviceClaimResults": [c.to_dict() for c in self.claim_results], "NodeName": self.node_name}


def _environment(attributes: Sequence[Attribute]) -> dict[str, object]:
    """`device`: attribute name -> the first non-nil value (a quantity cannot be converted, as in cel-go)."""
    env: dict[str, object] = {}
    for attribute in attributes:
        value = attribute.value
        if value is not None and attribute.name not in env:
            env[attribute.name] = value
    return env


def meets_constraints(expression: str | None, attributes: Sequence[Attribute]) -> bool:
    """`MeetsConstraints`: empty means true; raise `CELError` on a compile or run-time error."""
    if not expression:
        return True
    env = _environment(attributes)
    for name, value in env.items():
        if not isinstance(value, str | int):
            raise CELError(f"unsupported conversion to ref.Val: (resource.Quantity) for attribute {name}")
    return compile_selector(expression, "constraints").matches(env, "constraints")


def _evaluate_pool_set(claim: DeviceClaim, pools: Sequence[DevicePool], counts: Mapping[str, int]) -> PoolSetResult:
    required = claim.device_count
    original = required
    match: dict[str, Attribute] = {}
    result = PoolSetResult()
    for index, pool in enumerate(pools):
        pool_result = PoolResult(pool.name)
        failed = False
        for name in claim.match_attributes:
            for attribute in pool.attributes:
                if attribute.name != name:
                    continue
                if index == 0:
                    match[name] = attribute
                elif not match.get(name, Attribute("")).equal(attribute):
                    failed = True
        if failed:
            pool_result.failure_reason = "claim MatchAttributes constraint failed"
            result.pool_results.append(pool_result)
            continue
        take = min(counts[pool.name], required)
        pool_result.device_count = take
        required -= take
        result.pool_results.append(pool_result)
    if required > 0:
        result.failure_reason = f"unable to satisfy {required} of {original} device requests"
    else:
        result.score = 100
    return result


def _evaluate_claim(claim: DeviceClaim, pools: Sequence[DevicePool], counts: Mapping[str, int]) -> ClaimResult:
    result = ClaimResult(f"{claim.name}")
    good = []
    for pool in pools:
        reason = ""
        if counts[pool.name] <= 0:
            reason = "no available devices"
        elif claim.driver and claim.driver != pool.driver:
            reason = "claim and pool driver do not match"
        else:
            try:
                if not meets_constraints(claim.constraints, pool.attributes):
                    reason = "constraints not met"
            except CELError as err:
                reason = f"error evaluating constraints: {err}"
        if reason:
            result.ignored_pools.append(PoolResult(pool.name, 0, reason))
        else:
            good.append(pool)
    for size in range(1, len(good) + 1):
        for combo in itertools.combinations(good, size):
            pool_set = _evaluate_pool_set(claim, combo, counts)
            if result.pool_set_results is None:
                result.pool_set_results = []
            result.pool_set_results.append(pool_set)
            best = result.pool_set_results[result.best].score if result.best >= 0 else 0
            if pool_set.score > 0 and (result.best == -1 or pool_set.score > best):
                result.best = len(result.pool_set_results) - 1
        if result.best > -1:
            break
    return result


def evaluate_node(node: str, claims: Sequence[DeviceClaim], pools: Sequence[DevicePool]) -> NodeResult:
    counts = {p.name: p.count for p in pools}
    result = NodeResult(node)
    for claim in claims:
        claim_result = _evaluate_claim(claim, pools, counts)
        result.claim_results.append(claim_result)
        if claim_result.best >= 0 and claim_result.pool_set_results:
            for pool in claim_result.pool_set_results[claim_result.best].pool_results:
                counts[pool.pool_name] -= pool.device_count  # no double booking (the prototype's TODO)
    return result


def select_node(
    claims: Sequence[DeviceClaim], pools: Sequence[DevicePool]
) -> tuple[str | None, list[dict[str, Any]] | None, list[NodeResult]]:
    """The selected node, its allocations (None when no node fits) and every node's result, nodes by name."""
    by_node: dict[str, list[DevicePool]] = {}
    for pool in pools:
        if pool.node_name:
            by_node.setdefault(pool.node_name, []).append(pool)
    results = [evaluate_node(node, claims, by_node[node]) for node in sorted(by_node)]
    best: NodeResult | None = None
    for result in results:
        if result.score > (best.score if best is not None else 0):
            best = result
    if best is None:
        return None, None, results
    return best.node_name, best.allocations(), results
