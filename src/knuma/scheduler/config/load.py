"""The scheduler's configuration file: a `KubeSchedulerConfiguration` (`kubescheduler.config.k8s.io/v1` or
`v1beta3`), read the way kube-scheduler reads it, so that files written for scheduler-plugins' NodeResourceTopologyMatch
load unchanged.

- Strict: an unknown key or an invalid value is an error naming the file and the key path
  (`profiles[0].pluginConfig[1].args.scoringStrategy.type: unknown strategy "Foo"; expected one of ...`).
- Defaults as upstream (kube-scheduler's v1 defaults, scheduler-plugins' `NodeResourceTopologyMatchArgs` defaults),
  except the names that make knuma a secondary scheduler: the default profile is `topology-aware-scheduler` (a profile
  without `schedulerName` gets it too) and the default leader-election lease is `topology-aware-scheduler`, so that
  knuma never competes with the cluster's `default-scheduler` for its lease.
- Profiles' `plugins` merge into kube-scheduler's default plugins exactly as kube-scheduler does (enabled/disabled per
  extension point, `*`, `multiPoint` expansion and overrides, weights); `build_profiles` builds them into framework
  profiles.
- Accepted but not run, with a warning naming them: plugins kube-scheduler has and knuma does not (the volume
  plugins, `ImageLocality`), args of such plugins, `enableProfiling`, `enableContentionProfiling`,
  `delayCacheUntilActive`, `clientConnection.contentType`. Rejected: `extenders` (they decide placement),
  `healthzBindAddress` / `metricsBindAddress` other than empty or port 0 (as upstream; knuma's endpoints are
  command-line flags), leader-election locks other than `leases`, plugins neither knuma nor kube-scheduler has
  (`Coscheduling`, ...).
"""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from knuma.duration import format_duration
from knuma.manifests import ManifestError, load_documents
from knuma.scheduler.cache.interface import NRTCache
from knuma.scheduler.cache.resyncdebug import ResyncDump
from knuma.scheduler.cache.select import nrt_cache
from knuma.scheduler.config.document import read_configuration
from knuma.scheduler.config.model import (
    DEFAULT_LEASE_NAME,
    DEFAULT_SCHEDULER_NAME,
    KIND,
    SUPPORTED_API_VERSIONS,
    ClientConnectionConfig,
    LeaderElectionConfig,
    NodeAffinityArgs,
    NumaArgs,
    ProfileConfig,
    SchedulerConfigError,
    SchedulerConfiguration,
    num_feasible_nodes_to_find,
)
from knuma.scheduler.config.own_profile import knuma_profile
from knuma.scheduler.framework.interface import FilterPlugin, PreEnqueuePlugin, Profile, ScorePlugin
from knuma.scheduler.framework.profiles import cache_filters
from knuma.scheduler.framework.registry import PLUGINS
from knuma.scheduler.plugins.default_preemption import DefaultPreemption
from knuma.scheduler.plugins.default_preemption_args import DEFAULT_PREEMPTION
from knuma.scheduler.plugins.device_state import DeviceState
from knuma.scheduler.plugins.dynamic_resources import NAME as DRA_PLUGIN
from knuma.scheduler.plugins.dynamic_resources import DynamicResources
from knuma.scheduler.plugins.dynamic_resources_args import DynamicResourcesArgs
from knuma.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from knuma.scheduler.plugins.node_affinity import NodeAffinity
from knuma.scheduler.plugins.node_name import NodeName
from knuma.scheduler.plugins.node_ports import NodePorts
from knuma.scheduler.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation
from knuma.scheduler.plugins.node_resources_fit import NodeResourcesFit
from knuma.scheduler.plugins.node_unschedulable import NodeUnschedulable
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.plugins.numa_args import NUMA_PLUGIN
from knuma.scheduler.plugins.pod_topology_spread import PodTopologySpread
from knuma.scheduler.plugins.scheduling_gates import SchedulingGates
from knuma.scheduler.plugins.taint_toleration import TaintToleration

