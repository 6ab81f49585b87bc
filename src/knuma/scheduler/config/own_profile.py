"""knuma's own scheduler profile as a configuration file states it: kube-scheduler's default plugins plus
NodeResourceTopologyMatch, scoring with knuma's strategy (`KnumaBinPacking`) and without the default scores that work
against it (NodeResourcesBalancedAllocation: docs/placement.md measured it costing pods). The profile `knuma
scheduler` runs without a file, `knuma up`'s NUMA-aware one, the one `knuma deploy` renders, and the simulator's
knuma (`knuma.scheduler.framework.profiles.default_profile` builds the same plugins).

Plain data, so that the deployer renders it without importing the scheduler's plugins."""

from __future__ import annotations

from typing import Any

__all__ = ["KNUMA_DISABLED_SCORES", "KNUMA_STRATEGY", "NUMA_PLUGIN_NAME", "knuma_profile"]

KNUMA_STRATEGY = "KnumaBinPacking"
"""knuma's default `scoringStrategy.type` (`StrategyType.KNUMA_BIN_PACKING`)."""
KNUMA_DISABLED_SCORES = ("NodeResourcesBalancedAllocation",)
"""Default plugins knuma's profile takes out of `score`."""
NUMA_PLUGIN_NAME = "NodeResourceTopologyMatch"


def knuma_profile(name: str = "topology-aware-scheduler") -> dict[str, Any]:
    """The profile entry of a `KubeSchedulerConfiguration`."""
    return {
        "schedulerName": name,
        "plugins": {
            "multiPoint": {"enabled": [{"name": NUMA_PLUGIN_NAME}]},
            "score": {"disabled": [{"name": plugin} for plugin in KNUMA_DISABLED_SCORES]},
        },
        "pluginConfig": [{"name": NUMA_PLUGIN_NAME, "args": {"scoringStrategy": {"type": KNUMA_STRATEGY}}}],
    }
