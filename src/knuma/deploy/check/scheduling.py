"""Scheduler-side checks of `knuma check`: the NUMA-aware scheduler runs (a Ready Deployment whose configuration has a
profile with the scheduler's name and `NodeResourceTopologyMatch` enabled), its pods that stay Pending and why (the
reasons of their latest `FailedScheduling` events, aggregated as kube-scheduler counts them per node), and pods the
kubelet rejected at admission (`TopologyAffinityError`, `SMTAlignmentError`) with the scheduler that placed them.
Pure functions of a `ClusterState`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from knuma.api.types import JsonObj
from knuma.deploy.check.processes import RUNNING, Process
from knuma.deploy.check.state import ClusterState, SchedulerDeployment
from knuma.deploy.validate import Issue

__all__ = [
    "ADMISSION_ERRORS",
    "NUMA_PLUGIN",
    "FailedPod",
    "PendingPod",
    "SchedulerStatus",
    "check_admission_failures",
    "check_pending",
    "check_scheduler",
    "parse_failed_scheduling",
    "profile_enables",
]

NUMA_PLUGIN = "NodeResourceTopologyMatch"
ADMISSION_ERRORS = ("TopologyAffinityError", "SMTAlignmentError")
MAX_LISTED_PODS = 20
"""Pending pods listed one line each; beyond it one line counts the rest (the reasons table has them all)."""
_COUNTED = re.compile(r"^(\d+)\s+(.+)$")


@dataclass(frozen=True, slots=True)
class SchedulerStatus:
    deployment: str
    """`ns/name`, or empty when no Deployment runs a profile with the scheduler's name."""
    ready: str
    """`ready/desired` replicas."""
    plugin: bool
    """Whether the profile enables NodeResourceTopologyMatch."""
    process: str = ""
    """`process 1234 of knuma up` when `knuma up`'s scheduler process runs the profile (no Deployment does)."""


@dataclass(frozen=True, slots=True)
class PendingPod:
    pod: str
    message: str
    """The latest FailedScheduling message, empty when the scheduler never reported on the pod."""
    reasons: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FailedPod:
    pod: str
    node: str
    reason: str
    scheduler: str
    message: str


# -- the scheduler ---------------------------------------------------------------------------------------------------


def _names(entries: Any) -> set[str]:
    return {str(e.get("name")) for e in entries or [] if isinstance(e, Mapping)}


def profile_enables(profile: Mapping[str, Any], plugin: str = NUMA_PLUGIN) -> bool:
    """Whether a KubeSchedulerConfiguration profile runs `plugin` as a filter: enabled in `filter` or `multiPoint`
    and not disabled there (`*` disables every default plugin, not an explicitly enabled one)."""
    plugins = profile.get("plugins") or {}
    enabled = disabled = False
    for point in ("multiPoint", "filter"):
        section = plugins.get(point) or {}
        if plugin in _names(section.get("enabled")):
            enabled = True
        if plugin in _names(section.get("disabled")):
            disabled = True
    return enabled and not disabled


def _profile(config: Mapping[str, Any] | None, name: str) -> Mapping[str, Any] | None:
    for profile in (config or {}).get("profiles") or []:
        if isinstance(profile, Mapping) and (profile.get("schedulerName") or "default-scheduler") == name:
            return profile
    return None


def _ready(deployment: JsonObj) -> tuple[int, int]:
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    desired = spec.get("replicas")
    return int(status.get("readyReplicas") or 0), int(1 if desired is None else desired)


@dataclass(frozen=True, slots=True)
class _Runner:
    """Something that runs profile `name`: a scheduler Deployment, or `knuma up`'s scheduler process."""

    deployment: str
    process: str
    ready: int
    desired: int
    profile: Mapping[str, Any]
    where: str
    """`Deployment ns/name` or `knuma up's scheduler process`: where the profile's configuration lives."""
    not_ready_issue: Issue


def _deployment_runner(sched: SchedulerDeployment, profile: Mapping[str, Any]) -> _Runner:
    ready, desired = _ready(sched.deployment)
    ns, _, name = sched.ref.partition("/")
    issue = Issue(
        "",
        "scheduler",
        f"Deployment {sched.ref}",
        "ready replicas",
        "at least 1",
        f"{ready}/{desired}",
        f"see why: kubectl -n {ns} describe deployment {name}; kubectl -n {ns} logs deployment/{name}",
    )
    return _Runner(sched.ref, "", ready, desired, profile, f"Deployment {sched.ref}", issue)


