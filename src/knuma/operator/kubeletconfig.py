"""The kubeletconfig controller: each node group's kubelet settings, distilled into the ConfigMap its exporters read.

numaresources-operator's `kubeletconfig` controller turns OpenShift `KubeletConfig` objects into one ConfigMap per
machine config pool (`numaresourcesoperator-<pool>`, key `config.yaml`, RTE's format) that the pool's exporter
DaemonSet mounts, so that the NRT attributes say what the kubelets run. A plain cluster has no KubeletConfig objects;
what it has is each kubelet's live configuration behind the node proxy (`/api/v1/nodes/N/proxy/configz`). So, per
node group:

1. the `configz` of the group's nodes, when at least one can be read (the truth: a KubeletConfig may not be rolled
   out yet); the settings most nodes share win, and the nodes that differ are reported (a group's exporters get one
   file, so a group should be uniform, as an OpenShift pool is);
2. otherwise, where the cluster serves them, the `KubeletConfig` whose `machineConfigPoolSelector` selects the
   group's pool (`MachineConfigPool` labels), as upstream reads them;
3. otherwise nothing: the file only carries `podExclude`, and the exporter falls back to the kubelet file it mounts.

Distilled settings: the Topology Manager policy, scope and policy options, the CPU manager policy and policy options,
the memory manager policy and the reserved CPUs (`kubelet:` section; knuma's exporter reads all of them, RTE reads the
first two). The exporter watches the file, and the kubelet updates a mounted ConfigMap in place, so a kubelet change
reaches the published NRT attributes without restarting anything.

When the operator looks: upstream's controller reconciles on KubeletConfig events. knuma's manager
(`knuma.operator.manager`) watches KubeletConfigs where the cluster serves them and Nodes, and a pass follows any
KubeletConfig change and any Node change `node_signature` says matters (a node added to or removed from a group, a
reboot, new reservations); configz itself raises no event, so a kubelet reconfigured in place without any of those is
picked up by the periodic resync (`--resync-period`).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2
import yaml

from knuma.api.numaresources import NodeGroup
from knuma.api.types import JsonObj
from knuma.kube import rest
from knuma.kube.configz import ConfigzError, read_configz_many
from knuma.kube.errors import Forbidden, NotFound

__all__ = [
    "KUBELETCONFIGS_PATH",
    "KUBELET_KEYS",
    "LABEL_NAME",
    "LABEL_POOL",
    "GroupKubelet",
    "choose",
    "distil",
    "group_selector",
    "kubeletconfig_for_pool",
    "node_signature",
    "read_group_kubelet",
    "read_openshift_sources",
    "render_config",
]

log = logging.getLogger("knuma.operator.kubeletconfig")

KUBELET_KEYS = (
    "topologyManagerPolicy",
    "topologyManagerScope",
    "topologyManagerPolicyOptions",
    "cpuManagerPolicy",
    "cpuManagerPolicyOptions",
    "memoryManagerPolicy",
    "reservedSystemCPUs",
)
LABEL_NAME = "numaresourcesoperator.nodetopology.openshift.io/name"
LABEL_POOL = "nodegroup.nodetopology.openshift.io/machineconfigpool"
_MCO = "/apis/machineconfiguration.openshift.io/v1"
KUBELETCONFIGS_PATH = f"{_MCO}/kubeletconfigs"


@dataclass(frozen=True, slots=True)
class GroupKubelet:
    """A node group's distilled kubelet settings and where they came from."""

    settings: dict[str, Any]
    source: str
    """`configz of N node(s)`, `KubeletConfig NAME`, or `none`."""
    warnings: list[str] = field(default_factory=list)


