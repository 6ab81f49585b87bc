"""Per-node checks of `knuma check`: the node publishes an NRT object, the object is fresh, its Topology Manager
attributes are the kubelet's, and an exporter pod runs on the node (or, on `knuma up`, the exporter process that
stands for one: `knuma.deploy.check.processes`). Pure functions of a `ClusterState`.

"Fresh" is the pod-set fingerprint test nrovalidate's `schedcache` validator and the scheduler's cache use
(`nodeTopologyPodsFingerprint`, `knuma.api.fingerprint`): the NRT reflects the node's pods when the fingerprint it
publishes equals the one computed from the pods the API server has bound to the node and not terminated (with the
`with-exclusive-resources` method, only those holding exclusive CPUs, memory or devices). A fingerprint is the only
freshness signal the object carries: the exporter writes nothing when nothing changed, so the time of the last write
says nothing. An NRT without a fingerprint (exporter run with `--no-pods-fingerprint`) is reported as unknown, not
stale.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from knuma.api.fingerprint import Method, compute
from knuma.api.nrt import ATTR_FINGERPRINT_METHOD, ATTR_POLICY, ATTR_SCOPE, NodeResourceTopology, NRTError
from knuma.api.pod import Pod, PodError
from knuma.api.types import JsonObj
from knuma.deploy.check.processes import RUNNING, Process
from knuma.deploy.check.state import ClusterState
from knuma.deploy.validate import Issue
from knuma.scheduler.cache.reservation import holds_exclusive_resources
from knuma.topology.node import NodeTopology

__all__ = ["NodeRow", "check_nodes", "expected_fingerprint", "exporter_pods", "matches_selector", "stale_nodes"]

TERMINAL = ("Succeeded", "Failed")
_RESTART_EXPORTER = "kubectl -n {ns} delete pod {pod} (its DaemonSet recreates it)"


@dataclass(frozen=True, slots=True)
class NodeRow:
    node: str
    nrt: str
    """`present` / `missing`."""
    fresh: str
    """`yes` / `stale` / `unknown` (no fingerprint published) / `-` (no NRT)."""
    topology_manager: str
    """What the kubelet runs (`single-numa-node/pod`), with `!= NRT x/y` when the NRT says otherwise."""
    exporter: str
    """`ns/pod` of the exporter running there, or what is wrong with it."""


def matches_selector(selector: str, labels: Mapping[str, str]) -> bool:
    """Equality-based label selectors (`a=b,c=d`, `a!=b`, `a`), enough for the exporters' pod labels."""
    for term in (t.strip() for t in selector.split(",") if t.strip()):
        if "!=" in term:
            key, _, value = term.partition("!=")
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in term:
            key, _, value = term.replace("==", "=").partition("=")
            if labels.get(key.strip()) != value.strip():
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def exporter_pods(state: ClusterState) -> dict[str, list[JsonObj]]:
    """Exporter pods by node name (pods matching one of the exporter selectors, bound to a node)."""
    out: dict[str, list[JsonObj]] = {}
    for pod in state.pods:
        labels = pod["metadata"].get("labels") or {}
        node = (pod.get("spec") or {}).get("nodeName")
        if node and any(matches_selector(s, labels) for s in state.exporter_selectors):
            out.setdefault(node, []).append(pod)
    return out


def _ref(obj: JsonObj) -> str:
    md = obj["metadata"]
    return f"{md.get('namespace', '')}/{md['name']}"


def _active_pods_on(state: ClusterState, node: str) -> list[JsonObj]:
    return [
        p
        for p in state.pods
        if (p.get("spec") or {}).get("nodeName") == node and (p.get("status") or {}).get("phase") not in TERMINAL
    ]


