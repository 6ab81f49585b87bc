"""`InterPodAffinityArgs` (kube-scheduler `pkg/scheduler/apis/config/types_pluginargs.go`), defaulted as
`SetDefaults_InterPodAffinityArgs` (hardPodAffinityWeight 1) and validated as `ValidateInterPodAffinityArgs`
(hardPodAffinityWeight in [0, 100])."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knuma.scheduler.plugins.args_fields import Fail, field_int, field_mapping

__all__ = ["INTER_POD_AFFINITY", "InterPodAffinityArgs", "parse_inter_pod_affinity_args"]

INTER_POD_AFFINITY = "InterPodAffinity"
MAX_HARD_POD_AFFINITY_WEIGHT = 100
_FIELDS = ("apiVersion", "kind", "hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods")


@dataclass(frozen=True)
class InterPodAffinityArgs:
    hard_pod_affinity_weight: int = 1
    """The score weight of existing pods' required affinity terms the incoming pod matches (0: not scored)."""
    ignore_preferred_terms_of_existing_pods: bool = False
    """Score only with the incoming pod's own preferred terms when it has some; skip the plugin's score otherwise."""


def parse_inter_pod_affinity_args(args: Mapping[str, Any], path: str, fail: Fail) -> InterPodAffinityArgs:
    raw = field_mapping(args, path, _FIELDS, fail)
    weight = 1
    if raw.get("hardPodAffinityWeight") is not None:
        where = f"{path}.hardPodAffinityWeight"
        weight = field_int(raw["hardPodAffinityWeight"], where, fail)
        if not 0 <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
            fail(where, f"not in valid range [0, {MAX_HARD_POD_AFFINITY_WEIGHT}], got {weight}")
    ignore = raw.get("ignorePreferredTermsOfExistingPods", False)
    if not isinstance(ignore, bool):
        fail(f"{path}.ignorePreferredTermsOfExistingPods", f"must be true or false, got {ignore!r}")
    return InterPodAffinityArgs(weight, ignore)
