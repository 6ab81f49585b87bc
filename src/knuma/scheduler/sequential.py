"""The straightforward scheduler: `schedule_one` over every node, then reserve on the chosen one.

The reference the vectorised path is checked and benchmarked against: same rules, one node at a time.
"""

from __future__ import annotations

from collections.abc import Sequence

from knuma.api.pod import Pod
from knuma.scheduler.fast.vectorized import Decision
from knuma.scheduler.framework.assume import assume
from knuma.scheduler.framework.interface import NodeInfo, schedule_one
from knuma.scheduler.framework.profiles import default_profile
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.plugins.strategies import ScoringStrategy
from knuma.topology.kubelet import admit

__all__ = ["SequentialScheduler"]


class SequentialScheduler:
    def __init__(self, nodes: Sequence[NodeInfo], scoring: ScoringStrategy | None = None) -> None:
        self.profile = default_profile(scoring)
        self.nodes = list(nodes)

    def schedule(self, pod: Pod) -> Decision:
        result = schedule_one(self.profile, pod, self.nodes, explain=False)
        if result.selected is None:
            return Decision(None, None, None)
        row = next(i for i, n in enumerate(self.nodes) if n.name == result.selected)
        node = self.nodes[row]
        numa = next((p for p in self.profile.filters if isinstance(p, NodeResourceTopologyMatch)), None)
        admitted = numa.kubelet_pod(pod, node) if numa is not None else pod  # as Filter modelled the kubelet
        admission = admit(admitted, node.topology) if node.topology is not None else None
        self.nodes[row] = assume(node, pod, admission)
        score = next(r.score for r in result.nodes if r.name == result.selected)
        return Decision(result.selected, score, admission)
