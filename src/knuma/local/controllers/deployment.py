"""The Deployment controller's decisions: the ReplicaSet of the current pod template, old ones scaled down, status.

As kube-controller-manager's, a Deployment owns one ReplicaSet per pod template, named `<deployment>-<hash>` where
the hash (label `pod-template-hash`, also on its pods) is the FNV-32a of the template made safe for names. Simplified
rollout: the current template's ReplicaSet gets all replicas at once and older ones go to 0 (no surge and
unavailability budget), which is enough for `kubectl apply`, `kubectl scale` and `kubectl rollout status`.

Revisions as upstream's `getNewReplicaSet` / `SetNewReplicaSetAnnotations` / `SetDeploymentRevision` number them:
a new ReplicaSet gets `deployment.kubernetes.io/revision` one above the highest of the others, a ReplicaSet whose
template comes back (a rollback) is renumbered the same way, and the Deployment carries the revision of its current
ReplicaSet, which is what `kubectl rollout history deploy` lists and `kubectl rollout undo deploy` restores from.

A paused Deployment (`kubectl rollout pause`) only scales: a template changed meanwhile gets no ReplicaSet until it
is resumed, and `Progressing` is `Unknown` with reason `DeploymentPaused` (`sync`, `checkPausedConditions`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from knuma.api.goequality import POD_SPEC, semantic
from knuma.api.types import JsonObj, meta_of
from knuma.local.controllers.replicaset import controller_ref

__all__ = [
    "TEMPLATE_HASH_LABEL",
    "DeploymentPlan",
    "find_new_replicaset",
    "plan_deployment",
    "replicaset_for",
    "template_hash",
]

TEMPLATE_HASH_LABEL = "pod-template-hash"
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def template_hash(template: Mapping[str, Any]) -> str:
    """FNV-32a of the template, written with `rand.SafeEncodeString`'s alphabet (no vowels, no look-alikes)."""
    value = 0x811C9DC5
    for byte in json.dumps(template, sort_keys=True, separators=(",", ":")).encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE[ord(c) % len(_SAFE)] for c in str(value))


def replicaset_for(deployment: Mapping[str, Any], revision: int = 1) -> JsonObj:
    """The ReplicaSet of the deployment's current template, with the deployment's replicas, at `revision`."""
    meta = meta_of(deployment)
    spec = deployment.get("spec") or {}
    template = copy.deepcopy(spec.get("template") or {})
    digest = template_hash(template)
    template.setdefault("metadata", {}).setdefault("labels", {})[TEMPLATE_HASH_LABEL] = digest
    selector = copy.deepcopy(spec.get("selector") or {})
    selector.setdefault("matchLabels", {})[TEMPLATE_HASH_LABEL] = digest
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{meta.get('name')}-{digest}",
            "namespace": meta.get("namespace"),
            "labels": labels,
            "annotations": {
                "deployment.kubernetes.io/desired-replicas": str(spec.get("replicas", 1)),
                REVISION_ANNOTATION: str(revision),
            },
            "ownerReferences": [controller_ref(deployment, "Deployment")],
        },
        "spec": {"replicas": spec.get("replicas", 1), "selector": selector, "template": template},
    }


@dataclass(frozen=True)
class DeploymentPlan:
    create: JsonObj | None = None
    """The current template's ReplicaSet, when it does not exist yet."""
    scale: dict[str, int] = field(default_factory=dict)
    """ReplicaSet name -> replicas, for those that must change."""
    status: JsonObj = field(default_factory=dict)
    renumber: tuple[str, str] | None = None
    """(ReplicaSet name, revision): the current template's ReplicaSet, come back, becomes the newest revision."""
    revision: str | None = None
    """The Deployment's `deployment.kubernetes.io/revision`, when it must change."""


