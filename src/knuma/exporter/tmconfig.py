"""Where the exporter learns the node's Topology Manager configuration (and the other settings it publishes).

Three sources, most specific first, resolved field by field (any missing value defaults to `none` / `container`,
the kubelet defaults):

1. flags `--topology-manager-policy` / `--topology-manager-scope` (and env `TOPOLOGY_MANAGER_POLICY` / `_SCOPE`);
2. an RTE-style config file (`--config`), the format numaresources-operator's kubeletconfig controller renders into
   a ConfigMap (`config.yaml`):

       kubelet: {topologyManagerPolicy: single-numa-node, topologyManagerScope: pod}
       podExclude: [{namespacePattern: "kube-*", namePattern: "*"}]
       resourceExclude: {"*": [device/exampleC], worker-1: [memory]}

3. the kubelet's own `KubeletConfiguration` file (`--kubelet-config-file`, YAML or JSON, also the `/configz`
   wrapper `{"kubeletconfig": {...}}`), which also gives `topologyManagerPolicyOptions`, `reservedSystemCPUs` and
   the static CPU manager's `cpuManagerPolicyOptions` (published as `cpuManagerPolicyOption*` attributes).

Unlike RTE, a half-specified source (policy without scope) is fine, and the kubelet defaults apply instead of `""`.
Errors name the file and the field.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from knuma.api.nrt import ATTR_MAX_NUMA_NODES, ATTR_POLICY, ATTR_SCOPE, Policy, Scope
from knuma.api.types import go_json_type
from knuma.errors import ConfigError
from knuma.exporter.sysfs import SysfsError, parse_cpulist
from knuma.manifests import UnreadableFile, YamlProblem, read_user_file, yaml_document
from knuma.topology.cpumanager import CPUManagerOptions, CPUManagerOptionsError
from knuma.topology.node import ATTR_PREFER_CLOSEST

__all__ = [
    "ConfigError",
    "ExporterConfigFile",
    "KubeletConfigFile",
    "PodPattern",
    "TopologyManagerSettings",
    "kubelet_settings",
    "load_config_file",
    "load_kubelet_config",
    "overlay_kubelet",
    "resolve_topology_manager",
]

OPTION_MAX_NUMA_NODES = "max-allowable-numa-nodes"
_KUBELET_EXTRAS = {
    "topologyManagerPolicyOptions",
    "cpuManagerPolicy",
    "cpuManagerPolicyOptions",
    "memoryManagerPolicy",
    "reservedSystemCPUs",
}
"""Keys of an exporter config file's `kubelet` section beyond RTE's policy and scope."""
_CONFIG_KEYS = ("kubelet", "podExclude", "resourceExclude")
_KUBELET_KEYS = ("topologyManagerPolicy", "topologyManagerScope", *sorted(_KUBELET_EXTRAS))
OPTION_PREFER_CLOSEST = "prefer-closest-numa-nodes"


@dataclass(frozen=True, slots=True)
class TopologyManagerSettings:
    policy: Policy = Policy.NONE
    scope: Scope = Scope.CONTAINER
    max_numa_nodes: int | None = None
    """`topologyManagerPolicyOptions.max-allowable-numa-nodes`, when the kubelet sets it."""
    prefer_closest_numa_nodes: bool | None = None
    sources: Mapping[str, str] = field(default_factory=dict)
    """Field -> where its value came from (`flag`, `env`, a file path, `default`), for the startup log."""

    def attributes(self) -> dict[str, str]:
        """The NRT top-level attributes these settings publish."""
        out = {ATTR_POLICY: self.policy.value, ATTR_SCOPE: self.scope.value}
        if self.max_numa_nodes is not None:
            out[ATTR_MAX_NUMA_NODES] = str(self.max_numa_nodes)
        if self.prefer_closest_numa_nodes is not None:
            out[ATTR_PREFER_CLOSEST] = "true" if self.prefer_closest_numa_nodes else "false"
        return out


@dataclass(frozen=True, slots=True)
class PodPattern:
    """An RTE `podExclude` entry: shell globs (`filepath.Match` semantics) on namespace and name."""

    namespace: str = "*"
    name: str = "*"

    def matches(self, namespace: str, name: str) -> bool:
        return fnmatch.fnmatchcase(namespace, self.namespace) and fnmatch.fnmatchcase(name, self.name)


@dataclass(frozen=True, slots=True)
class KubeletConfigFile:
    path: str
    policy: Policy | None = None
    scope: Scope | None = None
    max_numa_nodes: int | None = None
    prefer_closest_numa_nodes: bool | None = None
    reserved_cpus: frozenset[int] = frozenset()
    cpu_manager_policy: str = ""
    memory_manager_policy: str = ""
    cpu_manager_options: CPUManagerOptions | None = None
    """`cpuManagerPolicyOptions` of a `static` CPU manager (None with policy `none`, which takes no options)."""


@dataclass(frozen=True, slots=True)
class ExporterConfigFile:
    path: str
    policy: Policy | None = None
    scope: Scope | None = None
    pod_exclude: tuple[PodPattern, ...] = ()
    resource_exclude: Mapping[str, frozenset[str]] = field(default_factory=dict)
    kubelet: KubeletConfigFile | None = None
    """The CPU / memory / Topology Manager settings beyond policy and scope, when the `kubelet` section has them (the
    operator's kubeletconfig controller distils them from the nodes' configz); they override the kubelet file's."""
    warnings: tuple[str, ...] = ()
    """Keys the file has and knuma does not read (a misspelt `topologyManagerPolcy`), for the caller to log: RTE
    ignores them silently, and the Topology Manager settings then quietly come from elsewhere."""

    def excluded_resources(self, node_name: str) -> frozenset[str]:
        """Resources excluded for every node (`"*"`) or for this one."""
        return self.resource_exclude.get("*", frozenset()) | self.resource_exclude.get(node_name, frozenset())


