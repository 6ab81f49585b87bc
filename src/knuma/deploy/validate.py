"""`knuma validate`: can this cluster run topology-aware scheduling? Pure checks over the server version and each
worker's kubelet configuration (as its `configz` endpoint returns it).

The messages keep the upstream deployer's format, so scripts that grep them keep working::

    ERROR#000: Incorrect configuration of node "w1" area "kubelet" component "topology manager" setting "policy": \
expected "single-numa-node" detected "none"
    PASSED>>: the cluster configuration looks ok!

and add what upstream lacks: a one-line fix after each error, a report for nodes whose configuration cannot be read
(upstream skips them silently), and a non-zero exit status on failure (the CLI's job).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from knuma.deploy.options import version_tuple

__all__ = [
    "FAILED",
    "MIN_VERSION",
    "PASSED",
    "Issue",
    "check_kubelet",
    "check_version",
    "format_issue",
    "no_worker_nodes",
    "report_json",
    "report_text",
    "unreadable_node",
]

MIN_VERSION = (1, 21)
PASSED = "PASSED>>: the cluster configuration looks ok!"
FAILED = "FAILED>>: the cluster configuration does NOT look ok!"

_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_DURATION_SCALE = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True, slots=True)
class Issue:
    node: str
    """Empty for cluster-wide issues."""
    area: str
    component: str
    setting: str
    expected: str
    detected: str
    fix: str


def _q(text: str) -> str:
    """Go's %q for the strings these messages hold."""
    return json.dumps(text, ensure_ascii=False)


def format_issue(index: int, issue: Issue) -> str:
    if not issue.node:
        return (
            f"ERROR#{index:03d}: Incorrect configuration of cluster: component {_q(issue.component)} "
            f"setting {_q(issue.setting)}: expected {_q(issue.expected)} detected {_q(issue.detected)}"
        )
    return (
        f"ERROR#{index:03d}: Incorrect configuration of node {_q(issue.node)} area {_q(issue.area)} "
        f"component {_q(issue.component)} setting {_q(issue.setting)}: "
        f"expected {_q(issue.expected)} detected {_q(issue.detected)}"
    )


def report_text(issues: Iterable[Issue]) -> str:
    lines: list[str] = []
    for index, issue in enumerate(issues):
        lines += [format_issue(index, issue), f"  fix: {issue.fix}"]
    lines.append(FAILED if lines else PASSED)
    return "\n".join(lines) + "\n"


def report_json(issues: Iterable[Issue], nodes: Iterable[str] = ()) -> dict[str, Any]:
    """Upstream's shape (`success`, `errors[]{node,area,component,setting,expected,detected}`) plus `fix`, and
    the nodes that were checked."""
    errors = [asdict(issue) for issue in issues]
    out: dict[str, Any] = {"success": not errors}
    if errors:
        out["errors"] = errors
    out["nodes"] = list(nodes)
    return out


def check_version(git_version: str) -> list[Issue]:
    minimum = ".".join(map(str, MIN_VERSION))
    parsed = version_tuple(git_version)
    if parsed is None:
        return [
            Issue(
                "",
                "cluster",
                "API Version",
                "",
                "valid version",
                f"unparsable version {git_version!r}",
                "check that --kubeconfig points at a Kubernetes API server",
            )
        ]
    if parsed < MIN_VERSION:
        return [
            Issue(
                "",
                "cluster",
                "API Version",
                "",
                minimum,
                git_version,
                f"upgrade the cluster to Kubernetes {minimum} or later (the PodResources API and the Topology "
                "Manager features NUMA-aware scheduling needs)",
            )
        ]
    return []


def no_worker_nodes(selector: str) -> Issue:
    return Issue(
        "",
        "cluster",
        "",
        "",
        "worker nodes",
        "none",
        f"no node matches {selector!r}: label the nodes that run NUMA-sensitive workloads "
        f"(kubectl label node NODE {selector.split(',')[0].split('=')[0]}=) or pass --node-selector",
    )


