"""`NUMAResourcesOperator` and `NUMAResourcesScheduler` (`nodetopology.openshift.io/v1`): the operator's custom
resources, parsed from their wire form with numaresources-operator's defaults and validation messages.

Both kinds are cluster-scoped singletons with fixed names. Parsing is pure and total: every field the spec accepts is
checked here, and a bad value raises `SpecError` with a message that names the field and says what to write instead,
which the operator copies into the Degraded condition.

On plain Kubernetes there are no MachineConfigPools, so a node group selects nodes directly: `poolName: P` selects
the nodes labelled `node-role.kubernetes.io/P` (the label an OpenShift pool `P` selects), and
`machineConfigPoolSelector` is read as a node label selector.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from knuma.duration import DurationError, format_duration
from knuma.duration import parse_duration as go_duration
from knuma.errors import SpecError

__all__ = [
    "ANNOTATION_NRT_API_DEFINITION",
    "ANNOTATION_PAUSE",
    "ANNOTATION_SCHEDULER_QOS",
    "GROUP",
    "OPERATOR_KIND",
    "OPERATOR_NAME",
    "SCHEDULER_KIND",
    "SCHEDULER_NAME",
    "VERSION",
    "InfoRefreshMode",
    "InfoRefreshPause",
    "LogLevel",
    "NodeGroup",
    "NodeGroupConfig",
    "OperatorSpec",
    "PodsFingerprinting",
    "SchedulerSpec",
    "SpecError",
    "is_paused",
    "parse_operator_spec",
    "parse_scheduler_spec",
    "wants_guaranteed_scheduler",
]

GROUP = "nodetopology.openshift.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
OPERATOR_KIND = "NUMAResourcesOperator"
SCHEDULER_KIND = "NUMAResourcesScheduler"
OPERATOR_NAME = "numaresourcesoperator"
SCHEDULER_NAME = "numaresourcesscheduler"
OPERATOR_PLURAL = "numaresourcesoperators"
SCHEDULER_PLURAL = "numaresourcesschedulers"

ANNOTATION_PAUSE = "config.numa-operator.openshift.io/pause-reconciliation"
ANNOTATION_NRT_API_DEFINITION = "config.numa-operator.openshift.io/nrt-api-definition"
ANNOTATION_SCHEDULER_QOS = "config.numa-operator.openshift.io/scheduler-qos-request"
"""On a NUMAResourcesScheduler, `guaranteed`: the scheduler's requests equal its limits (upstream's
`internal/api/annotations`)."""
POOL_ROLE_LABEL = "node-role.kubernetes.io/"
MAX_NODE_GROUP_ANNOTATIONS = 8
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


class LogLevel(enum.StrEnum):
    NORMAL = "Normal"
    DEBUG = "Debug"
    TRACE = "Trace"
    TRACE_ALL = "TraceAll"

    @property
    def verbosity(self) -> int:
        """klog `-v`, as upstream's `pkg/loglevel`."""
        return {"Normal": 2, "Debug": 4, "Trace": 6, "TraceAll": 8}[self.value]


class PodsFingerprinting(enum.StrEnum):
    DISABLED = "Disabled"
    ENABLED = "Enabled"
    ENABLED_EXCLUSIVE_RESOURCES = "EnabledExclusiveResources"


class InfoRefreshMode(enum.StrEnum):
    PERIODIC = "Periodic"
    EVENTS = "Events"
    PERIODIC_AND_EVENTS = "PeriodicAndEvents"


class InfoRefreshPause(enum.StrEnum):
    """`Enabled`: the group's exporters keep running and stop writing NodeResourceTopology objects (RTE's
    `--no-publish`), e.g. to freeze what the scheduler sees during maintenance."""

    DISABLED = "Disabled"
    ENABLED = "Enabled"


