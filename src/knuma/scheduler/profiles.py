"""Profiles: which plugins run, in which order, with which weights."""

from __future__ import annotations

from knuma.scheduler.framework import Profile
from knuma.scheduler.plugins.node_resources_fit import NodeResourcesFit
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.strategies import ScoringStrategy

DEFAULT_PROFILE_NAME = "topology-aware-scheduler"


def default_profile(scoring: ScoringStrategy | None = None, name: str = DEFAULT_PROFILE_NAME) -> Profile:
    """Node-level fit, then the NUMA plugin; the NUMA plugin alone scores, so rankings match upstream's."""
    numa = NodeResourceTopologyMatch(scoring)
    return Profile(name=name, filters=(NodeResourcesFit(), numa), scorers=((numa, 1),))