def expected_fingerprint(nrt: NodeResourceTopology, pods: Iterable[JsonObj]) -> tuple[str, int]:
    """The fingerprint the exporter would publish for `pods` (and how many pods enter it), by the NRT's method."""
    chosen = list(pods)
    if nrt.attributes.get(ATTR_FINGERPRINT_METHOD) == Method.WITH_EXCLUSIVE_RESOURCES.value:
        topology = NodeTopology.from_nrt(nrt)
        kept = []
        for pod in chosen:
            try:
                model = Pod.from_manifest(pod)
            except PodError:
                kept.append(pod)  # cannot tell: count it, as the exporter keeps pods it cannot classify
                continue
            if holds_exclusive_resources(model, topology):
                kept.append(pod)
        chosen = kept
    names = [(p["metadata"].get("namespace", ""), p["metadata"]["name"]) for p in chosen]
    return compute(names), len(names)


def _parsed_nrt(state: ClusterState, node: str) -> NodeResourceTopology | None:
    raw = state.nrts.get(node)
    if raw is None:
        return None
    try:
        return NodeResourceTopology.from_dict(raw)
    except NRTError:
        return None


def stale_nodes(state: ClusterState) -> list[str]:
    """Nodes whose NRT publishes a fingerprint that does not match their pods."""
    stale = []
    for node in state.node_names:
        nrt = _parsed_nrt(state, node)
        if nrt is None or not nrt.fingerprint:
            continue
        expected, _ = expected_fingerprint(nrt, _active_pods_on(state, node))
        if expected != nrt.fingerprint:
            stale.append(node)
    return stale


def _kubelet_tm(config: Mapping[str, Any]) -> tuple[str, str]:
    """The kubelet's Topology Manager policy and scope, with its defaults."""
    return str(config.get("topologyManagerPolicy") or "none"), str(config.get("topologyManagerScope") or "container")


def _exporter_issue(node: str, pods: list[JsonObj], process: Process | None) -> tuple[str, Issue | None]:
    """The EXPORTER column and what is wrong with the node's exporter. An exporter pod wins over a process of
    `knuma up` (which stands in for the pods of a stack deployed on it)."""
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    if running:
        return _ref(running[0]), None
    if not pods and process is not None:
        if process.state == RUNNING:
            return process.describe(), None
        return process.describe(), Issue(
            node, "exporter", "process", "state", RUNNING, process.describe(), process.what_to_do()
        )
    if not pods:
        return "missing", Issue(
            node,
            "exporter",
            "pod",
            "phase",
            "Running",
            "no exporter pod",
            f"no exporter pod is scheduled on {node}: check that the exporter DaemonSet's nodeSelector and "
            f"tolerations select the node (kubectl get ds -A -l app.kubernetes.io/name=knuma-exporter -o wide), or "
            "deploy it (knuma deploy updater)",
        )
    pod = pods[0]
    phase = (pod.get("status") or {}).get("phase") or "Unknown"
    ns, name = pod["metadata"].get("namespace", ""), pod["metadata"]["name"]
    return f"{phase} {ns}/{name}", Issue(
        node,
        "exporter",
        "pod",
        "phase",
        "Running",
        f"{phase} ({ns}/{name})",
        f"see why: kubectl -n {ns} describe pod {name}; kubectl -n {ns} logs {name}",
    )


def _configz_issue(node: str, reason: str) -> Issue:
    fix = (
        f"check that the kubelet of {node} is running and serves its configuration: "
        f"kubectl get --raw /api/v1/nodes/{node}/proxy/configz"
    )
    if "403" in reason or "forbidden" in reason.lower():
        fix = (
            "the user may not read the kubelet configuration: grant a ClusterRole rule "
            '{apiGroups: [""], resources: [nodes/proxy], verbs: [get]}'
        )
    return Issue(node, "kubelet", "configuration", "configz", "readable kubelet configuration", reason, fix)


def _exporter_hint(pods: list[JsonObj], process: Process | None) -> str:
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    if not running and process is not None and not pods:
        if process.state != RUNNING:
            return f"its exporter is a {process.describe()}: {process.what_to_do()}"
        return f"check the log of its exporter ({process.describe()}): {process.log}"
    if not running:
        return "start an exporter on the node"
    md = running[0]["metadata"]
    return f"check its logs (kubectl -n {md.get('namespace', '')} logs {md['name']}) or restart it: " + (
        _RESTART_EXPORTER.format(ns=md.get("namespace", ""), pod=md["name"])
    )