__all__ = [
    "DEFAULT_LEASE_NAME",
    "DEFAULT_SCHEDULER_NAME",
    "SUPPORTED_API_VERSIONS",
    "ClientConnectionConfig",
    "LeaderElectionConfig",
    "NodeAffinityArgs",
    "NumaArgs",
    "ProfileConfig",
    "SchedulerConfigError",
    "SchedulerConfiguration",
    "build_nrt_cache",
    "build_profile",
    "build_profiles",
    "default_config",
    "describe_config",
    "load_config",
    "num_feasible_nodes_to_find",
    "parse_config",
]

log = logging.getLogger("knuma.scheduler.config.load")


def load_config(path: str | Path | None, *, log_warnings: bool = True) -> SchedulerConfiguration:
    """Read and validate a configuration file (None: the built-in default). Raises `SchedulerConfigError`; logs each
    warning (what is accepted but not applied) on the `knuma.scheduler.config.load` logger."""
    if path is None:
        return default_config()
    source = str(path)
    try:
        documents = load_documents(path)
    except ManifestError as err:
        raise SchedulerConfigError("", "", str(err)) from None
    if len(documents) != 1:
        raise SchedulerConfigError(source, "", f"expected one {KIND} document, found {len(documents)}")
    config = read_configuration(documents[0], source)
    if log_warnings:
        for warning in config.warnings:
            log.warning("%s", warning)
    return config


def parse_config(document: Mapping[str, Any], source: str = "") -> SchedulerConfiguration:
    """Validate a `KubeSchedulerConfiguration` given as a mapping; `source` names it in errors and warnings."""
    return read_configuration(document, source)


def default_config() -> SchedulerConfiguration:
    """No file: one profile `topology-aware-scheduler`, knuma's (`own_profile.knuma_profile`). A file is read as
    upstream reads it: without a `scoringStrategy` it gets upstream's LeastAllocated, and the default plugins it does
    not disable."""
    profile = knuma_profile(DEFAULT_SCHEDULER_NAME)
    return read_configuration({"apiVersion": SUPPORTED_API_VERSIONS[0], "kind": KIND, "profiles": [profile]})


# -- framework profiles ----------------------------------------------------------------------------------------

_FACTORIES: dict[str, Callable[[ProfileConfig], object]] = {
    "SchedulingGates": lambda _: SchedulingGates(),
    "NodeUnschedulable": lambda _: NodeUnschedulable(),
    "NodeName": lambda _: NodeName(),
    "TaintToleration": lambda _: TaintToleration(),
    "NodeAffinity": lambda p: NodeAffinity(p.node_affinity.added_required, p.node_affinity.added_preferred),
    "NodePorts": lambda _: NodePorts(),
    "InterPodAffinity": lambda p: InterPodAffinity(p.inter_pod_affinity),
    "PodTopologySpread": lambda p: PodTopologySpread(p.pod_topology_spread),
}
"""Plugins that run inside the framework. PrioritySort (the queue), DefaultBinder (binding) and the NUMA plugin's
Reserve (the cache's reservations) are the daemon's."""


def build_profile(profile: ProfileConfig, nrt: NRTCache | None = None, devices: DeviceState | None = None) -> Profile:
    """The framework profile: filters and weighted scorers in the configuration's order, one plugin instance per
    name (so the NUMA plugin's Filter and Score share it), and the PreEnqueue gates. `nrt`: the NRT cache the NUMA
    plugin reports to (`build_nrt_cache`); `devices`: the DRA state DynamicResources reads (the daemon's informers;
    an empty one offline)."""
    instances: dict[str, object] = {}
    device_state = devices if devices is not None else DeviceState()
    factories: dict[str, Callable[[ProfileConfig], object]] = {
        **_FACTORIES,
        NUMA_PLUGIN: lambda p: NodeResourceTopologyMatch(
            p.numa.scoring_strategy(), cache=nrt, extended=device_state.extended
        ),
        DRA_PLUGIN: lambda p: DynamicResources(device_state, args=p.dynamic_resources),
        "NodeResourcesFit": lambda p: NodeResourcesFit(p.node_resources_fit, device_state.extended, device_state),
        "NodeResourcesBalancedAllocation": lambda p: NodeResourcesBalancedAllocation(
            p.balanced_allocation, device_state.extended, device_state
        ),
    }

    def plugin(name: str) -> object:
        if name not in instances:
            instances[name] = factories[name](profile)
        return instances[name]

    filters = [p for n in profile.filters if n in factories and isinstance(p := plugin(n), FilterPlugin)]
    if profile.topology_aware:
        filters.extend(cache_filters(nrt, device_state.extended))
    scorers = [(p, w) for n, w in profile.scorers if n in factories and isinstance(p := plugin(n), ScorePlugin)]
    gates = [
        p
        for n in profile.plugins.get("preEnqueue", ())
        if n in factories and isinstance(p := plugin(n), PreEnqueuePlugin)
    ]
    numa, dra = instances.get(NUMA_PLUGIN), instances.get(DRA_PLUGIN)
    if isinstance(numa, NodeResourceTopologyMatch) and isinstance(dra, DynamicResources):
        dra.demand = numa.demand  # claim pods charged with KnumaBinPacking's device term, on its device shapes
    post_filter = tuple(
        DefaultPreemption(profile.default_preemption, numa_aware=profile.numa.numa_aware_preemption)
        for n in profile.plugins.get("postFilter", ())
        if n == DEFAULT_PREEMPTION
    )
    return Profile(profile.scheduler_name, tuple(filters), tuple(scorers), tuple(gates), post_filter)