def _process_runner(process: Process, profile: Mapping[str, Any]) -> _Runner:
    running = process.state == RUNNING
    issue = Issue("", "scheduler", "knuma up", "scheduler process", RUNNING, process.describe(), process.what_to_do())
    return _Runner("", process.describe(), int(running), 1, profile, "knuma up's scheduler process", issue)


def check_scheduler(state: ClusterState, name: str) -> tuple[SchedulerStatus, list[Issue]]:
    """The Deployment running profile `name` (or, on a bare `knuma up`, its scheduler process); prefer one that
    enables the NUMA plugin and is Ready, and a Deployment (a stack deployed on `knuma up` is what to check) over the
    process."""
    candidates: list[_Runner] = []
    unreadable: list[SchedulerDeployment] = []
    for sched in state.schedulers:
        profile = _profile(sched.config, name)
        if profile is not None:
            candidates.append(_deployment_runner(sched, profile))
        elif sched.config is None:
            unreadable.append(sched)
    local = state.processes
    if local is not None and local.scheduler is not None:
        profile = _profile(local.scheduler_configuration, name)
        if profile is not None:
            candidates.append(_process_runner(local.scheduler, profile))
    if not candidates:
        detail = "; ".join(f"{s.ref}: {s.config_error}" for s in unreadable)
        return SchedulerStatus("", "-", False), [
            Issue(
                "",
                "scheduler",
                "profile",
                name,
                f"a Deployment running a scheduler profile {name!r}",
                f"none ({detail})" if detail else "none",
                "deploy the NUMA-aware scheduler (knuma deploy scheduler, or a NUMAResourcesScheduler for "
                "knuma operator), or pass --scheduler-name with the schedulerName your pods use",
            )
        ]
    candidates.sort(key=lambda c: (not profile_enables(c.profile), c.ready < 1, bool(c.process), c.deployment))
    runner = candidates[0]
    status = SchedulerStatus(
        runner.deployment, f"{runner.ready}/{runner.desired}", profile_enables(runner.profile), runner.process
    )
    issues = []
    if not status.plugin:
        issues.append(
            Issue(
                "",
                "scheduler",
                f"profile {name}",
                "plugins",
                f"{NUMA_PLUGIN} enabled",
                "not enabled",
                f"the profile schedules without NUMA zones: enable {NUMA_PLUGIN} in its filter, reserve and score "
                f"plugins (multiPoint) in the scheduler configuration of {runner.where}",
            )
        )
    if runner.ready < 1:
        issues.append(runner.not_ready_issue)
    return status, issues


# -- pending pods ----------------------------------------------------------------------------------------------------


def parse_failed_scheduling(message: str) -> dict[str, int]:
    """`0/5 nodes are available: 3 cannot align container, 2 Insufficient cpu. preemption: ...` -> reason counts.

    A message without per-node counts (a PreFilter rejection, an internal error) is one reason with count 1."""
    text = message.split(" preemption:", 1)[0].strip()
    head, sep, rest = text.partition(" nodes are available:")
    if not sep:
        return {text.rstrip("."): 1} if text else {}
    reasons: dict[str, int] = {}
    for part in rest.strip().rstrip(".").split(", "):
        match = _COUNTED.match(part.strip())
        if match:
            reasons[match.group(2)] = reasons.get(match.group(2), 0) + int(match.group(1))
        elif part.strip():
            reasons[part.strip()] = reasons.get(part.strip(), 0) + 1
    del head
    return reasons


def _event_time(event: JsonObj) -> str:
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or (event.get("series") or {}).get("lastObservedTime")
        or event["metadata"].get("creationTimestamp")
        or ""
    )


def _latest_events(events: list[JsonObj]) -> dict[tuple[str, str], JsonObj]:
    latest: dict[tuple[str, str], JsonObj] = {}
    for event in events:
        involved = event.get("involvedObject") or {}
        if involved.get("kind", "Pod") != "Pod":
            continue
        key = (str(involved.get("namespace") or ""), str(involved.get("name") or ""))
        if key not in latest or _event_time(event) >= _event_time(latest[key]):
            latest[key] = event
    return latest


_FIXES = (
    (
        "cannot align",
        "no node has the resources within the NUMA zones the Topology Manager policy allows: free resources on one "
        "zone (delete or move pods), lower the requests, or add nodes",
    ),
    ("Insufficient", "the nodes lack the resource: lower the requests or add capacity"),
    ("untolerated taint", "add a toleration for the taint, or remove the taint from the nodes"),
    ("didn't match Pod's node affinity", "fix the pod's nodeSelector / affinity, or label the nodes"),
    (
        "NodeResourceTopology",
        "nodes have no NRT data: check that the exporter runs on every node (see the node checks above)",
    ),
)


