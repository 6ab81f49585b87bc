"""Reading a `KubeSchedulerConfiguration` document the way kube-scheduler does: strict keys and types, upstream's
validation and defaults, and the decisions on what knuma accepts without applying (see
`knuma.scheduler.config.load`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NoReturn

from knuma.api.names import dns1123_label_errors, dns1123_subdomain_errors
from knuma.api.nodeaffinity import parse_node_selector, parse_preferred_terms
from knuma.duration import DurationError, parse_duration
from knuma.scheduler.config.model import (
    DEFAULT_SCHEDULER_NAME,
    KIND,
    SUPPORTED_API_VERSIONS,
    ClientConnectionConfig,
    LeaderElectionConfig,
    NodeAffinityArgs,
    ProfileConfig,
    SchedulerConfigError,
    SchedulerConfiguration,
)
from knuma.scheduler.framework.pluginsets import PluginRef, PluginSet, PluginSetError, effective_plugins
from knuma.scheduler.framework.registry import EXTENSION_POINTS, PLUGINS
from knuma.scheduler.plugins.default_preemption_args import (
    DEFAULT_PREEMPTION,
    DefaultPreemptionArgs,
    parse_default_preemption_args,
)
from knuma.scheduler.plugins.dynamic_resources_args import (
    DYNAMIC_RESOURCES,
    DynamicResourcesArgs,
    parse_dynamic_resources_args,
)
from knuma.scheduler.plugins.inter_pod_affinity_args import (
    INTER_POD_AFFINITY,
    InterPodAffinityArgs,
    parse_inter_pod_affinity_args,
)
from knuma.scheduler.plugins.node_resources_balanced_allocation_args import (
    NODE_RESOURCES_BALANCED_ALLOCATION,
    NodeResourcesBalancedAllocationArgs,
    parse_node_resources_balanced_allocation_args,
)
from knuma.scheduler.plugins.node_resources_fit_args import (
    NODE_RESOURCES_FIT,
    NodeResourcesFitArgs,
    parse_node_resources_fit_args,
)
from knuma.scheduler.plugins.numa_args import NUMA_PLUGIN, NumaArgs, parse_numa_args
from knuma.scheduler.plugins.pod_topology_spread_args import (
    POD_TOPOLOGY_SPREAD,
    PodTopologySpreadArgs,
    parse_pod_topology_spread_args,
)

__all__ = ["DEFAULT_PROFILES", "read_configuration"]

DEFAULT_PROFILES: tuple[Mapping[str, Any], ...] = (
    {"schedulerName": DEFAULT_SCHEDULER_NAME, "plugins": {"multiPoint": {"enabled": [{"name": NUMA_PLUGIN}]}}},
)
"""Without profiles: kube-scheduler's default plugins plus NodeResourceTopologyMatch at every extension point it has
(filter, score, reserve), as the upstream deployer renders the profile."""

_TOP_FIELDS = (
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "healthzBindAddress",
    "metricsBindAddress",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
)


def read_configuration(document: Mapping[str, Any], source: str = "") -> SchedulerConfiguration:
    """Validate a `KubeSchedulerConfiguration` given as a mapping; `source` names it in errors and warnings."""
    return _Reader(source).configuration(document)


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _q(value: Any) -> str:
    """A value as Go's validation messages quote it."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source
        self.warnings: list[str] = []

    def fail(self, path: str, problem: str) -> NoReturn:
        raise SchedulerConfigError(self.source, path, problem)

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(
            ": ".join(part for part in (self.source or "default configuration", path, message) if part)
        )

    # -- typed fields ----------------------------------------------------------------------------------------

    def mapping(self, value: Any, path: str, fields: Iterable[str]) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.fail(path, f"must be a mapping, got {type(value).__name__}")
        known = tuple(fields)
        for key in value:
            if key not in known:
                self.fail(_join(path, str(key)), f"unknown field; expected one of {', '.join(known)}")
        return value

    def items(self, value: Any, path: str) -> Sequence[Any]:
        if value is None:
            return ()
        if not isinstance(value, Sequence) or isinstance(value, str):
            self.fail(path, f"must be a list, got {type(value).__name__}")
        return value

    def string(self, value: Any, path: str, default: str = "") -> str:
        if value is None:
            return default
        if not isinstance(value, str):
            self.fail(path, f"must be a string, got {_q(value)}")
        return value

    def boolean(self, value: Any, path: str, default: bool) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            self.fail(path, f"must be true or false, got {_q(value)}")
        return value

    def integer(self, value: Any, path: str, default: int) -> int:
        if value is None:
            return default
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(path, f"must be an integer, got {_q(value)}")
        return value

    def number(self, value: Any, path: str, default: float) -> float:
        if value is None:
            return default
        if not isinstance(value, int | float) or isinstance(value, bool):
            self.fail(path, f"must be a number, got {_q(value)}")
        return float(value)

    def duration(self, value: Any, path: str, default: float) -> float:
        if value is None:
            return default
        if not isinstance(value, str):
            self.fail(path, f'must be a duration string such as "15s" or "1m30s", got {_q(value)}')
        try:
            return parse_duration(value)
        except DurationError as err:
            self.fail(path, str(err))

    def enum(self, value: Any, path: str, choices: Sequence[str], default: str, what: str = "value") -> str:
        if value is None:
            return default
        if value not in choices:
            self.fail(path, f"unknown {what} {_q(value)}; expected one of {', '.join(choices)}")
        return str(value)

    # -- the document ----------------------------------------------------------------------------------------

    def configuration(self, document: Mapping[str, Any]) -> SchedulerConfiguration:
        doc = self.mapping(document, "", _TOP_FIELDS)
        api_version = doc.get("apiVersion")
        if api_version is None:
            self.fail("apiVersion", f"required; use {SUPPORTED_API_VERSIONS[0]}")
        self.enum(api_version, "apiVersion", SUPPORTED_API_VERSIONS, "", "apiVersion")
        if doc.get("kind") != KIND:
            self.fail("kind", f"must be {KIND}, got {_q(doc.get('kind'))}")
        parallelism = self.integer(doc.get("parallelism"), "parallelism", 16)
        if parallelism <= 0:
            self.fail("parallelism", f"must be greater than 0, got {parallelism}")
        percentage = self.percentage(doc.get("percentageOfNodesToScore"), "percentageOfNodesToScore")
        initial = self.integer(doc.get("podInitialBackoffSeconds"), "podInitialBackoffSeconds", 1)
        if initial <= 0:
            self.fail("podInitialBackoffSeconds", f"must be greater than 0, got {initial}")
        maximum = self.integer(doc.get("podMaxBackoffSeconds"), "podMaxBackoffSeconds", 10)
        if maximum < initial:
            self.fail("podMaxBackoffSeconds", f"must be greater than or equal to podInitialBackoffSeconds ({initial})")
        for key in ("healthzBindAddress", "metricsBindAddress"):
            self.bind_address(doc.get(key), key)
        for key in ("enableProfiling", "enableContentionProfiling"):
            if self.boolean(doc.get(key), key, False):
                self.warn(key, "ignored: knuma serves no profiling endpoints")
        if self.boolean(doc.get("delayCacheUntilActive"), "delayCacheUntilActive", False):
            self.warn("delayCacheUntilActive", "ignored: knuma fills its caches before it takes the lease")
        if self.items(doc.get("extenders"), "extenders"):
            self.fail("extenders", "knuma does not call scheduler extenders; remove them or use kube-scheduler")
        leader = self.leader_election(doc.get("leaderElection"), "leaderElection")
        client = self.client_connection(doc.get("clientConnection"), "clientConnection")
        profiles = self.profiles(doc.get("profiles"), str(api_version))
        return SchedulerConfiguration(
            profiles=profiles,
            leader_election=leader,
            client_connection=client,
            parallelism=parallelism,
            percentage_of_nodes_to_score=percentage or 0,
            pod_initial_backoff_seconds=initial,
            pod_max_backoff_seconds=maximum,
            api_version=str(api_version),
            source=self.source,
            warnings=tuple(self.warnings),
        )

    def percentage(self, value: Any, path: str) -> int | None:
        if value is None:
            return None
        percentage = self.integer(value, path, 0)
        if not 0 <= percentage <= 100:
            self.fail(path, f"not in valid range [0-100], got {percentage}")
        return percentage

    def bind_address(self, value: Any, path: str) -> None:
        """Deprecated upstream: only empty or port 0 is valid (knuma's endpoints are set on the command line)."""
        address = self.string(value, path)
        if address and not address.endswith(":0"):
            self.fail(path, f"must be empty or with an explicit 0 port, got {_q(address)}; use --metrics-port")

    def leader_election(self, value: Any, path: str) -> LeaderElectionConfig:
        fields = (
            "leaderElect",
            "leaseDuration",
            "renewDeadline",
            "retryPeriod",
            "resourceLock",
            "resourceName",
            "resourceNamespace",
        )
        raw = self.mapping(value, path, fields)
        default = LeaderElectionConfig()
        config = LeaderElectionConfig(
            leader_elect=self.boolean(raw.get("leaderElect"), _join(path, "leaderElect"), default.leader_elect),
            lease_duration=self.duration(
                raw.get("leaseDuration"), _join(path, "leaseDuration"), default.lease_duration
            ),
            renew_deadline=self.duration(
                raw.get("renewDeadline"), _join(path, "renewDeadline"), default.renew_deadline
            ),
            retry_period=self.duration(raw.get("retryPeriod"), _join(path, "retryPeriod"), default.retry_period),
            resource_lock=self.string(raw.get("resourceLock"), _join(path, "resourceLock"), default.resource_lock),
            resource_name=self.string(raw.get("resourceName"), _join(path, "resourceName"), default.resource_name),
            resource_namespace=self.string(
                raw.get("resourceNamespace"), _join(path, "resourceNamespace"), default.resource_namespace
            ),
        )
        if not config.leader_elect:
            return config
        for key, seconds in (
            ("leaseDuration", config.lease_duration),
            ("renewDeadline", config.renew_deadline),
            ("retryPeriod", config.retry_period),
        ):
            if seconds <= 0:
                self.fail(_join(path, key), "must be greater than zero")
        if config.lease_duration <= config.renew_deadline:
            self.fail(_join(path, "leaseDuration"), "must be greater than renewDeadline")
        if config.renew_deadline <= 1.2 * config.retry_period:
            self.fail(_join(path, "renewDeadline"), "must be greater than retryPeriod*1.2 (client-go's JitterFactor)")
        if config.resource_lock != "leases":
            self.fail(
                _join(path, "resourceLock"),
                f"unsupported lock {_q(config.resource_lock)}; knuma uses coordination.k8s.io/v1 leases",
            )
        for key, text, check in (
            ("resourceName", config.resource_name, dns1123_subdomain_errors),
            ("resourceNamespace", config.resource_namespace, dns1123_label_errors),
        ):
            if not text:
                self.fail(_join(path, key), "required when leaderElect is true")
            elif problems := check(text):  # the API server would refuse the Lease and the election retry for ever
                self.fail(_join(path, key), f"invalid Lease {key[8:].lower()} {_q(text)}: {'; '.join(problems)}")
        return config

    def client_connection(self, value: Any, path: str) -> ClientConnectionConfig:
        raw = self.mapping(value, path, ("kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"))
        for key in ("acceptContentTypes", "contentType"):
            text = self.string(raw.get(key), _join(path, key))
            if text and text != "application/json":
                self.warn(_join(path, key), f"ignored ({_q(text)}): knuma talks JSON to the API server")
        burst = self.integer(raw.get("burst"), _join(path, "burst"), 100)
        if burst < 0:
            self.fail(_join(path, "burst"), f"must be non-negative, got {burst}")
        return ClientConnectionConfig(
            kubeconfig=self.string(raw.get("kubeconfig"), _join(path, "kubeconfig")),
            qps=self.number(raw.get("qps"), _join(path, "qps"), 50.0),
            burst=burst,
        )

    # -- profiles ----------------------------------------------------------------------------------------------

    def profiles(self, value: Any, api_version: str) -> tuple[ProfileConfig, ...]:
        raw = self.items(value, "profiles") or DEFAULT_PROFILES
        profiles: list[ProfileConfig] = []
        for index, item in enumerate(raw):
            profile = self.profile(item, _join("profiles", index), api_version)
            for other in profiles:
                if other.scheduler_name == profile.scheduler_name:
                    self.fail(
                        _join(_join("profiles", index), "schedulerName"),
                        f"duplicate value {_q(profile.scheduler_name)}: each profile needs its own schedulerName",
                    )
            profiles.append(profile)
        self.one_nrt_cache(profiles)
        return tuple(profiles)

    def one_nrt_cache(self, profiles: Sequence[ProfileConfig]) -> None:
        """knuma runs one NRT cache per daemon (upstream: one per profile): topology-aware profiles must agree on it."""
        aware = [(i, p) for i, p in enumerate(profiles) if p.topology_aware]
        for index, profile in aware[1:]:
            first_index, first = aware[0]
            if profile.numa.cache_settings != first.numa.cache_settings:
                self.fail(
                    _join(_join("profiles", index), "pluginConfig"),
                    f"NodeResourceTopologyMatch's cache settings (cacheResyncPeriodSeconds, discardReservedNodes, "
                    f"cache) differ from profiles[{first_index}] ({first.scheduler_name}): knuma runs one NRT cache "
                    "for all profiles; give every profile the same cache settings",
                )

    def profile(self, value: Any, path: str, api_version: str) -> ProfileConfig:
        fields = ["schedulerName", "plugins", "pluginConfig"]
        if api_version.endswith("/v1"):
            fields.append("percentageOfNodesToScore")
        raw = self.mapping(value, path, fields)
        name = self.string(raw.get("schedulerName"), _join(path, "schedulerName"), DEFAULT_SCHEDULER_NAME)
        if not name:
            self.fail(_join(path, "schedulerName"), "must not be empty")
        plugins, weights, named = self.plugins(raw.get("plugins"), _join(path, "plugins"))
        numa, affinity, args, typed = self.plugin_config(raw.get("pluginConfig"), _join(path, "pluginConfig"))
        ipa = typed.get(INTER_POD_AFFINITY)
        pts = typed.get(POD_TOPOLOGY_SPREAD)
        preemption = typed.get(DEFAULT_PREEMPTION)
        fit = typed.get(NODE_RESOURCES_FIT)
        balanced = typed.get(NODE_RESOURCES_BALANCED_ALLOCATION)
        dra = typed.get(DYNAMIC_RESOURCES)
        profile = ProfileConfig(
            scheduler_name=name,
            plugins=plugins,
            score_weights=weights,
            numa=numa,
            node_affinity=affinity,
            inter_pod_affinity=ipa if isinstance(ipa, InterPodAffinityArgs) else InterPodAffinityArgs(),
            pod_topology_spread=pts if isinstance(pts, PodTopologySpreadArgs) else PodTopologySpreadArgs(),
            default_preemption=preemption if isinstance(preemption, DefaultPreemptionArgs) else DefaultPreemptionArgs(),
            node_resources_fit=fit if isinstance(fit, NodeResourcesFitArgs) else NodeResourcesFitArgs(),
            balanced_allocation=balanced
            if isinstance(balanced, NodeResourcesBalancedAllocationArgs)
            else NodeResourcesBalancedAllocationArgs(),
            dynamic_resources=dra if isinstance(dra, DynamicResourcesArgs) else DynamicResourcesArgs(),
            percentage_of_nodes_to_score=self.percentage(
                raw.get("percentageOfNodesToScore"), _join(path, "percentageOfNodesToScore")
            ),
            plugin_args=args,
        )
        ignored = [n for n in profile.not_run if n in named]
        if ignored:
            self.warn(f"{path} ({name})", f"knuma does not implement {', '.join(ignored)}: accepted and not run")
        return profile

    def plugins(self, value: Any, path: str) -> tuple[dict[str, tuple[str, ...]], dict[str, int], set[str]]:
        """(extension point → enabled plugin names, score weights, plugin names the file enables)."""
        raw = self.mapping(value, path, (*EXTENSION_POINTS, "multiPoint"))
        custom = {
            point: self.plugin_set(raw.get(point), _join(path, point)) for point in ("multiPoint", *EXTENSION_POINTS)
        }
        named = {p.name for s in custom.values() for p in s.enabled}
        try:
            plugins, weights = effective_plugins(custom, path)
        except PluginSetError as err:
            self.fail(err.path, err.problem)
        if plugins["queueSort"] != ("PrioritySort",):
            self.fail(_join(path, "queueSort"), "exactly one queue sort plugin is required: PrioritySort")
        if not plugins["bind"]:
            self.fail(_join(path, "bind"), "at least one bind plugin is required: DefaultBinder")
        return plugins, weights, named

    def plugin_set(self, value: Any, path: str) -> PluginSet:
        raw = self.mapping(value, path, ("enabled", "disabled"))
        sets: dict[str, list[PluginRef]] = {}
        for key in ("enabled", "disabled"):
            sets[key] = []
            for index, item in enumerate(self.items(raw.get(key), _join(path, key))):
                where = _join(_join(path, key), index)
                entry = self.mapping(item, where, ("name", "weight"))
                name = self.string(entry.get("name"), _join(where, "name"))
                if not name:
                    self.fail(_join(where, "name"), "required")
                weight = self.integer(entry.get("weight"), _join(where, "weight"), 0)
                if weight < 0:
                    self.fail(_join(where, "weight"), f"must not be negative, got {weight}")
                if key == "enabled":
                    self.known(name, _join(where, "name"))
                elif name != "*" and name not in PLUGINS:
                    self.warn(_join(where, "name"), f"disabling unknown plugin {_q(name)} has no effect")
                sets[key].append(PluginRef(name, weight, where))
        return PluginSet(tuple(sets["enabled"]), tuple(sets["disabled"]))

    def known(self, name: str, path: str) -> None:
        if name not in PLUGINS:
            runs = ", ".join(p.name for p in PLUGINS.values() if p.runs)
            self.fail(path, f"plugin {_q(name)} is not available in knuma (it runs {runs})")

    def plugin_config(
        self, value: Any, path: str
    ) -> tuple[NumaArgs, NodeAffinityArgs, dict[str, Mapping[str, Any]], dict[str, object]]:
        """(NUMA args, NodeAffinity args, every entry's args as written, the other plugins' typed args by name)."""
        numa, affinity = NumaArgs(), NodeAffinityArgs()
        typed: dict[str, object] = {}
        args_by_name: dict[str, Mapping[str, Any]] = {}
        first_at: dict[str, int] = {}
        for index, item in enumerate(self.items(value, path)):
            where = _join(path, index)
            entry = self.mapping(item, where, ("name", "args"))
            name = self.string(entry.get("name"), _join(where, "name"))
            if not name:
                self.fail(_join(where, "name"), "required")
            self.known(name, _join(where, "name"))
            if name in first_at:
                self.fail(_join(where, "name"), f"duplicate entry for {_q(name)} (first at {path}[{first_at[name]}])")
            first_at[name] = index
            args_path = _join(where, "args")
            args = entry.get("args")
            if args is None:
                args = {}
            if not isinstance(args, Mapping):
                self.fail(args_path, f"must be a mapping, got {type(args).__name__}")
            self.args_type(name, args, args_path)
            args_by_name[name] = args
            payload = {k: v for k, v in args.items() if k not in ("apiVersion", "kind")}
            if name == NUMA_PLUGIN:
                numa = parse_numa_args(args, args_path, self.fail)
            elif name == "NodeAffinity":
                affinity = self.node_affinity_args(args, args_path)
            elif name == INTER_POD_AFFINITY:
                typed[name] = parse_inter_pod_affinity_args(args, args_path, self.fail)
            elif name == DEFAULT_PREEMPTION:
                typed[name] = parse_default_preemption_args(args, args_path, self.fail)
            elif name == POD_TOPOLOGY_SPREAD:
                spread = typed[name] = parse_pod_topology_spread_args(args, args_path, self.fail)
                if spread.default_constraints:
                    self.warn(
                        _join(args_path, "defaultConstraints"),
                        "not applied: default constraints apply to pods a Service, ReplicationController, ReplicaSet "
                        "or StatefulSet selects, and knuma does not watch those",
                    )
            elif name == NODE_RESOURCES_FIT:
                typed[name] = parse_node_resources_fit_args(args, args_path, self.fail)
            elif name == NODE_RESOURCES_BALANCED_ALLOCATION:
                typed[name] = parse_node_resources_balanced_allocation_args(args, args_path, self.fail)
            elif name == DYNAMIC_RESOURCES:
                dra = typed[name] = parse_dynamic_resources_args(args, args_path, self.fail)
                if dra.filter_timeout is not None:
                    self.warn(
                        _join(args_path, "filterTimeout"),
                        "not applied: knuma bounds each node's device search by attempts, not time (a search that "
                        "runs out says so: search budget exhausted)",
                    )
            elif payload:
                why = "it takes no arguments" if PLUGINS[name].runs else "knuma does not run it"
                self.warn(args_path, f"args of {name} are ignored: {why}")
        return numa, affinity, args_by_name, typed

    def args_type(self, name: str, args: Mapping[str, Any], path: str) -> None:
        if "apiVersion" in args:
            self.enum(args["apiVersion"], _join(path, "apiVersion"), SUPPORTED_API_VERSIONS, "", "apiVersion")
        if "kind" in args and args["kind"] != f"{name}Args":
            self.fail(_join(path, "kind"), f"must be {name}Args for plugin {name}, got {_q(args['kind'])}")

    def node_affinity_args(self, args: Mapping[str, Any], path: str) -> NodeAffinityArgs:
        raw = self.mapping(args, path, ("apiVersion", "kind", "addedAffinity"))
        added_path = _join(path, "addedAffinity")
        added = self.mapping(
            raw.get("addedAffinity"),
            added_path,
            ("requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"),
        )
        required = preferred = None
        key = "requiredDuringSchedulingIgnoredDuringExecution"
        if added.get(key) is not None:
            where = _join(added_path, key)
            selector = self.mapping(added[key], where, ("nodeSelectorTerms",))
            required, errors = parse_node_selector(selector, where)
            if errors:
                self.fail(*errors[0].split(": ", 1))
        key = "preferredDuringSchedulingIgnoredDuringExecution"
        if added.get(key) is not None:
            where = _join(added_path, key)
            preferred, errors = parse_preferred_terms(self.items(added[key], where), where)
            if errors:
                self.fail(*errors[0].split(": ", 1))
        return NodeAffinityArgs(required, preferred)
