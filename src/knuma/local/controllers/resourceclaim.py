"""The resourceclaim controller's decisions, as pure functions (kube-controller-manager's
`pkg/controller/resourceclaim/controller.go`, which `knuma up` needs so that pods with claim templates run).

- `plan_pod` (`syncPod` / `handleClaim`): every `spec.resourceClaims[]` entry naming a `resourceClaimTemplateName`
  becomes a ResourceClaim owned by the pod (controller, blockOwnerDeletion), created with `generateName`
  `<pod>-<claim>-` (both parts shortened proportionally when longer than 57 characters), the annotation
  `resource.kubernetes.io/pod-claim-name`, the template's labels and annotations and its `spec.spec`; the pod's
  `status.resourceClaimStatuses` maps each pod claim to the claim's name. An existing claim owned by the pod with
  that annotation is reused (`findPodResourceClaim`), so a crash between create and status update never creates
  two. A missing template is an error for that pod claim (event `FailedResourceClaimCreation`).
- `plan_claim` (`syncClaim`): `reservedFor` entries of pods that are gone, replaced (other uid) or done are
  dropped; when none is left the allocation is cleared (deallocation when the last consumer goes) and the
  scheduler's finalizer `resource.kubernetes.io/delete-protection` removed; a claim generated for a pod that is done
  is deleted. Claims of deleted pods go with the pod through the garbage collector (owner reference).

The claim kube-scheduler creates for a pod's DRA-backed extended resources (KEP-5004: owned by the pod as its
controller, annotated `resource.kubernetes.io/extended-resource-claim`, named in the pod's
`status.extendedResourceClaimStatus`) needs nothing of its own: `plan_claim` frees and deletes it when its pod is
done as any claim generated for a pod, and the garbage collector deletes it with the pod.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from knuma.api.types import JsonObj, meta_of
from knuma.local.controllers.replicaset import controller_ref

__all__ = [
    "FINALIZER",
    "POD_CLAIM_ANNOTATION",
    "ClaimPlan",
    "PodPlan",
    "claim_from_template",
    "generate_name",
    "is_pod_done",
    "owning_pod",
    "plan_claim",
    "plan_pod",
]

POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
FINALIZER = "resource.kubernetes.io/delete-protection"
MAX_BASE_LEN = 57  # leaves room for the API server's 5 random characters in a 63-character name


def generate_name(pod_name: str, claim_name: str) -> str:
    """`<pod>-<claim>-`, both shortened in proportion to their length when too long (`handleClaim`)."""
    base = f"{pod_name}-{claim_name}-"
    if len(base) <= MAX_BASE_LEN:
        return base
    return (
        pod_name[: len(pod_name) * MAX_BASE_LEN // len(base)]
        + "-"
        + claim_name[: len(claim_name) * MAX_BASE_LEN // len(base)]
    )


def owning_pod(claim: Mapping[str, Any]) -> tuple[str, str]:
    """(name, uid) of the pod that controls the claim, or ("", "")."""
    for ref in meta_of(claim).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("apiVersion") == "v1" and ref.get("kind") == "Pod":
            return str(ref.get("name") or ""), str(ref.get("uid") or "")
    return "", ""


def is_pod_done(pod: Mapping[str, Any]) -> bool:
    """None of the pod's containers runs or ever will (`isPodDone`)."""
    phase = (pod.get("status") or {}).get("phase")
    deleted_unscheduled = bool(meta_of(pod).get("deletionTimestamp")) and not (pod.get("spec") or {}).get("nodeName")
    return phase in ("Succeeded", "Failed") or deleted_unscheduled


def claim_from_template(pod: Mapping[str, Any], pod_claim: str, template: Mapping[str, Any]) -> JsonObj:
    """The ResourceClaim `handleClaim` creates for one pod claim from its template."""
    md = meta_of(pod)
    template_spec = template.get("spec") or {}
    template_md = template_spec.get("metadata") or {}
    annotations = dict(template_md.get("annotations") or {})
    annotations[POD_CLAIM_ANNOTATION] = pod_claim
    claim_md: JsonObj = {
        "generateName": generate_name(str(md.get("name")), pod_claim),
        "namespace": md.get("namespace"),
        "ownerReferences": [controller_ref(pod, "Pod", "v1")],
        "annotations": annotations,
    }
    if template_md.get("labels"):
        claim_md["labels"] = dict(template_md["labels"])
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": claim_md,
        "spec": copy.deepcopy(template_spec.get("spec") or {}),
    }


