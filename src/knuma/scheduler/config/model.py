"""The scheduler configuration as data: what `knuma.scheduler.config.load` reads from a
`KubeSchedulerConfiguration`, after defaulting
and validation. Frozen; durations in seconds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from knuma.api.nodeaffinity import NodeSelector, PreferredSchedulingTerms
from knuma.errors import ConfigError
from knuma.scheduler.framework.registry import EXTENSION_POINTS, PLUGINS
from knuma.scheduler.plugins.default_preemption_args import DefaultPreemptionArgs
from knuma.scheduler.plugins.dynamic_resources_args import DynamicResourcesArgs
from knuma.scheduler.plugins.inter_pod_affinity_args import InterPodAffinityArgs
from knuma.scheduler.plugins.node_resources_balanced_allocation_args import NodeResourcesBalancedAllocationArgs
from knuma.scheduler.plugins.node_resources_fit_args import NodeResourcesFitArgs
from knuma.scheduler.plugins.numa_args import NUMA_PLUGIN, NumaArgs
from knuma.scheduler.plugins.pod_topology_spread_args import PodTopologySpreadArgs

__all__ = [
    "DEFAULT_LEASE_NAME",
    "DEFAULT_SCHEDULER_NAME",
    "KIND",
    "SUPPORTED_API_VERSIONS",
    "ClientConnectionConfig",
    "InterPodAffinityArgs",
    "LeaderElectionConfig",
    "NodeAffinityArgs",
    "NumaArgs",
    "PodTopologySpreadArgs",
    "ProfileConfig",
    "SchedulerConfigError",
    "SchedulerConfiguration",
    "num_feasible_nodes_to_find",
]

GROUP = "kubescheduler.config.k8s.io"
SUPPORTED_API_VERSIONS = (f"{GROUP}/v1", f"{GROUP}/v1beta3")
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "topology-aware-scheduler"
DEFAULT_LEASE_NAME = "topology-aware-scheduler"

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


class SchedulerConfigError(ConfigError):
    """A scheduler configuration file that cannot be used; the message names the file and the key path."""

    def __init__(self, source: str, path: str, problem: str) -> None:
        self.source, self.path, self.problem = source, path, problem
        super().__init__(": ".join(part for part in (source, path, problem) if part))


@dataclass(frozen=True)
class LeaderElectionConfig:
    """`leaderElection`; durations in seconds."""

    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = DEFAULT_LEASE_NAME
    resource_namespace: str = "kube-system"


@dataclass(frozen=True)
class ClientConnectionConfig:
    """`clientConnection`: kubeconfig ("" = the command line's or in-cluster) and the client's rate limit."""

    kubeconfig: str = ""
    qps: float = 50.0
    burst: int = 100


@dataclass(frozen=True)
class NodeAffinityArgs:
    """`NodeAffinityArgs.addedAffinity`: node affinity every pod of the profile gets on top of its own."""

    added_required: NodeSelector | None = None
    added_preferred: PreferredSchedulingTerms | None = None


@dataclass(frozen=True)
class ProfileConfig:
    """One profile after defaulting and plugin merging (kube-scheduler's `KubeSchedulerProfile`)."""

    scheduler_name: str
    plugins: Mapping[str, tuple[str, ...]]
    """Extension point (`filter`, `score`, ...) → the enabled plugins in kube-scheduler's order, including plugins
    knuma does not run (see `not_run`)."""
    score_weights: Mapping[str, int]
    numa: NumaArgs = field(default_factory=NumaArgs)
    """NodeResourceTopologyMatch's args (defaults when the profile has no pluginConfig for it)."""
    node_affinity: NodeAffinityArgs = field(default_factory=NodeAffinityArgs)
    inter_pod_affinity: InterPodAffinityArgs = field(default_factory=InterPodAffinityArgs)
    pod_topology_spread: PodTopologySpreadArgs = field(default_factory=PodTopologySpreadArgs)
    default_preemption: DefaultPreemptionArgs = field(default_factory=DefaultPreemptionArgs)
    node_resources_fit: NodeResourcesFitArgs = field(default_factory=NodeResourcesFitArgs)
    balanced_allocation: NodeResourcesBalancedAllocationArgs = field(
        default_factory=NodeResourcesBalancedAllocationArgs
    )
    dynamic_resources: DynamicResourcesArgs = field(default_factory=DynamicResourcesArgs)
    percentage_of_nodes_to_score: int | None = None
    """The profile's own `percentageOfNodesToScore` (v1), overriding the global one."""
    plugin_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Every `pluginConfig` entry's args as written, by plugin name."""

    @property
    def filters(self) -> tuple[str, ...]:
        return self.plugins.get("filter", ())

    @property
    def scorers(self) -> tuple[tuple[str, int], ...]:
        return tuple((name, self.score_weights.get(name, 1)) for name in self.plugins.get("score", ()))

    @property
    def topology_aware(self) -> bool:
        """NodeResourceTopologyMatch filters in this profile."""
        return NUMA_PLUGIN in self.filters

    @property
    def not_run(self) -> tuple[str, ...]:
        """Enabled plugins knuma does not implement, in kube-scheduler's default order."""
        enabled = {name for point in EXTENSION_POINTS for name in self.plugins.get(point, ())}
        return tuple(name for name, info in PLUGINS.items() if not info.runs and name in enabled)


@dataclass(frozen=True)
class SchedulerConfiguration:
    profiles: tuple[ProfileConfig, ...]
    leader_election: LeaderElectionConfig = field(default_factory=LeaderElectionConfig)
    client_connection: ClientConnectionConfig = field(default_factory=ClientConnectionConfig)
    parallelism: int = 16
    percentage_of_nodes_to_score: int = 0
    """0: adaptive (`50 - nodes/125` percent, at least 5%), as upstream."""
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    api_version: str = SUPPORTED_API_VERSIONS[0]
    source: str = ""
    """The file read; empty for the built-in default."""
    warnings: tuple[str, ...] = ()
    """What was accepted but is not applied (logged by `load_config`)."""

    @property
    def scheduler_names(self) -> list[str]:
        return [p.scheduler_name for p in self.profiles]

    @property
    def nrt_cache_args(self) -> NumaArgs:
        """The NodeResourceTopologyMatch args that configure the daemon's one NRT cache (the topology-aware profiles
        agree on them; defaults when no profile is topology-aware)."""
        return next((p.numa for p in self.profiles if p.topology_aware), NumaArgs())

    def profile(self, scheduler_name: str) -> ProfileConfig:
        for profile in self.profiles:
            if profile.scheduler_name == scheduler_name:
                return profile
        raise KeyError(scheduler_name)

    def nodes_to_find(self, scheduler_name: str, num_all_nodes: int) -> int:
        """How many feasible nodes a cycle looks for before it stops filtering (`numFeasibleNodesToFind`)."""
        own = self.profile(scheduler_name).percentage_of_nodes_to_score
        return num_feasible_nodes_to_find(self.percentage_of_nodes_to_score if own is None else own, num_all_nodes)


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """kube-scheduler's `numFeasibleNodesToFind`: all nodes below 100; else `percentage` of them (0: adaptive,
    `50 - nodes/125` with a floor of 5%), and never fewer than 100."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)
