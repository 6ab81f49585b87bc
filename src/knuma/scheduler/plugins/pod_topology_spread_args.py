"""`PodTopologySpreadArgs` (kube-scheduler `pkg/scheduler/apis/config/types_pluginargs.go`), defaulted as
`SetDefaults_PodTopologySpreadArgs` (defaultingType System) and validated as `ValidatePodTopologySpreadArgs`.

`defaultingType: System` gives the two soft system constraints (`systemDefaultConstraints`: hostname maxSkew 3, zone
maxSkew 5, ScheduleAnyway); `List` the `defaultConstraints` given. Either applies only to pods without constraints of
their own that a Service, ReplicationController, ReplicaSet or StatefulSet selects (`buildDefaultConstraints`,
`helper.DefaultSelector`); knuma watches none of those, so default constraints never apply (`load` warns when a
file lists some)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from knuma.scheduler.plugins.args_fields import Fail, field_int, field_mapping

__all__ = [
    "POD_TOPOLOGY_SPREAD",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "DefaultConstraint",
    "PodTopologySpreadArgs",
    "parse_pod_topology_spread_args",
]

POD_TOPOLOGY_SPREAD = "PodTopologySpread"
DEFAULTING_TYPES = ("System", "List")
WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
_FIELDS = ("apiVersion", "kind", "defaultConstraints", "defaultingType")
_CONSTRAINT_FIELDS = ("maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector", "minDomains",
                      "nodeAffinityPolicy", "nodeTaintsPolicy", "matchLabelKeys")  # fmt: skip


@dataclass(frozen=True)
class DefaultConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str


SYSTEM_DEFAULT_CONSTRAINTS = (
    DefaultConstraint(3, "kubernetes.io/hostname", "ScheduleAnyway"),
    DefaultConstraint(5, "topology.kubernetes.io/zone", "ScheduleAnyway"),
)


@dataclass(frozen=True)
class PodTopologySpreadArgs:
    default_constraints: tuple[DefaultConstraint, ...] = ()
    defaulting_type: str = "System"

    @property
    def effective_defaults(self) -> tuple[DefaultConstraint, ...]:
        """What `defaultingType` selects (upstream's `pl.defaultConstraints`)."""
        return SYSTEM_DEFAULT_CONSTRAINTS if self.defaulting_type == "System" else self.default_constraints


def parse_pod_topology_spread_args(args: Mapping[str, Any], path: str, fail: Fail) -> PodTopologySpreadArgs:
    raw = field_mapping(args, path, _FIELDS, fail)
    defaulting = raw.get("defaultingType", "System")
    if defaulting not in DEFAULTING_TYPES:
        fail(f"{path}.defaultingType", f"unknown value {defaulting!r}; expected one of {', '.join(DEFAULTING_TYPES)}")
    listed = raw.get("defaultConstraints") or []
    where = f"{path}.defaultConstraints"
    if not isinstance(listed, Sequence) or isinstance(listed, str):
        fail(where, f"must be a list, got {type(listed).__name__}")
    if listed and defaulting == "System":
        fail(f"{path}.defaultingType", 'must be "List" when defaultConstraints are given')
    constraints: list[DefaultConstraint] = []
    seen: dict[tuple[str, str], int] = {}
    for index, item in enumerate(listed):
        at = f"{where}[{index}]"
        entry = field_mapping(item, at, _CONSTRAINT_FIELDS, fail)
        skew = field_int(entry.get("maxSkew"), f"{at}.maxSkew", fail)
        if skew <= 0:
            fail(f"{at}.maxSkew", f"must be greater than zero, got {skew}")
        key = entry.get("topologyKey")
        if not isinstance(key, str) or not key:
            fail(f"{at}.topologyKey", "required: a node label key such as topology.kubernetes.io/zone")
        when = entry.get("whenUnsatisfiable")
        if when not in WHEN_UNSATISFIABLE:
            fail(f"{at}.whenUnsatisfiable", f"unknown value {when!r}; expected one of {', '.join(WHEN_UNSATISFIABLE)}")
        if entry.get("labelSelector") is not None:
            fail(f"{at}.labelSelector", "must not be set: default constraints take the selector of the pod's owners")
        pair = (key, str(when))
        if pair in seen:
            fail(at, f"duplicate topologyKey and whenUnsatisfiable (first at {where}[{seen[pair]}])")
        seen[pair] = index
        constraints.append(DefaultConstraint(skew, key, str(when)))
    return PodTopologySpreadArgs(tuple(constraints), str(defaulting))
