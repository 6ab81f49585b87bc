"""resource-topology-exporter's configuration tree, read the way RTE reads it, so that an RTE DaemonSet (its
ConfigMaps, its positional CONFIGROOT and its flags) keeps its settings when its image becomes knuma's.

RTE (`pkg/config/`) reads, in `config.LoadArgs` order, each later source overriding the earlier ones:

1. its defaults (`defaults.go` `SetDefaults`);
2. the *daemon* config: `<CONFIGROOT>/daemon/config.yaml` then the configlets `<CONFIGROOT>/daemon/config.yaml.d/*`
   in directory (sorted) order, each flattened to dotted keys (`topologyExporter.metricsTLS.certFile`) and merged key
   by key, the later file winning (`cfgfile.go` `fromDaemonFiles`, `loadConfiglet`, `mergeConfObj`); the keys are
   dispatched onto the settings by `cfgdispatch.go` `dispatchConfObj`, which rejects a value of the wrong type and
   ignores any other key;
3. the *extra* config (`kubelet.*`, `podExclude`, `resourceExclude`): `<CONFIGROOT>/extra/config.yaml` when CONFIGROOT
   is given, else `--config` (`cfgfile.go` `FixExtraConfigPath`, `flags.go` `FromFlags`) -- knuma already reads this
   format (`knuma.exporter.tmconfig.load_config_file`);
4. the environment, which only fills fields still empty (`environ.go` `FromEnv`);
5. the flags given on the command line.

This module is the pure part: merging parsed documents, dispatching their keys onto the `CommandLine` fields of
`knuma exporter`, the precedence of those over the flags, and the resolved configuration in RTE's `--dump-config`
layout. `read_daemon_config` is the only function that touches files.

Differences from RTE, on purpose: a key knuma has no equivalent for, or an unknown key, is reported with a warning
naming it (RTE ignores unknown keys silently); configlets are read even when `daemon/config.yaml` is missing (RTE then
skips the whole daemon config); paths are not restricted to RTE's allow-list (`validation.go`
`IsConfigRootAllowed`: `/etc/rte`, `/run/rte`, ...), since knuma is also run from a user's directory.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knuma.duration import format_duration, parse_interval
from knuma.errors import ConfigError
from knuma.manifests import UnreadableFile, YamlProblem, read_user_file, yaml_document

__all__ = [
    "DEFAULT_CONFIG_ROOT",
    "LEGACY_EXTRA_CONFIG",
    "DaemonConfig",
    "Setting",
    "apply",
    "daemon_paths",
    "dispatch",
    "extra_config",
    "extra_config_path",
    "flatten",
    "klog_level",
    "merge",
    "read_daemon_config",
    "rte_layout",
    "verbose_count",
]

DEFAULT_CONFIG_ROOT = "/etc/rte"
"""`defaults.go` `DefaultConfigRoot`."""
LEGACY_EXTRA_CONFIG = "/etc/resource-topology-exporter/config.yaml"
"""`cfgfile.go` `LegacyExtraConfigPath`: `--config`'s default."""

# The value types of `cfgdispatch.go` `configMap`: RTE decodes YAML through JSON, so any number passes as an int
# (truncated) and a duration is an integer number of nanoseconds.
STR, INT, BOOL, DURATION = "string", "int", "bool", "duration"

KEYS: Mapping[str, tuple[str, str]] = {
    "global.kubeconfig": ("kubeconfig", STR),
    "nrtUpdater.oneShot": ("once", BOOL),
    "nrtUpdater.noPublish": ("no_publish", BOOL),
    "nrtUpdater.hostname": ("node_name", STR),
    "resourceMonitor.namespace": ("watch_namespace", STR),
    "resourceMonitor.sysfsRoot": ("sysfs_root", STR),
    "resourceMonitor.podSetFingerprint": ("pods_fingerprint", BOOL),
    "resourceMonitor.podSetFingerprintMethod": ("pods_fingerprint_method", STR),
    "resourceMonitor.podSetFingerprintStatusFile": ("pods_fingerprint_status_file", STR),
    "resourceMonitor.excludeTerminalPods": ("exclude_terminal_pods", BOOL),
    "nrtUpdater.patchResync": ("patch_resync", INT),
    "topologyExporter.podResourcesSocketPath": ("podresources_socket", STR),
    "topologyExporter.sleepInterval": ("sleep_interval", DURATION),
    "topologyExporter.notifyFilePath": ("notify_file", STR),
    "topologyExporter.referenceContainer": ("reference_container", STR),
    "topologyExporter.addNRTOwnerEnable": ("add_nrt_owner", BOOL),
    "topologyExporter.metricsMode": ("metrics_mode", STR),
    "topologyExporter.metricsPort": ("metrics_port", INT),
    "topologyExporter.MetricsAddress": ("metrics_address", STR),  # sic: RTE reads the capitalised key
    "topologyExporter.metricsTLS.certsDir": ("metrics_certs_dir", STR),
    "topologyExporter.metricsTLS.certFile": ("metrics_cert_file", STR),
    "topologyExporter.metricsTLS.keyFile": ("metrics_key_file", STR),
    "topologyExporter.metricsTLS.wantCliAuth": ("metrics_want_cli_auth", BOOL),
    "topologyExporter.metricsTLS.minTLSVersion": ("metrics_tls_min_version", STR),
    "topologyExporter.metricsTLS.cipherSuites": ("metrics_tls_cipher_suites", STR),
}
"""RTE daemon-config key -> (`knuma.exporter.commandline.CommandLine` field, value type)."""