def _pending_fix(pending: PendingPod, scheduler: str) -> str:
    if not pending.message:
        return (
            f"the scheduler {scheduler!r} has not reported on the pod: check that it runs (the scheduler check above) "
            "and its logs"
        )
    for needle, fix in _FIXES:
        if any(needle in reason for reason in pending.reasons):
            return fix
    ns, _, name = pending.pod.partition("/")
    return f"see kubectl -n {ns} describe pod {name}"


def check_pending(state: ClusterState, scheduler: str) -> tuple[list[PendingPod], Counter[str], list[Issue]]:
    """Unbound pods of `scheduler`, the reasons of their latest FailedScheduling event summed over the pods (how many
    node verdicts each reason got), and one issue per pod (up to `MAX_LISTED_PODS`)."""
    latest = _latest_events(state.events)
    pending: list[PendingPod] = []
    totals: Counter[str] = Counter()
    for pod in state.pods:
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        if (spec.get("schedulerName") or "default-scheduler") != scheduler:
            continue
        if spec.get("nodeName") or status.get("phase", "Pending") != "Pending":
            continue
        if pod["metadata"].get("deletionTimestamp"):
            continue
        key = (pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
        event = latest.get(key)
        message = str(event.get("message") or "") if event else ""
        reasons = parse_failed_scheduling(message)
        totals.update(reasons)
        pending.append(PendingPod(f"{key[0]}/{key[1]}", message, reasons))
    pending.sort(key=lambda p: p.pod)
    issues = [
        Issue(
            "",
            "scheduler",
            "pod",
            p.pod,
            "Scheduled",
            f"Pending: {p.message}" if p.message else "Pending, no FailedScheduling event",
            _pending_fix(p, scheduler),
        )
        for p in pending[:MAX_LISTED_PODS]
    ]
    if len(pending) > MAX_LISTED_PODS:
        issues.append(
            Issue(
                "",
                "scheduler",
                "pod",
                f"{len(pending) - MAX_LISTED_PODS} more",
                "Scheduled",
                "Pending",
                "see the reasons table (knuma check -o json lists every pod)",
            )
        )
    return pending, totals, issues


# -- admission failures ----------------------------------------------------------------------------------------------


def _admission_fix(failed: FailedPod, numa_scheduler: str) -> str:
    ns, _, name = failed.pod.partition("/")
    recreate = f"then delete the pod (kubectl -n {ns} delete pod {name}); a rejected pod is never rescheduled"
    if failed.reason == "SMTAlignmentError":
        return (
            "the CPU manager's full-pcpus-only option admits only whole physical cores: request CPUs in multiples "
            f"of the node's threads per core, {recreate}"
        )
    if failed.scheduler != numa_scheduler:
        return (
            f"placed by {failed.scheduler!r}, which does not know NUMA zones: set spec.schedulerName: "
            f"{numa_scheduler} in the pod template, {recreate}"
        )
    return (
        f"placed by the NUMA-aware scheduler on data the kubelet contradicted: check the NRT freshness of "
        f"{failed.node} (above) and the scheduler's cache settings (cacheResyncPeriod), {recreate}"
    )


def check_admission_failures(state: ClusterState, numa_scheduler: str) -> tuple[list[FailedPod], list[Issue]]:
    failed: list[FailedPod] = []
    for pod in state.pods:
        status = pod.get("status") or {}
        if status.get("phase") != "Failed" or status.get("reason") not in ADMISSION_ERRORS:
            continue
        spec = pod.get("spec") or {}
        md = pod["metadata"]
        failed.append(
            FailedPod(
                f"{md.get('namespace', '')}/{md['name']}",
                str(spec.get("nodeName") or ""),
                str(status["reason"]),
                str(spec.get("schedulerName") or "default-scheduler"),
                str(status.get("message") or ""),
            )
        )
    failed.sort(key=lambda f: (f.node, f.pod))
    issues = [
        Issue(
            f.node,
            "kubelet",
            "admission",
            f.pod,
            "admitted",
            f"{f.reason}, placed by {f.scheduler}",
            _admission_fix(f, numa_scheduler),
        )
        for f in failed
    ]
    return failed, issues