def build_profiles(
    config: SchedulerConfiguration, nrt: NRTCache | None = None, devices: DeviceState | None = None
) -> dict[str, Profile]:
    """schedulerName → framework profile, for every profile of the configuration; the NUMA plugins report to `nrt`,
    the DynamicResources plugins read `devices`."""
    return {p.scheduler_name: build_profile(p, nrt, devices) for p in config.profiles}


def build_nrt_cache(config: SchedulerConfiguration, resync_debug: ResyncDump | None = None) -> NRTCache:
    """The daemon's one NRT cache, selected by the topology-aware profiles' NodeResourceTopologyMatch args as
    upstream selects it (`knuma.scheduler.cache.select`); pods bound under any other scheduler name are foreign.
    `resync_debug`: the resync debug dump (`PFP_STATUS_DUMP`), used by the overreserve cache."""
    return nrt_cache(
        config.nrt_cache_args, profile_names=config.scheduler_names, wait_for_sync=True, resync_debug=resync_debug
    )


# -- the human summary (`knuma scheduler --check-config`) ------------------------------------------------------


def describe_config(config: SchedulerConfiguration) -> str:
    """What the scheduler will do with this configuration: profiles, plugins per extension point with weights, what
    is not run, the NUMA plugin's args, leader election, client limits, and the warnings."""
    source = f"{config.source} ({config.api_version})" if config.source else "built-in default (no --config)"
    le = config.leader_election
    lines = [f"configuration: {source}"]
    if le.leader_elect:
        lines.append(
            f"leader election: Lease {le.resource_namespace}/{le.resource_name}, leaseDuration "
            f"{format_duration(le.lease_duration)}, renewDeadline {format_duration(le.renew_deadline)}, "
            f"retryPeriod {format_duration(le.retry_period)}"
        )
    else:
        lines.append("leader election: off")
    client = config.client_connection
    lines.append(
        f"client: kubeconfig {client.kubeconfig or '(from the command line, or in-cluster)'}; "
        f"qps {client.qps:g}, burst {client.burst}"
    )
    percentage = config.percentage_of_nodes_to_score
    lines.append(
        f"percentageOfNodesToScore {percentage or 'adaptive'}; parallelism {config.parallelism}; "
        f"pod backoff {config.pod_initial_backoff_seconds}s to {config.pod_max_backoff_seconds}s"
    )
    for profile in config.profiles:
        lines += ["", *_describe_profile(profile)]
    lines = [_wrap(line, "  ") if not line.startswith("  ") else line for line in lines]
    if config.warnings:
        lines += ["", "warnings:", *(_wrap(w, "    ", "  ") for w in config.warnings)]
    return "\n".join(lines) + "\n"


def _wrap(text: str, indent: str, first: str = "", width: int = 116) -> str:
    return textwrap.fill(text, width, initial_indent=first, subsequent_indent=indent, break_on_hyphens=False)