def distil(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings the exporter publishes, from a KubeletConfiguration (configz or `KubeletConfig.spec.kubeletConfig`);
    absent and empty keys are left out, so the kubelet's defaults apply."""
    out: dict[str, Any] = {}
    for key in KUBELET_KEYS:
        value = config.get(key)
        if value in (None, "", {}):
            continue
        out[key] = {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else str(value)
    return out


def choose(per_node: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """The settings most nodes share (ties: those of the first node by name), and a warning per node that differs."""
    if not per_node:
        return {}, []
    keyed = {node: yaml.safe_dump(dict(settings), sort_keys=True) for node, settings in per_node.items()}
    counts = Counter(keyed.values())
    top = max(counts.values())
    winners = sorted(node for node, text in keyed.items() if counts[text] == top)
    winner = keyed[winners[0]]
    chosen = dict(per_node[winners[0]])
    warnings = [
        f"node {node} runs other kubelet settings than the rest of its group ({_diff(chosen, per_node[node])}); "
        "the group's exporters publish the majority's"
        for node in sorted(per_node)
        if keyed[node] != winner
    ]
    return chosen, warnings


def _diff(want: Mapping[str, Any], have: Mapping[str, Any]) -> str:
    keys = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
    return ", ".join(f"{k}: {have.get(k, '-')} instead of {want.get(k, '-')}" for k in keys)


def render_config(kubelet: Mapping[str, Any], pod_excludes: Sequence[tuple[str, str]] = ()) -> str:
    """The exporter's `config.yaml` (RTE's format: `kubelet:` and `podExclude:`)."""
    doc: dict[str, Any] = {}
    if kubelet:
        doc["kubelet"] = dict(kubelet)
    if pod_excludes:
        doc["podExclude"] = [{"namespacePattern": ns, "namePattern": name} for ns, name in pod_excludes]
    return yaml.safe_dump(doc, sort_keys=False) if doc else "{}\n"


def group_selector(group: NodeGroup) -> str:
    """The label selector of a node group's nodes (as its DaemonSet selects them)."""
    terms = [f"{k}={v}" if v else k for k, v in sorted(group.node_selector.items())]
    for expr in group.match_expressions:
        key, op, values = expr.get("key", ""), expr.get("operator", ""), list(expr.get("values") or [])
        if op == "In":
            terms.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            terms.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            terms.append(key)
        elif op == "DoesNotExist":
            terms.append(f"!{key}")
    return ",".join(terms)


def _labels_match(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    match = selector.get("matchLabels") or {}
    return bool(match) and all(labels.get(k) == v for k, v in match.items())


def kubeletconfig_for_pool(kubeletconfigs: Sequence[JsonObj], pools: Sequence[JsonObj], pool: str) -> JsonObj | None:
    """The OpenShift KubeletConfig whose `machineConfigPoolSelector` selects the MachineConfigPool `pool` (upstream:
    `findKubeletConfigForMCP`); the first by name when several do."""
    mcp = next((p for p in pools if p["metadata"]["name"] == pool), None)
    if mcp is None:
        return None
    labels = mcp["metadata"].get("labels") or {}
    for kc in sorted(kubeletconfigs, key=lambda k: k["metadata"]["name"]):
        selector = (kc.get("spec") or {}).get("machineConfigPoolSelector") or {}
        if _labels_match(selector, labels):
            return kc
    return None


def node_signature(node: Mapping[str, Any]) -> tuple[Any, ...]:
    """What of a Node can change a group's kubelet settings, for the Node watch: its labels (group membership), its
    capacity and allocatable (`reservedSystemCPUs` and the memory reservations change them), its `nodeInfo` (a reboot
    changes `bootID`, a kubelet upgrade the version) and its conditions' status and transition times (a kubelet
    restart that takes long enough flips Ready). Heartbeats (`lastHeartbeatTime`, a new resourceVersion) change
    nothing here, so the many status updates of a large cluster do not each cost a pass."""
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    conditions = tuple(
        (c.get("type"), c.get("status"), c.get("lastTransitionTime")) for c in status.get("conditions") or ()
    )
    return (
        tuple(sorted((meta.get("labels") or {}).items())),
        repr(status.get("capacity")),
        repr(status.get("allocatable")),
        repr(status.get("nodeInfo")),
        conditions,
    )


def _list(http: httpx2.Client, path: str, params: Mapping[str, str] | None = None) -> list[JsonObj] | None:
    try:
        listed = rest.request_sync(http, "GET", path, params=dict(params or {}))
    except (NotFound, Forbidden):
        return None  # not served here, or not shown to this user
    return list(listed.get("items") or [])


def read_openshift_sources(http: httpx2.Client) -> tuple[list[JsonObj], list[JsonObj]]:
    """KubeletConfigs and MachineConfigPools, or empty lists where the cluster does not serve (or show) them."""
    return _list(http, KUBELETCONFIGS_PATH) or [], _list(http, f"{_MCO}/machineconfigpools") or []


def read_group_kubelet(
    http: httpx2.Client, group: NodeGroup, kubeletconfigs: Sequence[JsonObj] = (), pools: Sequence[JsonObj] = ()
) -> GroupKubelet:
    """The group's settings from its nodes' configz, else from its pool's KubeletConfig, else none."""
    nodes = _list(http, "/api/v1/nodes", {"labelSelector": group_selector(group)}) or []
    names = sorted(n["metadata"]["name"] for n in nodes)
    configs = read_configz_many(http, names) if names else {}
    readable = {node: distil(c) for node, c in configs.items() if not isinstance(c, ConfigzError)}
    warnings = [f"node {node}: cannot read configz: {c}" for node, c in configs.items() if isinstance(c, ConfigzError)]
    if readable:
        settings, differ = choose(readable)
        return GroupKubelet(settings, f"configz of {len(readable)} node(s)", warnings + differ)
    kc = kubeletconfig_for_pool(kubeletconfigs, pools, group.pool)
    if kc is not None:
        payload = (kc.get("spec") or {}).get("kubeletConfig") or {}
        return GroupKubelet(distil(payload), f"KubeletConfig {kc['metadata']['name']}", warnings)
    return GroupKubelet({}, "none", warnings)
