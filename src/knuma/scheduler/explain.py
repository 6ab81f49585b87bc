"""Explain a scheduling decision as data: per node, per plugin verdicts and scores, and the kubelet's predicted
NUMA placement (the shape `knuma schedule -o json` prints, kube-scheduler-simulator style)."""

from __future__ import annotations

import json
from typing import Any

from knuma.api.pod import Pod
from knuma.scheduler.framework.interface import NodeInfo, Profile, ScheduleResult, Status, schedule_one
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.topology.kubelet import admit
from knuma.topology.node import NodeTopology
from knuma.topology.trace import HintStep, format_hint, format_hints, log_lines

__all__ = [
    "NUMA_PLACEMENT_ANNOTATION",
    "SIMULATOR_PREFIX",
    "explain",
    "explain_result",
    "hint_trace",
    "simulator_annotations",
]


def _status(status: Status | None) -> dict[str, str] | None:
    if status is None:
        return None
    out = {"status": status.code.value, "reason": status.reason}
    if status.detail:
        out["detail"] = status.detail
    return out


def explain(profile: Profile, pod: Pod, nodes: list[NodeInfo], *, hints: bool = False) -> dict[str, Any]:
    """`hints`: add each node's Topology Manager trace (`hints`: the providers' hints and every merge, and `log`: the
    same as the kubelet's log lines)."""
    result = schedule_one(profile, pod, nodes, explain=True)
    doc = explain_result(profile, result, nodes)
    if hints:
        by_name = {n.name: n for n in nodes}
        numa = next((p for p in profile.filters if isinstance(p, NodeResourceTopologyMatch)), None)
        for entry in doc["nodes"]:
            node = by_name[entry["name"]]
            topology = node.numa
            if topology is not None:  # the pod as the NUMA plugin asked about it (`kubelet_pod`)
                entry["hints"] = hint_trace(numa.kubelet_pod(pod, node) if numa is not None else pod, topology)
    return doc


def hint_trace(pod: Pod, topology: NodeTopology) -> dict[str, Any]:
    """The kubelet model's admission of `pod` on `topology`, step by step (`knuma.topology.trace`)."""
    steps: list[HintStep] = []
    admission = admit(pod, topology, trace=steps)
    return {
        "steps": [
            {
                "container": step.container or None,
                "kind": step.kind,
                "providers": [
                    {"provider": p.provider, "resource": p.resource, "hints": format_hints(p.hints)}
                    for p in step.providers
                ],
                "bestHint": format_hint(step.best),
                "admit": step.admitted,
            }
            for step in steps
        ],
        "result": {"admitted": admission.admitted, "reason": admission.reason, "message": admission.message},
        "log": log_lines(pod.key, steps),
    }


def explain_result(profile: Profile, result: ScheduleResult, nodes: list[NodeInfo]) -> dict[str, Any]:
    numa_plugin = next((p for p in profile.filters if isinstance(p, NodeResourceTopologyMatch)), None)
    by_name = {n.name: n for n in nodes}
    out_nodes = []
    for node_result in result.nodes:
        numa: dict[str, list[int]] = {}
        kubelet: dict[str, Any] | None = None
        admission = numa_plugin.admission(result.state, node_result.name) if numa_plugin else None
        if admission is not None:
            kubelet = {"admitted": admission.admitted}
            if admission.admitted:
                numa = {p.name: list(p.numa_ids) for p in admission.placements}
            else:
                kubelet |= {"reason": admission.reason, "message": admission.message}
        topology = by_name[node_result.name].topology
        entry: dict[str, Any] = {
            "name": node_result.name,
            "filter": _status(node_result.filter),
            "score": node_result.score,
            "numa": numa,
            "plugins": {
                name: {"filter": _status(plugin.filter), "score": plugin.score}
                for name, plugin in node_result.plugins.items()
            },
            "topologyManager": None
            if topology is None
            else {"policy": topology.config.policy.value, "scope": topology.config.scope.value},
        }
        if kubelet is not None:
            entry["kubelet"] = kubelet
        out_nodes.append(entry)
    doc: dict[str, Any] = {
        "pod": result.pod.key,
        "qosClass": result.pod.qos.value,
        "profile": profile.name,
        "selected": result.selected,
        "nodes": out_nodes,
    }
    if result.selected is None:
        doc["message"] = result.failure_summary()
    return doc


SIMULATOR_PREFIX = "kube-scheduler-simulator.sigs.k8s.io/"
NUMA_PLACEMENT_ANNOTATION = "knuma.io/numa-placement"


def simulator_annotations(profile: Profile, result: ScheduleResult) -> dict[str, str]:
    """The per-plugin results as kube-scheduler-simulator annotates pods (`filter-result`: node → plugin → "passed"
    or the reason; `score-result` and `finalscore-result`: node → plugin → score, raw and weighted;
    `selected-node`), plus knuma's predicted NUMA placement on the selected node (container → NUMA ids)."""
    weights = {plugin.name: weight for plugin, weight in profile.scorers}
    filters: dict[str, dict[str, str]] = {}
    scores: dict[str, dict[str, str]] = {}
    final: dict[str, dict[str, str]] = {}
    for node in result.nodes:
        filters[node.name] = {
            name: "passed" if plugin.filter.ok else plugin.filter.reason
            for name, plugin in node.plugins.items()
            if plugin.filter is not None
        }
        if node.filter.ok:
            raw = {name: p.score for name, p in node.plugins.items() if p.score is not None}
            scores[node.name] = {name: str(score) for name, score in raw.items()}
            final[node.name] = {name: str(score * weights.get(name, 1)) for name, score in raw.items()}
    out = {
        SIMULATOR_PREFIX + "filter-result": json.dumps(filters, sort_keys=True),
        SIMULATOR_PREFIX + "score-result": json.dumps(scores, sort_keys=True),
        SIMULATOR_PREFIX + "finalscore-result": json.dumps(final, sort_keys=True),
        SIMULATOR_PREFIX + "selected-node": result.selected or "",
    }
    numa_plugin = next((p for p in profile.filters if isinstance(p, NodeResourceTopologyMatch)), None)
    if result.selected is not None and numa_plugin is not None:
        admission = numa_plugin.admission(result.state, result.selected)
        if admission is not None and admission.admitted:
            placement = {p.name: list(p.numa_ids) for p in admission.placements}
            out[NUMA_PLACEMENT_ANNOTATION] = json.dumps(placement, sort_keys=True)
    return out