def _load_yaml(path: str | os.PathLike[str]) -> Any:
    try:
        text = read_user_file(path)
    except UnreadableFile as err:
        raise ConfigError(str(err)) from None
    try:
        return yaml_document(text)  # JSON is YAML
    except YamlProblem as err:
        raise ConfigError(f"{path}: {err}") from None


def _policy(raw: Any, where: str) -> Policy | None:
    if raw is None or raw == "":
        return None
    try:
        return Policy.parse(str(raw))
    except ValueError as err:
        raise ConfigError(f"{where}: {err}") from None


def _scope(raw: Any, where: str) -> Scope | None:
    if raw is None or raw == "":
        return None
    try:
        return Scope.parse(str(raw))
    except ValueError as err:
        raise ConfigError(f"{where}: {err}") from None


_STRING_FIELDS = (
    "topologyManagerPolicy",
    "topologyManagerScope",
    "cpuManagerPolicy",
    "memoryManagerPolicy",
    "reservedSystemCPUs",
)
_STRING_MAP_FIELDS = ("topologyManagerPolicyOptions", "cpuManagerPolicyOptions")


def _check_go_types(raw: Mapping[str, Any], where: str, kubelet_file: bool) -> None:
    """The fields knuma reads hold what the kubelet's decoder accepts: a `string` field a string, a
    `map[string]string` field string values. Go's JSON decoder refuses anything else (`json: cannot unmarshal number
    into Go struct field KubeletConfiguration.reservedSystemCPUs of type string`) and the kubelet does not start, so
    `reservedSystemCPUs: 0` or `full-pcpus-only: true` unquoted is an error here too, instead of a value read
    differently (an unquoted `0` read as no reserved CPU at all). `null` leaves a Go field unset."""

    def refuse(field: str, value: Any) -> ConfigError:
        why = (
            f" (the kubelet refuses to start: json: cannot unmarshal {go_json_type(value)} into Go struct field "
            f"KubeletConfiguration.{field.split('.')[0]} of type string)"
            if kubelet_file
            else ""
        )
        return ConfigError(f"{where}{field}: expected a string, got {value!r}; quote it{why}")

    for name in _STRING_FIELDS:
        value = raw.get(name)
        if value is not None and not isinstance(value, str):
            raise refuse(name, value)
    for name in _STRING_MAP_FIELDS:
        options = raw.get(name)
        if isinstance(options, Mapping):
            for key, value in options.items():
                if value is not None and not isinstance(value, str):
                    raise refuse(f"{name}.{key}", value)


def load_kubelet_config(path: str | os.PathLike[str]) -> KubeletConfigFile:
    """Read a `KubeletConfiguration` (file or `/configz` output)."""
    raw = _load_yaml(path)
    if isinstance(raw, Mapping) and isinstance(raw.get("kubeletconfig"), Mapping):
        raw = raw["kubeletconfig"]
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a KubeletConfiguration mapping, got {type(raw).__name__}")
    kind = raw.get("kind")
    if kind not in (None, "KubeletConfiguration"):
        raise ConfigError(f"{path}: kind is {kind!r}, expected KubeletConfiguration")
    return kubelet_settings(raw, str(path), f"{path}: ", kubelet_file=True)


