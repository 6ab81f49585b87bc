"""The ReplicaSet controller's decisions: how many pods to create or delete, and the status to report.

As kube-controller-manager's: a ReplicaSet owns the pods whose controller `ownerReference` points at it; pods that
are terminal (`Succeeded`, `Failed`) or being deleted are not *active*, so a pod the kubelet rejects with
`TopologyAffinityError` is replaced by a new one, which the same topology-unaware scheduler may send to the same kind
of node, which rejects it again: the runaway pod creation real clusters show.

One difference, on purpose: after each newly failed pod, the next replacement waits 1 s, then 2 s, 4 s ... up to
60 s (reset once a pod of the ReplicaSet runs), so a laptop cluster shows the runaway without being buried by it
(kube-controller-manager only caps a sync at 500 creations and leaves failed pods to the pod GC at 12500).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from knuma.api.pod import is_pod_ready
from knuma.api.types import JsonObj, meta_of

__all__ = [
    "MAX_BACKOFF",
    "Backoff",
    "ReplicaSetPlan",
    "active",
    "controller_ref",
    "owned_by",
    "plan_replicaset",
    "pod_from_template",
]

BURST = 500
"""kube-controller-manager's `burstReplicas`: at most this many creations or deletions per sync."""
MAX_BACKOFF = 60.0
TERMINAL = ("Succeeded", "Failed")


@dataclass
class Backoff:
    """Replacement pacing of one ReplicaSet after pods failed."""

    failed_seen: set[str] = field(default_factory=set)
    running_seen: set[str] = field(default_factory=set)
    streak: int = 0
    not_before: float = 0.0

    def observe(self, pods: Sequence[Mapping[str, Any]], now: float) -> None:
        """Count newly failed pods (each lengthens the wait); a newly running pod ends the streak."""
        for pod in pods:
            uid = str((pod.get("metadata") or {}).get("uid"))
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Failed" and uid not in self.failed_seen:
                self.failed_seen.add(uid)
                self.streak += 1
                self.not_before = now + min(MAX_BACKOFF, 2 ** (self.streak - 1))
            elif phase == "Running" and uid not in self.running_seen:
                self.running_seen.add(uid)
                self.streak = 0


@dataclass(frozen=True)
class ReplicaSetPlan:
    create: int = 0
    delete: tuple[str, ...] = ()
    status: JsonObj = field(default_factory=dict)
    retry_after: float | None = None
    """Seconds until creations are allowed again (pacing after failures)."""


def controller_ref(owner: Mapping[str, Any], kind: str, api_version: str = "apps/v1") -> JsonObj:
    """`metav1.NewControllerRef`: the owner reference a controller puts on what it creates (controller, blocking
    the owner's foreground deletion)."""
    meta = meta_of(owner)
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def owned_by(pod: Mapping[str, Any], owner_uid: str) -> bool:
    return any(
        ref.get("uid") == owner_uid and ref.get("controller") for ref in meta_of(pod).get("ownerReferences") or []
    )


def active(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") not in TERMINAL and not meta_of(pod).get("deletionTimestamp")


def _deletion_rank(pod: Mapping[str, Any]) -> tuple[int, int, int, str]:
    """Delete first: unscheduled, then pending, then not ready, then the newest (`ActivePodsWithRanks`)."""
    spec = pod.get("spec") or {}
    phase = (pod.get("status") or {}).get("phase")
    created = str(meta_of(pod).get("creationTimestamp") or "")
    return (
        0 if not spec.get("nodeName") else 1,
        0 if phase == "Pending" else 1,
        0 if not is_pod_ready(pod) else 1,
        "".join(chr(0x10FFFF - ord(c)) for c in created),
    )


def plan_replicaset(
    rs: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], backoff: Backoff, now: float
) -> ReplicaSetPlan:
    """What to do for `rs`, given the pods it owns."""
    backoff.observe(pods, now)
    live = [p for p in pods if active(p)]
    want = int((rs.get("spec") or {}).get("replicas", 1) or 0)
    diff = want - len(live)
    create, retry = 0, None
    delete: tuple[str, ...] = ()
    if diff > 0:
        wait = backoff.not_before - now
        if wait > 0:
            retry = wait
        else:
            create = min(diff, BURST)
    elif diff < 0:
        delete = tuple(str(meta_of(p).get("name")) for p in sorted(live, key=_deletion_rank)[: min(-diff, BURST)])
    ready_count = sum(1 for p in live if is_pod_ready(p))
    status = {
        "replicas": len(live),
        "fullyLabeledReplicas": len(live),
        "readyReplicas": ready_count,
        "availableReplicas": ready_count,
        "observedGeneration": meta_of(rs).get("generation", 1),
    }
    return ReplicaSetPlan(create, delete, status, retry)


def pod_from_template(rs: Mapping[str, Any]) -> JsonObj:
    """A new pod for `rs`: its template, named `<rs>-<random>`, controlled by it."""
    meta = meta_of(rs)
    template = (rs.get("spec") or {}).get("template") or {}
    template_meta = template.get("metadata") or {}
    pod_meta: JsonObj = {
        "generateName": f"{meta.get('name')}-",
        "namespace": meta.get("namespace"),
        "labels": dict(template_meta.get("labels") or {}),
        "ownerReferences": [controller_ref(rs, "ReplicaSet")],
    }
    if template_meta.get("annotations"):
        pod_meta["annotations"] = dict(template_meta["annotations"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": dict(template.get("spec") or {})}