@dataclass(frozen=True, slots=True)
class NodeGroupConfig:
    """A node group's exporter settings with v1's defaults filled in (`NormalizeConfig`)."""

    pods_fingerprinting: PodsFingerprinting = PodsFingerprinting.ENABLED_EXCLUSIVE_RESOURCES
    info_refresh_mode: InfoRefreshMode = InfoRefreshMode.PERIODIC
    info_refresh_period: float = 10.0
    info_refresh_pause: InfoRefreshPause = InfoRefreshPause.DISABLED
    tolerations: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The wire form, as published in `status.nodeGroups[].config`."""
        out: dict[str, Any] = {
            "infoRefreshMode": self.info_refresh_mode.value,
            "infoRefreshPause": self.info_refresh_pause.value,
            "infoRefreshPeriod": format_duration(self.info_refresh_period),
            "podsFingerprinting": self.pods_fingerprinting.value,
        }
        if self.tolerations:
            out["tolerations"] = [dict(t) for t in self.tolerations]
        return out


@dataclass(frozen=True, slots=True)
class NodeGroup:
    pool: str
    """The pool name: `poolName`, or a stable name derived from the selector; names the DaemonSet."""
    node_selector: dict[str, str] = field(default_factory=dict)
    match_expressions: tuple[dict[str, Any], ...] = ()
    config: NodeGroupConfig = field(default_factory=NodeGroupConfig)
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class OperatorSpec:
    node_groups: tuple[NodeGroup, ...] = ()
    image_spec: str = ""
    log_level: LogLevel = LogLevel.NORMAL
    pod_excludes: tuple[tuple[str, str], ...] = ()
    """(namespace glob, name glob) pairs the exporter ignores."""


class ScoringType(enum.StrEnum):
    """`spec.scoringStrategy.type` (the CRD's enum: scheduler-plugins' strategies)."""

    MOST_ALLOCATED = "MostAllocated"
    BALANCED_ALLOCATION = "BalancedAllocation"
    LEAST_ALLOCATED = "LeastAllocated"


class CacheResyncDebug(enum.StrEnum):
    DISABLED = "Disabled"
    DUMP_JSON_FILE = "DumpJSONFile"


class CacheResyncDetection(enum.StrEnum):
    """How eagerly the scheduler's cache treats pods it did not place: `Relaxed` watches only pods with exclusive
    resources (`foreignPodsDetect: OnlyExclusiveResources`), `Aggressive` every pod (`All`)."""

    RELAXED = "Relaxed"
    AGGRESSIVE = "Aggressive"

    @property
    def foreign_pods_detect(self) -> str:
        return "All" if self is CacheResyncDetection.AGGRESSIVE else "OnlyExclusiveResources"


class SchedulerInformer(enum.StrEnum):
    SHARED = "Shared"
    DEDICATED = "Dedicated"


class PreemptionMode(enum.StrEnum):
    ENABLED = "Enabled"
    DISABLED = "Disabled"


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    type: ScoringType = ScoringType.LEAST_ALLOCATED
    resources: tuple[tuple[str, int], ...] = ()
    """(resource name, weight) pairs; empty: the strategy's default weights."""


@dataclass(frozen=True, slots=True)
class SchedulerSpec:
    image_spec: str = ""
    """Empty means knuma's own image."""
    scheduler_name: str = ""
    """Empty means the deployer's profile name."""
    log_level: LogLevel = LogLevel.NORMAL
    cache_resync_period: float | None = None
    """None (not set): knuma's scheduler uses knuma's own NRT cache. numaresources-operator defaults to 5 s (the
    overreserve cache); a CR that sets `cacheResyncPeriod` gets exactly that, 0 included (passthrough)."""
    replicas: int | None = None
    """None: one per control-plane node, at most 3 (upstream's auto mode)."""
    scoring_strategy: ScoringStrategy | None = None
    """None: the scheduler's default strategy (knuma's; upstream's CR defaults to LeastAllocated)."""
    cache_resync_debug: CacheResyncDebug = CacheResyncDebug.DUMP_JSON_FILE
    cache_resync_detection: CacheResyncDetection = CacheResyncDetection.RELAXED
    scheduler_informer: SchedulerInformer = SchedulerInformer.DEDICATED
    preemption_mode: PreemptionMode | None = None
    """None: no `preemptionMode` key (disabled), as upstream writes the key only when set."""


def is_paused(obj: Mapping[str, Any]) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return annotations.get(ANNOTATION_PAUSE) == "enabled"