def _describe_profile(profile: ProfileConfig) -> list[str]:
    built = build_profile(profile)
    aware = "topology-aware" if profile.topology_aware else "not topology-aware: no NodeResourceTopologyMatch filter"
    lines = [f"profile {profile.scheduler_name} ({aware})"]
    scored = {p.name for p, _ in built.scorers}
    rows = {
        "preEnqueue": [p.name for p in built.pre_enqueue],
        "queueSort": list(profile.plugins.get("queueSort", ())),
        "filter": [p.name for p in built.filters],
        "score": [f"{p.name} (weight {w})" for p, w in built.scorers],
        "postFilter": [p.name for p in built.post_filter],
        "reserve": [n for n in profile.plugins.get("reserve", ()) if n in (NUMA_PLUGIN, DRA_PLUGIN)],
        "preBind": [n for n in profile.plugins.get("preBind", ()) if n == DRA_PLUGIN],
        "bind": [n for n in profile.plugins.get("bind", ()) if PLUGINS[n].runs],
    }
    for point, names in rows.items():
        lines.append(_row(point, ", ".join(names) or "-"))
    not_run = list(profile.not_run)
    not_run += [f"{n} (score)" for n, _ in profile.scorers if PLUGINS[n].runs and n not in scored]
    if not_run:
        lines.append(_row("not run", ", ".join(not_run)))
    if profile.percentage_of_nodes_to_score is not None:
        lines.append(f"  percentageOfNodesToScore {profile.percentage_of_nodes_to_score or 'adaptive'}")
    added = profile.node_affinity
    if added.added_required is not None or added.added_preferred is not None:
        required = len(added.added_required.terms) if added.added_required else 0
        preferred = len(added.added_preferred.terms) if added.added_preferred else 0
        lines.append(_row("NodeAffinity", f"addedAffinity with {required} required and {preferred} preferred term(s)"))
    fit = profile.node_resources_fit
    if not fit.is_default:
        strategy = fit.strategy
        text = f"scoringStrategy {strategy.type} ({', '.join(f'{n} {w}' for n, w in strategy.resources)})"
        if strategy.shape:
            text += " shape " + ", ".join(f"{u}%: {score}" for u, score in strategy.shape)
        for label, listed in (
            ("ignoredResources", fit.ignored_resources),
            ("ignoredResourceGroups", fit.ignored_resource_groups),
        ):
            if listed:
                text += f"; {label} {', '.join(sorted(listed))}"
        lines.append(_row("Fit args", text))
    balanced = profile.balanced_allocation
    if not balanced.is_default:
        lines.append(_row("Balanced args", "resources " + ", ".join(name for name, _ in balanced.resources)))
    dra = profile.dynamic_resources
    if DRA_PLUGIN in profile.plugins.get("preBind", ()) and dra != DynamicResourcesArgs():
        text = f"bindingTimeout {format_duration(dra.binding_timeout)}"
        if dra.filter_timeout is not None:
            text += f"; filterTimeout {format_duration(dra.filter_timeout)} (not applied)"
        lines.append(_row("DRA args", text))
    numa = profile.numa
    if not any(NUMA_PLUGIN in names for names in profile.plugins.values()):
        return lines
    weights = ", ".join(f"{name} {weight}" for name, weight in numa.resources)
    preemption = "preemption frees the victims' NUMA zones"
    if not numa.numa_aware_preemption:
        preemption = "preemption sees the NUMA zones as published"
    lines.append(
        _row(
            "NUMA args",
            f"scoringStrategy {numa.scoring_type.value} ({weights}); cacheResyncPeriodSeconds "
            f"{_unset(numa.cache_resync_period_seconds)} (NRT cache: {numa.cache_mode}); cache foreignPodsDetect "
            f"{numa.foreign_pods_detect}, resyncMethod {numa.resync_method}, informerMode {numa.informer_mode}, "
            f"resyncScope {numa.resync_scope}; preemptionMode {_unset(numa.preemption_mode)} ({preemption})",
        )
    )
    return lines


def _unset(value: object) -> str:
    return "unset" if value is None else str(value)


def _row(label: str, text: str, width: int = 116) -> str:
    """`  label:    text`, wrapped under the text's column."""
    head = f"  {label + ':':<14}"
    return _wrap(text, " " * len(head), head, width)