VERBOSE_KEY = "global.verbose"

UNSUPPORTED: Mapping[str, tuple[str, str]] = {
    "global.debug": (BOOL, "knuma has no debug switch; use -vv or --log-level debug"),
    "nrtUpdater.patchMode": (BOOL, "knuma always creates the object once, then merge-patches what changed"),
    "resourceMonitor.refreshNodeResources": (BOOL, "knuma re-reads allocatable resources on every update"),
    "resourceMonitor.exposeTiming": (BOOL, "knuma exports update timings as metrics instead"),
    "topologyExporter.podReadinessEnable": (BOOL, "knuma reports readiness on /readyz instead of pod conditions"),
    "topologyExporter.maxEventPerTimeUnit": (INT, "knuma coalesces events into at most one update per second"),
    "topologyExporter.timeUnitToLimitEvents": (
        DURATION,
        "knuma coalesces events into at most one update per second",
    ),
}
"""Keys RTE dispatches that have no knuma equivalent: type-checked as RTE does, then reported and ignored."""

_HINTS = {
    "global.kubeConfig": "global.kubeconfig",
    "topologyExporter.metricsAddress": "topologyExporter.MetricsAddress",
}
"""Keys of RTE's `--dump-config` output that its config reader spells differently."""

_SECTIONS = {"global", "nrtUpdater", "resourceMonitor", "topologyExporter", "topologyExporter.metricsTLS"}
"""Sections a file may leave empty (`global:` with nothing below) without a warning."""

_OPTIONAL = {
    "kubeconfig",
    "node_name",
    "watch_namespace",
    "pods_fingerprint_status_file",
    "notify_file",
    "reference_container",
}
"""Fields where RTE's empty string means "not set" (then the environment or the default applies)."""

_FINGERPRINT_METHODS = ("with-exclusive-resources", "all")
_METRICS_MODES = ("http", "httptls", "disabled")


@dataclass(frozen=True, slots=True)
class Setting:
    """One flattened key's value and the file it came from (the last one that set it)."""

    value: Any
    path: str


@dataclass(frozen=True, slots=True)
class DaemonConfig:
    """What the daemon config sets, as `CommandLine` fields."""

    values: Mapping[str, Any] = field(default_factory=dict)
    verbose: int | None = None
    """`global.verbose` (a klog level), when set."""
    warnings: tuple[str, ...] = ()


def daemon_paths(root: str | os.PathLike[str]) -> list[Path]:
    """`<root>/daemon/config.yaml` and the regular files of `<root>/daemon/config.yaml.d`, in the order RTE applies
    them (`os.ReadDir` sorts by name); files that do not exist are left out."""
    daemon = Path(root) / "daemon"
    paths = [daemon / "config.yaml"] if (daemon / "config.yaml").is_file() else []
    configlets = daemon / "config.yaml.d"
    if configlets.is_dir():
        paths += sorted((p for p in configlets.iterdir() if p.is_file()), key=lambda p: p.name)
    return paths


def extra_config_path(root: str | os.PathLike[str]) -> str:
    """`cfgfile.go` `FixExtraConfigPath`: the extra config when CONFIGROOT is given."""
    return str(Path(root) / "extra" / "config.yaml")


