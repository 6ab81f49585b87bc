"""The scheduler configuration file: upstream files accepted unchanged, kube-scheduler's plugin merging, strict
validation with messages that name the file and the key path, and the profiles built from it."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from knuma.scheduler.config.load import (
    SchedulerConfigError,
    SchedulerConfiguration,
    build_profiles,
    default_config,
    describe_config,
    load_config,
    num_feasible_nodes_to_find,
    parse_config,
)
from knuma.scheduler.framework.interface import Code, schedule_one
from knuma.scheduler.plugins.node_affinity import NodeAffinity
from knuma.scheduler.plugins.node_resources_fit import NodeResourcesFit
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.plugins.strategies import StrategyType
from tests.scheduler.objects import node, pod

CONFIGS = Path(__file__).parent / "configs"
EXAMPLE = Path(__file__).parents[2] / "examples" / "scheduler" / "config.yaml"
V1 = "kubescheduler.config.k8s.io/v1"
NRT = "NodeResourceTopologyMatch"
KNUMA_FILTERS = (
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
)


def doc(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "KubeSchedulerConfiguration", **fields}


def profile_doc(**fields: Any) -> dict[str, Any]:
    return doc(profiles=[{"schedulerName": "s", **fields}])


# -- upstream files, unchanged --------------------------------------------------------------------------------


def test_deployer_base_config() -> None:
    config = load_config(CONFIGS / "deployer-base.yaml")
    assert config.api_version == "kubescheduler.config.k8s.io/v1beta3"
    assert not config.leader_election.leader_elect
    (profile,) = config.profiles
    assert profile.scheduler_name == "topology-aware-scheduler"
    assert profile.filters[-1] == NRT and profile.topology_aware
    # multiPoint's defaults first, then the point's own plugins (kube-scheduler's expansion order)
    assert profile.plugins["reserve"] == ("VolumeBinding", "DynamicResources", NRT)
    assert profile.numa.scoring_type is StrategyType.LEAST_ALLOCATED
    assert profile.numa.resources == (("cpu", 1), ("memory", 1))
    assert profile.numa.upstream_cache == "passthrough"
    assert config.warnings == ()


def test_deployer_rendered_config() -> None:
    config = load_config(CONFIGS / "deployer-rendered.yaml")
    le = config.leader_election
    assert (le.leader_elect, le.resource_namespace, le.resource_name) == (True, "tas-scheduler", "nrtmatch-scheduler")
    assert (le.lease_duration, le.renew_deadline, le.retry_period, le.resource_lock) == (15.0, 10.0, 2.0, "leases")
    numa = config.profiles[0].numa
    assert numa.scoring_type is StrategyType.MOST_ALLOCATED
    assert numa.resources == (("cpu", 2), ("memory", 1))
    assert numa.scoring_strategy().weights == {"cpu": 2, "memory": 1}
    assert (numa.cache_resync_period_seconds, numa.upstream_cache) == (5, "overreserve")
    assert (numa.foreign_pods_detect, numa.resync_method, numa.informer_mode, numa.resync_scope) == (
        "OnlyExclusiveResources",
        "Autodetect",
        "Dedicated",
        "All",
    )


def test_operator_rendered_config_runs_what_knuma_has_and_warns_about_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = CONFIGS / "operator-rendered.yaml"
    with caplog.at_level(logging.WARNING, logger="knuma.scheduler.config.load"):
        config = load_config(path)
    (profile,) = config.profiles
    assert profile.scheduler_name == "topo-aware-scheduler"
    # filter '*' disabled, then an explicit list: that list, in its order
    assert profile.filters == (
        *KNUMA_FILTERS[:5],
        "KNIDebug",
        "NodeResourcesFit",
        NRT,
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
    )
    assert "DynamicResources" not in profile.not_run  # disabled in multiPoint
    built = build_profiles(config)["topo-aware-scheduler"]
    assert [p.name for p in built.filters] == [*KNUMA_FILTERS[:6], NRT, "PodTopologySpread", "InterPodAffinity"]
    warning = (
        f"{path}: profiles[0] (topo-aware-scheduler): knuma does not implement VolumeRestrictions, NodeVolumeLimits, "
        "VolumeBinding, VolumeZone, KNIDebug: accepted and not run"
    )
    assert config.warnings == (warning,)
    assert caplog.messages == [warning]


def test_scheduler_plugins_multipoint_config() -> None:
    (profile,) = load_config(CONFIGS / "scheduler-plugins-multipoint.yaml").profiles
    assert profile.topology_aware
    assert NRT not in profile.plugins["reserve"]  # reserve disabled for the NUMA plugin
    assert dict(profile.scorers)[NRT] == 1


def test_scheduler_plugins_cache_config() -> None:
    config = load_config(CONFIGS / "scheduler-plugins-cache.yaml")
    assert config.client_connection.kubeconfig == "/etc/kubernetes/scheduler.conf"
    profile = config.profiles[0]
    assert profile.numa.scoring_type is StrategyType.LEAST_NUMA_NODES
    assert profile.numa.cache_resync_period_seconds == 10
    assert dict(profile.scorers)[NRT] == 4
    numa = next(p for p, _ in build_profiles(config)["topo-aware-scheduler"].scorers if p.name == NRT)
    assert isinstance(numa, NodeResourceTopologyMatch)
    assert numa.scoring.type is StrategyType.LEAST_NUMA_NODES


def test_example_config_has_a_topology_aware_and_a_node_level_profile() -> None:
    config = load_config(EXAMPLE)
    assert config.scheduler_names == ["topology-aware-scheduler", "knuma-node-level"]
    profiles = build_profiles(config)
    assert [p.name for p in profiles["topology-aware-scheduler"].filters] == [*KNUMA_FILTERS, NRT]
    assert [p.name for p in profiles["knuma-node-level"].filters] == list(KNUMA_FILTERS)
    assert not config.profile("knuma-node-level").topology_aware
    assert {p.name: w for p, w in profiles["topology-aware-scheduler"].scorers}[NRT] == 2
    # the added affinity keeps every pod of the first profile off control-plane nodes
    affinity = next(p for p in profiles["topology-aware-scheduler"].filters if isinstance(p, NodeAffinity))
    control_plane = node("cp", {"node-role.kubernetes.io/control-plane": ""})
    worker = node("w")
    result = schedule_one(profiles["topology-aware-scheduler"], pod(), [control_plane, worker])
    assert result.selected == "w"
    assert result.nodes[0].filter.reason == "node(s) didn't match scheduler-enforced node affinity"
    assert affinity.added_required is not None
    assert schedule_one(profiles["knuma-node-level"], pod(), [control_plane]).selected == "cp"


# -- defaults and plugin merging ------------------------------------------------------------------------------


def test_no_file_is_one_topology_aware_profile_with_kube_scheduler_defaults() -> None:
    config = load_config(None)
    assert config == default_config()
    assert config.source == "" and config.warnings == ()
    (profile,) = config.profiles
    assert profile.scheduler_name == "topology-aware-scheduler"
    assert profile.filters == (*KNUMA_FILTERS[:6], *profile.filters[6:-1], NRT)
    assert profile.scorers[:3] == (("TaintToleration", 3), ("NodeAffinity", 2), ("NodeResourcesFit", 1))
    assert profile.scorers[-1] == (NRT, 1)
    assert profile.plugins["queueSort"] == ("PrioritySort",)
    assert profile.plugins["preEnqueue"][0] == "SchedulingGates"
    assert profile.plugins["bind"] == ("DefaultBinder",)
    assert profile.plugins["reserve"] == ("VolumeBinding", "DynamicResources", NRT)
    le = config.leader_election
    assert (le.leader_elect, le.resource_namespace, le.resource_name) == (
        True,
        "kube-system",
        "topology-aware-scheduler",
    )
    assert (config.parallelism, config.percentage_of_nodes_to_score) == (16, 0)
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (1, 10)
    assert (config.client_connection.qps, config.client_connection.burst) == (50.0, 100)
    built = build_profiles(config)["topology-aware-scheduler"]
    assert [p.name for p in built.filters] == [*KNUMA_FILTERS, NRT]
    assert [p.name for p in built.pre_enqueue] == ["SchedulingGates", "DynamicResources"]


def test_empty_profiles_and_profile_without_name_default_to_topology_aware_scheduler() -> None:
    (from_file,) = parse_config(doc(profiles=[])).profiles
    (built_in,) = default_config().profiles
    assert (from_file.scheduler_name, from_file.score_weights) == (built_in.scheduler_name, built_in.score_weights)
    assert {point: names for point, names in from_file.plugins.items() if point != "score"} == {
        point: names for point, names in built_in.plugins.items() if point != "score"
    }
    # A file is read as upstream reads it; without a file knuma scores with its own default strategy, without the
    # default score that works against it.
    assert from_file.numa.scoring_strategy().type is StrategyType.LEAST_ALLOCATED
    assert built_in.numa.scoring_strategy().type is StrategyType.KNUMA_BIN_PACKING
    assert [n for n in from_file.plugins["score"] if n not in built_in.plugins["score"]] == [
        "NodeResourcesBalancedAllocation"
    ]
    (profile,) = parse_config(doc(profiles=[{}])).profiles
    assert profile.scheduler_name == "topology-aware-scheduler"
    assert not profile.topology_aware  # upstream semantics: a profile only has the NUMA plugin if it enables it


def plugins_of(plugins: dict[str, Any]) -> Any:
    return parse_config(profile_doc(plugins=plugins)).profiles[0]


def test_disabling_defaults_per_extension_point_and_with_star() -> None:
    profile = plugins_of({"filter": {"disabled": [{"name": "TaintToleration"}, {"name": "NodePorts"}]}})
    assert "TaintToleration" not in profile.filters and "NodePorts" not in profile.filters
    assert ("TaintToleration", 3) in profile.scorers  # still scores
    profile = plugins_of({"score": {"disabled": [{"name": "*"}]}, "filter": {"enabled": [{"name": NRT}]}})
    assert profile.scorers == ()
    assert profile.filters[-1] == NRT
    only = [{"name": n} for n in ("PrioritySort", "NodeName", "DefaultBinder")]
    profile = plugins_of({"multiPoint": {"disabled": [{"name": "*"}], "enabled": only}})
    assert profile.filters == ("NodeName",)
    assert profile.scorers == ()
    assert profile.plugins["preEnqueue"] == ()


def test_multi_point_plugins_can_be_overridden_at_one_extension_point() -> None:
    # enabled at score too: ordered first there, with the score weight
    profile = plugins_of(
        {"multiPoint": {"enabled": [{"name": NRT, "weight": 5}]}, "score": {"enabled": [{"name": NRT, "weight": 7}]}}
    )
    assert profile.scorers[0] == (NRT, 7)
    assert profile.filters[-1] == NRT
    # re-enabling a default in multiPoint replaces it in place with the new weight
    profile = plugins_of({"multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 9}]}})
    assert profile.scorers[0] == ("TaintToleration", 9)
    assert profile.filters.index("TaintToleration") == 2
    # disabled at one point only
    profile = plugins_of({"multiPoint": {"enabled": [{"name": NRT}]}, "score": {"disabled": [{"name": NRT}]}})
    assert NRT in profile.filters and NRT not in dict(profile.scorers)


def test_topology_unaware_profile_next_to_a_topology_aware_one() -> None:
    config = parse_config(
        doc(
            profiles=[
                {"schedulerName": "topology-aware-scheduler", "plugins": {"multiPoint": {"enabled": [{"name": NRT}]}}},
                {"schedulerName": "default-scheduler", "plugins": {"filter": {"disabled": [{"name": NRT}]}}},
            ]
        )
    )
    profiles = build_profiles(config)
    assert list(profiles) == ["topology-aware-scheduler", "default-scheduler"]
    assert NRT in [p.name for p in profiles["topology-aware-scheduler"].filters]
    assert NRT not in [p.name for p in profiles["default-scheduler"].filters]
    assert NRT not in [p.name for p, _ in profiles["default-scheduler"].scorers]


def test_warnings_for_accepted_but_not_applied_settings() -> None:
    config = parse_config(
        doc(
            enableProfiling=True,
            delayCacheUntilActive=True,
            clientConnection={"contentType": "application/vnd.kubernetes.protobuf"},
            profiles=[
                {
                    "schedulerName": "s",
                    "plugins": {
                        "multiPoint": {"enabled": [{"name": NRT}, {"name": "VolumeZone"}]},
                        "filter": {"disabled": [{"name": "NoSuchPlugin"}]},
                    },
                    "pluginConfig": [
                        {"name": NRT, "args": {"preemptionMode": "Enabled"}},
                        {"name": "NodeResourcesFit", "args": {"ignoredResources": ["example.com/foo"]}},
                        {"name": "PodTopologySpread", "args": {"defaultingType": "List"}},
                        {"name": "TaintToleration", "args": {"something": 1}},
                        {"name": "NodeName", "args": {"kind": "NodeNameArgs"}},
                    ],
                }
            ],
        ),
        "conf.yaml",
    )
    assert config.warnings == (
        "conf.yaml: enableProfiling: ignored: knuma serves no profiling endpoints",
        "conf.yaml: delayCacheUntilActive: ignored: knuma fills its caches before it takes the lease",
        'conf.yaml: clientConnection.contentType: ignored ("application/vnd.kubernetes.protobuf"): knuma talks JSON '
        "to the API server",
        'conf.yaml: profiles[0].plugins.filter.disabled[0].name: disabling unknown plugin "NoSuchPlugin" has no effect',
        "conf.yaml: profiles[0].pluginConfig[3].args: args of TaintToleration are ignored: it takes no arguments",
        "conf.yaml: profiles[0] (s): knuma does not implement VolumeZone: accepted and not run",
    )


# -- rejected, with the exact message -------------------------------------------------------------------------


ZONE_SPREAD = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}


def with_profile(**fields: Any) -> dict[str, Any]:
    return profile_doc(**fields)


def nrt_args(**args: Any) -> dict[str, Any]:
    return profile_doc(
        plugins={"multiPoint": {"enabled": [{"name": NRT}]}},
        pluginConfig=[{"name": "NodeAffinity", "args": {}}, {"name": NRT, "args": args}],
    )


ARGS = "profiles[0].pluginConfig[1].args"
STRATEGIES = "MostAllocated, LeastAllocated, BalancedAllocation, LeastNUMANodes, KnumaBinPacking"

REJECTED: list[tuple[dict[str, Any], str]] = [
    (
        nrt_args(scoringStrategy={"type": "Foo"}),
        f'{ARGS}.scoringStrategy.type: unknown strategy "Foo"; expected one of {STRATEGIES}',
    ),
    (
        nrt_args(scoringStrategy={"resources": [{"name": "cpu", "weight": 1}]}),
        f"{ARGS}.scoringStrategy.type: required when scoringStrategy is set; expected one of {STRATEGIES}",
    ),
    (
        nrt_args(scoringStrategy={"type": "LeastAllocated", "resources": [{"weight": 1}]}),
        f"{ARGS}.scoringStrategy.resources[0].name: required: a resource name such as cpu or memory",
    ),
    (
        nrt_args(scoringStrategy={"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": "2"}]}),
        f'{ARGS}.scoringStrategy.resources[0].weight: must be an integer, got "2"',
    ),
    (nrt_args(cacheResyncPeriodSeconds="5s"), f'{ARGS}.cacheResyncPeriodSeconds: must be an integer, got "5s"'),
    (
        nrt_args(cache={"foreignPodsDetect": "Some"}),
        f'{ARGS}.cache.foreignPodsDetect: unknown value "Some"; expected one of None, All, OnlyExclusiveResources',
    ),
    (
        nrt_args(cache={"informerMode": "shared"}),
        f'{ARGS}.cache.informerMode: unknown value "shared"; expected one of Shared, Dedicated',
    ),
    (
        nrt_args(cache={"resyncMethod": "Never"}),
        f'{ARGS}.cache.resyncMethod: unknown value "Never"; expected one of Autodetect, All, OnlyExclusiveResources',
    ),
    (
        nrt_args(cache={"resyncScope": "Some"}),
        f'{ARGS}.cache.resyncScope: unknown value "Some"; expected one of All, OnlyResources',
    ),
    (
        nrt_args(cache={"resyncPeriod": 5}),
        f"{ARGS}.cache.resyncPeriod: unknown field; expected one of foreignPodsDetect, resyncMethod, informerMode, "
        "resyncScope",
    ),
    (
        nrt_args(scoringstrategy={"type": "MostAllocated"}),
        f"{ARGS}.scoringstrategy: unknown field; expected one of apiVersion, kind, scoringStrategy, "
        "cacheResyncPeriodSeconds, discardReservedNodes, cache, preemptionMode",
    ),
    (nrt_args(preemptionMode="On"), f'{ARGS}.preemptionMode: unknown value "On"; expected one of Enabled, Disabled'),
    (nrt_args(discardReservedNodes="yes"), f'{ARGS}.discardReservedNodes: must be true or false, got "yes"'),
    (
        nrt_args(kind="NodeResourcesFitArgs"),
        f'{ARGS}.kind: must be NodeResourceTopologyMatchArgs for plugin {NRT}, got "NodeResourcesFitArgs"',
    ),
    (
        nrt_args(apiVersion="kubescheduler.config.k8s.io/v1beta2"),
        f'{ARGS}.apiVersion: unknown apiVersion "kubescheduler.config.k8s.io/v1beta2"; expected one of '
        "kubescheduler.config.k8s.io/v1, kubescheduler.config.k8s.io/v1beta3",
    ),
    (
        doc(apiVersion="kubescheduler.config.k8s.io/v1beta2"),
        'apiVersion: unknown apiVersion "kubescheduler.config.k8s.io/v1beta2"; expected one of '
        "kubescheduler.config.k8s.io/v1, kubescheduler.config.k8s.io/v1beta3",
    ),
    ({"kind": "KubeSchedulerConfiguration"}, "apiVersion: required; use kubescheduler.config.k8s.io/v1"),
    (doc(kind="KubeletConfiguration"), 'kind: must be KubeSchedulerConfiguration, got "KubeletConfiguration"'),
    (
        doc(percentageOfNodes=50),
        "percentageOfNodes: unknown field; expected one of apiVersion, kind, parallelism, leaderElection, "
        "clientConnection, healthzBindAddress, metricsBindAddress, enableProfiling, enableContentionProfiling, "
        "percentageOfNodesToScore, podInitialBackoffSeconds, podMaxBackoffSeconds, profiles, extenders, "
        "delayCacheUntilActive",
    ),
    (doc(percentageOfNodesToScore=101), "percentageOfNodesToScore: not in valid range [0-100], got 101"),
    (doc(percentageOfNodesToScore="50%"), 'percentageOfNodesToScore: must be an integer, got "50%"'),
    (doc(parallelism=0), "parallelism: must be greater than 0, got 0"),
    (doc(podInitialBackoffSeconds=0), "podInitialBackoffSeconds: must be greater than 0, got 0"),
    (
        doc(podInitialBackoffSeconds=20),
        "podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds (20)",
    ),
    (
        doc(healthzBindAddress="0.0.0.0:10259"),
        'healthzBindAddress: must be empty or with an explicit 0 port, got "0.0.0.0:10259"; use --metrics-port',
    ),
    (
        doc(extenders=[{"urlPrefix": "http://127.0.0.1:8888"}]),
        "extenders: knuma does not call scheduler extenders; remove them or use kube-scheduler",
    ),
    (
        doc(leaderElection={"leaseDuration": 15}),
        'leaderElection.leaseDuration: must be a duration string such as "15s" or "1m30s", got 15',
    ),
    (
        doc(leaderElection={"renewDeadline": "10 s"}),
        "leaderElection.renewDeadline: invalid duration '10 s': expected a number with a unit (ns, us, ms, s, m, h), "
        "such as 15s or 1m30s",
    ),
    (
        doc(leaderElection={"leaseDuration": "10s", "renewDeadline": "10s"}),
        "leaderElection.leaseDuration: must be greater than renewDeadline",
    ),
    (
        doc(leaderElection={"retryPeriod": "9s"}),
        "leaderElection.renewDeadline: must be greater than retryPeriod*1.2 (client-go's JitterFactor)",
    ),
    (doc(leaderElection={"retryPeriod": "0s"}), "leaderElection.retryPeriod: must be greater than zero"),
    (
        doc(leaderElection={"resourceLock": "endpointsleases"}),
        'leaderElection.resourceLock: unsupported lock "endpointsleases"; knuma uses coordination.k8s.io/v1 leases',
    ),
    (doc(leaderElection={"resourceName": ""}), "leaderElection.resourceName: required when leaderElect is true"),
    (doc(leaderElection={"leaderElect": "true"}), 'leaderElection.leaderElect: must be true or false, got "true"'),
    (doc(clientConnection={"burst": -1}), "clientConnection.burst: must be non-negative, got -1"),
    (doc(profiles={"schedulerName": "s"}), "profiles: must be a list, got dict"),
    (
        doc(profiles=[{"schedulerName": "a"}, {"schedulerName": "a"}]),
        'profiles[1].schedulerName: duplicate value "a": each profile needs its own schedulerName',
    ),
    (
        with_profile(plugin={}),
        "profiles[0].plugin: unknown field; expected one of schedulerName, plugins, pluginConfig, "
        "percentageOfNodesToScore",
    ),
    (
        with_profile(plugins={"filter": {"enabled": [{"name": "Coscheduling"}]}}),
        'profiles[0].plugins.filter.enabled[0].name: plugin "Coscheduling" is not available in knuma (it runs '
        "SchedulingGates, PrioritySort, NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts, "
        f"NodeResourcesFit, {NRT}, DefaultBinder, PodTopologySpread, InterPodAffinity, DynamicResources, "
        "DefaultPreemption, NodeResourcesBalancedAllocation)",
    ),
    (
        with_profile(plugins={"filter": {"enabled": [{"name": "PrioritySort"}]}}),
        'profiles[0].plugins.filter.enabled[0].name: plugin "PrioritySort" does not extend filter (it has: queueSort)',
    ),
    (
        with_profile(plugins={"score": {"enabled": [{"name": NRT}, {"name": NRT}]}}),
        f'profiles[0].plugins.score.enabled[1].name: plugin "{NRT}" is enabled twice at score',
    ),
    (
        with_profile(plugins={"multiPoint": {"enabled": [{"name": NRT}, {"name": NRT}]}}),
        f'profiles[0].plugins.multiPoint.enabled[1].name: plugin "{NRT}" is enabled twice in multiPoint',
    ),
    (
        with_profile(plugins={"score": {"enabled": [{"name": NRT, "weight": -1}]}}),
        "profiles[0].plugins.score.enabled[0].weight: must not be negative, got -1",
    ),
    (
        with_profile(plugins={"filter": {"enabled": [{"nme": NRT}]}}),
        "profiles[0].plugins.filter.enabled[0].nme: unknown field; expected one of name, weight",
    ),
    (
        with_profile(plugins={"filters": {}}),
        "profiles[0].plugins.filters: unknown field; expected one of preEnqueue, queueSort, preFilter, filter, "
        "postFilter, preScore, score, reserve, permit, preBind, bind, postBind, multiPoint",
    ),
    (
        with_profile(plugins={"queueSort": {"disabled": [{"name": "*"}]}}),
        "profiles[0].plugins.queueSort: exactly one queue sort plugin is required: PrioritySort",
    ),
    (
        with_profile(plugins={"bind": {"disabled": [{"name": "DefaultBinder"}]}}),
        "profiles[0].plugins.bind: at least one bind plugin is required: DefaultBinder",
    ),
    (
        with_profile(pluginConfig=[{"name": NRT}, {"name": NRT, "args": {}}]),
        f'profiles[0].pluginConfig[1].name: duplicate entry for "{NRT}" (first at profiles[0].pluginConfig[0])',
    ),
    (
        with_profile(pluginConfig=[{"name": "NodeResourceTopology", "args": {}}]),
        'profiles[0].pluginConfig[0].name: plugin "NodeResourceTopology" is not available in knuma (it runs '
        "SchedulingGates, PrioritySort, NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts, "
        f"NodeResourcesFit, {NRT}, DefaultBinder, PodTopologySpread, InterPodAffinity, DynamicResources, "
        "DefaultPreemption, NodeResourcesBalancedAllocation)",
    ),
    (
        with_profile(
            pluginConfig=[
                {"name": "NodeResourcesBalancedAllocation", "args": {"resources": [{"name": "cpu"}, {"name": "cpu"}]}}
            ]
        ),
        'profiles[0].pluginConfig[0].args.resources[1].name: Duplicate value: "cpu"',
    ),
    (
        with_profile(
            pluginConfig=[
                {"name": "NodeResourcesBalancedAllocation", "args": {"resources": [{"name": "cpu", "weight": 2}]}}
            ]
        ),
        "profiles[0].pluginConfig[0].args.resources[0].weight: Invalid value: 2: must be 1",
    ),
    (
        with_profile(pluginConfig=[{"name": NRT, "args": "x"}]),
        "profiles[0].pluginConfig[0].args: must be a mapping, got str",
    ),
    (
        with_profile(
            pluginConfig=[
                {
                    "name": "NodeAffinity",
                    "args": {
                        "addedAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Equals"}]}]
                            }
                        }
                    },
                }
            ]
        ),
        "profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        '.nodeSelectorTerms[0].matchExpressions[0].operator: unsupported value "Equals"; expected one of In, NotIn, '
        "Exists, DoesNotExist, Gt, Lt",
    ),
    (
        with_profile(
            pluginConfig=[
                {
                    "name": "NodeAffinity",
                    "args": {
                        "addedAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Gt"}]}}
                            ]
                        }
                    },
                }
            ]
        ),
        "profiles[0].pluginConfig[0].args.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
        ".preference.matchExpressions[0].values: for 'Gt', 'Lt' operators, exactly one value is required",
    ),
    (
        with_profile(pluginConfig=[{"name": "NodeResourcesFit", "args": {"ignoredResource": []}}]),
        "profiles[0].pluginConfig[0].args.ignoredResource: unknown field; expected one of apiVersion, kind, "
        "ignoredResources, ignoredResourceGroups, scoringStrategy",
    ),
    (
        with_profile(pluginConfig=[{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 101}}]),
        "profiles[0].pluginConfig[0].args.hardPodAffinityWeight: not in valid range [0, 100], got 101",
    ),
    (
        with_profile(pluginConfig=[{"name": "InterPodAffinity", "args": {"ignorePreferredTermsOfExistingPods": 1}}]),
        "profiles[0].pluginConfig[0].args.ignorePreferredTermsOfExistingPods: must be true or false, got 1",
    ),
    (
        with_profile(pluginConfig=[{"name": "PodTopologySpread", "args": {"defaultingType": "Auto"}}]),
        "profiles[0].pluginConfig[0].args.defaultingType: unknown value 'Auto'; expected one of System, List",
    ),
    (
        with_profile(pluginConfig=[{"name": "PodTopologySpread", "args": {"defaultConstraints": [ZONE_SPREAD]}}]),
        'profiles[0].pluginConfig[0].args.defaultingType: must be "List" when defaultConstraints are given',
    ),
    (
        with_profile(
            pluginConfig=[
                {
                    "name": "PodTopologySpread",
                    "args": {"defaultingType": "List", "defaultConstraints": [{**ZONE_SPREAD, "maxSkew": 0}]},
                }
            ]
        ),
        "profiles[0].pluginConfig[0].args.defaultConstraints[0].maxSkew: must be greater than zero, got 0",
    ),
    (
        with_profile(
            pluginConfig=[
                {
                    "name": "PodTopologySpread",
                    "args": {"defaultingType": "List", "defaultConstraints": [ZONE_SPREAD, ZONE_SPREAD]},
                }
            ]
        ),
        "profiles[0].pluginConfig[0].args.defaultConstraints[1]: duplicate topologyKey and whenUnsatisfiable "
        "(first at profiles[0].pluginConfig[0].args.defaultConstraints[0])",
    ),
]


@pytest.mark.parametrize(("document", "message"), REJECTED, ids=[m.split(":")[0] for _, m in REJECTED])
def test_rejected_with_the_key_path_and_the_file(document: dict[str, Any], message: str) -> None:
    with pytest.raises(SchedulerConfigError) as raised:
        parse_config(copy.deepcopy(document), "sched.yaml")
    assert str(raised.value) == f"sched.yaml: {message}"
    assert raised.value.source == "sched.yaml"


def test_profile_percentage_is_v1_only() -> None:
    v1 = parse_config(profile_doc(percentageOfNodesToScore=30))
    assert v1.profiles[0].percentage_of_nodes_to_score == 30
    beta = profile_doc(percentageOfNodesToScore=30) | {"apiVersion": "kubescheduler.config.k8s.io/v1beta3"}
    with pytest.raises(SchedulerConfigError, match=r"profiles\[0\].percentageOfNodesToScore: unknown field"):
        parse_config(beta)


def test_file_level_errors(tmp_path: Path) -> None:
    with pytest.raises(SchedulerConfigError, match=r"missing.yaml: no such file"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: [\n")
    with pytest.raises(SchedulerConfigError, match=r"bad.yaml: malformed YAML at line 2"):
        load_config(bad)
    two = tmp_path / "two.yaml"
    two.write_text("apiVersion: a\n---\napiVersion: b\n")
    with pytest.raises(SchedulerConfigError) as raised:
        load_config(two)
    assert str(raised.value) == f"{two}: expected one KubeSchedulerConfiguration document, found 2"
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text(f"apiVersion: {V1}\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: s\n  foo: 1\n")
    with pytest.raises(SchedulerConfigError) as raised:
        load_config(unknown)
    assert str(raised.value).startswith(f"{unknown}: profiles[0].foo: unknown field")


def test_accepted_values_round_out_the_configuration() -> None:
    config = parse_config(
        doc(
            parallelism=4,
            percentageOfNodesToScore=20,
            podInitialBackoffSeconds=2,
            podMaxBackoffSeconds=30,
            healthzBindAddress="0.0.0.0:0",
            metricsBindAddress="",
            enableProfiling=False,
            extenders=[],
            leaderElection={
                "leaderElect": True,
                "leaseDuration": "1m",
                "renewDeadline": "45s",
                "retryPeriod": "1.5s",
                "resourceLock": "leases",
                "resourceName": "knuma",
                "resourceNamespace": "knuma-system",
            },
            clientConnection={"kubeconfig": "/k", "qps": 20.5, "burst": 40, "contentType": "application/json"},
        )
    )
    assert config.warnings == ()
    assert (config.parallelism, config.percentage_of_nodes_to_score) == (4, 20)
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (2, 30)
    le = config.leader_election
    assert (le.lease_duration, le.renew_deadline, le.retry_period) == (60.0, 45.0, 1.5)
    assert (le.resource_name, le.resource_namespace) == ("knuma", "knuma-system")
    assert (config.client_connection.kubeconfig, config.client_connection.qps, config.client_connection.burst) == (
        "/k",
        20.5,
        40,
    )
    # with leader election off, the other fields are not checked (as upstream)
    assert not parse_config(doc(leaderElection={"leaderElect": False, "resourceName": ""})).leader_election.leader_elect


# -- helpers for the daemon ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [(0, 50, 50), (0, 100, 100), (0, 1000, 420), (0, 5000, 500), (0, 6000, 300), (30, 1000, 300), (5, 1000, 100)],
)
def test_num_feasible_nodes_to_find(percentage: int, nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def test_nodes_to_find_uses_the_profile_percentage_first() -> None:
    config = parse_config(
        doc(
            percentageOfNodesToScore=10,
            profiles=[{"schedulerName": "a"}, {"schedulerName": "b", "percentageOfNodesToScore": 50}],
        )
    )
    assert config.nodes_to_find("a", 2000) == 200
    assert config.nodes_to_find("b", 2000) == 1000


def test_built_profile_uses_the_numa_args_and_filters_like_upstream_numa_plugin() -> None:
    config = parse_config(nrt_args(scoringStrategy={"type": "BalancedAllocation"}))
    profile = build_profiles(config)["s"]
    numa = next(p for p in profile.filters if isinstance(p, NodeResourceTopologyMatch))
    assert numa.scoring.type is StrategyType.BALANCED_ALLOCATION
    assert any(p is numa for p, _ in profile.scorers)  # one instance for Filter and Score


def test_node_resources_fit_args_reach_the_plugin_and_the_summary() -> None:
    fit_args = {
        "ignoredResourceGroups": ["example.com"],
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "cpu", "weight": 2}],
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]},
        },
    }
    config = parse_config(
        doc(profiles=[{"schedulerName": "s", "pluginConfig": [{"name": "NodeResourcesFit", "args": fit_args}]}])
    )
    fit = next(p for p in build_profiles(config)["s"].filters if isinstance(p, NodeResourcesFit))
    assert fit.args.ignored_resource_groups == {"example.com"} and not fit.default_scoring
    assert config.warnings == ()
    assert (
        "  Fit args:     scoringStrategy RequestedToCapacityRatio (cpu 2) shape 0%: 10, 100%: 0; "
        "ignoredResourceGroups\n                example.com\n"
    ) in describe_config(config)


def test_describe_config_summarises_profiles_plugins_and_args() -> None:
    text = describe_config(load_config(CONFIGS / "operator-rendered.yaml", log_warnings=False))
    assert "leader election: Lease openshift-numaresources/numa-scheduler-leader, leaseDuration 15s" in text
    assert "profile topo-aware-scheduler (topology-aware)" in text
    assert (
        "  filter:       NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit,\n"
        f"                {NRT}, PodTopologySpread, InterPodAffinity\n"
    ) in text
    assert "TaintToleration (weight 3), NodeAffinity (weight 2)" in text
    assert "NUMA args:    scoringStrategy LeastAllocated (cpu 1, memory 1); cacheResyncPeriodSeconds 5" in text
    assert "KNIDebug" in text.split("not run:")[1].split("NUMA args")[0]
    assert text.split("warnings:\n")[1].startswith(f"  {CONFIGS / 'operator-rendered.yaml'}: profiles[0]")
    assert max(len(line) for line in text.splitlines()) <= 116
    unaware = describe_config(load_config(EXAMPLE))
    assert "profile knuma-node-level (not topology-aware: no NodeResourceTopologyMatch filter)" in unaware


def test_configuration_is_immutable() -> None:
    config: SchedulerConfiguration = default_config()
    setter: Callable[[], None] = lambda: setattr(config, "parallelism", 1)  # noqa: E731
    with pytest.raises(AttributeError):
        setter()


def test_unknown_plugin_status_codes_in_a_built_profile() -> None:
    profile = build_profiles(default_config())["topology-aware-scheduler"]
    result = schedule_one(profile, pod(nodeSelector={"zone": "x"}), [node("n")])
    assert result.nodes[0].filter.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert result.failure_summary() == "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."


def test_inter_pod_affinity_and_topology_spread_args_reach_the_plugins() -> None:
    from knuma.scheduler.plugins.inter_pod_affinity import InterPodAffinity
    from knuma.scheduler.plugins.pod_topology_spread import PodTopologySpread

    config = parse_config(
        with_profile(
            pluginConfig=[
                {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 5}},
                {"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": [ZONE_SPREAD]}},
            ]
        ),
        "conf.yaml",
    )
    built = build_profiles(config)["s"]
    affinity = next(p for p in built.filters if isinstance(p, InterPodAffinity))
    spread = next(p for p in built.filters if isinstance(p, PodTopologySpread))
    assert affinity.args.hard_pod_affinity_weight == 5
    assert spread.args.defaulting_type == "List" and spread.args.default_constraints[0].max_skew == 1
    weights = {p.name: w for p, w in built.scorers}
    assert weights["InterPodAffinity"] == 2 and weights["PodTopologySpread"] == 2  # upstream's default weights
    assert config.warnings == (
        "conf.yaml: profiles[0].pluginConfig[1].args.defaultConstraints: not applied: default constraints apply to "
        "pods a Service, ReplicationController, ReplicaSet or StatefulSet selects, and knuma does not watch those",
    )


def dra_args(**args: Any) -> dict[str, Any]:
    return profile_doc(pluginConfig=[{"name": "DynamicResources", "args": args}])


def test_dynamic_resources_args_set_the_binding_timeout_and_are_validated() -> None:
    assert parse_config(doc()).profiles[0].dynamic_resources.binding_timeout == 600
    config = parse_config(dra_args(bindingTimeout="2m"))
    assert config.profiles[0].dynamic_resources.binding_timeout == 120 and config.warnings == ()
    where = "profiles[0].pluginConfig[0].args"
    for args, message in (
        ({"bindingTimeout": "500ms"}, f'{where}.bindingTimeout: must be at least 1 second, got "500ms"'),
        ({"filterTimeout": "-1s"}, f'{where}.filterTimeout: must be zero or positive, got "-1s"'),
        ({"bindingTimout": "1m"}, f"{where}.bindingTimout: unknown field; expected one of"),
    ):
        with pytest.raises(SchedulerConfigError) as raised:
            parse_config(dra_args(**args))
        assert message in str(raised.value)
    warned = parse_config(dra_args(filterTimeout="5s"))
    assert len(warned.warnings) == 1 and "filterTimeout" in warned.warnings[0] and "not applied" in warned.warnings[0]


def test_check_config_shows_the_dynamic_resources_args() -> None:
    described = describe_config(parse_config(dra_args(bindingTimeout="5m", filterTimeout="10s")))
    assert "  DRA args:     bindingTimeout 5m0s; filterTimeout 10s (not applied)" in described.splitlines()
    assert "DRA args" not in describe_config(parse_config(dra_args()))