def kubelet_settings(raw: Mapping[str, Any], path: str, where: str, *, kubelet_file: bool = False) -> KubeletConfigFile:
    """The settings the exporter publishes, from a `KubeletConfiguration` mapping (or the `kubelet` section of an
    exporter config file, which takes the same keys); `where` prefixes the field names in errors
    (`FILE: ` or `FILE: kubelet.`); `kubelet_file` says that `raw` is the kubelet's own file (errors say that the
    kubelet refuses it too)."""
    _check_go_types(raw, where, kubelet_file)
    options = raw.get("topologyManagerPolicyOptions") or {}
    if not isinstance(options, Mapping):
        raise ConfigError(f"{where}topologyManagerPolicyOptions must be a mapping of option name to value")
    max_numa: int | None = None
    if OPTION_MAX_NUMA_NODES in options:
        text = str(options[OPTION_MAX_NUMA_NODES])
        if not text.isdigit() or int(text) < 1:
            raise ConfigError(
                f"{where}topologyManagerPolicyOptions.{OPTION_MAX_NUMA_NODES} must be a positive integer, got {text!r}"
            )
        if int(text) < 8:  # topologymanager NewPolicyOptions refuses to start below the default
            raise ConfigError(
                f'{where}topologyManagerPolicyOptions: the minimum value of "{OPTION_MAX_NUMA_NODES}" should not be '
                f"less than 8, got {text} (the kubelet refuses to start)"
            )
        max_numa = int(text)
    prefer: bool | None = None
    if OPTION_PREFER_CLOSEST in options:
        text = str(options[OPTION_PREFER_CLOSEST]).lower()
        if text not in ("true", "false"):
            raise ConfigError(f"{where}topologyManagerPolicyOptions.{OPTION_PREFER_CLOSEST} must be true or false")
        prefer = text == "true"
    cpu_policy = str(raw.get("cpuManagerPolicy") or "")
    cpu_options_raw = raw.get("cpuManagerPolicyOptions") or {}
    if not isinstance(cpu_options_raw, Mapping):
        raise ConfigError(f"{where}cpuManagerPolicyOptions must be a mapping of option name to value")
    cpu_options: CPUManagerOptions | None = None
    if cpu_policy.lower() == "static":
        try:
            cpu_options = CPUManagerOptions.parse(cpu_options_raw, f"{where}cpuManagerPolicyOptions")
        except CPUManagerOptionsError as err:
            raise ConfigError(str(err)) from None
    elif cpu_options_raw:
        raise ConfigError(
            f"{where}cpuManagerPolicyOptions need cpuManagerPolicy: static (the kubelet refuses to start with "
            f"options and policy {cpu_policy or 'none'!r})"
        )
    policy = _policy(raw.get("topologyManagerPolicy"), f"{where}topologyManagerPolicy")
    if cpu_options is not None and cpu_options.align_by_socket and policy is Policy.SINGLE_NUMA_NODE:
        raise ConfigError(  # ValidateStaticPolicyOptions: the kubelet refuses to start
            f"{where}cpuManagerPolicyOptions.align-by-socket is incompatible with topologyManagerPolicy "
            "single-numa-node (the kubelet refuses to start)"
        )
    try:
        reserved = parse_cpulist(str(raw.get("reservedSystemCPUs") or ""), f"{where}reservedSystemCPUs")
    except SysfsError as err:
        raise ConfigError(str(err)) from None
    return KubeletConfigFile(
        path=path,
        policy=policy,
        scope=_scope(raw.get("topologyManagerScope"), f"{where}topologyManagerScope"),
        max_numa_nodes=max_numa,
        prefer_closest_numa_nodes=prefer,
        reserved_cpus=reserved,
        cpu_manager_policy=cpu_policy,
        memory_manager_policy=str(raw.get("memoryManagerPolicy") or ""),
        cpu_manager_options=cpu_options,
    )