def extra_config(
    config_root: str | None, config: str | None, exists: Callable[[str], bool]
) -> tuple[str | None, str | None]:
    """The extra config file to read (None: none), and a warning when `--config` is overridden: with an explicit
    CONFIGROOT it is `<root>/extra/config.yaml` (`FixExtraConfigPath`), else `--config`, else RTE's legacy default.
    A file RTE would look for that does not exist is skipped, as RTE skips it (`readExtraConfig`); a `--config` the
    user names must exist, as knuma always required (a typo is not silently ignored)."""
    if config_root is not None:
        path = extra_config_path(config_root)
        warning = (
            f"--config {config} is ignored: CONFIGROOT {config_root} gives the extra config {path}" if config else None
        )
        return (path if exists(path) else None), warning
    if config:
        return config, None
    return (LEGACY_EXTRA_CONFIG if exists(LEGACY_EXTRA_CONFIG) else None), None


def read_daemon_config(root: str | os.PathLike[str]) -> dict[str, Setting]:
    """Read and merge the daemon config tree under `root` (nothing there is fine). Raises `ConfigError` naming the
    file that cannot be read or is not a YAML mapping."""
    documents = []
    for path in daemon_paths(root):
        try:
            text = read_user_file(path)
        except UnreadableFile as err:
            raise ConfigError(str(err)) from None
        try:
            documents.append((str(path), yaml_document(text)))
        except YamlProblem as err:
            raise ConfigError(f"{path}: {err}") from None
    return merge(documents)


