"""`knuma check`'s verdict and its two renderings: a table for people, JSON for scripts.

The problem lines keep the deployer's / nrovalidate's `ERROR#NNN: Incorrect configuration of ...` format
(`knuma.deploy.validate.format_issue`), each followed by a `fix:` line, and the last line is upstream's
`PASSED>>` / `FAILED>>` verdict.

The text's tables and lines are laid out by a `Layout`: `NATURAL` (whole rows, whole lines) for files such as `knuma
gather`'s check.txt; the command line passes one fitted to the terminal (`knuma.cli.output`), which may leave out the
columns marked optional here and wraps long lines. Verdicts (NRT, FRESH, the reasons, ERROR lines) are never left
out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from knuma.deploy.check.nodes import NodeRow, check_nodes
from knuma.deploy.check.scheduling import (
    FailedPod,
    PendingPod,
    SchedulerStatus,
    check_admission_failures,
    check_pending,
    check_scheduler,
)
from knuma.deploy.check.state import ClusterState
from knuma.deploy.validate import FAILED, PASSED, Issue, format_issue

__all__ = ["NATURAL", "Diagnosis", "Layout", "diagnose", "render_json", "render_text"]


@dataclass(frozen=True, slots=True)
class Diagnosis:
    scheduler_name: str
    nodes: list[NodeRow]
    scheduler: SchedulerStatus
    pending: list[PendingPod]
    pending_reasons: Counter[str]
    failed: list[FailedPod]
    issues: list[Issue]

    @property
    def healthy(self) -> bool:
        return not self.issues


def diagnose(state: ClusterState, scheduler_name: str) -> Diagnosis:
    """Every check over one snapshot, problems in a stable order: nodes, scheduler, pending pods, rejected pods."""
    rows, issues = check_nodes(state)
    scheduler, scheduler_issues = check_scheduler(state, scheduler_name)
    pending, reasons, pending_issues = check_pending(state, scheduler_name)
    failed, failed_issues = check_admission_failures(state, scheduler_name)
    return Diagnosis(
        scheduler_name,
        rows,
        scheduler,
        pending,
        reasons,
        failed,
        [*issues, *scheduler_issues, *pending_issues, *failed_issues],
    )


class Layout(Protocol):
    def table(self, columns: Sequence[tuple[str, int]], rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
        """The lines of a table, each starting with `indent`. `columns`: (header, drop) pairs; drop 0 is always
        shown, a higher drop may be left out on a narrow terminal (the highest first)."""
        ...

    def wrap(self, lines: Sequence[str]) -> list[str]:
        """Prose lines, wrapped if the layout has a width."""
        ...


class _Natural:
    """Whole rows and lines: kubectl's column layout, three spaces apart."""

    def table(self, columns: Sequence[tuple[str, int]], rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
        header = [name for name, _ in columns]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        return [
            indent + "   ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
            for r in [header, *rows]
        ]

    def wrap(self, lines: Sequence[str]) -> list[str]:
        return list(lines)


NATURAL: Layout = _Natural()


def render_text(diagnosis: Diagnosis, layout: Layout = NATURAL) -> str:
    lines = layout.table(
        [("NODE", 0), ("NRT", 0), ("FRESH", 0), ("TOPOLOGY MANAGER", 2), ("EXPORTER", 1)],
        [[r.node, r.nrt, r.fresh, r.topology_manager, r.exporter] for r in diagnosis.nodes],
    )
    lines.append("")
    sched = diagnosis.scheduler
    plugin = "NodeResourceTopologyMatch enabled" if sched.plugin else "NodeResourceTopologyMatch NOT enabled"
    if sched.deployment:
        runs = f"Deployment {sched.deployment}, {sched.ready} ready, {plugin}"
    elif sched.process:
        runs = f"{sched.process}, {plugin}"
    else:
        runs = "no Deployment runs this profile"
    lines += layout.wrap([f"scheduler {diagnosis.scheduler_name}: {runs}"])
    lines += layout.wrap([f"pending pods of {diagnosis.scheduler_name}: {len(diagnosis.pending)}"])
    if diagnosis.pending_reasons:
        lines += layout.table(
            [("REASON", 0), ("NODES (summed over pods)", 0)],
            [[reason, str(n)] for reason, n in diagnosis.pending_reasons.most_common()],
            indent="  ",
        )
    lines.append(f"pods rejected at admission: {len(diagnosis.failed)}")
    if diagnosis.failed:
        lines += layout.table(
            [("POD", 0), ("NODE", 2), ("REASON", 0), ("PLACED BY", 1)],
            [[f.pod, f.node, f.reason, f.scheduler] for f in diagnosis.failed],
            indent="  ",
        )
    lines.append("")
    for index, issue in enumerate(diagnosis.issues):
        lines += layout.wrap([format_issue(index, issue), f"  fix: {issue.fix}"])
    lines.append(PASSED if diagnosis.healthy else FAILED)
    return "\n".join(lines) + "\n"


def render_json(diagnosis: Diagnosis) -> dict[str, Any]:
    """nrovalidate's `succeeded` and the deployer's `success` (both), `errors[]` in the validate shape plus `fix`,
    and what was seen."""
    return {
        "success": diagnosis.healthy,
        "succeeded": diagnosis.healthy,
        "errors": [asdict(i) for i in diagnosis.issues],
        "nodes": [asdict(r) for r in diagnosis.nodes],
        "scheduler": {"name": diagnosis.scheduler_name, **asdict(diagnosis.scheduler)},
        "pending": [asdict(p) for p in diagnosis.pending],
        "pendingReasons": dict(diagnosis.pending_reasons.most_common()),
        "rejected": [asdict(f) for f in diagnosis.failed],
    }
