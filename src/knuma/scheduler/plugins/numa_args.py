"""`NodeResourceTopologyMatchArgs`: scheduler-plugins' arguments of the NUMA plugin, with its JSON names, defaults and
validation (`apis/config/v1/{types,defaults}.go`, `validation_pluginargs.go`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from knuma.scheduler.plugins.args_fields import Fail, field_enum, field_int, field_mapping, quoted
from knuma.scheduler.plugins.strategies import DEFAULT_WEIGHTS, ScoringStrategy, StrategyType

__all__ = [
    "FOREIGN_PODS_DETECT",
    "INFORMER_MODES",
    "NUMA_PLUGIN",
    "PREEMPTION_MODES",
    "RESYNC_METHODS",
    "RESYNC_SCOPES",
    "NumaArgs",
    "parse_numa_args",
]

NUMA_PLUGIN = "NodeResourceTopologyMatch"
FOREIGN_PODS_DETECT = ("None", "All", "OnlyExclusiveResources")
RESYNC_METHODS = ("Autodetect", "All", "OnlyExclusiveResources")
INFORMER_MODES = ("Shared", "Dedicated")
RESYNC_SCOPES = ("All", "OnlyResources")
PREEMPTION_MODES = ("Enabled", "Disabled")

_FIELDS = (
    "apiVersion",
    "kind",
    "scoringStrategy",
    "cacheResyncPeriodSeconds",
    "discardReservedNodes",
    "cache",
    "preemptionMode",
)


@dataclass(frozen=True)
class NumaArgs:
    scoring_type: StrategyType = StrategyType.LEAST_ALLOCATED
    resources: tuple[tuple[str, int], ...] = tuple(DEFAULT_WEIGHTS.items())
    """`scoringStrategy.resources` (name, weight); an empty list means cpu and memory, and weight 0 means 1."""
    cache_resync_period_seconds: int | None = None
    """Upstream: <= 0 is the passthrough cache, > 0 the overreserve cache resynced every that many seconds. None
    (not set): knuma's own cache."""
    discard_reserved_nodes: bool = False
    foreign_pods_detect: str = "All"
    resync_method: str = "Autodetect"
    informer_mode: str = "Dedicated"
    resync_scope: str = "All"
    preemption_mode: str | None = None
    """`Enabled` or `Disabled` as written; None when unset (upstream: Disabled; knuma: preemption's dry run sees
    the victims' zones freed, as with Enabled)."""

    @property
    def numa_aware_preemption(self) -> bool:
        """Whether DefaultPreemption's dry run gives the NUMA view without the victims: unless explicitly
        `Disabled` (knuma's difference: upstream's default is Disabled, which only its unreleased code changes)."""
        return self.preemption_mode != "Disabled"

    def scoring_strategy(self) -> ScoringStrategy:
        return ScoringStrategy(self.scoring_type, dict(self.resources))

    @property
    def upstream_cache(self) -> str:
        """The cache upstream would use with these args: `discardreserved`, `overreserve` or `passthrough`."""
        if self.discard_reserved_nodes:
            return "discardreserved"
        return "overreserve" if (self.cache_resync_period_seconds or 0) > 0 else "passthrough"

    @property
    def cache_settings(self) -> tuple[object, ...]:
        """What selects and configures the NRT cache (everything but scoring and preemption)."""
        return (
            self.cache_mode,
            self.cache_resync_period_seconds,
            self.foreign_pods_detect,
            self.resync_method,
            self.informer_mode,
            self.resync_scope,
        )

    @property
    def cache_mode(self) -> str:
        """The NRT cache knuma uses with these args (`knuma.scheduler.cache.select`): upstream's choice, except that
        args naming neither `discardReservedNodes` nor `cacheResyncPeriodSeconds` get knuma's own cache."""
        if not self.discard_reserved_nodes and self.cache_resync_period_seconds is None:
            return "knuma"
        return self.upstream_cache


def parse_numa_args(args: Mapping[str, Any], path: str, fail: Fail) -> NumaArgs:
    """Validate the args mapping; `fail(path, problem)` raises."""
    raw = field_mapping(args, path, _FIELDS, fail)
    scoring_type, resources = StrategyType.LEAST_ALLOCATED, tuple(DEFAULT_WEIGHTS.items())
    if raw.get("scoringStrategy") is not None:
        where = f"{path}.scoringStrategy"
        strategy = field_mapping(raw["scoringStrategy"], where, ("type", "resources"), fail)
        choices = [s.value for s in StrategyType]
        kind = strategy.get("type")
        if kind is None or kind == "":
            fail(f"{where}.type", f"required when scoringStrategy is set; expected one of {', '.join(choices)}")
        if kind not in choices:
            fail(f"{where}.type", f"unknown strategy {quoted(kind)}; expected one of {', '.join(choices)}")
        scoring_type = StrategyType(kind)
        listed = strategy.get("resources")
        if listed is not None and (not isinstance(listed, Sequence) or isinstance(listed, str)):
            fail(f"{where}.resources", f"must be a list of {{name, weight}}, got {type(listed).__name__}")
        parsed = []
        for index, item in enumerate(listed or ()):
            entry = field_mapping(item, f"{where}.resources[{index}]", ("name", "weight"), fail)
            name = entry.get("name")
            if not isinstance(name, str) or not name:
                fail(f"{where}.resources[{index}].name", "required: a resource name such as cpu or memory")
            weight = field_int(entry.get("weight", 0), f"{where}.resources[{index}].weight", fail)
            parsed.append((name, weight or 1))
        if parsed:
            resources = tuple(parsed)
    period: int | None = None
    if raw.get("cacheResyncPeriodSeconds") is not None:
        period = field_int(raw["cacheResyncPeriodSeconds"], f"{path}.cacheResyncPeriodSeconds", fail)
    discard = raw.get("discardReservedNodes", False)
    if discard is None:
        discard = False
    if not isinstance(discard, bool):
        fail(f"{path}.discardReservedNodes", f"must be true or false, got {quoted(discard)}")
    cache_path = f"{path}.cache"
    cache = field_mapping(
        raw.get("cache"), cache_path, ("foreignPodsDetect", "resyncMethod", "informerMode", "resyncScope"), fail
    )
    return NumaArgs(
        scoring_type=scoring_type,
        resources=resources,
        cache_resync_period_seconds=period,
        discard_reserved_nodes=discard,
        foreign_pods_detect=field_enum(
            cache.get("foreignPodsDetect"), f"{cache_path}.foreignPodsDetect", FOREIGN_PODS_DETECT, "All", fail
        ),
        resync_method=field_enum(
            cache.get("resyncMethod"), f"{cache_path}.resyncMethod", RESYNC_METHODS, "Autodetect", fail
        ),
        informer_mode=field_enum(
            cache.get("informerMode"), f"{cache_path}.informerMode", INFORMER_MODES, "Dedicated", fail
        ),
        resync_scope=field_enum(cache.get("resyncScope"), f"{cache_path}.resyncScope", RESYNC_SCOPES, "All", fail),
        preemption_mode=(
            None
            if raw.get("preemptionMode") is None
            else field_enum(raw.get("preemptionMode"), f"{path}.preemptionMode", PREEMPTION_MODES, "Disabled", fail)
        ),
    )
