"""What the deployer is told: platform, variants, replicas, periods, images; parsed and checked once.

Flag names and defaults follow the upstream deployer (`-P kubernetes:v1.29`, `--updater-sync-period 10s`,
`--sched-resync-period 5s`, ...), so that its users keep their scripts. Every parser raises `OptionsError` with a
message that says what was wrong and what is accepted.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from knuma.deploy.images import Images
from knuma.duration import DurationError, format_duration, parse_interval
from knuma.errors import InvalidInput

__all__ = [
    "Component",
    "DeployOptions",
    "OptionsError",
    "Platform",
    "PlatformSpec",
    "SchedulerVariant",
    "UpdaterType",
    "format_duration",
    "parse_component",
    "parse_duration",
    "parse_platform",
]

DEFAULT_PROFILE = "topology-aware-scheduler"
_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+].*)?")


class OptionsError(InvalidInput):
    """A flag value the deployer cannot use; the message names the flag and the accepted values."""


class Platform(enum.StrEnum):
    KUBERNETES = "kubernetes"
    OPENSHIFT = "openshift"
    HYPERSHIFT = "hypershift"

    @property
    def display(self) -> str:
        return {"kubernetes": "Kubernetes", "openshift": "OpenShift", "hypershift": "HyperShift"}[self.value]

    @property
    def is_openshift(self) -> bool:
        return self is not Platform.KUBERNETES


@dataclass(frozen=True, slots=True)
class PlatformSpec:
    platform: Platform = Platform.KUBERNETES
    version: str = ""
    """As given or discovered (`v1.29.3`, `4.14`); empty when unknown."""

    def __str__(self) -> str:
        return f"{self.platform.display}:{self.version}" if self.version else self.platform.display


def parse_platform(text: str) -> PlatformSpec:
    """`kubernetes`, `openshift:4.14`, `kubernetes:v1.29` (case-insensitive kind; the version is optional)."""
    kind, _, version = text.strip().partition(":")
    try:
        platform = Platform(kind.lower())
    except ValueError:
        raise OptionsError(
            f"unsupported platform {text!r}: expected kubernetes, openshift or hypershift, optionally with "
            f":VERSION (e.g. kubernetes:v1.29, openshift:4.14)"
        ) from None
    if version and not _VERSION.fullmatch(version):
        raise OptionsError(f"unsupported platform version {version!r} in {text!r}: expected e.g. v1.29 or 4.14")
    return PlatformSpec(platform, version)


def version_tuple(version: str) -> tuple[int, int] | None:
    """(major, minor) of `v1.29.3`, `1.21+`, `4.14.0-rc.1`; None when unparsable."""
    match = _VERSION.match(version.strip())
    if not match:
        return None
    return int(match.group(1)), int(match.group(2))


UPSTREAM_RESYNC_PERIOD = 5.0
"""The upstream deployer's `--sched-resync-period` default."""


class SchedulerVariant(enum.StrEnum):
    KNUMA = "knuma"
    UPSTREAM = "upstream"


class UpdaterType(enum.StrEnum):
    KNUMA = "knuma"
    RTE = "RTE"
    NFD = "NFD"


class Component(enum.StrEnum):
    API = "api"
    UPDATER = "updater"
    SCHEDULER = "scheduler"


#: Upstream's subcommand names are accepted too.
_COMPONENT_ALIASES = {"scheduler-plugin": Component.SCHEDULER, "topology-updater": Component.UPDATER}


def parse_component(text: str | None, also: str = "") -> list[Component]:
    """The components a command works on, in deploy order; None means all of them. `also` is a name the command
    handles itself besides them (render's `operator`), listed in the error so that it is not hidden from the user."""
    if text is None:
        return list(Component)
    value = _COMPONENT_ALIASES.get(text) or next((c for c in Component if c.value == text), None)
    if value is None:
        names = [c.value for c in Component] + ([also] if also else [])
        raise OptionsError(f"unknown component {text!r}: expected {', '.join(names[:-1])} or {names[-1]}")
    return [value]


def parse_duration(text: str, flag: str) -> float:
    """Seconds from a Go-style duration (`10s`, `1m30s`, `500ms`) or plain seconds; `0` is allowed. The parser is
    `knuma.duration.parse_interval`; this only makes its error an `OptionsError` naming the flag."""
    try:
        return parse_interval(text, flag)
    except DurationError as err:
        raise OptionsError(str(err)) from None


