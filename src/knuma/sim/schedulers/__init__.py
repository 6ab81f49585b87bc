"""The schedulers the simulator compares: each is a product profile plus an NRT cache mode
(`knuma.sim.schedulers.product`), deciding through the daemon's own cache and fast path.

- `default`: kube-scheduler's node-level fit, no NUMA plugin (what a topology-unaware scheduler does).
- `nrt-passthrough`, `nrt-overreserve`, `nrt-discardreserved`: the NUMA plugin with upstream's caches
  (`cacheResyncPeriodSeconds: 0`, `> 0`, `discardReservedNodes: true`), scoring with upstream's default
  LeastAllocated.
- `knuma`: the NUMA plugin with knuma's cache (a shadow kubelet per node) and the StableUnderRelease filter, scoring
  with KnumaBinPacking.

`optimal` and `optimal-cpus` are offline (`knuma.sim.optimal`: the most pods, the most CPUs).
"""

from __future__ import annotations

from collections.abc import Sequence

from knuma.api.pod import Pod
from knuma.errors import InvalidInput
from knuma.scheduler.plugins.strategies import ScoringStrategy, StrategyType
from knuma.sim.schedulers.base import ListedPod, NodeSetup
from knuma.sim.schedulers.product import PRODUCT, Attempt, ProductScheduler, product_scheduler

__all__ = ["ALL_SCHEDULERS", "PRODUCT", "Attempt", "ListedPod", "NodeSetup", "ProductScheduler", "make_scheduler"]

ALL_SCHEDULERS = (*PRODUCT, "optimal", "optimal-cpus")


def make_scheduler(
    name: str,
    nodes: Sequence[NodeSetup],
    *,
    resync_period: float = 5.0,
    scoring: StrategyType | None = None,
    pods: Sequence[ListedPod] = (),
    nominated: Sequence[tuple[Pod, str]] = (),
) -> ProductScheduler:
    """Start scheduler `name` on `nodes` (each with its last published NRT) with `pods` bound and the pending pods
    `nominated` by an earlier preemption: a fresh cluster, or a restart."""
    if name not in PRODUCT:
        raise InvalidInput(f"unknown scheduler {name!r}; expected one of: {', '.join(ALL_SCHEDULERS)}")
    strategy = ScoringStrategy(scoring) if scoring is not None else None
    return product_scheduler(name, nodes, scoring=strategy, resync_period=resync_period, pods=pods, nominated=nominated)