def flatten(doc: Mapping[Any, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings to dotted keys (`jeremywohl/flatten` `DotStyle`, as RTE's `loadConfiglet` uses); lists and
    scalars are leaves."""
    flat: dict[str, Any] = {}
    for key, value in doc.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, name))
        else:
            flat[name] = value
    return flat


def merge(documents: Iterable[tuple[str, Any]]) -> dict[str, Setting]:
    """Merge parsed documents `(path, doc)` in order, key by key, the later winning (`mergeConfObj`). An empty
    document is fine; anything but a mapping is a `ConfigError` naming the file."""
    merged: dict[str, Setting] = {}
    for path, doc in documents:
        if doc is None:
            continue
        if not isinstance(doc, Mapping):
            raise ConfigError(
                f"{path}: expected a mapping of sections (global, nrtUpdater, resourceMonitor, topologyExporter), "
                f"got {_type_name(doc)}"
            )
        for key, value in flatten(doc).items():
            merged[key] = Setting(value, path)
    return merged


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, Mapping):
        return "mapping"
    return type(value).__name__


def _typed(key: str, setting: Setting, kind: str) -> Any:
    """The value checked as `cfgdispatch.go` `configMap.Value` checks it; raises `ConfigError` naming the file and
    the key."""
    value = setting.value
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == STR and isinstance(value, str):
        return value
    if kind == BOOL and isinstance(value, bool):
        return value
    if kind in (INT, DURATION) and is_number and math.isfinite(value):
        return int(value)  # RTE: int(float64), truncating
    expected = {STR: "a string", BOOL: "true or false", INT: "an integer", DURATION: "an integer of nanoseconds"}
    raise ConfigError(f"{setting.path}: {key} must be {expected[kind]}, got {_type_name(value)} {value!r}")


def dispatch(settings: Mapping[str, Setting]) -> DaemonConfig:
    """The `CommandLine` fields the merged daemon config sets (`dispatchConfObj`), with a warning for each key knuma
    ignores. Raises `ConfigError` naming the file and the key for a wrong type or value."""
    values: dict[str, Any] = {}
    warnings: list[str] = []
    verbose: int | None = None
    for key, setting in settings.items():
        where = f"{setting.path}: {key}"
        if key in _SECTIONS and setting.value in (None, {}):
            continue
        if key == VERBOSE_KEY:
            verbose = _typed(key, setting, INT)
        elif key in KEYS:
            name, kind = KEYS[key]
            values[name] = _field_value(name, _typed(key, setting, kind), where)
        elif key in UNSUPPORTED:
            kind, why = UNSUPPORTED[key]
            _typed(key, setting, kind)
            warnings.append(f"{where}: not supported by knuma, ignored ({why})")
        else:
            hint = f"; RTE reads {_HINTS[key]}" if key in _HINTS else ""
            warnings.append(f"{where}: unknown key, ignored as RTE ignores it{hint}")
    return DaemonConfig(values, verbose, tuple(warnings))


def _field_value(name: str, value: Any, where: str) -> Any:
    """A typed file value as the flag's value, checked here so that an error names the file and the key, not a
    flag the user did not give."""
    if name in _OPTIONAL and value == "":
        return None
    if name == "sleep_interval":
        if value < 0:
            raise ConfigError(f"{where} must not be negative, got {value}")
        return format_duration(value / 1e9)
    if name == "pods_fingerprint_method" and value not in _FINGERPRINT_METHODS:
        raise ConfigError(
            f"{where}: unknown pods fingerprint method {value!r}; expected all or with-exclusive-resources"
        )
    if name == "metrics_mode" and value not in _METRICS_MODES:
        raise ConfigError(f"{where}: unknown metrics mode {value!r}; use http, httptls or disabled")
    if name == "patch_resync" and value < 0:
        raise ConfigError(f"{where} must be 0 (never) or a number of updates, got {value}")
    if name == "metrics_port" and not 0 <= value <= 65535:
        raise ConfigError(f"{where}: port {value} is out of range 0-65535")
    if name == "metrics_tls_min_version" and value == "":
        return "VersionTLS12"  # RTE's "" is Go's default minimum, TLS 1.2
    if name == "reference_container" and value is not None:
        parts = value.split("/")
        if len(parts) != 3 or not all(parts):
            raise ConfigError(f"{where}: invalid reference container {value!r}: expected namespace/pod/container")
    return value


def verbose_count(klog_level: int) -> int:
    """knuma's `-v` count for a klog level: 4 and above (Kubernetes' debug level) is `-vv`, 1-3 is `-v`."""
    return 2 if klog_level >= 4 else 1 if klog_level >= 1 else 0


def klog_level(count: int) -> int:
    """The klog level `--dump-config` shows for knuma's `-v` count: 4 (debug) with `-vv`, else RTE's default 2."""
    return 4 if count > 1 else 2


def apply(flags: Mapping[str, Any], given: Iterable[str], config: DaemonConfig) -> dict[str, Any]:
    """The flags with the daemon config applied: a flag given on the command line wins over the file, the file wins
    over a flag's default or its environment variable (RTE's `FromEnv` only fills fields the files left empty)."""
    explicit = set(given)
    merged = dict(flags)
    for name, value in config.values.items():
        if name in merged and name not in explicit:
            merged[name] = value
    return merged


def rte_layout(
    values: Mapping[str, Any], verbose: int, extra: Mapping[str, Any] | None = None
) -> dict[str, dict[str, Any]]:
    """The resolved configuration in the layout of RTE's `--dump-config` (`ProgArgs` as YAML): `values` are the
    final `CommandLine` fields, `verbose` the klog level, `extra` the extra config document. Unset fields are left out
    as RTE's `omitempty` does; false booleans are kept, so the dump says what knuma will do."""
    doc: dict[str, dict[str, Any]] = {
        "global": {"verbose": verbose},
        "nrtUpdater": {},
        "resourceMonitor": {},
        "topologyExporter": {},
    }
    for key, (name, _) in KEYS.items():
        value: Any = values.get(name)
        if value is None or value == "":
            continue
        if name == "sleep_interval":
            value = round(parse_interval(value) * 1e9)
        if name == "reference_container" and value.count("/") == 2:  # RTE's ContainerIdent
            namespace, pod, container = value.split("/")
            value = {"namespace": namespace, "podName": pod, "containerName": container}
        section, _, rest = key.partition(".")
        rest = {"kubeconfig": "kubeConfig", "MetricsAddress": "metricsAddress"}.get(rest, rest)  # RTE's JSON tags
        target = doc[section]
        if rest.startswith("metricsTLS."):
            target = target.setdefault("metricsTLS", {})
            rest = rest.removeprefix("metricsTLS.")
        target[rest] = value
    exporter = doc["topologyExporter"]
    for name, tag in (
        ("kubelet_config_file", "kubeletConfigFile"),
        ("topology_manager_policy", "topologyManagerPolicy"),
        ("topology_manager_scope", "topologyManagerScope"),
    ):
        if values.get(name):
            exporter[tag] = values[name]
    if extra:
        kubelet = extra.get("kubelet") or {}
        if isinstance(kubelet, Mapping):  # setupArgsFromConfig: the extra config fills what the flags left empty
            for tag in ("topologyManagerPolicy", "topologyManagerScope"):
                if kubelet.get(tag) and tag not in exporter:
                    exporter[tag] = kubelet[tag]
        for tag in ("resourceExclude", "podExclude"):
            if extra.get(tag):
                doc["resourceMonitor"][tag] = extra[tag]
    return {section: _sorted(body) for section, body in doc.items() if body}


def _sorted(body: Mapping[str, Any]) -> dict[str, Any]:
    """Keys in order, as RTE's JSON-then-YAML dump has them."""
    return {k: _sorted(v) if isinstance(v, Mapping) else v for k, v in sorted(body.items())}
