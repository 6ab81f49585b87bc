"""What `knuma up` shows while it runs: nodes, pods by outcome, and each node's free CPUs per NUMA zone.

`summarize` is a pure function of the objects in the API server (Nodes, Pods, NodeResourceTopologies, Leases);
`table_rows` and `caption` are what `knuma up` shows on a terminal (refreshed in place, fitted to its width by
`knuma.cli.output`), and `line` is one log line for pipes and files.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from knuma.api.nrt import NodeResourceTopology, NRTError
from knuma.api.resources import CPU
from knuma.api.types import JsonView

__all__ = ["COLUMNS", "ClusterSummary", "NodeRow", "caption", "line", "summarize", "table_rows"]

MAX_ROWS = 12

COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("NODE", "left", 0),
    ("READY", "left", 0),
    ("SHAPE", "left", 2),
    ("POLICY", "left", 1),
    ("PODS", "right", 0),
    ("FREE CPUS PER NUMA ZONE", "left", 0),
)
"""(header, justify, drop): the shape and the policy may be left out on a narrow terminal (`kubectl get nodes -L`
and `kubectl get nrt` show them); the rest is the state the user watches."""


@dataclass(frozen=True)
class NodeRow:
    name: str
    ready: bool
    shape: str
    policy: str
    pods: int
    zones_cpu: tuple[tuple[int, int], ...]
    """(available, allocatable) whole CPUs per NUMA zone, from the node's NRT; empty before it is published."""


@dataclass(frozen=True)
class ClusterSummary:
    nodes: tuple[NodeRow, ...]
    pods: Mapping[str, int] = field(default_factory=dict)
    """Outcome -> count: Running, Pending, Succeeded, and Failed pods by reason (e.g. TopologyAffinityError)."""
    nrts: int = 0
    restarts: Mapping[str, int] = field(default_factory=dict)
    """`knuma up` child -> times it died and was started again."""

    @property
    def ready_nodes(self) -> int:
        return sum(1 for n in self.nodes if n.ready)


def _pod_outcome(pod: JsonView) -> str:
    status = pod.get("status") or {}
    phase = str(status.get("phase") or "Pending")
    if phase == "Failed":
        return str(status.get("reason") or "Failed")
    if phase == "Pending" and not (pod.get("spec") or {}).get("nodeName"):
        return "Pending (unscheduled)"
    return phase


def summarize(
    nodes: Iterable[JsonView],
    pods: Iterable[JsonView],
    nrts: Iterable[JsonView],
    restarts: Mapping[str, int] | None = None,
) -> ClusterSummary:
    pods = list(pods)
    outcomes = Counter(_pod_outcome(p) for p in pods)
    per_node = Counter(
        (p.get("spec") or {}).get("nodeName")
        for p in pods
        if (p.get("status") or {}).get("phase") in ("Running", "Pending") and (p.get("spec") or {}).get("nodeName")
    )
    topologies: dict[str, NodeResourceTopology] = {}
    for raw in nrts:
        try:
            nrt = NodeResourceTopology.from_dict(raw)
        except NRTError:
            continue
        topologies[nrt.name] = nrt
    rows = []
    for node in sorted(nodes, key=lambda n: str((n.get("metadata") or {}).get("name"))):
        meta = node.get("metadata") or {}
        name = str(meta.get("name"))
        conditions = (node.get("status") or {}).get("conditions") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        found = topologies.get(name)
        zones: list[tuple[int, int]] = []
        policy = ""
        if found is not None:
            policy = found.topology_manager.policy.value
            for _, zone in found.numa_zones():
                cpu = next((r for r in zone.resources if r.name == CPU), None)
                if cpu is not None:
                    zones.append((cpu.available // 1000, cpu.allocatable // 1000))
        shape = str((meta.get("labels") or {}).get("node.kubernetes.io/instance-type", ""))
        rows.append(NodeRow(name, ready, shape, policy, per_node.get(name, 0), tuple(zones)))
    return ClusterSummary(
        tuple(rows), dict(sorted(outcomes.items())), len(topologies), dict(sorted((restarts or {}).items()))
    )


def _pods_text(summary: ClusterSummary) -> str:
    if not summary.pods:
        return "no pods"
    return ", ".join(f"{count} {outcome}" for outcome, count in summary.pods.items())


def _restarts_text(summary: ClusterSummary) -> str:
    return ", ".join(f"{name} x{count}" for name, count in summary.restarts.items())


def line(summary: ClusterSummary) -> str:
    """`nodes 3/3 Ready, NRT 3; pods: 4 Running, 2 TopologyAffinityError` (`; restarted: exporter worker-000 x1`)."""
    text = f"nodes {summary.ready_nodes}/{len(summary.nodes)} Ready, NRT {summary.nrts}; pods: {_pods_text(summary)}"
    return text + (f"; restarted: {_restarts_text(summary)}" if summary.restarts else "")


def caption(summary: ClusterSummary) -> str:
    return f"pods: {_pods_text(summary)}" + (f"\nrestarted: {_restarts_text(summary)}" if summary.restarts else "")


def table_rows(summary: ClusterSummary) -> list[list[str]]:
    """One row per node (the first `MAX_ROWS`, then one for the rest), cells in `COLUMNS`' order."""
    rows = []
    for row in summary.nodes[:MAX_ROWS]:
        zones = "  ".join(f"{zone}: {free}/{total}" for zone, (free, total) in enumerate(row.zones_cpu)) or "-"
        rows.append([row.name, "yes" if row.ready else "no", row.shape, row.policy or "-", str(row.pods), zones])
    if len(summary.nodes) > MAX_ROWS:
        rest = summary.nodes[MAX_ROWS:]
        rows.append(
            [f"... {len(rest)} more", f"{sum(r.ready for r in rest)} ready", "", "", str(sum(r.pods for r in rest)), ""]
        )
    return rows
