"""The schedulers the simulator compares, each with its own view of the cluster.

Every scheduler keeps kube-scheduler's node-level cache (pods it bound, their requests, removed when they terminate)
and differs in what it knows about NUMA zones:

- `default`: nothing (NodeResourcesFit and a node-level LeastAllocated score; what kube-scheduler does).
- `nrt-passthrough`: upstream NodeResourceTopologyMatch on the last published NRT, no reservation (the default
  `cacheResyncPeriodSeconds: 0`).
- `nrt-overreserve`: upstream's overreserve cache: the NRT store is read once, each reserved pod's effective request is
  subtracted from every zone, and a node is refreshed only after a Filter rejection marks it dirty and a resync finds
  the published pod fingerprint equal to the pods the scheduler sees running there.
- `knuma`: the knuma profile (the kubelet model as Filter) plus a reservation on the zones the model predicts, a
  shadow kubelet per node fed by pod status events, and NRT as a drift check.

One module per scheduler; this package maps names to them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from knuma.errors import InvalidInput
from knuma.scheduler.plugins.strategies import ScoringStrategy, StrategyType
from knuma.sim.schedulers.base import NodeLevelLeastAllocated, NodeSetup, SimScheduler
from knuma.sim.schedulers.default import DefaultScheduler
from knuma.sim.schedulers.knuma import KnumaScheduler, StableUnderRelease
from knuma.sim.schedulers.upstream import OverreserveScheduler, PassthroughScheduler

__all__ = [
    "ALL_SCHEDULERS",
    "SCHEDULERS",
    "DefaultScheduler",
    "KnumaScheduler",
    "NodeLevelLeastAllocated",
    "NodeSetup",
    "OverreserveScheduler",
    "PassthroughScheduler",
    "SimScheduler",
    "StableUnderRelease",
    "make_scheduler",
]


Factory = Callable[..., SimScheduler]

SCHEDULERS: dict[str, Factory] = {
    DefaultScheduler.name: DefaultScheduler,
    PassthroughScheduler.name: PassthroughScheduler,
    OverreserveScheduler.name: OverreserveScheduler,
    KnumaScheduler.name: KnumaScheduler,
}
"""Online schedulers by name; `optimal` is offline (`knuma.sim.optimal`)."""

ALL_SCHEDULERS = (*SCHEDULERS, "optimal")


def make_scheduler(
    name: str,
    nodes: Sequence[NodeSetup],
    *,
    resync_period: float = 5.0,
    scoring: StrategyType | None = None,
) -> SimScheduler:
    try:
        factory = SCHEDULERS[name]
    except KeyError:
        raise InvalidInput(f"unknown scheduler {name!r}; expected one of: {', '.join(ALL_SCHEDULERS)}") from None
    strategy = ScoringStrategy(scoring) if scoring is not None else None
    return factory(nodes, scoring=strategy, resync_period=resync_period)
