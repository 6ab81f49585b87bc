"""`default`: topology-unaware, node-level resources only (what kube-scheduler does)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from knuma.scheduler.framework.interface import Profile
from knuma.scheduler.plugins.node_resources_fit import NodeResourcesFit
from knuma.sim.schedulers.base import NodeLevelLeastAllocated, NodeSetup, SimScheduler

__all__ = ["DefaultScheduler"]


class DefaultScheduler(SimScheduler):
    name = "default"
    uses_nrt = False

    def __init__(self, nodes: Sequence[NodeSetup], **_: Any) -> None:
        profile = Profile("default-scheduler", (NodeResourcesFit(),), ((NodeLevelLeastAllocated(), 1),))
        super().__init__(nodes, profile)