def wants_guaranteed_scheduler(obj: Mapping[str, Any]) -> bool:
    """`scheduler-qos-request: guaranteed` on a NUMAResourcesScheduler (exact value, as upstream compares it)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return annotations.get(ANNOTATION_SCHEDULER_QOS) == "guaranteed"


def parse_duration(value: Any, where: str) -> float:
    """A metav1.Duration (`10s`, `1m30s`, `500ms`, Go syntax); negative or malformed values are a `SpecError`."""
    try:
        seconds = go_duration(str(value).strip())
    except DurationError:
        seconds = -1.0
    if seconds < 0:
        raise SpecError(f"{where}: invalid duration {value!r}; write e.g. 10s, 1m30s or 0s")
    return seconds


def _enum(kind: type[enum.StrEnum], value: Any, where: str, default: Any) -> Any:
    if value is None:
        return default
    try:
        return kind(value)
    except ValueError:
        accepted = ", ".join(m.value for m in kind)
        raise SpecError(f"{where}: unsupported value {value!r}; expected one of {accepted}") from None


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SpecError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _parse_config(raw: Any, where: str) -> NodeGroupConfig:
    data = _mapping(raw, where)
    period = data.get("infoRefreshPeriod")
    tolerations = data.get("tolerations") or []
    if not isinstance(tolerations, list) or not all(isinstance(t, dict) for t in tolerations):
        raise SpecError(f"{where}.tolerations: expected a list of tolerations")
    return NodeGroupConfig(
        pods_fingerprinting=_enum(
            PodsFingerprinting,
            data.get("podsFingerprinting"),
            f"{where}.podsFingerprinting",
            PodsFingerprinting.ENABLED_EXCLUSIVE_RESOURCES,
        ),
        info_refresh_mode=_enum(
            InfoRefreshMode, data.get("infoRefreshMode"), f"{where}.infoRefreshMode", InfoRefreshMode.PERIODIC
        ),
        info_refresh_period=10.0 if period is None else parse_duration(period, f"{where}.infoRefreshPeriod"),
        info_refresh_pause=_enum(
            InfoRefreshPause, data.get("infoRefreshPause"), f"{where}.infoRefreshPause", InfoRefreshPause.DISABLED
        ),
        tolerations=tuple(dict(t) for t in tolerations),
    )


def _selector_pool(selector: dict[str, Any]) -> str:
    """A DaemonSet-name-safe pool name for a selector group: the role of a `node-role.kubernetes.io/ROLE` selector,
    else `sel-` and a hash of the selector (stable across reorderings of the groups)."""
    labels = selector.get("matchLabels") or {}
    if len(labels) == 1 and not selector.get("matchExpressions"):
        (key,) = labels
        role = str(key).removeprefix(POOL_ROLE_LABEL)
        if str(key).startswith(POOL_ROLE_LABEL) and _DNS_LABEL.fullmatch(role):
            return role
    digest = hashlib.sha256(json.dumps(selector, sort_keys=True).encode()).hexdigest()
    return f"sel-{digest[:10]}"


def _parse_node_group(raw: Any, index: int) -> NodeGroup:
    where = f"spec.nodeGroups[{index}]"
    data = _mapping(raw, where)
    pool_name = data.get("poolName")
    selector = data.get("machineConfigPoolSelector")
    if pool_name is None and selector is None:
        raise SpecError(f"node group {index} missing any pool specifier: set poolName or machineConfigPoolSelector")
    if pool_name is not None and selector is not None:
        raise SpecError(
            f"node group {index} must have only a single specifier set: either poolName or machineConfigPoolSelector"
        )
    annotations = _mapping(data.get("annotations"), f"{where}.annotations")
    if len(annotations) > MAX_NODE_GROUP_ANNOTATIONS:
        raise SpecError(
            f"{where}.annotations: {len(annotations)} annotations, at most {MAX_NODE_GROUP_ANNOTATIONS} are allowed"
        )
    config = _parse_config(data.get("config"), f"{where}.config")
    disable = data.get("disablePodsFingerprinting")
    if disable is not None and not isinstance(disable, bool):
        raise SpecError(f"{where}.disablePodsFingerprinting {disable!r}: expected true or false")
    if disable and (data.get("config") or {}).get("podsFingerprinting") is None:
        # v1alpha1's deprecated flag, as upstream's conversion turns it into podsFingerprinting
        config = dataclasses.replace(config, pods_fingerprinting=PodsFingerprinting.DISABLED)
    if pool_name is not None:
        if not isinstance(pool_name, str) or not pool_name:
            raise SpecError(f"pool name for pool #{index} cannot be empty")
        if not _DNS_LABEL.fullmatch(pool_name) or len(pool_name) > 40:
            raise SpecError(
                f"{where}.poolName {pool_name!r}: expected a DNS label of at most 40 characters "
                "(lower-case letters, digits and '-')"
            )
        return NodeGroup(pool_name, {POOL_ROLE_LABEL + pool_name: ""}, (), config, dict(annotations))
    sel = _mapping(selector, f"{where}.machineConfigPoolSelector")
    match_labels = _mapping(sel.get("matchLabels"), f"{where}.machineConfigPoolSelector.matchLabels")
    expressions = sel.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise SpecError(f"{where}.machineConfigPoolSelector.matchExpressions: expected a list")
    for n, expr in enumerate(expressions):
        if not isinstance(expr, dict) or expr.get("operator") not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise SpecError(
                f"{where}.machineConfigPoolSelector.matchExpressions[{n}]: expected key, operator "
                "(In, NotIn, Exists or DoesNotExist) and values"
            )
    if not match_labels and not expressions:
        raise SpecError(f"{where}.machineConfigPoolSelector: an empty selector would select every node; add labels")
    return NodeGroup(
        _selector_pool(sel),
        {str(k): str(v) for k, v in match_labels.items()},
        tuple(dict(e) for e in expressions),
        config,
        dict(annotations),
    )


def parse_operator_spec(spec: Any) -> OperatorSpec:
    data = _mapping(spec, "spec")
    raw_groups = data.get("nodeGroups") or []
    if not isinstance(raw_groups, list):
        raise SpecError("spec.nodeGroups: expected a list of node groups")
    groups = tuple(_parse_node_group(g, i) for i, g in enumerate(raw_groups))
    seen: dict[str, int] = {}
    for i, group in enumerate(groups):
        if group.pool in seen:
            raise SpecError(
                f"the pool name {group.pool!r} is used by node groups {seen[group.pool]} and {i}: "
                "each node group needs its own pool"
            )
        seen[group.pool] = i
    excludes = []
    for n, item in enumerate(data.get("podExcludes") or []):
        entry = _mapping(item, f"spec.podExcludes[{n}]")
        excludes.append((str(entry.get("namespace", "")), str(entry.get("name", ""))))
    return OperatorSpec(
        node_groups=groups,
        image_spec=str(data.get("imageSpec") or ""),
        log_level=_enum(LogLevel, data.get("logLevel"), "spec.logLevel", LogLevel.NORMAL),
        pod_excludes=tuple(excludes),
    )


def parse_scheduler_spec(spec: Any) -> SchedulerSpec:
    data = _mapping(spec, "spec")
    name = data.get("schedulerName") or ""
    if name and (not isinstance(name, str) or not _DNS_LABEL.fullmatch(name) or len(name) > 63):
        raise SpecError(
            f"spec.schedulerName {name!r}: a scheduler name must be a DNS label (lower-case letters, digits and '-')"
        )
    period = data.get("cacheResyncPeriod")
    resync = None if period is None else float(round(parse_duration(period, "spec.cacheResyncPeriod")))
    replicas = data.get("replicas")
    if replicas is not None and (isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1):
        raise SpecError(f"spec.replicas {replicas!r}: expected a positive integer, or no value for automatic")
    image = data.get("imageSpec") or ""
    if any(ch.isspace() for ch in str(image)):
        raise SpecError(f"spec.imageSpec {image!r}: an image reference has no spaces")
    return SchedulerSpec(
        image_spec=str(image),
        scheduler_name=str(name),
        log_level=_enum(LogLevel, data.get("logLevel"), "spec.logLevel", LogLevel.NORMAL),
        cache_resync_period=resync,
        replicas=replicas,
        scoring_strategy=_scoring_strategy(data.get("scoringStrategy")),
        cache_resync_debug=_enum(
            CacheResyncDebug, data.get("cacheResyncDebug"), "spec.cacheResyncDebug", CacheResyncDebug.DUMP_JSON_FILE
        ),
        cache_resync_detection=_enum(
            CacheResyncDetection,
            data.get("cacheResyncDetection"),
            "spec.cacheResyncDetection",
            CacheResyncDetection.RELAXED,
        ),
        scheduler_informer=_enum(
            SchedulerInformer, data.get("schedulerInformer"), "spec.schedulerInformer", SchedulerInformer.DEDICATED
        ),
        preemption_mode=_enum(PreemptionMode, data.get("preemptionMode"), "spec.preemptionMode", None),
    )


def _scoring_strategy(raw: Any) -> ScoringStrategy | None:
    if raw is None:
        return None
    data = _mapping(raw, "spec.scoringStrategy")
    kind = _enum(ScoringType, data.get("type"), "spec.scoringStrategy.type", ScoringType.LEAST_ALLOCATED)
    listed = data.get("resources") or []
    if not isinstance(listed, list):
        raise SpecError(f"spec.scoringStrategy.resources: expected a list of {{name, weight}}, got {listed!r}")
    resources = []
    for i, item in enumerate(listed):
        entry = _mapping(item, f"spec.scoringStrategy.resources[{i}]")
        name, weight = entry.get("name"), entry.get("weight", 1)
        if not isinstance(name, str) or not name:
            raise SpecError(f"spec.scoringStrategy.resources[{i}].name: required, a resource name such as cpu")
        if isinstance(weight, bool) or not isinstance(weight, int) or weight < 1:
            raise SpecError(f"spec.scoringStrategy.resources[{i}].weight {weight!r}: expected a positive integer")
        resources.append((name, weight))
    return ScoringStrategy(kind, tuple(resources))
