"""Scheduler plugins by name: the extension points each one has in kube-scheduler (and scheduler-plugins), which of
them knuma runs, and kube-scheduler's default plugin set.

A configuration may name any plugin listed here. Plugins knuma runs are built into profiles; the others (volume,
inter-pod and topology-spread plugins, preemption, image locality) are accepted so that configuration files
written for kube-scheduler load unchanged, and are reported as not run. DynamicResources runs on knuma's
NUMA-aligned device allocator (`knuma.scheduler.plugins.dynamic_resources`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DEFAULT_MULTI_POINT",
    "EXTENSION_POINTS",
    "PLUGINS",
    "PluginInfo",
    "implemented_names",
    "not_run_names",
]

EXTENSION_POINTS = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)
"""kube-scheduler's extension points, as configuration keys (`multiPoint` expands into each)."""


@dataclass(frozen=True)
class PluginInfo:
    name: str
    points: frozenset[str]
    """The extension points the plugin has upstream (what `multiPoint` enables)."""
    runs: bool
    """knuma runs it (as a framework plugin, or in the daemon: queue sort, binding, reservation)."""
    what: str
    """What it does, for summaries and warnings."""


def _info(name: str, points: str, runs: bool, what: str) -> PluginInfo:
    return PluginInfo(name, frozenset(points.split()), runs, what)


PLUGINS: dict[str, PluginInfo] = {
    p.name: p
    for p in (
        _info("SchedulingGates", "preEnqueue", True, "holds pods with spec.schedulingGates"),
        _info("PrioritySort", "queueSort", True, "queue order: priority, then arrival"),
        _info("NodeUnschedulable", "filter", True, "cordoned nodes"),
        _info("NodeName", "filter", True, "spec.nodeName"),
        _info("TaintToleration", "filter preScore score", True, "taints and tolerations"),
        _info("NodeAffinity", "preFilter filter preScore score", True, "nodeSelector and node affinity"),
        _info("NodePorts", "preFilter filter", True, "host ports"),
        _info("NodeResourcesFit", "preFilter filter preScore score", True, "node-level requests"),
        _info(
            "NodeResourceTopologyMatch",
            "preFilter filter score reserve postBind",
            True,
            "NUMA zones (the kubelet Topology Manager model)",
        ),
        _info("DefaultBinder", "bind", True, "binds through pods/binding"),
        _info("VolumeRestrictions", "preFilter filter", False, "volume access modes"),
        _info("NodeVolumeLimits", "preFilter filter", False, "CSI volume limits"),
        _info("VolumeBinding", "preFilter filter reserve preBind preScore score", False, "PVC binding and topology"),
        _info("VolumeZone", "preFilter filter", False, "volume zones"),
        _info("PodTopologySpread", "preFilter filter preScore score", True, "topology spread constraints"),
        _info("InterPodAffinity", "preFilter filter preScore score", True, "pod affinity and anti-affinity"),
        _info(
            "DynamicResources",
            "preEnqueue preFilter filter postFilter preScore score reserve preBind",
            True,
            "resource claims (DRA), allocated NUMA-aligned",
        ),
        _info("DefaultPreemption", "postFilter", True, "preemption, NUMA-aware with knuma's NRT cache"),
        _info("NodeResourcesBalancedAllocation", "preScore score", True, "balanced node-level allocation"),
        _info("ImageLocality", "score", False, "images already on the node"),
        _info("KNIDebug", "filter", False, "numaresources-operator debug logging"),
    )
}

DEFAULT_MULTI_POINT: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 0),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
)
"""kube-scheduler's default `multiPoint` plugins (v1 and v1beta3) with their weights (0: unset), DynamicResources
included (GA and on by default since Kubernetes 1.34)."""


def implemented_names() -> list[str]:
    return [p.name for p in PLUGINS.values() if p.runs]


def not_run_names() -> list[str]:
    return [p.name for p in PLUGINS.values() if not p.runs]