@dataclass
class PodPlan:
    create: list[tuple[str, JsonObj]] = field(default_factory=list)
    """(pod claim name, ResourceClaim to create)."""
    known: dict[str, str] = field(default_factory=dict)
    """Pod claim name -> existing claim name, for `status.resourceClaimStatuses`."""
    errors: list[tuple[str, str]] = field(default_factory=list)
    """(pod claim name, message) for `FailedResourceClaimCreation`."""

    def statuses(self, created: Mapping[str, str]) -> list[JsonObj]:
        """`status.resourceClaimStatuses` once `created` (pod claim -> new claim name) exist."""
        names = {**self.known, **created}
        return [{"name": pod_claim, "resourceClaimName": names[pod_claim]} for pod_claim in sorted(names)]


def _find_owned(pod: Mapping[str, Any], pod_claim: str, claims: Sequence[Mapping[str, Any]]) -> str | None:
    """`findPodResourceClaim`: a claim the pod controls, annotated with this pod claim."""
    uid = str(meta_of(pod).get("uid"))
    for claim in claims:
        if owning_pod(claim)[1] != uid:
            continue
        annotation = (meta_of(claim).get("annotations") or {}).get(POD_CLAIM_ANNOTATION)
        if annotation == pod_claim and not meta_of(claim).get("deletionTimestamp"):
            return str(meta_of(claim).get("name"))
    return None


def plan_pod(
    pod: Mapping[str, Any], claims: Sequence[Mapping[str, Any]], templates: Mapping[str, Mapping[str, Any]]
) -> PodPlan:
    """What to create for one pod. `claims`: the claims of the pod's namespace; `templates`: its templates by name."""
    plan = PodPlan()
    if meta_of(pod).get("deletionTimestamp"):
        return plan
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        pod_claim = str(entry.get("name") or "")
        template_name = entry.get("resourceClaimTemplateName")
        if not pod_claim or not template_name:
            continue
        existing = _find_owned(pod, pod_claim, claims)
        if existing is not None:
            plan.known[pod_claim] = existing
            continue
        template = templates.get(str(template_name))
        if template is None:
            plan.errors.append(
                (
                    pod_claim,
                    f'PodResourceClaim {pod_claim}: resource claim template "{template_name}": '
                    f'resourceclaimtemplate.resource.k8s.io "{template_name}" not found',
                )
            )
            continue
        plan.create.append((pod_claim, claim_from_template(pod, pod_claim, template)))
    return plan


@dataclass(frozen=True)
class ClaimPlan:
    reserved_for: list[JsonObj] | None = None
    """The new `status.reservedFor` when entries are dropped; None when unchanged."""
    deallocate: bool = False
    remove_finalizer: bool = False
    delete: bool = False


def plan_claim(claim: Mapping[str, Any], pods: Mapping[str, Mapping[str, Any]]) -> ClaimPlan:
    """What `syncClaim` does to one claim; `pods` are the claim namespace's pods by name (gone ones absent)."""
    status = claim.get("status") or {}
    reserved = list(status.get("reservedFor") or [])
    valid: list[JsonObj] = []
    for ref in reserved:
        if ref.get("apiGroup") or ref.get("resource") != "pods":
            valid.append(ref)  # not a pod: kept, as upstream cannot check it either
            continue
        pod = pods.get(str(ref.get("name")))
        if pod is None or str(meta_of(pod).get("uid")) != str(ref.get("uid")) or is_pod_done(pod):
            continue
        valid.append(ref)
    finalizers = list(meta_of(claim).get("finalizers") or [])
    allocated = bool(status.get("allocation"))
    changed = len(valid) < len(reserved)
    deleting = bool(meta_of(claim).get("deletionTimestamp"))
    deallocate = not valid and allocated and (changed or deleting)
    # Only when the last consumer just went or the claim is being deleted: a scheduler that has added the finalizer
    # and not yet written the allocation must keep it.
    remove_finalizer = FINALIZER in finalizers and not valid and (changed or deleting)
    delete = False
    if not valid:
        name, uid = owning_pod(claim)
        owner = pods.get(name) if name else None
        delete = owner is not None and (str(meta_of(owner).get("uid")) != uid or is_pod_done(owner))
        delete = delete and not deleting
    return ClaimPlan(
        reserved_for=valid if changed else None,
        deallocate=deallocate,
        remove_finalizer=remove_finalizer,
        delete=delete,
    )