@dataclass(frozen=True, slots=True)
class DeployOptions:
    """Everything rendering needs; a pure value, so the same options always give the same manifests."""

    platform: PlatformSpec = field(default_factory=PlatformSpec)
    scheduler: SchedulerVariant = SchedulerVariant.KNUMA
    updater: UpdaterType = UpdaterType.KNUMA
    images: Images = field(default_factory=Images)
    replicas: int = 1
    pull_if_not_present: bool = False
    profile_name: str = DEFAULT_PROFILE
    resync_period: float | None = None
    """NodeResourceTopologyMatch `cacheResyncPeriodSeconds`; 0 removes the key. None (not given): the upstream
    scheduler gets upstream's 5 s (its overreserve cache); knuma's scheduler gets no key, which selects knuma's own NRT
    cache (`knuma.scheduler.cache.select`)."""

    @property
    def effective_resync_period(self) -> float:
        """What the rendered configuration says (0: no key)."""
        if self.resync_period is not None:
            return self.resync_period
        return UPSTREAM_RESYNC_PERIOD if self.scheduler is SchedulerVariant.UPSTREAM else 0.0

    updater_sync_period: float = 10.0
    """The updater's `--sleep-interval`; 0 disables periodic updates."""
    updater_pfp: bool = True
    updater_notifications: bool = False
    updater_dra_devices: bool = False
    """`knuma exporter --dra-devices`: publish each zone's DRA devices (ResourceSlices with a NUMA attribute), which
    needs list and watch on resourceslices and resourceclaims (added to the exporter's ClusterRole)."""
    updater_config: str | None = None
    """Contents of `--rte-config-file`, put in a ConfigMap the updater reads."""
    updater_scc: str = "v2"
    ctrlplane_affinity: bool = True
    leader_elect_resource: str = ""
    """`ns/name` or `name` of the leader election Lease; default `<scheduler namespace>/nrtmatch-scheduler`."""
    updater_verbose: int = 1
    sched_verbose: int = 4
    scoring_strategy: tuple[str, tuple[tuple[str, int], ...]] | None = None
    """NodeResourceTopologyMatch `scoringStrategy` (type, (resource, weight) pairs); None: no key, the scheduler's
    default."""
    resync_method: str = "Autodetect"
    """`cache.resyncMethod` (upstream's `SetDefaultsConfigCacheParams` default); `--sched-cache-params-config-file`."""
    foreign_pods_detect: str = "OnlyExclusiveResources"
    """`cache.foreignPodsDetect` (upstream's deployer default; the scheduler's own is All)."""
    informer_mode: str | None = None
    """`cache.informerMode`; None: no key (the scheduler's default, Dedicated)."""
    preemption_mode: str | None = None
    """`preemptionMode`; None: no key (disabled), as upstream's deployer deletes it when unset."""
    scheduler_guaranteed: bool = False
    """The scheduler container's requests equal its limits (`GUARANTEED_RESOURCES`: Guaranteed QoS, so it is the last
    to be evicted under node pressure), numaresources-operator's `scheduler-qos-request: guaranteed`."""
    resync_debug_dir: str | None = None
    """knuma's scheduler Deployment: `PFP_STATUS_DUMP` and a memory-backed volume at this directory, where the
    overreserve cache dumps its resync checks (numaresources-operator's `cacheResyncDebug: DumpJSONFile`); None:
    no dump."""
    namespace: str = ""
    """One namespace for every component's namespaced objects (the operator's operand namespace); empty means the
    per-component defaults (`tas-topology-updater`, `tas-scheduler`)."""

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise OptionsError(
                f"invalid --replicas {self.replicas}: rendering needs a positive number "
                "(a negative value asks deploy to count the control-plane nodes)"
            )
        if self.updater_scc not in ("v1", "v2"):
            raise OptionsError(f"invalid --updater-scc {self.updater_scc!r}: expected v1 or v2")
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", self.profile_name) or len(self.profile_name) > 63:
            raise OptionsError(
                f"invalid --sched-profile-name {self.profile_name!r}: a scheduler name must be a DNS label "
                "(lower-case letters, digits and '-')"
            )
        if self.leader_elect_resource.count("/") > 1:
            raise OptionsError(
                f"malformed leader election resource {self.leader_elect_resource!r}: expected NAMESPACE/NAME or NAME"
            )

    @property
    def pull_policy(self) -> str:
        return "IfNotPresent" if self.pull_if_not_present else "Always"

    @property
    def leader_elect(self) -> bool:
        return self.replicas > 1
