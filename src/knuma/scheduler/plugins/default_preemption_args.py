"""`DefaultPreemptionArgs` (kube-scheduler `pkg/scheduler/apis/config/types_pluginargs.go`), defaulted as
`SetDefaults_DefaultPreemptionArgs` (10% of the nodes, at least 100) and validated as `ValidateDefaultPreemptionArgs`:
how many candidate nodes preemption's dry run looks for before it picks one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knuma.scheduler.plugins.args_fields import Fail, field_int, field_mapping

__all__ = ["DEFAULT_PREEMPTION", "DefaultPreemptionArgs", "parse_default_preemption_args"]

DEFAULT_PREEMPTION = "DefaultPreemption"
_FIELDS = ("apiVersion", "kind", "minCandidateNodesPercentage", "minCandidateNodesAbsolute")


@dataclass(frozen=True)
class DefaultPreemptionArgs:
    min_candidate_nodes_percentage: int = 10
    """The dry run stops once it found candidates on this share of the nodes where preemption might help ..."""
    min_candidate_nodes_absolute: int = 100
    """... or on this many, whichever is larger (never more than there are such nodes)."""

    def candidates(self, nodes: int) -> int:
        """`calculateNumCandidates`: how many candidates to find among `nodes` potential nodes."""
        wanted = max(nodes * self.min_candidate_nodes_percentage // 100, self.min_candidate_nodes_absolute)
        return min(wanted, nodes)


def parse_default_preemption_args(args: Mapping[str, Any], path: str, fail: Fail) -> DefaultPreemptionArgs:
    raw = field_mapping(args, path, _FIELDS, fail)
    percentage_path, absolute_path = f"{path}.minCandidateNodesPercentage", f"{path}.minCandidateNodesAbsolute"
    percentage, absolute = 10, 100
    if raw.get("minCandidateNodesPercentage") is not None:
        percentage = field_int(raw["minCandidateNodesPercentage"], percentage_path, fail)
    if raw.get("minCandidateNodesAbsolute") is not None:
        absolute = field_int(raw["minCandidateNodesAbsolute"], absolute_path, fail)
    if not 0 <= percentage <= 100:
        fail(percentage_path, f"not in valid range [0, 100], got {percentage}")
    if absolute < 0:
        fail(absolute_path, f"not in valid range [0, inf), got {absolute}")
    if percentage == 0 and absolute == 0:
        fail(percentage_path, "cannot be zero at the same time as minCandidateNodesAbsolute")
    return DefaultPreemptionArgs(percentage, absolute)