def find_new_replicaset(deployment: Mapping[str, Any], owned: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """`deploymentutil.FindNewReplicaSet`: the oldest owned ReplicaSet (by creation time, then name) whose template
    equals the Deployment's, its `pod-template-hash` label aside (`EqualIgnoreHash`, a `Semantic.DeepEqual`).

    Found by the template, not by the hash of the Deployment's template as written: `1000m` written where the
    template had `1` (or any other spelling of the same template) is the same ReplicaSet, not a rollout of every
    pod; a ReplicaSet whose name an earlier hash gave keeps serving its template."""
    wanted = _semantic_template((deployment.get("spec") or {}).get("template"))
    ordered = sorted(
        owned, key=lambda rs: (str(meta_of(rs).get("creationTimestamp") or ""), str(meta_of(rs).get("name")))
    )
    return next((rs for rs in ordered if _semantic_template((rs.get("spec") or {}).get("template")) == wanted), None)


def _semantic_template(template: Any) -> tuple[Any, Any]:
    """A pod template as `EqualIgnoreHash` compares it: without the hash label, as Go's structs compare."""
    template = template if isinstance(template, Mapping) else {}
    metadata = dict(template.get("metadata") or {})
    labels = metadata.get("labels")
    if isinstance(labels, Mapping):
        metadata["labels"] = {k: v for k, v in labels.items() if k != TEMPLATE_HASH_LABEL}
    return semantic(metadata), semantic(template.get("spec") or {}, POD_SPEC)


def plan_deployment(deployment: Mapping[str, Any], owned: Sequence[Mapping[str, Any]]) -> DeploymentPlan:
    """What to do for `deployment`, given the ReplicaSets it owns."""
    hashed = replicaset_for(deployment)["metadata"]["name"]
    current = find_new_replicaset(deployment, owned)
    if current is None:  # one named by the hash but edited since (upstream counts a collision and renames): reused
        current = next((rs for rs in owned if meta_of(rs).get("name") == hashed), None)
    name = str(meta_of(current).get("name")) if current is not None else hashed
    older = max((_revision(rs) for rs in owned if rs is not current), default=0)
    desired = replicaset_for(deployment, older + 1)
    paused = bool((deployment.get("spec") or {}).get("paused"))
    renumber = None
    revision = _revision(current) if current is not None else older + 1
    if current is not None and revision <= older and not paused:
        revision = older + 1
        renumber = (name, str(revision))
    target = name
    if paused and current is None and owned:
        # `sync` of a paused Deployment: no new ReplicaSet, the newest one keeps the replicas (scaling only)
        newest = max(owned, key=_revision)
        target, revision = str(meta_of(newest).get("name")), _revision(newest)
    replicas = int((deployment.get("spec") or {}).get("replicas", 1) or 0)
    scale: dict[str, int] = {}
    for rs in owned:
        rs_name = str(meta_of(rs).get("name"))
        want = replicas if rs_name == target else 0
        if int((rs.get("spec") or {}).get("replicas", 0) or 0) != want:
            scale[rs_name] = want
    totals = {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0}
    for rs in owned:
        counts = rs.get("status") or {}
        for key in totals:
            totals[key] += int(counts.get(key, 0) or 0)
    updated = int(((current or {}).get("status") or {}).get("replicas", 0) or 0)
    available = totals["availableReplicas"] >= replicas
    status: JsonObj = {
        "observedGeneration": meta_of(deployment).get("generation", 1),
        "replicas": totals["replicas"],
        "updatedReplicas": updated,
        "readyReplicas": totals["readyReplicas"],
        "availableReplicas": totals["availableReplicas"],
        "unavailableReplicas": max(0, replicas - totals["availableReplicas"]),
        "conditions": [
            {
                "type": "Available",
                "status": "True" if available else "False",
                "reason": "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
                "message": "Deployment has minimum availability."
                if available
                else "Deployment does not have minimum availability.",
            },
            {
                "type": "Progressing",
                "status": "True",
                "reason": "NewReplicaSetAvailable" if available else "ReplicaSetUpdated",
                "message": f'ReplicaSet "{name}" has successfully progressed.'
                if available
                else f'ReplicaSet "{name}" is progressing.',
            },
        ],
    }
    if paused:  # checkPausedConditions
        status["conditions"][1] = {
            "type": "Progressing",
            "status": "Unknown",
            "reason": "DeploymentPaused",
            "message": "Deployment is paused",
        }
    recorded = (meta_of(deployment).get("annotations") or {}).get(REVISION_ANNOTATION)
    return DeploymentPlan(
        create=desired if current is None and not (paused and owned) else None,
        scale=scale,
        status=status,
        renumber=renumber,
        revision=str(revision) if recorded != str(revision) else None,
    )


def _revision(rs: Mapping[str, Any]) -> int:
    """`deploymentutil.Revision`: the ReplicaSet's revision annotation (0 without one)."""
    try:
        return int((meta_of(rs).get("annotations") or {}).get(REVISION_ANNOTATION) or 0)
    except ValueError:
        return 0
