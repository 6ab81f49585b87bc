"""The StatefulSet controller's decisions: which pod to create, delete or wait for, and the status to report.

As kube-controller-manager's (`pkg/controller/statefulset/stateful_set_control.go`, `updateStatefulSet` with
`processReplica`, `processCondemned` and `completeRollingUpdate`; pod identity from `stateful_set_utils.go`):

- pods are named `<set>-<ordinal>` for the ordinals `[start, start + replicas)` (`spec.ordinals.start`, 0 by
  default), labelled `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index` and
  `controller-revision-hash` (`<set>-<hash of the template>`), with `hostname` = the pod's name and `subdomain` =
  `serviceName`; each `volumeClaimTemplates` entry becomes a volume naming the claim `<template>-<set>-<ordinal>`;
- `OrderedReady` (the default): one pod at a time, in ordinal order, each created only when every lower one is
  Running and Ready (and available for `minReadySeconds`); a scale-down deletes the highest ordinal first and waits
  for it to be gone before the next; nothing progresses while a pod is unhealthy. `Parallel`: every missing pod is
  created and every condemned one deleted at once;
- a Failed or Succeeded pod is deleted and created again under the same name;
- `RollingUpdate`: once every pod is healthy, the pod with the highest ordinal not at the template's revision is
  deleted (and comes back at the new revision), down to `partition`; pods below the partition are created at the
  current revision. `OnDelete`: pods are replaced only when the user deletes them;
- status: `replicas`, `readyReplicas`, `availableReplicas`, `currentReplicas`, `updatedReplicas`, `currentRevision`,
  `updateRevision` (the current one becomes the update one when every pod is updated and ready), `collisionCount`,
  `observedGeneration`: what `kubectl rollout status sts` and `kubectl get sts` read.

The revisions are ControllerRevisions (`knuma.local.controllers.history`): a pod below the partition is created
from its revision's template, `kubectl rollout history sts` lists them and `kubectl rollout undo sts` patches one
back. Differences: no PersistentVolumeClaims (there is no storage on a local cluster; the pods name their claims
and the simulated kubelets do not mount volumes), no `maxUnavailable` (alpha), no adoption of orphaned pods; and
after each newly failed pod the next creation waits 1 s, 2 s, ... up to 60 s, as the ReplicaSet controller here does,
so a pod the kubelet keeps rejecting (`TopologyAffinityError`) is not re-created in a tight loop.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from knuma.api.pod import is_pod_ready
from knuma.api.types import JsonObj, meta_of, spec_of
from knuma.local.controllers.daemonset import available
from knuma.local.controllers.deployment import template_hash
from knuma.local.controllers.replicaset import Backoff, controller_ref

__all__ = [
    "POD_INDEX_LABEL",
    "POD_NAME_LABEL",
    "REVISION_LABEL",
    "StatefulSetPlan",
    "plan_statefulset",
    "revision_name",
    "statefulset_pod",
]

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"
_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")


@dataclass(frozen=True)
class StatefulSetPlan:
    create: tuple[JsonObj, ...] = ()
    delete: tuple[str, ...] = ()
    status: JsonObj = field(default_factory=dict)
    retry_after: float | None = None
    """Seconds until the set should be looked at again (a pod becoming available, a creation paced after a
    failure)."""


def revision_name(sts: Mapping[str, Any]) -> str:
    """The revision of the set's template, as its pods' `controller-revision-hash` label: `<set>-<hash>`."""
    return f"{meta_of(sts).get('name')}-{template_hash(spec_of(sts).get('template') or {})}"


def ordinal_of(pod: Mapping[str, Any], set_name: str) -> int:
    """`getParentNameAndOrdinal`: the pod's ordinal, or -1 when its name is not `<set>-<number>`."""
    found = _ORDINAL.match(str(meta_of(pod).get("name") or ""))
    if found is None or found.group(1) != set_name:
        return -1
    return int(found.group(2))


def statefulset_pod(sts: Mapping[str, Any], template: Mapping[str, Any], revision: str, ordinal: int) -> JsonObj:
    """`newStatefulSetPod`: the template's pod with the set's identity for `ordinal` and its claims' volumes."""
    meta, spec = meta_of(sts), spec_of(sts)
    name = f"{meta.get('name')}-{ordinal}"
    template_meta = template.get("metadata") or {}
    labels = {
        **(template_meta.get("labels") or {}),
        POD_NAME_LABEL: name,
        POD_INDEX_LABEL: str(ordinal),
        REVISION_LABEL: revision,
    }
    pod_meta: JsonObj = {
        "name": name,
        "namespace": meta.get("namespace"),
        "labels": labels,
        "ownerReferences": [controller_ref(sts, "StatefulSet")],
    }
    if template_meta.get("annotations"):
        pod_meta["annotations"] = dict(template_meta["annotations"])
    pod_spec: JsonObj = copy.deepcopy(dict(template.get("spec") or {}))
    pod_spec["hostname"] = name
    if spec.get("serviceName"):
        pod_spec["subdomain"] = spec["serviceName"]
    claims = {
        str(meta_of(c).get("name")): f"{meta_of(c).get('name')}-{meta.get('name')}-{ordinal}"
        for c in spec.get("volumeClaimTemplates") or []
    }
    if claims:
        volumes = [v for v in pod_spec.get("volumes") or [] if v.get("name") not in claims]
        volumes += [{"name": k, "persistentVolumeClaim": {"claimName": v}} for k, v in claims.items()]
        pod_spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_spec}


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _terminating(pod: Mapping[str, Any]) -> bool:
    return bool(meta_of(pod).get("deletionTimestamp"))