def _check_node(state: ClusterState, node: str, exporters: list[JsonObj]) -> tuple[NodeRow, list[Issue]]:
    issues: list[Issue] = []
    process = state.processes.exporter_of(node) if state.processes is not None else None
    exporter, exporter_problem = _exporter_issue(node, exporters, process)
    config = state.configz.get(node, "not read")
    kubelet_tm = "?"
    if isinstance(config, str):
        issues.append(_configz_issue(node, config))
    else:
        kubelet_tm = "/".join(_kubelet_tm(config))
    raw = state.nrts.get(node)
    nrt = _parsed_nrt(state, node)
    if raw is None:
        issues.append(
            Issue(
                node,
                "nrt",
                "NodeResourceTopology",
                "object",
                "present",
                "missing",
                f"no exporter has published the node's NRT: {_exporter_hint(exporters, process)}",
            )
        )
        row = NodeRow(node, "missing", "-", kubelet_tm, exporter)
    elif nrt is None:
        issues.append(
            Issue(
                node,
                "nrt",
                "NodeResourceTopology",
                "object",
                "valid",
                "unreadable",
                f"kubectl get noderesourcetopology {node} -o yaml shows a malformed object: "
                f"{_exporter_hint(exporters, process)}",
            )
        )
        row = NodeRow(node, "invalid", "-", kubelet_tm, exporter)
    else:
        fresh = "unknown"
        if nrt.fingerprint:
            expected, count = expected_fingerprint(nrt, _active_pods_on(state, node))
            fresh = "yes" if expected == nrt.fingerprint else "stale"
            if fresh == "stale":
                issues.append(
                    Issue(
                        node,
                        "nrt",
                        "NodeResourceTopology",
                        "pods fingerprint",
                        f"{expected} ({count} pods)",
                        nrt.fingerprint,
                        "the NRT does not reflect the node's pods and the scheduler keeps reserving for them: "
                        + _exporter_hint(exporters, process),
                    )
                )
        tm_text = kubelet_tm
        if not isinstance(config, str):
            policy, scope = _kubelet_tm(config)
            published = (nrt.attributes.get(ATTR_POLICY, ""), nrt.attributes.get(ATTR_SCOPE, ""))
            for setting, want, have in (("policy", policy, published[0]), ("scope", scope, published[1])):
                if want != have:
                    tm_text = f"{kubelet_tm} != NRT {published[0] or '-'}/{published[1] or '-'}"
                    issues.append(
                        Issue(
                            node,
                            "nrt",
                            "topology manager",
                            setting,
                            want,
                            have or "not published",
                            f"the scheduler models the node with the NRT's {setting}, not the kubelet's: give the "
                            "exporter the kubelet's configuration (--kubelet-config-file, or the config ConfigMap "
                            f"the operator renders per node group) and {_exporter_hint(exporters, process)}",
                        )
                    )
        row = NodeRow(node, "present", fresh, tm_text, exporter)
    if exporter_problem is not None:
        issues.append(exporter_problem)
    return row, issues


def check_nodes(state: ClusterState) -> tuple[list[NodeRow], list[Issue]]:
    """One row per node and the problems found, nodes in name order."""
    issues: list[Issue] = []
    if not state.nrt_crd_served:
        issues.append(
            Issue(
                "",
                "cluster",
                "NodeResourceTopology",
                "installed",
                "true",
                "false",
                "install the NRT CRD: knuma deploy api (or knuma deploy for the whole stack)",
            )
        )
    if not state.nodes:
        issues.append(
            Issue(
                "",
                "cluster",
                "nodes",
                "",
                "worker nodes",
                "none",
                "no node matches the selector: pass -l with the label of the nodes that run NUMA-aligned workloads",
            )
        )
    by_node = exporter_pods(state)
    rows = []
    for node in state.node_names:
        row, found = _check_node(state, node, by_node.get(node, []))
        rows.append(row)
        issues += found
    return rows, issues
