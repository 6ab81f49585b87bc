"""Profiles: which plugins run, in which order, with which weights."""

from __future__ import annotations

from knuma.scheduler.cache.interface import NRTCache
from knuma.scheduler.framework.interface import FilterPlugin, Profile
from knuma.scheduler.plugins.dra_extended import ExtendedResourceMap
from knuma.scheduler.plugins.node_resources_fit import NodeResourcesFit
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.plugins.stable_under_release import ReleaseScenarios, StableUnderRelease
from knuma.scheduler.plugins.stranding import CPUDemand
from knuma.scheduler.plugins.strategies import ScoringStrategy, StrategyType

DEFAULT_PROFILE_NAME = "topology-aware-scheduler"

FIT_WEIGHT = 1
"""NodeResourcesFit's score weight in kube-scheduler's default profile."""
NUMA_WEIGHT = 1
"""NodeResourceTopologyMatch's score weight (scheduler-plugins' example profiles leave the default, 1)."""


DEFAULT_STRATEGY = StrategyType.KNUMA_BIN_PACKING
"""knuma's default `scoringStrategy.type` (upstream's is LeastAllocated, which every profile can still choose)."""


def default_scoring() -> ScoringStrategy:
    return ScoringStrategy(DEFAULT_STRATEGY)


def default_profile(
    scoring: ScoringStrategy | None = None,
    name: str = DEFAULT_PROFILE_NAME,
    demand: CPUDemand | None = None,
    cache: NRTCache | None = None,
) -> Profile:
    """Node-level fit, then the NUMA plugin; both score, as in a kube-scheduler profile that enables
    NodeResourceTopologyMatch next to the default plugins: NodeResourcesFit (LeastAllocated) spreads pods that the NUMA
    plugin scores alike (every non-Guaranteed pod scores 100 there). Without `scoring`, the NUMA plugin uses knuma's
    default strategy, `KnumaBinPacking`. `demand`: the pod sizes its stranding term reads (a new, empty one if None;
    pass one to share it, e.g. with a `VectorizedScheduler`). `cache`: the NRT cache the NUMA plugin reports to."""
    fit = NodeResourcesFit()
    numa = NodeResourceTopologyMatch(scoring or default_scoring(), demand, cache)
    filters: tuple[FilterPlugin, ...] = (fit, numa, *cache_filters(cache))
    return Profile(name=name, filters=filters, scorers=((numa, NUMA_WEIGHT), (fit, FIT_WEIGHT)))


def cache_filters(cache: NRTCache | None, extended: ExtendedResourceMap | None = None) -> tuple[FilterPlugin, ...]:
    """Filters the NRT cache makes possible, after NodeResourceTopologyMatch: StableUnderRelease with knuma's cache
    (it needs to know which pod holds which zones). `extended`: the DeviceClasses' extended resources (DRA)."""
    if isinstance(cache, ReleaseScenarios):
        return (StableUnderRelease(cache, extended),)
    return ()