def _running_and_ready(pod: Mapping[str, Any]) -> bool:
    return _phase(pod) == "Running" and is_pod_ready(pod)


def plan_statefulset(
    sts: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    templates: Mapping[str, Mapping[str, Any]],
    backoff: Backoff,
    now: float,
    wall: datetime,
) -> StatefulSetPlan:
    """What to do for `sts` given the pods it owns (`updateStatefulSet`). `templates`: revision -> template, from
    the set's ControllerRevisions (for pods below the partition, at the current revision)."""
    backoff.observe(pods, now)
    meta, spec = meta_of(sts), spec_of(sts)
    set_name = str(meta.get("name"))
    min_ready = int(spec.get("minReadySeconds", 0) or 0)
    update_revision = revision_name(sts)
    current_revision = str((sts.get("status") or {}).get("currentRevision") or update_revision)
    strategy = spec.get("updateStrategy") or {}
    rolling = strategy.get("type", "RollingUpdate") == "RollingUpdate"
    partition = int((strategy.get("rollingUpdate") or {}).get("partition", 0) or 0) if rolling else 0
    start = int((spec.get("ordinals") or {}).get("start", 0) or 0)
    count = int(spec.get("replicas", 1) or 0)
    monotonic = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"

    def usable(pod: Mapping[str, Any]) -> bool:
        return _running_and_ready(pod) and available(pod, min_ready, wall)

    replicas: list[Mapping[str, Any] | None] = [None] * count
    condemned: list[Mapping[str, Any]] = []
    for pod in pods:
        ordinal = ordinal_of(pod, set_name)
        if start <= ordinal < start + count:
            replicas[ordinal - start] = pod
        elif ordinal >= 0:
            condemned.append(pod)
    condemned.sort(key=lambda p: -ordinal_of(p, set_name))

    def status(extra_current: int = 0) -> JsonObj:
        live = [p for p in [*replicas, *condemned] if p is not None]
        out: JsonObj = {
            "observedGeneration": meta.get("generation", 1),
            "replicas": sum(1 for p in live if _phase(p)),
            "readyReplicas": sum(1 for p in live if _running_and_ready(p)),
            "availableReplicas": sum(1 for p in live if usable(p)),
            "currentReplicas": extra_current
            + sum(1 for p in live if not _terminating(p) and _revision(p) == current_revision),
            "updatedReplicas": sum(1 for p in live if not _terminating(p) and _revision(p) == update_revision),
            "currentRevision": current_revision,
            "updateRevision": update_revision,
            "collisionCount": 0,
        }
        if rolling and out["updatedReplicas"] == out["replicas"] and out["readyReplicas"] == out["replicas"]:
            out["currentRevision"], out["currentReplicas"] = (
                update_revision,
                out["updatedReplicas"],
            )  # completeRollingUpdate
        return out

    create: list[JsonObj] = []
    delete: list[str] = []
    retry: float | None = None

    def wait_for(pod: Mapping[str, Any]) -> None:
        """Look again when a ready pod may have become available (`minReadySeconds`)."""
        nonlocal retry
        if _running_and_ready(pod) and not usable(pod):
            retry = 1.0

    def plan(extra_current: int = 0) -> StatefulSetPlan:
        return StatefulSetPlan(tuple(create), tuple(delete), status(extra_current), retry)

    if meta.get("deletionTimestamp"):
        return plan()
    for index in range(count):
        replica = replicas[index]
        ordinal = start + index
        if replica is not None and _phase(replica) in ("Failed", "Succeeded"):
            if not _terminating(replica):
                delete.append(str(meta_of(replica).get("name")))
            if monotonic:
                return plan()
            continue
        if replica is None:
            if backoff.not_before > now:
                retry = backoff.not_before - now
                if monotonic:
                    return plan()
                continue
            at_current = rolling and ordinal < start + partition and current_revision in templates
            revision = current_revision if at_current else update_revision
            template = templates[current_revision] if at_current else (spec.get("template") or {})
            create.append(statefulset_pod(sts, template, revision, ordinal))
            if monotonic:
                return plan()
            continue
        if monotonic and (_terminating(replica) or not usable(replica)):
            wait_for(replica)
            return plan()
    first_unhealthy = next(
        (p for p in [*replicas, *reversed(condemned)] if p is not None and (_terminating(p) or not usable(p))), None
    )
    for pod in condemned:
        if _terminating(pod):
            if monotonic:
                return plan()
            continue
        if monotonic and not usable(pod) and pod is not first_unhealthy:
            wait_for(pod)
            return plan()
        delete.append(str(meta_of(pod).get("name")))
        if monotonic:
            return plan()
    if not rolling or create or delete:
        return plan()
    for index in range(count - 1, partition - 1, -1):
        target = replicas[index]
        if target is None:
            return plan()
        if _revision(target) != update_revision and not _terminating(target):
            delete.append(str(meta_of(target).get("name")))
            return plan(extra_current=-1)
        if _terminating(target) or not usable(target):
            wait_for(target)
            return plan()
    return plan()


def _revision(pod: Mapping[str, Any]) -> str:
    return str((meta_of(pod).get("labels") or {}).get(REVISION_LABEL) or "")
