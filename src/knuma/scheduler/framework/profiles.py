"""Profiles: which plugins run, in which order, with which weights."""

from __future__ import annotations

from knuma.scheduler.cache.interface import NRTCache
from knuma.scheduler.config.own_profile import KNUMA_STRATEGY
from knuma.scheduler.framework.interface import FilterPlugin, PostFilterPlugin, Profile, ScorePlugin
from knuma.scheduler.plugins.dra_extended import ExtendedResourceMap
from knuma.scheduler.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation
from knuma.scheduler.plugins.node_resources_fit import NodeResourcesFit
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.plugins.stable_under_release import ReleaseScenarios, StableUnderRelease
from knuma.scheduler.plugins.stranding import CPUDemand
from knuma.scheduler.plugins.strategies import ScoringStrategy, StrategyType

DEFAULT_PROFILE_NAME = "topology-aware-scheduler"

FIT_WEIGHT = 1
"""NodeResourcesFit's score weight in kube-scheduler's default profile."""
BALANCED_WEIGHT = 1
"""NodeResourcesBalancedAllocation's score weight in kube-scheduler's default profile."""
NUMA_WEIGHT = 1
"""NodeResourceTopologyMatch's score weight (scheduler-plugins' example profiles leave the default, 1)."""


DEFAULT_STRATEGY = StrategyType(KNUMA_STRATEGY)
"""knuma's default `scoringStrategy.type` (upstream's is LeastAllocated, which every profile can still choose)."""


def default_scoring() -> ScoringStrategy:
    return ScoringStrategy(DEFAULT_STRATEGY)


def default_profile(
    scoring: ScoringStrategy | None = None,
    name: str = DEFAULT_PROFILE_NAME,
    demand: CPUDemand | None = None,
    cache: NRTCache | None = None,
    *,
    balanced_allocation: bool = False,
) -> Profile:
    """Node-level fit, then the NUMA plugin; both score, as in a kube-scheduler profile that enables
    NodeResourceTopologyMatch next to the default plugins: NodeResourcesFit (LeastAllocated) spreads pods that the NUMA
    plugin scores alike (every non-Guaranteed pod scores 100 there). Without `scoring`, the NUMA plugin uses knuma's
    default strategy, `KnumaBinPacking`. `demand`: the pod sizes its stranding term reads (a new, empty one if None;
    pass one to share it, e.g. with a `VectorizedScheduler`). `cache`: the NRT cache the NUMA plugin reports to.

    `balanced_allocation`: NodeResourcesBalancedAllocation scores too, as in upstream's deployments (kube-scheduler's
    default plugins). knuma's own profile disables it (`own_profile.KNUMA_DISABLED_SCORES`): it pulls pods towards
    nodes whose cpu and memory stay in proportion, against KnumaBinPacking's packing, and knuma placed fewer pods
    with it (`default` seeds 0-4: 365 / 366 / 367 / 371 / 360 against 372 / 374 / 369 / 377 / 373; `fragmented`
    233 / 236 / 238 / 237 / 237 against 238 / 238 / 237 / 237 / 239; docs/placement.md)."""
    fit = NodeResourcesFit()
    numa = NodeResourceTopologyMatch(scoring or default_scoring(), demand, cache)
    filters: tuple[FilterPlugin, ...] = (fit, numa, *cache_filters(cache))
    scorers: tuple[tuple[ScorePlugin, int], ...] = ((numa, NUMA_WEIGHT), (fit, FIT_WEIGHT))
    if balanced_allocation:
        scorers += ((NodeResourcesBalancedAllocation(), BALANCED_WEIGHT),)
    return Profile(name=name, filters=filters, scorers=scorers)


def node_level_profile(
    name: str = "default-scheduler",
    filters: tuple[FilterPlugin, ...] = (),
    post_filter: tuple[PostFilterPlugin, ...] = (),
) -> Profile:
    """kube-scheduler's default profile as far as resources go, without the NUMA plugin: NodeResourcesFit filters and
    scores (LeastAllocated), NodeResourcesBalancedAllocation scores, with their default weights. `filters`: more
    filters after NodeResourcesFit (a DRA model)."""
    fit = NodeResourcesFit()
    scorers = ((fit, FIT_WEIGHT), (NodeResourcesBalancedAllocation(), BALANCED_WEIGHT))
    return Profile(name, (fit, *filters), scorers, post_filter=post_filter)


def cache_filters(cache: NRTCache | None, extended: ExtendedResourceMap | None = None) -> tuple[FilterPlugin, ...]:
    """Filters the NRT cache makes possible, after NodeResourceTopologyMatch: StableUnderRelease with knuma's cache
    (it needs to know which pod holds which zones). `extended`: the DeviceClasses' extended resources (DRA)."""
    if isinstance(cache, ReleaseScenarios):
        return (StableUnderRelease(cache, extended),)
    return ()
