"""Pod garbage collection: pods whose node is gone, and finished pods beyond a threshold, as kube-controller-manager's
PodGC (`pkg/controller/podgc/gc_controller.go`: `gcOrphaned`, with the quarantine of `discoverDeletedNodes`,
`markFailedAndDeletePod`, and `gcTerminated`).

A pod bound to a node that no longer exists has no kubelet to stop it: deleted, it would stay `Terminating` for
ever (graceful deletion waits for the kubelet, `knuma.local.apiserver.graceful`). Once the node has been missing for
the quarantine (40 s upstream, so a node that is re-registering is not mistaken for a deleted one), every pod bound
to it is marked `Failed` with the `DisruptionTarget` condition (reason `DeletionByPodGC`) and deleted with a grace
period of 0. Checked every 20 s (`gcCheckPeriod`).

Finished pods (`Succeeded` or `Failed`) beyond the threshold (`--terminated-pod-gc-threshold`, 12500) are deleted,
evicted ones first (`Failed` with reason `Evicted`, the kubelet's `PodIsEvicted`), then oldest first
(`gcTerminated`'s `byEvictionAndCreationTimestamp`, name breaking ties), so a long run with churn does not pile up
completed pods and the finished pods of Jobs and controllers are kept longest.

Pods being deleted on a node that is not Ready and carries the `node.kubernetes.io/out-of-service` taint (what an
administrator adds once a node is known to be down, non-graceful node shutdown) are marked `Failed` and deleted with
a grace period of 0 (`gcTerminating`, oldest first): their kubelet will never confirm the deletion.

Not modelled: `gcUnscheduledTerminating`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from knuma.api.types import JsonObj
from knuma.local.controllers.nodelifecycle import ready_status

__all__ = [
    "CHECK_PERIOD",
    "OUT_OF_SERVICE",
    "QUARANTINE",
    "TERMINATED_THRESHOLD",
    "MissingNodes",
    "orphan_status",
    "out_of_service_terminating",
    "terminated_over",
]

CHECK_PERIOD = 20.0
"""`gcCheckPeriod`."""
TERMINATED_THRESHOLD = 12500
"""`--terminated-pod-gc-threshold`'s default."""
QUARANTINE = 40.0
"""`quarantineTime`: how long a node must be missing before its pods are collected."""
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
REASON = "DeletionByPodGC"
MESSAGE = "PodGC: node no longer exists"


@dataclass
class MissingNodes:
    """The nodes pods are bound to but that do not exist, with when each was first seen missing."""

    quarantine: float = QUARANTINE
    since: dict[str, float] = field(default_factory=dict)

    def orphans(self, pods: Iterable[Mapping[str, Any]], nodes: Iterable[str], now: float) -> list[Mapping[str, Any]]:
        """The pods to collect now: bound to a node missing for at least the quarantine. A node that appears
        again leaves the quarantine."""
        existing = set(nodes)
        bound = [p for p in pods if (p.get("spec") or {}).get("nodeName")]
        missing = {p["spec"]["nodeName"] for p in bound} - existing
        self.since = {name: self.since.get(name, now) for name in missing}
        deleted = {name for name, first in self.since.items() if now - first >= self.quarantine}
        return [p for p in bound if p["spec"]["nodeName"] in deleted]


def terminated_over(pods: Iterable[Mapping[str, Any]], threshold: int) -> list[Mapping[str, Any]]:
    """`gcTerminated`: the finished pods beyond `threshold`, evicted first, then oldest first (creation time, then
    name: `byEvictionAndCreationTimestamp`)."""
    finished = [p for p in pods if (p.get("status") or {}).get("phase") in ("Succeeded", "Failed")]
    excess = len(finished) - threshold
    if excess <= 0:
        return []
    finished.sort(
        key=lambda p: (not _evicted(p), str((p.get("metadata") or {}).get("creationTimestamp") or ""), _name(p))
    )
    return finished[:excess]


def _evicted(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Failed" and status.get("reason") == "Evicted"


def _name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name") or "")


def out_of_service_terminating(
    pods: Iterable[Mapping[str, Any]], nodes: Mapping[str, Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """`gcTerminating`: the pods being deleted on a node that is not Ready and has the `OUT_OF_SERVICE` taint,
    oldest first (`byEvictionAndCreationTimestamp`)."""
    out = []
    for pod in pods:
        if not (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        node = nodes.get(str((pod.get("spec") or {}).get("nodeName") or ""))
        if node is None or ready_status(node) == "True":
            continue
        if any(t.get("key") == OUT_OF_SERVICE for t in (node.get("spec") or {}).get("taints") or []):
            out.append(pod)
    out.sort(key=lambda p: (not _evicted(p), str((p.get("metadata") or {}).get("creationTimestamp") or ""), _name(p)))
    return out


def orphan_status(pod: Mapping[str, Any], now: str, *, condition: bool = True) -> JsonObj | None:
    """The status `markFailedAndDeletePodWithCondition` writes before the delete, as a strategic merge patch
    (conditions merge by type): `Failed`, with the `DisruptionTarget` condition unless `condition` is False
    (`gcTerminating` passes none); None for a pod already finished: it is only deleted."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return None
    if not condition:
        return {"status": {"phase": "Failed"}}
    target = {"type": "DisruptionTarget", "status": "True", "reason": REASON, "message": MESSAGE}
    return {"status": {"phase": "Failed", "conditions": [{**target, "lastTransitionTime": now}]}}