def load_config_file(path: str | os.PathLike[str]) -> ExporterConfigFile:
    """Read an RTE extra config file (the operator's ConfigMap `config.yaml`)."""
    raw = _load_yaml(path)
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a mapping with kubelet, podExclude and resourceExclude keys")
    kubelet = raw.get("kubelet") or {}
    if not isinstance(kubelet, Mapping):
        raise ConfigError(f"{path}: kubelet must be a mapping (topologyManagerPolicy, topologyManagerScope)")
    patterns = []
    for i, item in enumerate(raw.get("podExclude") or []):
        if not isinstance(item, Mapping):
            raise ConfigError(f"{path}: podExclude[{i}] must be a mapping with namespacePattern and namePattern")
        patterns.append(PodPattern(str(item.get("namespacePattern") or "*"), str(item.get("namePattern") or "*")))
    exclude_raw = raw.get("resourceExclude") or {}
    if not isinstance(exclude_raw, Mapping):
        raise ConfigError(f"{path}: resourceExclude must map a node name (or '*') to a list of resource names")
    resource_exclude: dict[str, frozenset[str]] = {}
    for node, names in exclude_raw.items():
        if not isinstance(names, list):
            raise ConfigError(f"{path}: resourceExclude.{node} must be a list of resource names")
        # RTE writes device resources as `device/<name>` in examples; the resource name is what follows.
        resource_exclude[str(node)] = frozenset(str(n).removeprefix("device/") for n in names)
    settings = kubelet_settings(kubelet, str(path), f"{path}: kubelet.")
    warnings = [
        f"{path}: {where}{key}: unknown key, ignored (known: {', '.join(known)})"
        for where, keys, known in (("", raw, _CONFIG_KEYS), ("kubelet.", kubelet, _KUBELET_KEYS))
        for key in sorted(str(k) for k in keys if k not in known)
    ]
    return ExporterConfigFile(
        path=str(path),
        policy=settings.policy,
        scope=settings.scope,
        pod_exclude=tuple(patterns),
        resource_exclude=resource_exclude,
        kubelet=settings if set(kubelet) & _KUBELET_EXTRAS else None,
        warnings=tuple(warnings),
    )


def overlay_kubelet(config: ExporterConfigFile | None, kubelet: KubeletConfigFile | None) -> KubeletConfigFile | None:
    """The kubelet settings with the config file's `kubelet` section over the kubelet file's: a distilled section
    (CPU manager policy set) replaces the CPU manager, memory manager and reserved CPUs as a whole, since they are
    one kubelet configuration; Topology Manager options are taken one by one."""
    extra = config.kubelet if config is not None else None
    if extra is None:
        return kubelet
    if kubelet is None:
        return extra
    cpu_from = extra if extra.cpu_manager_policy else kubelet
    return KubeletConfigFile(
        path=kubelet.path,
        policy=kubelet.policy,
        scope=kubelet.scope,
        max_numa_nodes=extra.max_numa_nodes if extra.max_numa_nodes is not None else kubelet.max_numa_nodes,
        prefer_closest_numa_nodes=(
            extra.prefer_closest_numa_nodes
            if extra.prefer_closest_numa_nodes is not None
            else kubelet.prefer_closest_numa_nodes
        ),
        reserved_cpus=cpu_from.reserved_cpus,
        cpu_manager_policy=cpu_from.cpu_manager_policy,
        memory_manager_policy=extra.memory_manager_policy or kubelet.memory_manager_policy,
        cpu_manager_options=cpu_from.cpu_manager_options,
    )


def resolve_topology_manager(
    *,
    policy_flag: str | None = None,
    scope_flag: str | None = None,
    env: Mapping[str, str] | None = None,
    config_file: ExporterConfigFile | None = None,
    kubelet_config: KubeletConfigFile | None = None,
) -> TopologyManagerSettings:
    """Pick each field from the most specific source that sets it: flag, env, config file, kubelet config."""
    env = env if env is not None else {}
    sources: dict[str, str] = {}

    policy: Policy | None = None
    for value, source in (
        (_policy(policy_flag, "--topology-manager-policy"), "flag"),
        (_policy(env.get("TOPOLOGY_MANAGER_POLICY"), "env TOPOLOGY_MANAGER_POLICY"), "env"),
        (config_file.policy if config_file else None, config_file.path if config_file else ""),
        (kubelet_config.policy if kubelet_config else None, kubelet_config.path if kubelet_config else ""),
    ):
        if value is not None:
            policy, sources["policy"] = value, source
            break
    scope: Scope | None = None
    for svalue, source in (
        (_scope(scope_flag, "--topology-manager-scope"), "flag"),
        (_scope(env.get("TOPOLOGY_MANAGER_SCOPE"), "env TOPOLOGY_MANAGER_SCOPE"), "env"),
        (config_file.scope if config_file else None, config_file.path if config_file else ""),
        (kubelet_config.scope if kubelet_config else None, kubelet_config.path if kubelet_config else ""),
    ):
        if svalue is not None:
            scope, sources["scope"] = svalue, source
            break
    sources.setdefault("policy", "default")
    sources.setdefault("scope", "default")
    return TopologyManagerSettings(
        policy=policy or Policy.NONE,
        scope=scope or Scope.CONTAINER,
        max_numa_nodes=kubelet_config.max_numa_nodes if kubelet_config else None,
        prefer_closest_numa_nodes=kubelet_config.prefer_closest_numa_nodes if kubelet_config else None,
        sources=sources,
    )