def unreadable_node(node: str, reason: str) -> Issue:
    return Issue(
        node,
        "kubelet",
        "configuration",
        "configz",
        "readable kubelet configuration",
        reason,
        f"check that the kubelet of {node} is running and serves its configuration: "
        f"kubectl get --raw /api/v1/nodes/{node}/proxy/configz",
    )


def parse_go_duration(text: str) -> float | None:
    """Seconds from a Go duration string (`10s`, `1m0s`, `500ms`); None when unparsable."""
    if text in ("0", ""):
        return 0.0
    pos, total = 0, 0.0
    for match in _GO_DURATION.finditer(text):
        if match.start() != pos:
            return None
        total += float(match.group(1)) * _DURATION_SCALE[match.group(2)]
        pos = match.end()
    return total if pos == len(text) else None


def _reserved_cpu(config: Mapping[str, Any]) -> bool:
    """Reserved CPUs, by the explicit list or by kube/system reservations (the static policy accepts either)."""
    if str(config.get("reservedSystemCPUs") or "").strip():
        return True
    for key in ("kubeReserved", "systemReserved"):
        value = str((config.get(key) or {}).get("cpu") or "").strip()
        if value and value not in ("0", "0m"):
            return True
    return False


_RESTART = "then drain the node and restart the kubelet"


def check_kubelet(
    node: str, config: Mapping[str, Any], topology_manager_policy: str = "single-numa-node"
) -> list[Issue]:
    """The kubelet settings NUMA alignment needs, in upstream's order (CPU manager, reserved CPUs, memory manager,
    reserved memory, Topology Manager); defaults are the kubelet's when a key is absent."""
    issues: list[Issue] = []
    cpu_policy = str(config.get("cpuManagerPolicy") or "none")
    if cpu_policy != "static":
        issues.append(
            Issue(
                node,
                "kubelet",
                "CPU manager",
                "policy",
                "static",
                cpu_policy,
                f"set cpuManagerPolicy: static in the kubelet configuration, delete "
                f"/var/lib/kubelet/cpu_manager_state, {_RESTART}",
            )
        )
    period_text = str(config.get("cpuManagerReconcilePeriod") or "10s")
    period = parse_go_duration(period_text)
    if period is None or not 1.0 <= period <= 10.0:
        issues.append(
            Issue(
                node,
                "kubelet",
                "CPU manager",
                "reconcile period",
                "in range [1s, 10s]",
                period_text,
                f"set cpuManagerReconcilePeriod between 1s and 10s (e.g. 5s) in the kubelet configuration, {_RESTART}",
            )
        )
    if not _reserved_cpu(config):
        issues.append(
            Issue(
                node,
                "kubelet",
                "configuration",
                "CPU",
                "reserved some CPU cores",
                "no reserved CPU cores",
                f'set reservedSystemCPUs (e.g. "0") in the kubelet configuration: the static CPU manager needs '
                f"CPUs it never gives to pods, {_RESTART}",
            )
        )
    memory_policy = str(config.get("memoryManagerPolicy") or "None")
    if memory_policy != "Static":
        issues.append(
            Issue(
                node,
                "kubelet",
                "memory manager",
                "policy",
                "Static",
                memory_policy,
                f"set memoryManagerPolicy: Static in the kubelet configuration, delete "
                f"/var/lib/kubelet/memory_manager_state, {_RESTART}",
            )
        )
    if not config.get("reservedMemory"):
        issues.append(
            Issue(
                node,
                "kubelet",
                "configuration",
                "memory",
                "reserved memory blocks",
                "no reserved memory blocks",
                "set reservedMemory per NUMA node in the kubelet configuration (in total kubeReserved + "
                f"systemReserved + the memory.available hard eviction threshold), {_RESTART}",
            )
        )
    tm_policy = str(config.get("topologyManagerPolicy") or "none")
    if tm_policy != topology_manager_policy:
        issues.append(
            Issue(
                node,
                "kubelet",
                "topology manager",
                "policy",
                topology_manager_policy,
                tm_policy,
                f"set topologyManagerPolicy: {topology_manager_policy} in the kubelet configuration, {_RESTART}",
            )
        )
    return issues
